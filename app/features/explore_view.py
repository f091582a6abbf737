"""The Features page's reading of a trained dictionary: one feature's card, a typed sentence's
strongest features, and steering (a feature set to a value, or zeroed, at chosen tokens, the
[MASK] guesses before and after). The dictionary is the model's or the control's."""

from __future__ import annotations

import zlib
from functools import partial

import pandas as pd
import streamlit as st

from app.export.features_notebooks import feature_card as card_notebook
from app.figures.features import activation_histogram
from app.formatting import clean_text, md_escape
from app.run_session.dictionaries import FEATURE
from app.ui import show_figure
from app.ui.widgets import SENTENCE_CHARS, cap_help, cap_text
from bert.analysis.dictionary_features import feature_card, text_features
from bert.analysis.dictionary_steering import MAX_CLAMP, steer

from .training_view import FeaturesRun, Trained

STEER_TEXT = "The capital of France is [MASK]."
SENTENCE = "The cat sat on the mat."


def _joined(tokens: list[str]) -> str:
    """Word pieces as text ("play ##ing" -> "playing")."""
    return " ".join(tokens).replace(" ##", "")


def _pick(run: FeaturesRun, key: str) -> Trained:
    names = list(run.dictionaries)
    if len(names) == 1:
        return run.dictionaries[names[0]]
    return run.dictionaries[st.radio("Dictionary", names, horizontal=True, key=key)]


def card(run: FeaturesRun) -> None:
    t = _pick(run, "ft_card_of")
    d = t.dictionary
    if int(st.session_state.get(FEATURE) or 0) >= d.n_features:  # a link's feature past this dictionary's
        st.info(f"This dictionary has {d.n_features:,} features: showing the last.", icon=":material/link:")
        st.session_state[FEATURE] = d.n_features - 1
    feature = int(st.number_input("Feature", 0, d.n_features - 1, key=FEATURE))
    c = feature_card(t.bundle, d, t.held_out, t.codes, feature)
    st.markdown(
        f"**Feature {feature}** is active on **{c.fires:,}** of {c.tokens:,} held-out word pieces "
        f"({c.frequency:.2%}), {c.mean_activation:.2f} on average when it is."
    )
    if not c.fires:
        st.info("It is active on none of the held-out text (a dead feature).", icon=":material/info:")
    left, right = st.columns([3, 2])
    with left:
        st.markdown("**Where it is strongest** (held-out text; the token in the middle column)")
        st.dataframe(
            pd.DataFrame(
                {
                    "before": [_joined(x.tokens[: x.position]) for x in c.contexts],
                    "token": [x.tokens[x.position] for x in c.contexts],
                    "after": [_joined(x.tokens[x.position + 1 :]) for x in c.contexts],
                    "activation": [round(x.activation, 3) for x in c.contexts],
                }
            ),
            hide_index=True,
            width="stretch",
        )
        if c.fires:
            notebook = None
            if run.builtin:  # a session's dictionary lives on the server: only the built-in one opens elsewhere
                sentence = st.session_state.get("ft_sentence") or SENTENCE
                notebook = partial(card_notebook, feature=feature, sentence=sentence, held_out=len(run.held_out_texts))
            show_figure.show(
                activation_histogram(*c.histogram, feature),
                f"feature_{feature}_histogram",
                key="ft_hist",
                notebook=notebook,
            )
    with right:
        st.markdown("**What its direction does to the masked-word head** (logit change)")
        st.dataframe(
            pd.DataFrame(
                {
                    "promotes": [w for w, _ in c.promoted],
                    "+": [round(v, 2) for _, v in c.promoted],
                    "suppresses": [w for w, _ in c.suppressed],
                    "−": [round(v, 2) for _, v in c.suppressed],
                }
            ),
            hide_index=True,
            width="stretch",
        )
        st.caption(
            f"The head reads the dictionary's centre plus the feature's direction times "
            f"{c.mean_activation or 1.0:.2f} (its mean activation), against the centre alone, as the logit "
            f"lens reads a middle layer."
        )


def _typed_sentence(label: str, default: str, key: str) -> str:
    """A sentence box, capped and cleaned (InputError: nothing left to read)."""
    typed = st.text_input(label, default, key=key, max_chars=SENTENCE_CHARS, help=cap_help(SENTENCE_CHARS))
    return clean_text(cap_text(typed, "The sentence"), "the sentence")


def sentence(run: FeaturesRun) -> None:
    t = _pick(run, "ft_sentence_of")
    text = _typed_sentence("A sentence", SENTENCE, "ft_sentence")
    tf = text_features(t.bundle, t.dictionary, text, k=3)
    rows = []
    for p, feats in tf.features.items():
        row = {"token": tf.tokens[p]}
        for i, (f, v) in enumerate(feats, 1):
            row[f"feature {i}"] = f
            row[f"activation {i}"] = round(v, 2)
        rows.append(row)
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    st.caption(
        "Each word piece's three strongest features. Type a feature's number in the Feature card tab to read it."
    )


def steering(run: FeaturesRun) -> None:
    t = _pick(run, "ft_steer_of")
    d = t.dictionary
    text = _typed_sentence("A sentence with [MASK]", STEER_TEXT, "ft_steer_text")
    tokens = list(t.bundle.tokenizer.encode(text, max_length=t.bundle.config.max_tokens).tokens)
    words = list(range(1, len(tokens) - 1))
    c1, c2, c3 = st.columns([1, 1, 3])
    feature = int(c1.number_input("Feature", 0, d.n_features - 1, key="ft_steer_feature"))
    value = float(c2.number_input("Set it to", -MAX_CLAMP, MAX_CLAMP, 0.0, key="ft_steer_value"))
    where = c3.multiselect(
        "At the tokens (none chosen: every word piece)",
        words,
        format_func=lambda i: f"{i}: {tokens[i]}",
        key=f"ft_steer_at_{zlib.crc32(text.encode())}",  # a new text: a new choice (old indices may not exist)
    )
    s = steer(t.bundle, d, text, feature, value, positions=where or None)
    active = [(p, v) for p, v in zip(s.positions, s.was, strict=True) if v > 0]
    said = ", ".join(f"{v:.2f} at *{md_escape(s.tokens[p])}*" for p, v in active) or "not active at these tokens"
    st.markdown(f"Feature {feature} was {said}; set to {value:g} at {len(s.positions)} token(s).")
    for n, m in enumerate(s.masks):
        st.markdown(f"**[MASK] at token {m}**")
        st.dataframe(
            pd.DataFrame(
                {
                    "before": [w for w, _ in s.before[n]],
                    "p before": [round(p, 3) for _, p in s.before[n]],
                    "after": [w for w, _ in s.after[n]],
                    "p after": [round(p, 3) for _, p in s.after[n]],
                }
            ),
            hide_index=True,
        )
