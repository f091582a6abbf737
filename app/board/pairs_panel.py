"""The Class board page's minimal pairs: the pairs the class posted from the Causes page
(app/board/class_pairs.py), each scored by the model this screen has loaded (its
pseudo-log-likelihood, bert/analysis/scoring.py): the model's hit or miss on each, and its hit
rate over the class's pairs. A pair the model cannot score (too long for it, a [MASK]) says why
in its row; a table cell is text, so nothing a student typed runs as markup."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from bert import InputError

from ..analysis_cache import pair_scores
from ..model_sources import current_model
from ..ui.formatting import md_escape
from .class_pairs import ClassPairs
from .service import board_store
from .store import BoardError

HIT, MISS = "hit", "miss"


def scored_rows(model, pairs: list[tuple[str, str]]) -> pd.DataFrame:
    """One row a pair: the sentences, their PLLs, the difference and the model's verdict (hit: the
    good sentence scores higher; miss; or why it is not scored). Each pair is cached on its own, so
    a pair posted later scores only itself."""
    rows = []
    for good, bad in pairs:
        row = {"good sentence": good, "bad sentence": bad, "PLL good": None, "PLL bad": None, "difference": None}
        try:
            res = pair_scores(model.key, ((good, bad),), False, model.bundle)
        except InputError as e:
            row["model"] = f"not scored: {e}"
        else:
            row.update(
                {
                    "PLL good": res.good[0].total,
                    "PLL bad": res.bad[0].total,
                    "difference": float(res.differences[0]),
                    "model": HIT if res.correct[0] else MISS,
                }
            )
        rows.append(row)
    return pd.DataFrame(rows)


def render(code: str) -> None:
    """The class's pairs and the loaded model's verdict on each."""
    try:
        pairs = ClassPairs(board_store()).pairs(code)
    except BoardError:
        return  # the posted runs' section says why
    st.subheader("The class's minimal pairs")
    if not pairs:
        st.caption(
            "No pairs yet: students post theirs from the Causes page (Minimal pairs, Your pairs), and "
            "the model loaded here scores each one."
        )
        return
    model = current_model()
    if not model.bundle.has_mlm:
        st.info(
            "Scoring a pair reads the masked-word head, and this model has none: pick a pre-trained model "
            "in the sidebar to score the class's pairs.",
            icon=":material/info:",
        )
        return
    table = scored_rows(model, pairs)
    hits, scored = int((table["model"] == HIT).sum()), int(table["model"].isin([HIT, MISS]).sum())
    rate = f" ({hits / scored:.0%})" if scored else ""
    st.metric(f"{md_escape(model.label)} prefers the good sentence", f"{hits} of {scored} pairs{rate}")
    st.dataframe(
        table,
        hide_index=True,
        width="stretch",
        column_config={c: st.column_config.NumberColumn(format="%.2f") for c in ("PLL good", "PLL bad", "difference")},
    )
    st.caption(
        f"{len(pairs)} pair(s) posted. A hit: the model scores the good sentence higher (the sum of "
        "log P of each token with it masked). The teacher's key clears them with the board's runs."
    )
