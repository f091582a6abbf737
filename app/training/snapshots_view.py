"""Compare's "Attention over training": the attention snapshots this session's training runs
recorded (app/run_session/snapshots.py), replayed step by step, with how far each head moved since
the first snapshot."""

import streamlit as st

from app.export import choices
from app.figures.attention import attention_heatmap
from app.figures.compare import change_over_training, moved_heatmap
from app.formatting import md_escape
from app.run_session.snapshots import SNAPSHOTS
from app.ui import show_figure
from app.ui.errors import show_errors
from app.ui.widgets import index_slider


def attention_over_training() -> None:
    st.markdown(
        "While a model trains, its attention changes. A training run can record the attention of "
        "one probe sentence every few steps; replay them here with the slider, and see which heads "
        "changed most since the start."
    )
    runs = {k: v for k, v in st.session_state.get(SNAPSHOTS, {}).items() if len(v)}
    if not runs:
        st.info(
            "No recordings in this session yet. Start a fine-tuning or pre-training run that records "
            "attention snapshots; they appear here while it runs.",
            icon=":material/info:",
        )
    else:
        with show_errors("the attention snapshots"):
            run = st.selectbox("Training run", list(runs), key="snap_run")
            rec = runs[run]
            steps, atts = rec.view()  # (S, L, H, T, T)
            change = rec.change_since_start(atts)  # (S, L, H)
            S, L, H = change.shape
            st.caption(f"Probe sentence: {md_escape(rec.sentence)} · {S} snapshots, one every {rec.every} steps or so")
            i = st.select_slider(
                "Training step",
                list(range(S)),
                value=S - 1,
                key=f"snap_step_{run}",
                format_func=lambda j: f"{steps[j]}",
            )
            c1, c2 = st.columns(2)
            layer = index_slider(c1, "Layer", L, key="snap_layer")
            head = index_slider(c2, "Head", H, key="snap_head")
            left, right = st.columns(2)
            held_steps, snaps = rec.held()  # every step, layer and head in the saved files
            picks = [None] * 3
            if held_steps == list(steps):  # else a snapshot came or went meanwhile: the files keep what is shown
                picks = choices.training_snapshots(held_steps, snaps, rec.tokens, (i, layer, head))
            show_figure.show(
                attention_heatmap(
                    atts[i, layer, head], rec.tokens, title=f"step {steps[i]}, layer {layer + 1}, head {head + 1}"
                ),
                "compare-snapshots-att",
                where=left,
                key="snap_att",
                choice=picks[0],
            )
            show_figure.show(
                moved_heatmap(change[i], (layer, head), "moved since the first snapshot"),
                "compare-snapshots-moved",
                where=right,
                key="snap_moved",
                choice=picks[1],
            )
            show_figure.show(
                change_over_training(steps, change, (layer, head), i),
                "compare-snapshots-line",
                key="snap_line",
                choice=picks[2],
            )
