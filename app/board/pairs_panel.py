"""The Class board page's minimal pairs: the pairs the class posted from the Causes page
(app/class_store/class_pairs.py), each scored by the model this screen has loaded (its
pseudo-log-likelihood, bert/analysis/scoring.py): the model's hit or miss on each, and its hit
rate over the class's pairs. A pair is scored once per model, in the server's analysis places,
and its scores are kept with the pair: a page run reads them. A pair the model cannot score (a
sentence over POSTED_TOKENS of its tokens, a [MASK]) says why in its row; a table cell is text, so
nothing a student typed runs as markup. The teacher removes one pair (`remove_control`)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from bert import InputError
from bert.analysis.scoring import sentence_tokens

from ..analysis_cache import pair_scores
from ..class_store.class_pairs import POSTED_TOKENS, ClassPairs
from ..class_store.errors import BoardError
from ..class_store.service import board_store
from ..formatting import md_escape
from ..model_sources import current_model
from ..ui.widgets import lacks_mlm, number_table

HIT, MISS = "hit", "miss"
REMOVE_PAIR = "board_remove_pair"


def pair_verdict(model, good: str, bad: str) -> tuple[float | None, float | None, str | None]:
    """(PLL good, PLL bad, None), or (None, None, why it is not scored)."""
    tok = model.bundle.tokenizer
    if max(sentence_tokens(tok, good), sentence_tokens(tok, bad)) > POSTED_TOKENS:
        return None, None, f"a sentence is longer than {POSTED_TOKENS} of this model's tokens"
    try:
        res = pair_scores(model.key, ((good, bad),), False, model.bundle)
    except InputError as e:
        return None, None, str(e)
    return res.good[0].total, res.bad[0].total, None


def scored_rows(model, code: str, store=None) -> tuple[pd.DataFrame, list[tuple[int, str, str]]]:
    """One row a pair: the sentences, their PLLs, the difference and the model's verdict (hit: the
    good sentence scores higher; miss; or why it is not scored); and the pairs as (id, good, bad).
    Pairs this model has not scored yet are scored now and their scores kept with them."""
    pairs = ClassPairs(store or board_store())
    got = pairs.scored(code, model.key)
    fresh = {i: pair_verdict(model, g, b) for i, g, b, sc in got if sc is None}
    if fresh:
        pairs.keep_scores(code, model.key, fresh)
    rows = []
    for i, good, bad, sc in got:
        pll_good, pll_bad, why = fresh[i] if sc is None else sc
        row = {"good sentence": good, "bad sentence": bad, "PLL good": pll_good, "PLL bad": pll_bad}
        row["difference"] = None if why or pll_good is None else pll_good - pll_bad
        row["model"] = f"not scored: {why}" if why or pll_good is None else HIT if pll_good > pll_bad else MISS
        rows.append(row)
    return pd.DataFrame(rows), [(i, g, b) for i, g, b, _ in got]


def render(code: str) -> list[tuple[int, str, str]]:
    """The class's pairs and the loaded model's verdict on each; the pairs as (id, good, bad)."""
    try:
        pairs = ClassPairs(board_store()).pairs(code)
    except BoardError:
        return []  # the posted runs' section says why
    st.subheader("The class's minimal pairs")
    if not pairs:
        st.caption(
            "No pairs yet: students post theirs from the Causes page (Minimal pairs, Your pairs), and "
            "the model loaded here scores each one."
        )
        return []
    model = current_model()
    if lacks_mlm(model.bundle, "Scoring the class's pairs"):
        return [(i, g, b) for i, g, b, _ in ClassPairs(board_store()).scored(code, None)]
    table, listed = scored_rows(model, code)
    hits, scored = int((table["model"] == HIT).sum()), int(table["model"].isin([HIT, MISS]).sum())
    rate = f" ({hits / scored:.0%})" if scored else ""
    st.metric(f"{md_escape(model.label)} prefers the good sentence", f"{hits} of {scored} pairs{rate}")
    number_table(table, ("PLL good", "PLL bad", "difference"), "%.2f")
    st.caption(
        f"{len(pairs)} pair(s) posted. A hit: the model scores the good sentence higher (the sum of "
        "log P of each token with it masked). The teacher's key removes one pair, or clears them with the "
        "board's runs."
    )
    return listed


def remove_control(code: str, pairs: list[tuple[int, str, str]], key_field: str, note: str) -> None:
    """The teacher's "Remove this pair" (the board's key typed in session key `key_field`): that
    pair only; the outcome left under session key `note` as (kind, message)."""
    names = {i: f"{g}  vs  {b}" for i, g, b in pairs}
    st.selectbox("Pair", list(names), key=REMOVE_PAIR, format_func=names.get)
    st.button("Remove this pair", key="board_remove_pair_button", on_click=_remove, args=(code, key_field, note, names))


def _remove(code: str, key_field: str, note: str, names: dict[int, str]) -> None:
    pair = st.session_state.get(REMOVE_PAIR)
    try:
        gone = pair is not None and ClassPairs(board_store()).remove(code, st.session_state.get(key_field, ""), pair)
    except BoardError as e:
        st.session_state[note] = ("error", str(e))
        return
    what = f"The pair «{names.get(pair, '')}»"
    st.session_state[note] = ("info", f"{what} is removed." if gone else f"{what} was removed already.")
