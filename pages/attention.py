"""Attention: each head's map, all heads at once, Q/K/V with the numbers, and bertviz views."""

from functools import partial

import numpy as np
import pandas as pd
import streamlit as st

import app
from app import attention_masks as masks
from app.analysis_cache import analyze
from app.export import notebook as nb
from app.export.view_file import Choice
from app.figures.attention import attention_grid, head_maps, walkthrough_bars
from app.find_attention_head import find_a_head
from app.formatting import attention_walkthrough, hide_specials, token_labels
from app.model_sources import current_model
from app.ui import family_note, links, show_figure, widgets
from app.ui.errors import show_errors
from app.ui.widgets import index_slider
from bert.attention_masks import BIDIRECTIONAL

app.run_through_entry()  # before anything else: see app/__init__.py

WINDOW = 128  # the heatmap shows at most this many tokens at once
VIEWS = [
    "Heatmap",
    "All heads",
    "Q/K/V walk-through",
    "bertviz: head view",
    "bertviz: model view",
    "bertviz: neuron view",
]
VIEW_CODES = ("map", "heads", "qkv", "bv-head", "bv-model", "bv-neuron")  # in links

st.title("Attention")
INTRO = (
    "In every layer each token builds a new vector by mixing the vectors of all tokens, itself "
    "included. How much of each it takes is its **attention**: a row of weights that are positive "
    "and add up to 1. A layer has several **heads**, each with its own weights, so one head can "
    "follow grammar while another links a pronoun to its noun."
)
text_a, text_b = widgets.sentence_inputs(pair=True)


@st.cache_resource(max_entries=24, ttl=3600, show_spinner="Building the bertviz view…")
def bertviz_view(model_key: str, text_a: str, text_b, kind: str, layer: int, head: int, _an):
    from app.bertviz import views as bv

    b_start = next((i for i, s in enumerate(_an.sequence_ids) if s == 1), None)
    if kind == "head":
        return bv.head_view_html(_an.tokens, _an.attentions, sentence_b_start=b_start)
    if kind == "model":
        return bv.model_view_html(_an.tokens, _an.attentions, sentence_b_start=b_start)
    return bv.neuron_view_html(
        _an.tokens, _an.queries, _an.keys, _an.attentions, sentence_b_start=b_start, layer=layer, head=head
    )


with show_errors("the attention maps"):
    model = current_model()
    family_note.attention(model.bundle.config)
    links.view(*masks.link_params("att_pattern"))
    controls, result = st.columns([1, 2], gap="medium")  # the map beside its controls: one screen at 1366x768
    with controls:
        mask_kind = masks.mask_kind_choice(masks.input_tokens(model, text_a, text_b), key="att_pattern")
    an = analyze(model, text_a, text_b, mask_kind)
    hidden = masks.hidden_cells(mask_kind, an.n_tokens)  # (T, T) bool or None
    L, H, T = an.attentions.shape[0], an.attentions.shape[1], an.n_tokens
    if an.truncated:
        st.warning(
            f"The input is longer than this model's maximum of {an.max_length} tokens: "
            f"the last {an.num_truncated:,} tokens were cut off.",
            icon=":material/content_cut:",
        )

    view_params = [
        links.Param("layer", f"att_layer_{L}", "int", default=1, lo=1, hi=L, label="layer"),
        links.Param("head", f"att_head_{H}", "int", default=1, lo=1, hi=H, label="head"),
        links.Param("hide", "att_hide", "bool", default=False),
        links.Param("view", "att_view", "choice", default=VIEWS[0], choices=VIEWS, codes=VIEW_CODES),
    ]
    links.view(*view_params)
    layer = index_slider(controls, "Layer", L, key=f"att_layer_{L}")
    head = index_slider(controls, "Head", H, key=f"att_head_{H}")
    hide = controls.checkbox(
        "Hide [CLS] and [SEP]",
        key="att_hide",
        help="Many heads park most of their attention on [CLS] or [SEP] when they "
        "have nothing better to do. Hiding them (and rescaling each row to "
        "sum to 1) shows what is left between real words.",
    )
    view = controls.radio("View", VIEWS, horizontal=True, key="att_view")
    with controls.expander("Find a head", icon=":material/search:"):
        find_a_head(an, f"att_layer_{L}", f"att_head_{H}")

    tokens, keep = an.tokens, list(range(T))
    if hide:
        tokens, keep = hide_specials(an.attentions[0, 0], tokens)[1:]
    shown_hidden = None if hidden is None else hidden[np.ix_(keep, keep)]

    if view == "Heatmap":
        n = len(tokens)
        start = 0
        if n > WINDOW:
            start = st.slider(
                f"First token shown (the map shows {WINDOW} of {n} at a time)",
                0,
                n - WINDOW,
                0,
                step=16,
                key="att_window",
            )
        window = None if hidden is None else shown_hidden[start : start + WINDOW, start : start + WINDOW]
        draw = head_maps(an.attentions, an.tokens, keep if hide else None, start, WINDOW, hidden=window)
        same_view = (model.key, an.text_a, an.text_b, mask_kind, hide, start)  # saved by others: frames shared
        head_map = draw(layer, head)
        show_figure.show(
            head_map,
            f"attention-L{layer + 1}-H{head + 1}",
            where=result,
            key="att_heatmap",
            choice=Choice((("Layer", L), ("Head", H)), draw, (layer, head), same_view),  # every head in the file
            notebook=partial(nb.attention, text_a=an.text_a, text_b=an.text_b, layer=layer, head=head)
            if mask_kind == BIDIRECTIONAL  # the notebook reads both ways, as the app's default
            else None,
        )
        result.caption(
            f"Each row is one token looking at the others; {show_figure.colour_words(head_map).more} means more "
            "attention. "
            "Hover over a cell for its exact weight."
            + (" Rows are rescaled to sum to 1 without the hidden tokens." if hide else "")
            + masks.hidden_share(mask_kind, T)
        )

    elif view == "All heads":
        grid_atts = an.attentions
        if hide:
            grid_atts = grid_atts[:, :, keep][:, :, :, keep]
            grid_atts = grid_atts / np.maximum(grid_atts.sum(-1, keepdims=True), 1e-12)
        grid = attention_grid(grid_atts, selected=(layer, head), hidden=shown_hidden, tokens=tokens)
        show_figure.show(grid, "attention-all-heads", where=result, key="att_grid")
        result.caption(
            f"Every head of every layer ({L} × {H}), same colour scale (0 to 1); the red box "
            "is the head picked above. Look for stripes next to the diagonal (a head looking at "
            f"neighbours) and a single {show_figure.colour_words(grid).high} column (a head resting on [CLS] or [SEP])."
            + (" Long inputs are averaged into blocks here." if T > 32 else "")
            + masks.hidden_share(mask_kind, T)
        )

    elif view == "Q/K/V walk-through":
        st.markdown(
            "A head gives every token three short vectors, each made by multiplying the token's "
            "current vector by a learned matrix: a **query** (what am I looking for?), a **key** "
            "(what do I offer?) and a **value** (what I pass on if chosen). Think of a library: "
            "the query is your question, the keys are the labels on the shelves, the values are "
            "the books. A token compares its query with every key, turns the scores into "
            "weights with softmax, and takes that blend of the values."
        )
        labels = token_labels(an.tokens)
        first = an.tokens.index("it") if "it" in an.tokens else min(1, T - 1)
        i = st.selectbox(
            "Query token", list(range(T)), index=first, key=f"att_query_{T}", format_func=lambda j: labels[j]
        )
        q, k, v = an.queries[layer, head], an.keys[layer, head], an.values[layer, head]  # (T, D)
        w = attention_walkthrough(q, k, v, i, hidden=None if hidden is None else hidden[i])
        D = q.shape[-1]
        st.markdown(
            f"Layer {layer + 1}, head {head + 1}: vectors of **{D}** numbers, so scores are "
            f"divided by √{D} = {w['sqrt_d']:.2f} to keep them in a range where softmax "
            "is not too sharp."
        )
        table = pd.DataFrame(
            {
                "key token": labels,
                "q·k": w["dots"],
                "score = q·k/√d": w["scores"],
                "weight = softmax": w["weights"],
                "weight in the model": an.attentions[layer, head, i],
            }
        )
        st.dataframe(
            table,
            hide_index=True,
            width="stretch",
            height=min(400, 36 + 35 * T),
            column_config={
                "q·k": st.column_config.NumberColumn(format="%.3f"),
                "score = q·k/√d": st.column_config.NumberColumn(format="%.3f"),
                "weight = softmax": st.column_config.ProgressColumn(format="%.3f", min_value=0.0, max_value=1.0),
                "weight in the model": st.column_config.NumberColumn(format="%.3f"),
            },
        )
        st.caption(
            "The last two columns agree: this is exactly what the model computed. "
            "All tokens take part here, [CLS] and [SEP] included."
        )
        show_figure.show(
            walkthrough_bars(an.tokens, w["scores"], w["weights"], labels[i]), "attention-qkv", key="att_qkv"
        )
        dims = min(8, D)
        vec = pd.DataFrame(
            {
                "": ["query q", f"output = Σ weight × v (first {dims} of {D} dims)"],
                **{f"d{d}": [q[i, d], w["output"][d]] for d in range(dims)},
            }
        )
        widgets.number_table(vec, [f"d{d}" for d in range(dims)])
        st.caption(
            f"Each head outputs {D} numbers per token; the {H} heads' outputs are put "
            "side by side and mixed by one more matrix, then added to the token's vector."
        )

    else:
        kind = {"bertviz: head view": "head", "bertviz: model view": "model", "bertviz: neuron view": "neuron"}[view]
        st.caption(
            "bertviz counts layers and heads from 0: our layer 1 is its layer 0."
            + (" It shows every token; [CLS]/[SEP] are not hidden here." if hide else "")
        )
        # only the neuron view opens on the picked layer/head; the others have their own menus
        pick = (layer, head) if kind == "neuron" else (None, None)
        v = bertviz_view(model.key, an.text_a, an.text_b, kind, *pick, an)
        if v.capped_message:
            st.info(v.capped_message, icon=":material/compress:")
        st.iframe(v.html, height=int(min(max(v.height, 300), 4000)), alt=f"bertviz {kind} view of the attention")
        show_figure.save_document(
            v.html,
            f"bertviz-{kind}-view",
            key=f"att_bv_{kind}",
            help=f"{show_figure.SAVE_HELP} The view's own “Save as SVG” button saves what is on screen as an image.",
        )
        st.caption(
            {
                "head": "Pick a layer in the menu; each colour is a head (double-click a "
                "colour to show only that head). Hover over a token to see where it looks.",
                "model": "Every layer (rows) and head (columns) at once; click a thumbnail to enlarge it.",
                "neuron": "Hover over a token on the left to see its query, each key, "
                "their product and the softmax; click + to expand.",
            }[kind]
        )

st.markdown(INTRO)  # below the map: on a phone the controls and the map come first
