"""Head ablation: switch attention heads off and watch the prediction change."""

from itertools import islice

import pandas as pd
import streamlit as st

import app
from app import analysis_plots as ap
from app import figures, widgets
from app.cache import class_probs, importance, mlm_topk, off_key
from app.errors import show_errors
from app.helpers import clean_text, md_escape, mlm_untrained
from app.resources import current_model

app.run_through_entry()  # before anything else: see app/__init__.py

OFF = "abl_off"  # list of switched-off (layer, head) pairs, 0-based; survives page switches
VERSION = "abl_version"  # bumped to draw a fresh grid after a button or an edit
K, TOP = 5, 10

st.title("Head ablation")
st.markdown(
    "Switch heads off and see what the model loses. A switched-off head's output is replaced by "
    "zeros, so that layer works with its other heads (and the residual path that skips it). "
    "Most single heads can go without much harm; a few carry a prediction on their own."
)


def _set_off(off) -> None:
    st.session_state[OFF] = [list(p) for p in off_key(off)]
    st.session_state[VERSION] = st.session_state.get(VERSION, 0) + 1


def _on_edit(grid_key: str, L: int, H: int) -> None:
    """Apply the grid's edits ({row: {"H3": False}}) to the stored list of switched-off heads.

    The grid has a fixed L x H shape; an edit outside it, or not a tick, is ignored."""
    off = {tuple(p) for p in st.session_state.get(OFF, [])}
    edits = (st.session_state.get(grid_key) or {}).get("edited_rows") or {}
    for row, cols in islice(edits.items(), L):
        for col, on in islice((cols if isinstance(cols, dict) else {}).items(), H):
            try:
                pair = (int(row), int(str(col)[1:]) - 1)
            except ValueError:
                continue
            if 0 <= pair[0] < L and 0 <= pair[1] < H and isinstance(on, bool):
                (off.discard if on else off.add)(pair)
    _set_off(off)


with show_errors("the ablation"):
    model = current_model()
    b = model.bundle
    L, H = b.config.num_hidden_layers, b.config.num_attention_heads
    if b.is_classifier:
        text, _ = widgets.sentence_inputs(pair=False, label_a="A text to classify")
    else:
        if mlm_untrained(b):
            st.warning(
                "This model's masked-word head is untrained (freshly initialised): the guesses "
                "are random, so switching heads off changes noise. Pick a model with a trained "
                "head when one is available.",
                icon=":material/warning:",
            )
        text = widgets.mlm_input()
    text = clean_text(text, "the text")
    off = off_key(p for p in st.session_state.get(OFF, []) if p[0] < L and p[1] < H)
    imp = importance(model.key, text, b)
    ranking = imp.ranking()

    st.subheader("Heads on (✓) and off")
    c1, c2, c3 = st.columns(3)
    c1.button("All heads on", key="abl_all_on", on_click=_set_off, args=((),), width="stretch")
    c2.button(
        f"Switch off the {K} most important",
        key="abl_top",
        width="stretch",
        on_click=_set_off,
        args=([(l, h) for l, h, _ in ranking[:K]],),
    )
    c3.button(
        f"Switch off the {L * H - K} least important",
        key="abl_rest",
        width="stretch",
        on_click=_set_off,
        args=([(l, h) for l, h, _ in ranking[K:]],),
    )
    grid = pd.DataFrame(
        {f"H{h + 1}": [(l, h) not in off for l in range(L)] for h in range(H)},
        index=[f"layer {l + 1}" for l in range(L)],
    )
    grid_key = f"abl_grid_{L}_{H}_{st.session_state.get(VERSION, 0)}"
    st.data_editor(
        grid,
        key=grid_key,
        on_change=_on_edit,
        args=(grid_key, L, H),
        width="stretch",
        column_config={c: st.column_config.CheckboxColumn(c, width="small") for c in grid.columns},
    )
    st.caption(
        f"{len(off)} of {L * H} heads switched off. Untick a box to switch that head off; "
        "the predictions below update at once."
    )

    st.subheader("Before and after")
    if b.is_classifier:
        before, after = class_probs(model.key, text, (), b), class_probs(model.key, text, off, b)
        figures.show(ap.class_probs_before_after(b.labels, before, after), "ablation-cls", key="abl_cls")
    else:
        full, cut = mlm_topk(model.key, text, K, (), b), mlm_topk(model.key, text, K, off, b)
        for i, pos in enumerate(full.positions):
            title = f"[MASK] at token {pos}" if len(full.positions) > 1 else ""
            figures.show(
                ap.topk_before_after(
                    full.top_tokens[i], full.top_probs[i], cut.top_tokens[i], cut.top_probs[i], title=title
                ),
                f"ablation-mlm-{i}",
                key=f"abl_mlm_{i}",
            )
            if i >= 4:
                st.caption(f"Showing the first 5 of {len(full.positions)} masks.")
                break

    st.subheader("Most important heads")
    what = "probability of the class" if imp.kind == "classifier" else "log-probability of the word"
    st.markdown(
        f"Each head switched off **alone**, the others on: how much the {what} "
        f"**{md_escape(imp.target)}** drops (token {imp.position}). Positive: the head helps "
        "this prediction; negative: the model does better without it."
    )
    figures.show(
        ap.importance_heatmap(imp.scores, imp.unit, imp.target, off), "ablation-importance", key="abl_importance"
    )
    top = pd.DataFrame(
        [
            {"rank": n + 1, "layer": l + 1, "head": h + 1, f"drop in {imp.unit}": s}
            for n, (l, h, s) in enumerate(ranking[:TOP])
        ]
    )
    st.dataframe(
        top,
        hide_index=True,
        width="stretch",
        column_config={f"drop in {imp.unit}": st.column_config.NumberColumn(format="%.4f")},
    )
