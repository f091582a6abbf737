"""The Causes page's Probes view: a linear probe trained per layer on frozen word vectors, for a
property of Brown's words, beside a control task; one model or two side by side."""

from __future__ import annotations

from functools import partial

import pandas as pd
import streamlit as st

from app.analysis_cache import probe_curve
from app.export.causes_notebooks import probes
from app.export.notebook import ModelRef
from app.figures.causes import probe_curves
from app.formatting import md_escape
from app.model_sources import model_for
from app.ui import links, show_figure
from app.ui.widgets import csv_download
from bert.analysis.probe_data import PROPERTIES
from bert.checkpoint.builtins import available_builtins

SIZES = [60, 150, 300, 600]  # Brown sentences; 300 on minilm-l6 trains in about 20 s on one core
NONE = "(no second model)"
RAN = "pr_ran"  # session key: the probes were asked for (they train on a button, then stay shown)


def _ask() -> None:
    st.session_state[RAN] = True


def _table(named) -> pd.DataFrame:
    rows = []
    for name, c in named:
        for i, r in enumerate(c.rows):
            rows.append(
                {
                    "model": name,
                    "vectors": r,
                    "accuracy": float(c.accuracy[i]),
                    "control": float(c.control[i]),
                    "selectivity": float(c.selectivity[i]),
                }
            )
    return pd.DataFrame(rows)


def render(model) -> None:
    st.markdown(
        "Is a word's part of speech *written* in its vector at layer 3? Train a small linear "
        "classifier (a **probe**) on the frozen vectors of one layer and test it on new sentences. A "
        "**control task** gives every word type a random tag of its own: a probe that does well "
        "there only memorises words. **Selectivity** (accuracy minus control) is what the layer "
        "knows, not what the probe can learn."
    )
    links.view(links.Param("property", "pr_prop", "choice", default=next(iter(PROPERTIES)), choices=list(PROPERTIES)))
    c1, c2, c3 = st.columns(3)
    prop = c1.selectbox("Property", list(PROPERTIES), key="pr_prop", format_func=PROPERTIES.get)
    n = c2.select_slider("Brown sentences", SIZES, value=300, key="pr_sentences")
    others = [NONE] + [b for b in available_builtins() if f"builtin:{b}" != model.key]
    beside = c3.selectbox("Beside it", others, key="pr_beside")
    st.button("Train the probes", key="pr_run", icon=":material/play_arrow:", on_click=_ask)
    if not st.session_state.get(RAN):
        st.caption(f"One probe per layer and one per control, on {n} sentences: seconds to a minute.")
        return
    models = [model] + ([model_for(beside)] if beside != NONE else [])
    named = [(m.bundle.name, probe_curve(m.key, prop, n, m.bundle)) for m in models]
    first = named[0][1]
    best = int(first.selectivity.argmax())
    show_figure.show(
        probe_curves(named),
        f"probes-{prop}",
        key="pr_fig",
        caption=f"{named[0][0]}: the most selective vectors are {first.rows[best]} "
        f"(accuracy {first.accuracy[best]:.2f}, control {first.control[best]:.2f}).",
        notebook=partial(
            probes,
            prop=prop,
            n_sentences=n,
            beside=ModelRef(models[1].key, models[1].bundle.name) if len(models) > 1 else None,
        ),
    )
    st.caption(
        f"{first.n_train} words to train on, {first.n_test} to test on (other sentences), "
        f"{len(first.classes)} classes: {', '.join(first.classes)}. Chance (always the most frequent): "
        f"{first.majority:.2f}; the control's chance {first.control_majority:.2f}. "
        + " ".join(f"{md_escape(name)}: {c.seconds:.0f} s." for name, c in named)
    )
    table = _table(named)
    st.dataframe(table, hide_index=True, width="stretch")
    csv_download(table, "Download the curves (CSV)", f"probes-{prop}.csv", key="pr_csv")
