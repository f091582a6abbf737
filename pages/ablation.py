"""Head ablation: switch attention heads off and watch the prediction change."""

from functools import partial

import pandas as pd
import streamlit as st

import app
from app.analysis_cache import class_probs, importance, mlm_topk, off_key
from app.export.analysis_notebooks import ablation as ablation_notebook
from app.figures.attention_heads import class_probs_before_after, importance_heatmap, topk_before_after
from app.formatting import clean_text, md_escape, mlm_untrained
from app.model_sources import current_model
from app.server.rate_limit import within_rate
from app.ui import show_figure, widgets
from app.ui.errors import show_errors
from bert import settings

app.run_through_entry()  # before anything else: see app/__init__.py

OFF = "abl_off"  # list of switched-off (layer, head) pairs, 0-based; survives page switches
VERSION = "abl_version"  # bumped to draw the rows of heads afresh after a button
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


def _ablation(model, text: str, off: tuple) -> None:
    """The heads' ranking, their rows to switch them off, and the predictions before and after."""
    b = model.bundle
    L, H = b.config.num_hidden_layers, b.config.num_attention_heads
    imp = importance(model.key, text, b)
    ranking = imp.ranking()

    st.header("Heads on and off")
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
    version = st.session_state.get(VERSION, 0)
    kept = {}
    for l in range(L):  # a row of heads a layer; a client's values outside the options are dropped
        kept[l] = st.pills(
            f"Layer {l + 1}",
            list(range(H)),
            selection_mode="multi",
            default=[h for h in range(H) if (l, h) not in off],
            format_func=lambda h: f"H{h + 1}",
            key=f"abl_layer_{l}_{L}_{H}_{version}",
        )
    picked = off_key((l, h) for l in range(L) for h in range(H) if h not in (kept[l] or ()))
    if picked != off:
        st.session_state[OFF] = [list(p) for p in picked]
        off = picked
    st.caption(
        f"{len(off)} of {L * H} heads switched off. A highlighted head is on: click it to switch it "
        "off (and again to switch it back on); the predictions below update at once."
    )

    st.header("Before and after")
    notebook = partial(ablation_notebook, text=text, off=off, k=K)
    if b.is_classifier:
        before, after = class_probs(model.key, text, (), b), class_probs(model.key, text, off, b)
        show_figure.show(
            class_probs_before_after(b.labels, before, after), "ablation-cls", key="abl_cls", notebook=notebook
        )
    else:
        full, cut = mlm_topk(model.key, text, K, (), b), mlm_topk(model.key, text, K, off, b)
        for i, pos in enumerate(full.positions):
            title = f"[MASK] at token {pos}" if len(full.positions) > 1 else ""
            show_figure.show(
                topk_before_after(
                    full.top_tokens[i], full.top_probs[i], cut.top_tokens[i], cut.top_probs[i], title=title
                ),
                f"ablation-mlm-{i}",
                key=f"abl_mlm_{i}",
                notebook=notebook if i == 0 else None,  # every [MASK] and the ranking
            )
            if i >= 4:
                st.caption(f"Showing the first 5 of {len(full.positions)} masks.")
                break

    st.header("Most important heads")
    what = "probability of the class" if imp.kind == "classifier" else "log-probability of the word"
    st.markdown(
        f"Each head switched off **alone**, the others on: how much the {what} "
        f"**{md_escape(imp.target)}** drops (token {imp.position}). Positive: the head helps "
        "this prediction; negative: the model does better without it."
    )
    show_figure.show(
        importance_heatmap(imp.scores, imp.unit, imp.target, off), "ablation-importance", key="abl_importance"
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
    text = widgets.ablation_text(b, clean_text(text, "the text"))
    off = off_key(p for p in st.session_state.get(OFF, []) if p[0] < L and p[1] < H)
    if within_rate(
        "ablation",
        (model.key, text),
        settings.whole("BERT_EXPLORER_ABLATIONS_PER_MINUTE"),
        "new texts on this page",
        f"ranking the heads runs the model {L * H} times",
        "Rank it",
        "abl_retry",
    ):
        _ablation(model, text, off)
