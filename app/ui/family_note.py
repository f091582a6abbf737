"""What a page says when its model is not BERT itself but a member of its family (bert/family.py):
one line, where the member differs from what the page explains, and nothing for BERT."""

from __future__ import annotations

import streamlit as st

from bert.family import MEMBERS, RELATIVES, member
from bert.tokenizer.vocab import MASK_TOKEN

from ..formatting import md_code, md_escape


def embeddings(config) -> None:
    """The Embeddings page: a DistilBERT's missing segment table, ELECTRA's narrow tables."""
    kin = member(config)
    if config.type_vocab_size == 0:
        st.info(
            f"{kin.name}: no segment embeddings, only token + position (its segment part below is zero).",
            icon=":material/family_history:",
        )
    if config.position_offset:
        st.info(
            f"{kin.name}: positions are counted from row {config.position_offset} of its table (its padding "
            f"index + 1), so rows 0 to {config.position_offset - 1} are never a token's and it reads at most "
            f"{config.max_tokens} tokens; its one segment vector is added to every token alike.",
            icon=":material/family_history:",
        )
    if config.embedding_width != config.hidden_size:
        st.info(
            f"{kin.name}: its embedding tables are {config.embedding_width} wide, narrower than its layers "
            f"({config.hidden_size}); a learned projection lifts the LayerNorm output to {config.hidden_size} "
            "before the first layer. Small tables, same layers: fewer parameters where they matter least.",
            icon=":material/family_history:",
        )


def mask_token(tokenizer) -> None:
    """The Masked LM page: a model whose own mask token is not [MASK] (RoBERTa's <mask>)."""
    own = getattr(tokenizer, "mask_token", MASK_TOKEN)
    if own != MASK_TOKEN:
        st.caption(
            f"This model's own mask token is {md_code(own)}; type {MASK_TOKEN} as everywhere in this app "
            "and it becomes that token."
        )


def left_to_right(bundle, what: str) -> bool:
    """A view that reads both ways with BERT's heads, on a next-word model: its refusal, said why
    (bert/analysis/common.py, the one rule), and True; False (nothing said) on any other model."""
    from bert.analysis.common import left_to_right_refusal  # torch's: Home draws before torch is imported

    why = left_to_right_refusal(bundle, what)
    if why:
        st.info(md_escape(why), icon=":material/arrow_right_alt:")
    return bool(why)


def attention(config) -> None:
    """The Attention page: ALBERT's layers are one layer's weights."""
    kin = member(config)
    if kin.shared_layers:
        st.info(
            f"{kin.name}: all {config.num_hidden_layers} layers run the SAME weights (one layer, shared). "
            "Its heads still attend differently at each depth, because what each layer reads has changed.",
            icon=":material/family_history:",
        )


def no_next_sentence(config) -> bool:
    """The Masked LM page's next-sentence part: a line (and True) when the model has no such head;
    ALBERT's head answers another question, said here (and False: its probability is shown)."""
    kin = member(config)
    if kin.sentence_order:
        st.info(
            f"{kin.name}'s head here was trained on sentence ORDER, not next-sentence prediction: the "
            "probability below is that A and B stand in their original order (B after A) rather than swapped.",
            icon=":material/family_history:",
        )
        return False
    if kin.next_sentence:
        return False
    st.info(
        f"{kin.name} has no next-sentence head: it was pre-trained with "
        f"{kin.objective}, not next-sentence prediction, so there is nothing to show here.",
        icon=":material/family_history:",
    )
    return True


# Where each member's difference shows: (page, what to do there)
SHOWN_ON = {
    "bert": ("pages/masked_lm.py", "Masked LM & next sentence: both of its games"),
    "distilbert": ("pages/compare.py", "Compare: put it beside a BERT on one sentence"),
    "electra": ("pages/masked_lm.py", "Masked LM: the replaced-token view"),
    "roberta": ("pages/tokenization.py", "Tokenization: byte-level BPE, merge by merge"),
    "albert": ("pages/attention.py", "Attention: one layer's weights at every depth"),
}


def card() -> None:
    """BERT's family on the Home page: what each member changed from BERT and why, and the page
    that shows it. A teacher puts real checkpoints in the models folder (README)."""
    st.subheader("BERT's family")
    st.markdown(
        "Soon after BERT came models that kept its encoder and changed one or two things. This app "
        "runs these in its own code too; pick one from the models folder in the sidebar."
    )
    for kin in MEMBERS.values():
        st.markdown(f"**{kin.name}**: {kin.changed}. *Why:* {kin.why}.")
        shown = SHOWN_ON.get(kin.model_type)  # a member with no page of its own has no link
        if shown:
            st.page_link(shown[0], label=shown[1], icon=":material/arrow_forward:")
    relatives()


def relatives(compare: bool = False) -> None:
    """The decoder-only and encoder-decoder relatives, as text: what each changed from BERT and why,
    and where this app shows the same mechanism. None is loaded: the text says so, so that a class
    does not look for a GPT in the model list."""
    if compare:
        st.caption(
            "Other shapes of transformer, described here but never loaded (this app runs encoders, and "
            "decoders it trains itself):"
        )
    else:
        st.markdown(
            "**Beyond the encoder.** BERT is the encoder half of the original transformer; GPT kept the "
            "other half, T5 and BART kept both. This app describes them here but does not load them."
        )
    for r in RELATIVES:
        st.markdown(
            f"**{r.name}** ({r.shape}): {r.changed}. *Reads:* {r.reads}. *Why:* {r.why}. *See it here:* {r.seen_here}."
        )
