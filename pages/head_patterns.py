"""Head patterns: what each attention head mostly looks at (after Clark et al. 2019)."""

from functools import partial

import pandas as pd
import streamlit as st

import app
from app.analysis_cache import input_patterns, probe_patterns
from app.export.analysis_notebooks import head_patterns as head_patterns_notebook
from app.export.view_file import Choice
from app.figures.attention_heads import STAT_NAMES, head_stats_bar, pattern_map
from app.formatting import md_escape
from app.model_sources import current_model
from app.ui import links, show_figure, widgets
from app.ui.errors import show_errors
from bert.analysis.attention_heads import BROAD_ENTROPY, LABEL_HELP, LABELS, PATTERN_THRESHOLD, probe_sentences

app.run_through_entry()  # before anything else: see app/__init__.py

GO = "hp_go_to_attention"
SOURCES = ["Your sentence(s)", "The built-in probe sentences"]

st.title("Head patterns")
st.markdown(
    "Many attention heads follow one simple habit: always look at the previous word, always look "
    "at `[CLS]` or `[SEP]`, or spread out over everything. Here every head of every layer gets the "
    "name of its strongest habit, measured on your text or averaged over a dozen test sentences. "
    "Click a cell (or pick a head below) to see its numbers and open it on the Attention page."
)
text_a, text_b = widgets.sentence_inputs(pair=True)


def _pick_from_chart(chart_key: str, pick_key: str, L: int, H: int) -> None:
    """A click on the map selects a marker of trace 1: x is the head, y the layer (from 1)."""
    points = (st.session_state.get(chart_key) or {}).get("selection", {}).get("points", [])
    for p in points:
        try:
            l, h = int(p["y"]) - 1, int(p["x"]) - 1
        except (KeyError, TypeError, ValueError):
            continue
        if 0 <= l < L and 0 <= h < H:
            st.session_state[pick_key] = l * H + h
            return


def _open_on_attention(L: int, H: int, layer: int, head: int) -> None:
    # the Attention page's own widget keys (pages/attention.py); its sliders count from 1
    st.session_state[f"att_layer_{L}"] = layer + 1
    st.session_state[f"att_head_{H}"] = head + 1
    st.session_state["att_view"] = "Heatmap"
    st.session_state[GO] = True


if st.session_state.pop(GO, False):  # a callback cannot switch pages itself
    st.switch_page("pages/attention.py")

with show_errors("the head patterns"):
    model = current_model()
    links.view(links.Param("on", "hp_source", "choice", default=SOURCES[0], choices=SOURCES, codes=("input", "probe")))
    source = st.radio(
        "Measured on",
        SOURCES,
        horizontal=True,
        key="hp_source",
        help="Your text shows this input only; the probe set averages 12 varied "
        "sentences, which gives each head's usual habit.",
    )
    if source == SOURCES[0]:
        stats, labels, an = input_patterns(model, text_a, text_b)
        measured = {"text_a": an.text_a, "text_b": an.text_b, "probe": False}
        if an.truncated:
            st.warning(
                f"The input was cut at the model's maximum of {an.max_length} tokens.", icon=":material/content_cut:"
            )
    else:
        hp = probe_patterns(model.key, model.bundle)
        stats, labels = hp.stats, hp.labels
        measured = {"text_a": "", "text_b": None, "probe": True}
        with st.expander(f"The {len(hp.sentences)} probe sentences"):
            st.markdown("\n".join(f"1. {md_escape(s)}" for s in probe_sentences()))
    L, H = labels.shape
    pick_key, chart_key = f"hp_head_{L}_{H}", f"hp_map_{L}_{H}"
    pick = st.session_state.get(pick_key, 0)
    show_figure.show(
        pattern_map(labels, stats, selected=(pick // H, pick % H)),
        "head-patterns",
        key=chart_key,
        caption=f"{L * H} heads by pattern: "
        + ", ".join(f"{int((labels == lab).sum())} {lab}" for lab in LABELS if (labels == lab).any()),
        on_select=lambda: _pick_from_chart(chart_key, pick_key, L, H),
        selection_mode="points",
        notebook=partial(head_patterns_notebook, **measured, layer=pick // H, head=pick % H),
    )
    st.caption(
        f"A head gets a pattern's name when it puts at least {PATTERN_THRESHOLD:.0%} of its "
        f"attention there (on average over the tokens); otherwise it is *broad* when its "
        f"attention is spread out (entropy at least {BROAD_ENTROPY:.0%} of the maximum) and "
        "*other* when it is focused on something else. Hover over a cell for all numbers."
    )

    legend = pd.DataFrame(
        {
            "pattern": list(LABELS),
            "heads": [int((labels == lab).sum()) for lab in LABELS],
            "what the head does": [LABEL_HELP[lab] for lab in LABELS],
        }
    )
    st.dataframe(legend, hide_index=True, width="stretch")

    st.header("One head")
    c1, c2 = st.columns([1, 2])
    with c1:
        pick = st.selectbox(
            "Head",
            list(range(L * H)),
            key=pick_key,
            format_func=lambda i: f"layer {i // H + 1}, head {i % H + 1}: {labels[i // H, i % H]}",
        )
        layer, head = pick // H, pick % H
        lab = str(labels[layer, head])
        st.markdown(f"**{md_escape(lab)}**: {LABEL_HELP.get(lab, '')}.")
        st.button(
            "Open this head on the Attention page",
            icon=":material/open_in_new:",
            key="hp_open",
            on_click=_open_on_attention,
            args=(L, H, layer, head),
        )
        if source == SOURCES[1]:
            st.caption("The Attention page shows this head on your own sentence, not on the probe set.")
    with c2:
        heads = Choice((("Layer", L), ("Head", H)), partial(head_stats_bar, stats), (layer, head))  # in the file
        show_figure.show(head_stats_bar(stats, layer, head), "head-patterns-bar", key="hp_bar", choice=heads)

    with st.expander("All heads as a table"):
        rows = [
            {
                "layer": l + 1,
                "head": h + 1,
                "pattern": str(labels[l, h]),
                **{name: float(stats[name][l, h]) for name in STAT_NAMES},
            }
            for l in range(L)
            for h in range(H)
        ]
        st.dataframe(
            pd.DataFrame(rows),
            hide_index=True,
            width="stretch",
            column_config={n: st.column_config.NumberColumn(format="%.3f") for n in STAT_NAMES},
        )
