"""Figures for the Causes page: activation patching's effect per layer and place, minimal pairs'
accuracy per paradigm and a pair's per-token scores, probes' accuracy per layer.

Pure functions: numpy in, plotly Figure out; no streamlit, no model. Every token, word or name
reaches plotly escaped.

Dimension letters: R rows (layers, with the embeddings for the residual stream), X columns
(tokens or heads), L layers.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from .core import diverging, esc, fitted, model_line, safe_labels

PATCH_CELL = "#111111"  # the outline of the cell whose top-k is shown


def _ranked(ranking, r: int, c: int) -> str:
    """A patched run's ranking for its cell's hover: "; are first (+1.20)"; "" without one."""
    if ranking is None:
        return ""
    m, answer, foil = ranking
    value = float(m[r, c])
    return f"; {esc(answer if value > 0 else foil)} first ({value:+.2f})"


def _cell_markers(e: np.ndarray, x_labels, y_labels, ranking) -> go.Scatter:
    """An invisible square marker on every cell of `e`, customdata (row, column): the trace a
    click selects, with each cell's hover text."""
    R, X = e.shape
    rr, cc = np.meshgrid(np.arange(R), np.arange(X), indexing="ij")
    invisible = dict(marker=dict(opacity=0))
    return go.Scatter(
        x=cc.ravel(),
        y=rr.ravel(),
        mode="markers",
        marker=dict(size=18, symbol="square", opacity=0, color="black"),
        selected=invisible,
        unselected=invisible,
        customdata=np.stack([rr.ravel(), cc.ravel()], -1),
        text=[
            f"{y_labels[r]}, {x_labels[c]}: {e[r, c]:.3f} of the answer restored" + _ranked(ranking, r, c)
            for r, c in zip(rr.ravel(), cc.ravel())
        ],
        hovertemplate="%{text}<extra></extra>",
        showlegend=False,
        name="cells",
    )


@fitted
def patching_heatmap(
    effect: np.ndarray,
    rows,
    columns,
    position: int | None = None,
    selected=None,
    title: str = "",
    ranking: tuple[np.ndarray, str, str] | None = None,
) -> go.Figure:
    """Rows (layers, the lowest at the bottom) x columns (tokens or heads): the share of the clean
    answer a patch there brings back, white at 0, red 1 (restores it), blue below 0. Trace 1 is
    an invisible, clickable marker on every cell whose customdata is (row, column), 0-based;
    `selected` (row, column) is outlined and `position` (the [MASK]'s column) marked. The markers
    carry the hover text too: a trace that skips hover cannot be clicked. `ranking` (each patched
    run's logit[answer] - logit[foil], the answer, the foil) adds to each cell's hover which of the
    two that run ranks first."""
    e = np.asarray(effect, dtype=np.float64)
    R, X = e.shape
    x_labels, y_labels = safe_labels(columns), [esc(r) for r in rows]
    m = max(1.0, float(np.nanmax(np.abs(e))) if e.size else 1.0)
    heat = go.Heatmap(
        z=e,
        x=list(range(X)),
        y=list(range(R)),
        **diverging(m),
        xgap=1,
        ygap=1,
        colorbar=dict(title="restored", thickness=12),
        hoverinfo="skip",  # the cells' markers (trace 1) carry the hover and the click
    )
    fig = go.Figure([heat, _cell_markers(e, x_labels, y_labels, ranking)])
    if selected is not None:
        r, c = selected
        fig.add_shape(type="rect", x0=c - 0.5, x1=c + 0.5, y0=r - 0.5, y1=r + 0.5, line=dict(color=PATCH_CELL, width=3))
    if position is not None and 0 <= position < X:
        fig.add_annotation(
            x=position, y=-0.5, yref="y", yanchor="top", text="▲ [MASK]", showarrow=False, font=dict(color="#d62728")
        )
    fig.update_xaxes(tickmode="array", tickvals=list(range(X)), ticktext=x_labels, tickangle=-45, showgrid=False)
    fig.update_yaxes(tickmode="array", tickvals=list(range(R)), ticktext=y_labels, showgrid=False)
    fig.update_layout(
        title=esc(title),
        height=int(min(800, max(320, 34 * R + 190))),
        margin=dict(l=10, r=10, t=60 if title else 20, b=10),
        plot_bgcolor="white",
        clickmode="event+select",  # a click selects the cell's marker: the page shows that run
        dragmode=False,
    )
    return fig


# blue and vermillion (Okabe & Ito): apart for red-green colour blindness too (tests/test_figure_access.py)
GOOD_COLOUR, BAD_COLOUR = "#0072B2", "#D55E00"


@fitted
def paradigm_accuracy_bars(names, accuracies, counts) -> go.Figure:
    """One bar per paradigm: the share of its pairs where the model scores the good sentence
    higher; a dashed line at chance (0.5)."""
    acc = np.asarray(accuracies, dtype=np.float64)
    labels = [esc(n) for n in names]
    fig = go.Figure(
        go.Bar(
            x=acc,
            y=labels,
            orientation="h",
            marker_color=[GOOD_COLOUR if a >= 0.5 else BAD_COLOUR for a in acc],
            text=[f"{a:.0%}" for a in acc],
            textposition="outside",
            customdata=np.asarray(counts),
            hovertemplate="%{y}: %{x:.0%} of %{customdata} pairs<extra></extra>",
        )
    )
    fig.add_vline(x=0.5, line_dash="dash", line_color="#888888", annotation_text="chance")
    fig.update_xaxes(range=[0, 1.1], title="pairs where the good sentence scores higher", tickformat=".0%")
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_layout(height=int(80 + 30 * len(labels)), margin=dict(l=10, r=10, t=30, b=10))
    return fig


@fitted
def pair_word_scores(good_words, good_scores, bad_words, bad_scores) -> go.Figure:
    """Each word's log-probability (its pieces summed, each piece masked in turn) in the good and
    the bad sentence, word by word; the axis reads "good/bad" where the words differ."""
    n = max(len(good_words), len(bad_words))
    labels = []
    for i in range(n):
        g = good_words[i] if i < len(good_words) else "–"
        b = bad_words[i] if i < len(bad_words) else "–"
        labels.append(g if g == b else f"{g}/{b}")
    labels = safe_labels(labels)
    fig = go.Figure(
        [
            go.Bar(
                name=name,
                x=labels[: len(words)],
                y=np.asarray(scores, dtype=np.float64),
                marker_color=colour,
                customdata=[esc(w) for w in words],
                hovertemplate=f"{name}: %{{customdata}} log P %{{y:.2f}}<extra></extra>",
            )
            for name, words, scores, colour in (
                ("good sentence", good_words, good_scores, GOOD_COLOUR),
                ("bad sentence", bad_words, bad_scores, BAD_COLOUR),
            )
        ]
    )
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=labels, tickangle=-45)
    fig.update_yaxes(title="log P(word | the rest)")
    fig.update_layout(
        barmode="group",
        height=380,
        margin=dict(l=10, r=10, t=30, b=10),
        legend=dict(orientation="h", y=1.02, yanchor="bottom", x=1, xanchor="right"),
    )
    return fig


PROBE_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd")


@fitted
def probe_curves(named_curves) -> go.Figure:
    """Accuracy per depth (solid) and the control task's (dashed), one colour per model;
    named_curves: [(model name, ProbeCurve)]. A dotted line at the property's chance (its most
    frequent class's share)."""
    fig = go.Figure()
    for i, (name, c) in enumerate(named_curves):
        colour = PROBE_COLOURS[i % len(PROBE_COLOURS)]
        rows = [esc(r) for r in c.rows]
        for what, values, dash in (("property", c.accuracy, "solid"), ("control task", c.control, "dash")):
            fig.add_trace(model_line(name, what, rows, values, colour, dash, "", "lines+markers", f"{what} accuracy"))
    if named_curves:
        fig.add_hline(
            y=named_curves[0][1].majority,
            line_dash="dot",
            line_color="#888888",
            annotation_text="chance (most frequent)",
        )
    fig.update_yaxes(title="test accuracy", range=[0, 1.02])
    fig.update_xaxes(title="the vectors probed")
    fig.update_layout(
        height=420,
        margin=dict(l=10, r=10, t=30, b=10),
        legend=dict(orientation="h", y=1.02, yanchor="bottom", x=1, xanchor="right"),
    )
    return fig
