"""The attention mask as a choice on a page (bert/attention_masks.py): who may read whom, on the same
weights. A prefix length is a number input bounded by the input's tokens, so a k past the end
cannot be typed; one kept from a longer sentence is brought back to the end with bert's own
message saying why."""

from __future__ import annotations

import numpy as np
import streamlit as st

from bert import InputError
from bert.analysis.common import encode
from bert.attention_masks import BIDIRECTIONAL, CAUSAL, MaskKind, allowed, check_mask_kind

from .formatting import clean_text, md_escape

BOTH, LEFT, PREFIX = "Both ways (encoder)", "Left only (decoder)", "Prefix of k tokens"
CHOICES = (BOTH, LEFT, PREFIX)
K_DEFAULT = 3

WHY = (
    "Same weights, three ways to read. **Both ways** is how BERT was trained: every token sees every "
    "token. **Left only** is a decoder's masked self-attention (GPT's): each token sees itself and "
    "the tokens before it, so the right half of the map is hidden. **Prefix of k**: the first k "
    "tokens see each other, the rest read left only (how T5-style prefix models read a prompt)."
)


def input_tokens(model, text_a: str, text_b: str | None = None) -> int:
    """How many tokens the model reads for this input ([CLS] and [SEP] included, cut at its
    maximum): the bound of a prefix. The texts are checked as the analysis checks them."""
    a = clean_text(text_a, "sentence A")
    b = clean_text(text_b, required=False) or None
    return len(encode(model.bundle, a, b).ids)


def link_params(key: str) -> list:
    """The mask kind in a page's link: `read` (both, left, prefix) and, for a prefix, `k`; a k past
    the input's end is brought back by mask_kind_choice with its note."""
    from .ui import links

    return [
        links.Param("read", key, "choice", default=BOTH, choices=CHOICES, codes=("both", "left", "prefix")),
        links.Param("k", f"{key}_k", "int", default=K_DEFAULT, lo=0, hi=4096, label="prefix length"),
    ]


def mask_kind_choice(n_tokens: int, key: str) -> MaskKind:
    """A radio for the mask kind and, for a prefix, a number input k in [0, n_tokens] (n_tokens:
    the input's tokens, [CLS] and [SEP] included). Returns "bidirectional", "causal" or k."""
    how = st.radio("Who may read whom", CHOICES, horizontal=True, key=key, help=WHY)
    if how == BOTH:
        return BIDIRECTIONAL
    if how == LEFT:
        return CAUSAL
    k_key = f"{key}_k"
    kept = st.session_state.get(k_key)
    if kept is not None and int(kept) > n_tokens:
        try:
            check_mask_kind(int(kept), n_tokens)
        except InputError as e:
            st.warning(f"{md_escape(str(e))}. The prefix is now {n_tokens}.", icon=":material/straighten:")
        st.session_state[k_key] = n_tokens
    st.session_state.setdefault(k_key, min(K_DEFAULT, n_tokens))
    k = st.number_input(
        "k: tokens in the prefix ([CLS] counts as one)",
        min_value=0,
        max_value=n_tokens,
        step=1,
        key=k_key,
        help=f"From 0 (the same as left only) to {n_tokens} (the whole input: the same as both ways).",
    )
    return int(k)


def hidden_cells(kind: MaskKind, n_tokens: int) -> np.ndarray | None:
    """(T, T) bool: True where the mask hides key j from query i; None when nothing is hidden."""
    see = allowed(kind, n_tokens)
    return None if see is None else ~see.numpy()


def hidden_share(kind: MaskKind, n_tokens: int) -> str:
    """One line for a caption: how many cells the mask hides, drawn grey."""
    hid = hidden_cells(kind, n_tokens)
    if hid is None:
        return ""
    return (
        f" Grey cells are hidden by the mask ({int(hid.sum()):,} of {n_tokens * n_tokens:,}): "
        "the token cannot read them at all, which is not the same as reading them with weight 0."
    )


def _around(text: str, gap: int, words: int = 6) -> tuple[str, str]:
    """The words just left and just right of the gap-th [MASK] of `text` (at most `words` each)."""
    parts = text.split("[MASK]")
    left = " ".join("[MASK]".join(parts[: gap + 1]).split()[-words:])
    right = " ".join("[MASK]".join(parts[gap + 1 :]).split()[:words])
    return left, right


def why_they_differ(text: str, gap: int) -> str:
    """One sentence (markdown, the typed words escaped): why a gap's guesses differ when the
    same weights read both ways and left only."""
    left, right = _around(text, gap)
    if not right.strip(" .!?"):
        return (
            "Nothing stands right of this gap, so both readings see the same words: they differ only "
            "because the model was trained reading both ways, and left only its layers see less at every step."
        )
    seen = f"“{md_escape(left)}”" if left else "nothing but the start"
    return (
        f"Left only, the model reads {seen} and never “{md_escape(right)}”, the words after the gap, "
        "as a decoder would; both ways it reads them too, as it was trained to."
    )


def both_ways_and_left(model, text: str, k: int) -> None:
    """A [MASK]'s top-k read both ways and read left only, side by side, and why they differ."""
    from .analysis_cache import mlm_predict
    from .figures.masked_lm import mlm_topk_bar
    from .ui import show_figure

    b = model.bundle
    both = mlm_predict(model.key, text, k, b)["predictions"]
    left = mlm_predict(model.key, text, k, b, mask_kind=CAUSAL)["predictions"]
    gap = 0
    if len(both) > 1:
        gap = st.selectbox(
            "Gap to compare", list(range(len(both))), format_func=lambda n: f"gap {n + 1}", key="mlm_pattern_gap"
        )
    cols = st.columns(2)
    for c, (name, preds, code) in zip(cols, (("Reads both ways", both, "both"), ("Reads left only", left, "left"))):
        c.markdown(f"**{name}**")
        p = preds[gap]
        show_figure.show(
            mlm_topk_bar(p["tokens"], p["probs"], f"gap {gap + 1}: {name.lower()}"),
            f"masked-lm-{code}",
            where=c,
            key=f"mlm_pattern_bar_{code}",
        )
    st.markdown(why_they_differ(text, gap))
