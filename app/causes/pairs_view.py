"""The Causes page's Minimal pairs view: a sentence and its ungrammatical twin, each scored by the
model's pseudo-log-likelihood; accuracy per built-in paradigm, a pair word by word, typed pairs."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app.analysis_cache import pair_scores, paradigm_scores
from app.figures.causes import pair_word_scores, paradigm_accuracy_bars
from app.ui import links, show_figure
from app.ui.formatting import md_escape
from app.ui.widgets import cap_text, csv_download
from bert.analysis.paradigms import PAIR_SEP, PARADIGMS, parse_pairs

SOURCES = ["Built-in paradigms", "Your pairs"]
TYPED_PAIRS = 50
TYPED_CHARS = 20_000
EXAMPLE = (
    "The cats sleep on the sofa. | The cats sleeps on the sofa.\n"
    "She has never been there. | She has ever been there.\n"
    "The girl who met the boys was happy. | The girl who met the boys were happy."
)
ALL = "mp_all"  # session key: the accuracy of every paradigm was asked for


def _ask_all() -> None:
    st.session_state[ALL] = True


def _pairs_table(res) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "good sentence": [s.text for s in res.good],
            "bad sentence": [s.text for s in res.bad],
            "PLL good": [s.total for s in res.good],
            "PLL bad": [s.total for s in res.bad],
            "difference": res.differences,
            "model right": res.correct,
        }
    )


def _one_pair(res, key: str) -> None:
    n = len(res.good)
    i = st.selectbox(
        "A pair word by word",
        list(range(n)),
        key=key,
        format_func=lambda i: f"{i + 1}. {res.good[i].text}  vs  {res.bad[i].text}",
    )
    g, b = res.good[i], res.bad[i]
    show_figure.show(
        pair_word_scores(g.words, g.word_scores, b.words, b.word_scores),
        "minimal-pair-words",
        key=f"{key}_fig",
        caption=f"Good sentence {g.total:.2f}, bad sentence {b.total:.2f}: the model "
        f"{'prefers the good one' if res.correct[i] else 'prefers the bad one'} by {abs(res.differences[i]):.2f}.",
    )


def _results(res, name: str, key: str) -> None:
    right = int(res.correct.sum())
    st.metric("The model prefers the good sentence", f"{right} of {len(res.correct)} pairs ({res.accuracy:.0%})")
    if len(res.correct) == 1:
        st.info("One pair says right or wrong once: add more pairs to measure an accuracy.", icon=":material/info:")
    table = _pairs_table(res)
    st.dataframe(
        table,
        hide_index=True,
        width="stretch",
        column_config={c: st.column_config.NumberColumn(format="%.2f") for c in ("PLL good", "PLL bad", "difference")},
    )
    csv_download(table, "Download the pairs (CSV)", f"minimal-pairs-{name}.csv", key=f"{key}_csv")
    _one_pair(res, f"{key}_pair")


def _every_paradigm(model, word_level: bool) -> None:
    names = list(PARADIGMS)
    scores = [paradigm_scores(model.key, n, word_level, model.bundle) for n in names]
    show_figure.show(
        paradigm_accuracy_bars(names, [s.accuracy for s in scores], [len(s.correct) for s in scores]),
        "minimal-pairs-paradigms",
        key="mp_all_fig",
    )


def render(model) -> None:
    st.markdown(
        "A **minimal pair** is a sentence and a twin that breaks one rule of English. The model scores "
        "each sentence by masking every token in turn and adding up the log-probability it gives the "
        "real token (the *pseudo-log-likelihood*, PLL). It is right on a pair when the good sentence "
        "scores higher: no training, no labels, only what pre-training taught it."
    )
    links.view(
        links.Param("pairs", "mp_source", "choice", default=SOURCES[0], choices=SOURCES, codes=("builtin", "yours")),
        links.Param("paradigm", "mp_paradigm", "choice", default=next(iter(PARADIGMS)), choices=list(PARADIGMS)),
    )
    c1, c2 = st.columns([2, 1])
    source = c1.radio("Pairs", SOURCES, horizontal=True, key="mp_source")
    word_level = c2.checkbox(
        "Word-level scores",
        key="mp_word",
        help="When a word is split into pieces, mask its later pieces too, so no piece is guessed from "
        "its own word (Kauf & Ivanova 2023).",
    )
    if source == SOURCES[0]:
        name = st.selectbox("Paradigm", list(PARADIGMS), key="mp_paradigm")
        st.caption(f"{PARADIGMS[name].about} {len(PARADIGMS[name].pairs)} pairs written from a template.")
        _results(paradigm_scores(model.key, name, word_level, model.bundle), name, "mp_builtin")
        st.subheader("Every paradigm")
        st.button("Score every paradigm", key="mp_all_button", on_click=_ask_all)
        if st.session_state.get(ALL):
            _every_paradigm(model, word_level)
        else:
            st.caption(f"{len(PARADIGMS)} paradigms, {sum(len(p.pairs) for p in PARADIGMS.values())} pairs.")
    else:
        st.session_state.setdefault("mp_typed", EXAMPLE)
        typed = st.text_area(
            f"One pair a line: good sentence {PAIR_SEP} bad sentence (at most {TYPED_PAIRS} pairs)",
            key="mp_typed",
            max_chars=TYPED_CHARS,
            height=160,
        )
        pairs = parse_pairs(cap_text(typed, "The pairs", TYPED_CHARS), TYPED_PAIRS)
        st.caption(f"{len(pairs)} pair{'s' if len(pairs) != 1 else ''} read; first: {md_escape(pairs[0][0])}")
        _results(pair_scores(model.key, tuple(pairs), word_level, model.bundle), "yours", "mp_typed_res")
