"""The Causes page's Minimal pairs view: a sentence and its ungrammatical twin, each scored by the
model's pseudo-log-likelihood; accuracy per built-in paradigm, a pair word by word (with one
sentence on why, when the words that differ favour one sentence and the total the other), typed
pairs."""

from __future__ import annotations

import zlib
from functools import partial

import numpy as np
import pandas as pd
import streamlit as st

from app.analysis_cache import pair_scores, paradigm_scores
from app.class_store.class_pairs import PAIRS_A_POST, PAIRS_EACH, PAIRS_PER_ADDRESS, POSTED_TOKENS, ClassPairs
from app.class_store.errors import BoardError
from app.class_store.service import JOINED, board_store, enabled
from app.export.causes_notebooks import every_paradigm, minimal_pairs
from app.figures.causes import pair_word_scores, paradigm_accuracy_bars
from app.formatting import md_escape
from app.server.guard import tab_closed
from app.server.new_students import address_key, client_address
from app.server.rate_limit import within_rate
from app.server.shared_network import class_size
from app.students import student_key
from app.ui import links, show_figure
from app.ui.widgets import cap_text, csv_download, number_table
from bert import settings
from bert.analysis.paradigms import PAIR_SEP, PARADIGMS, parse_pairs
from bert.analysis.scoring import MAX_TOKENS, SentenceScore, pairs_within, sentence_tokens, split_pair
from bert.errors import Cancelled

SOURCES = ["Built-in paradigms", "Your pairs"]
TYPED_PAIRS = 50
TYPED_CHARS = 20_000
EXAMPLE = (
    "The cats sleep on the sofa. | The cats sleeps on the sofa.\n"
    "She has never been there. | She has ever been there.\n"
    "The girl who met the boys was happy. | The girl who met the boys were happy."
)
ALL = "mp_all"  # session key: the accuracy of every paradigm was asked for
POSTED = "mp_posted"  # session key: (kind, message) of the last post to the class board


def _ask_all() -> None:
    st.session_state[ALL] = True


def _post(code: str, pairs: list[tuple[str, str]], tokenizer) -> None:
    """The post button's callback: the outcome is left for the page as (kind, message)."""
    try:
        for s in (s for pair in pairs for s in pair):
            if (n := sentence_tokens(tokenizer, s)) > POSTED_TOKENS:
                raise BoardError(
                    f"A sentence posted to the board is at most {POSTED_TOKENS} tokens (the board scores every "
                    f"pair): «{s[:60]}» is {n}{'+' if n > MAX_TOKENS else ''}."
                )
        ip = client_address()
        where = None if ip is None else address_key(ip)
        cap = max(PAIRS_PER_ADDRESS, class_size(where) * PAIRS_EACH)  # a declared class: each student's share
        n = ClassPairs(board_store()).post(code, student_key(), pairs, address=where, address_cap=cap)
    except BoardError as e:
        st.session_state[POSTED] = ("error", str(e))
        return
    said = (
        f"{n} pair{'s' if n != 1 else ''} posted to board {code}" if n else f"These pairs are on board {code} already"
    )
    st.session_state[POSTED] = ("success", f"{said}: the Class board page scores the class's pairs.")


def _board_post(pairs: list[tuple[str, str]], tokenizer) -> None:
    """The button that posts the typed pairs to the joined class board (only when one is joined)."""
    code = st.session_state.get(JOINED)
    if not code or not enabled():
        return
    st.button(
        f"Post these pairs to class board {code}",
        key="mp_post",
        icon=":material/send:",
        on_click=_post,
        args=(code, pairs, tokenizer),
        help=f"At most {PAIRS_A_POST} at once; the board shows the sentences, never who posted them.",
    )
    note = st.session_state.pop(POSTED, None)
    if note:
        (st.error if note[0] == "error" else st.success)(md_escape(note[1]))


def _within_budget(model, pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The first pairs whose scoring reads at most BERT_EXPLORER_PAIR_TOKENS tokens, saying what is left out."""
    budget = settings.whole("BERT_EXPLORER_PAIR_TOKENS")
    kept, used, asked = pairs_within(model.bundle.tokenizer, pairs, budget)
    if len(kept) < len(pairs):
        st.info(
            f"Scoring your {len(pairs)} pairs would make the model read {asked:,} tokens (a sentence is read once "
            f"for each of its tokens, masked in turn): this server reads at most {budget:,} in one go. "
            + (
                f"The first {len(kept)} pairs ({used:,} tokens) are scored; shorten or remove pairs to score the rest."
                if kept
                else "Shorten the first pair's sentences."
            ),
            icon=":material/content_cut:",
        )
    return kept


def _may_score(model, pairs: list[tuple[str, str]], word_level: bool) -> bool:
    """The per-minute rule of this session's new sets of pairs; a message and a retry button when over."""
    return within_rate(
        "pairs",
        (model.key, tuple(pairs), word_level),
        settings.whole("BERT_EXPLORER_PAIRS_PER_MINUTE"),
        "new sets of pairs",
        "scoring runs the model once per token",
        "Score them",
        "mp_retry",
    )


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


def _words(words: list[tuple[str, float]]) -> str:
    return f"«{' '.join(w for w, _ in words)}» {sum(s for _, s in words):.2f}" if words else "nothing (0)"


def chart_vs_total(good: SentenceScore, bad: SentenceScore) -> str:
    """One sentence on why the words that differ favour one sentence while the total favours the
    other (the shared words moved the other way, by more); "" when both favour the same one. Plain
    text, the words in «»."""
    split = split_pair(good, bad)
    total = good.total - bad.total
    if split.changed * total >= 0:
        return ""
    side, other = ("good", "bad") if split.changed > 0 else ("bad", "good")
    word, g, b = max(split.shared_words, key=lambda w: (w[1] - w[2]) * np.sign(total))
    return (
        f"The words that differ ({_words(split.good_words)} vs {_words(split.bad_words)}) favour the {side} "
        f"sentence by {abs(split.changed):.2f}, but the words both share score {abs(split.shared):.2f} higher "
        f"in the {other} one (most of all «{word}»: {g:.2f} in the good, {b:.2f} in the bad), so the total "
        f"favours the {other} sentence by {abs(total):.2f}."
    )


def _one_pair(res, key: str, notebook) -> None:
    """One pair's words side by side. The picker's key holds the pairs: another set of pairs is
    another picker (a kept one would go on showing the old pairs' labels). `notebook`: the view's
    notebook builder, all but the picked pair bound."""
    n = len(res.good)
    digest = zlib.crc32("\n".join(f"{g.text}|{b.text}" for g, b in zip(res.good, res.bad, strict=True)).encode())
    i = st.selectbox(
        "A pair word by word",
        list(range(n)),
        key=f"{key}_{digest:08x}",
        format_func=lambda i: f"{i + 1}. {res.good[i].text}  vs  {res.bad[i].text}",
    )
    g, b = res.good[i], res.bad[i]
    show_figure.show(
        pair_word_scores(g.words, g.word_scores, b.words, b.word_scores),
        "minimal-pair-words",
        key=f"{key}_fig",
        caption=f"Good sentence {g.total:.2f}, bad sentence {b.total:.2f}: the model "
        f"{'prefers the good one' if res.correct[i] else 'prefers the bad one'} by {abs(res.differences[i]):.2f}. "
        f"{chart_vs_total(g, b)}".strip(),
        notebook=partial(notebook, pick=i),
    )


def _results(res, name: str, key: str, notebook) -> None:
    right = int(res.correct.sum())
    st.metric("The model prefers the good sentence", f"{right} of {len(res.correct)} pairs ({res.accuracy:.0%})")
    if len(res.correct) == 1:
        st.info("One pair says right or wrong once: add more pairs to measure an accuracy.", icon=":material/info:")
    table = _pairs_table(res)
    number_table(table, ("PLL good", "PLL bad", "difference"), "%.2f")
    csv_download(table, "Download the pairs (CSV)", f"minimal-pairs-{name}.csv", key=f"{key}_csv")
    _one_pair(res, f"{key}_pair", notebook)


def _every_paradigm(model, word_level: bool) -> None:
    names = list(PARADIGMS)
    scores = [paradigm_scores(model.key, n, word_level, model.bundle) for n in names]
    show_figure.show(
        paradigm_accuracy_bars(names, [s.accuracy for s in scores], [len(s.correct) for s in scores]),
        "minimal-pairs-paradigms",
        key="mp_all_fig",
        notebook=partial(every_paradigm, word_level=word_level),
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
        _results(
            paradigm_scores(model.key, name, word_level, model.bundle),
            name,
            "mp_builtin",
            partial(minimal_pairs, paradigm=name, pairs=None, word_level=word_level),
        )
        st.header("Every paradigm")  # h2 under the page's h1
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
        scored = _within_budget(model, pairs)
        if scored and _may_score(model, scored, word_level):
            try:
                res = pair_scores(model.key, tuple(scored), word_level, model.bundle, tab_closed())
            except Cancelled:
                st.stop()  # its tab is closed: nobody is left to draw for
            _results(
                res,
                "yours",
                "mp_typed_res",
                partial(minimal_pairs, paradigm=None, pairs=scored, word_level=word_level),
            )
        _board_post(pairs, model.bundle.tokenizer)
