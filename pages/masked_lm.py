"""Masked LM & next sentence: BERT's two pre-training games, played live."""

import random
import re
import zlib
from functools import partial

import streamlit as st

import app
from app import attention_masks, state
from app.analysis_cache import mlm_predict, nsp_probability, replaced_tokens
from app.export import notebook as nb
from app.figures.masked_lm import mlm_topk_bar, nsp_bar, replaced_bar
from app.formatting import (
    RANDOM_SENTENCES,
    clean_text,
    count_masks,
    mask_words,
    md_escape,
    mlm_untrained,
    nsp_untrained,
)
from app.model_sources import current_model
from app.ui import family_note, links, show_figure, widgets
from app.ui.errors import show_errors
from bert.checkpoint.builtins import what_it_read

app.run_through_entry()  # before anything else: see app/__init__.py

COLS = 2  # gaps a row, beside the box
MODES = ["Type [MASK] in a sentence", "Pick words of sentence A to mask"]

st.title("Masked LM & next sentence")
st.markdown(
    "BERT learned language by playing two games on millions of sentences. **Fill the gap**: some "
    "tokens are replaced by `[MASK]` and the model guesses them, using the words on *both* sides. "
    "**Does B follow A?**: given two sentences, say whether the second really came next in the text "
    "or was picked at random."
)


def _random_b() -> None:
    current = st.session_state.get(state.TEXT_B, "")
    choices = [s for s in RANDOM_SENTENCES if s != current]
    state.set_text(state.TEXT_B, random.choice(choices))


def _fill_sentence_a() -> None:
    """Sentence A's [MASK]s to the gap box (a [MASK] typed in Sentence A is filled there)."""
    state.set_text(state.MLM_TEXT, st.session_state.get(state.TEXT_A, ""))
    st.session_state["mlm_mode"] = MODES[0]


def what_it_read_caption(where, bundle) -> None:
    """What the model read, under its guesses (the box and its result come first)."""
    if read := what_it_read(bundle.card):
        where.caption(f"What this model read: {md_escape(read)}")


def _filled_text(tokens, is_pred) -> str:
    """Tokens back to text, with each guessed token in « » and ## pieces glued on."""
    out = []
    for t, p in zip(tokens, is_pred):
        piece = t[2:] if t.startswith("##") else t
        piece = f"«{piece}»" if p else piece
        if t.startswith("##") and out:
            out[-1] += piece
        else:
            out.append(piece)
    return " ".join(out)


st.header("Fill the gap (masked language model)")
model = None
with show_errors("the masked-word predictions"):
    model = current_model()
    b = model.bundle
    if b.is_classifier or not b.has_mlm:
        st.info(
            "This model is a fine-tuned classifier: its masked-word head was replaced by a "
            "classification head, so it cannot fill gaps any more. Pick a pre-trained model in "
            "the sidebar.",
            icon=":material/info:",
        )
    elif family_note.left_to_right(b, "Filling a gap"):
        pass  # the note says why
    else:
        family_note.mask_token(b.tokenizer)
        if mlm_untrained(b):
            st.warning(
                "This model's MLM head is untrained (freshly initialised): the predictions "
                "below are random until it is trained. Pick a model with a trained head for "
                "real guesses.",
                icon=":material/warning:",
            )
        modes = MODES
        links.view(
            links.Param("how", "mlm_mode", "choice", default=modes[0], choices=modes, codes=("type", "pick")),
            links.Param("k", "mlm_k", "int", default=5, lo=1, hi=20, label="candidates per gap"),
        )
        controls, result = st.columns([1, 2], gap="medium")  # the guesses beside their box: one screen
        mode = controls.radio(
            "How to mask",
            modes,
            horizontal=True,
            key="mlm_mode",
        )
        if mode.startswith("Type"):
            with controls:
                text = widgets.mlm_input()
        else:
            with controls:
                st.caption("The words of Sentence A, whose box is under “Does B follow A?” below.")
                a = clean_text(st.session_state.get(state.TEXT_A), "sentence A")
                words = b.tokenizer.words_with_offsets(a)
                words = [w for w in words if w[0].strip()][:300]  # RoBERTa: spaces are words
                chosen = st.multiselect(
                    "Words to hide",
                    list(range(len(words))),
                    key=f"mlm_pick_{zlib.crc32(a.encode())}",
                    format_func=lambda i: f"{words[i][0]} (word {i + 1})",
                    default=[state.default_pick(words)] if words else [],
                )
                text = mask_words(a, words, chosen)
                st.code(text, language=None, wrap_lines=True)
        text = re.sub(r"\[mask\]", "[MASK]", text or "", flags=re.IGNORECASE)
        st.session_state.setdefault("mlm_k", 5)
        k = controls.slider("Candidates per gap", 1, 20, key="mlm_k")
        clean_text(text, "a sentence")
        if count_masks(text) == 0:
            controls.info(
                f"Put [MASK] where a word is missing, for example: “{state.HINT_MLM_TEXT}”", icon=":material/info:"
            )
            what_it_read_caption(result, b)
        else:
            res = mlm_predict(model.key, text, k, b)
            with result:
                if res["truncated"]:
                    st.warning(
                        "The sentence was cut at the model's maximum length; gaps after the cut are not predicted.",
                        icon=":material/content_cut:",
                    )
                st.markdown("**Best guess for every gap:**")
                st.code(_filled_text(res["filled_tokens"], res["filled_is_pred"]), language=None, wrap_lines=True)
                preds = res["predictions"]
                if len(preds) > 1:
                    st.caption(
                        f"{len(preds)} gaps are guessed at the same time, each on its own: a gap "
                        "cannot see what was guessed for the others, so many gaps make each guess harder."
                    )
                for row in range(0, len(preds), COLS):
                    cols = st.columns(COLS)
                    for n, (c, p) in enumerate(zip(cols, preds[row : row + COLS]), start=row + 1):
                        show_figure.show(
                            mlm_topk_bar(p["tokens"], p["probs"], f"gap {n} (token {p['position']})"),
                            f"masked-lm-bar-{n}",
                            where=c,
                            key=f"mlm_bar_{n}",
                            notebook=partial(nb.masked_lm, text=text, k=k) if n == 1 else None,  # every gap
                        )
            what_it_read_caption(result, b)
            st.subheader("Both ways or left only?")
            st.markdown(
                "The same weights can read like an encoder (every token sees every token) or like a "
                "decoder such as GPT (each token sees only the tokens before it)."
            )
            attention_masks.both_ways_and_left(model, text, k)

st.header("Does B follow A? (next sentence prediction)")
st.markdown(
    "The model reads `[CLS] A [SEP] B [SEP]` and its small NSP head, reading the `[CLS]` "
    "vector, gives the probability that B is A's real continuation."
)
text_a, text_b = widgets.sentence_inputs(pair=True)  # below the gap's box: that box is the page's first
if count_masks(text_a):
    st.info(
        "Sentence A has a [MASK]: gaps are filled in the box at the top of the page, not here (the "
        "next-sentence game reads [MASK] as a word like any other).",
        icon=":material/arrow_upward:",
    )
    st.button(
        "Fill Sentence A's gaps at the top", on_click=_fill_sentence_a, icon=":material/edit_note:", key="mlm_from_a"
    )
st.button("Random sentence B", on_click=_random_b, icon=":material/casino:", key="nsp_random")
with show_errors("the next-sentence prediction"):
    model = current_model()
    b = model.bundle
    if b.is_classifier or not b.has_mlm:
        st.info("This model is a fine-tuned classifier: it has no next-sentence head any more.", icon=":material/info:")
    elif family_note.left_to_right(b, "Next-sentence prediction") or family_note.no_next_sentence(b.config):
        pass  # the note says why
    elif not (text_b or "").strip():
        st.info(
            "Type a sentence B above (or press “Random sentence B”) to ask whether it follows A.",
            icon=":material/info:",
        )
    else:
        if nsp_untrained(b):
            st.warning(
                "This model's NSP head is untrained: the probability below is random until it is trained.",
                icon=":material/warning:",
            )
        a = clean_text(text_a, "sentence A")
        p = nsp_probability(model.key, a, text_b.strip(), b)
        st.metric("P(B follows A)", f"{p:.1%}")
        show_figure.show(nsp_bar(p), "next-sentence-bar", key="nsp_bar")

if model is not None and getattr(model.bundle.model, "rtd", None) is not None:  # an ELECTRA discriminator
    st.subheader("Was this word replaced? (ELECTRA's discriminator)")
    st.markdown(
        "ELECTRA's model plays a third game: a small generator puts its guesses into the masks, and "
        "this model says for **every** token whether it is the original or a replacement. Swap a "
        "word for a plausible but wrong one and watch its bar."
    )
    rtd_text = st.text_input(
        "A sentence, perhaps with a word swapped", "The chef ate the meal.", max_chars=widgets.SENTENCE_CHARS
    )
    with show_errors("the replaced-token view"):
        if not model.bundle.replaced_head_trained:
            st.warning("This model's replaced-token head is untrained: its bars are random.", icon=":material/warning:")
        rt = replaced_tokens(model.key, clean_text(rtd_text, "the sentence"), model.bundle)
        show_figure.show(replaced_bar(rt.tokens, rt.probs), "replaced-tokens", key="rtd_bar")
