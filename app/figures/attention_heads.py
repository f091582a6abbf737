"""Figures whose cells are attention heads: the head-pattern map and one head's statistics
(the Head patterns page), and what switching heads off does (the Ablation page).

Pure functions: numpy in, plotly Figure out; no streamlit, no model; the pages import them
from here. Every token or text that reaches a
label or a hover is HTML-escaped first.

Dimension letters: L layers, H heads, k top predictions, K classes.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .core import diverging, esc, fitted, probability_bars, safe_labels

# one colour per head-pattern label (bert.analysis.attention_heads.LABELS), and a short name for the cells:
# Okabe & Ito's palette for colour-blind readers, grey for "broad" (tests/test_figure_access.py)
PATTERN_COLOURS = {
    "[CLS]": "#0072B2",
    "[SEP]": "#E69F00",
    "previous": "#009E73",
    "next": "#56B4E9",
    "self": "#CC79A7",
    "punctuation": "#D55E00",
    "broad": "#c7c7c7",
    "other": "#F0E442",
}
PATTERN_SHORT = {
    "[CLS]": "CLS",
    "[SEP]": "SEP",
    "previous": "prev",
    "next": "next",
    "self": "self",
    "punctuation": "punct",
    "broad": "broad",
    "other": "other",
}
STAT_NAMES = ("[CLS]", "[SEP]", "previous", "next", "self", "punctuation", "entropy")
BEFORE_COLOUR, AFTER_COLOUR = "#7f7f7f", "#d62728"


def head_axes(fig: go.Figure, L: int, H: int) -> None:
    """Heads across the top as H1..H12, layers down as L1..L6 (no axis titles to clash with
    the figure's title)."""
    fig.update_xaxes(tickvals=list(range(1, H + 1)), ticktext=[f"H{h}" for h in range(1, H + 1)], side="top")
    fig.update_yaxes(tickvals=list(range(1, L + 1)), ticktext=[f"L{l}" for l in range(1, L + 1)], autorange="reversed")


# --- 1. head patterns ------------------------------------------------------------------------------


@fitted
def pattern_map(
    labels: np.ndarray, stats: dict[str, np.ndarray], selected: tuple[int, int] | None = None, title: str = ""
) -> go.Figure:
    """Layers x heads, each cell coloured by the head's dominant pattern (labels: (L, H) str).

    Trace 0 is the coloured heatmap; trace 1 an invisible marker on every cell that carries
    the hover text (all statistics) and can be clicked to select the head (its customdata
    starts with the 0-based layer and head); the remaining traces only draw the legend.
    """
    labels = np.asarray(labels).astype(str)
    L, H = labels.shape
    fig = go.Figure(_pattern_cells(labels))
    fig.add_trace(_pattern_hover_points(labels, stats))
    for trace in _pattern_legend(labels):
        fig.add_trace(trace)
    if selected is not None:
        l, h = selected
        fig.add_shape(type="rect", x0=h + 0.5, x1=h + 1.5, y0=l + 0.5, y1=l + 1.5, line=dict(color="black", width=3))
    fig.update_xaxes(
        title="head",
        tickvals=list(np.arange(1, H + 1)),
        side="top",
        showgrid=False,
        zeroline=False,
        range=[0.5, H + 0.5],
    )
    fig.update_yaxes(
        title="layer", tickvals=list(np.arange(1, L + 1)), autorange="reversed", showgrid=False, zeroline=False
    )
    fig.update_layout(
        title=esc(title),
        height=int(min(900, max(320, 46 * L + 150))),
        margin=dict(l=10, r=10, t=70 if title else 50, b=10),
        plot_bgcolor="white",
        legend=dict(orientation="h", y=-0.05, yanchor="top"),
        clickmode="event+select",
        dragmode=False,
    )
    return fig


def _pattern_cells(labels: np.ndarray) -> go.Heatmap:
    """The coloured cells: value i (the label's place in PATTERN_COLOURS, unknown labels the
    last) drawn in colour i, the label's short name written in the cell."""
    L, H = labels.shape
    names = list(PATTERN_COLOURS)
    n = len(names)
    z = np.array([[names.index(x) if x in names else n - 1 for x in row] for row in labels])
    scale = []
    for i, name in enumerate(names):  # stepwise: value i -> colour i
        scale += [(i / n, PATTERN_COLOURS[name]), ((i + 1) / n, PATTERN_COLOURS[name])]
    text = [[PATTERN_SHORT.get(x, x) for x in row] for row in labels]
    return go.Heatmap(
        z=z,
        x=np.arange(1, H + 1),
        y=np.arange(1, L + 1),
        zmin=-0.5,
        zmax=n - 0.5,
        colorscale=scale,
        showscale=False,
        xgap=2,
        ygap=2,
        text=text,
        texttemplate="%{text}",
        textfont=dict(size=10),
        hoverinfo="skip",
    )


def _pattern_hover_points(labels: np.ndarray, stats: dict[str, np.ndarray]) -> go.Scatter:
    """An invisible, clickable marker on every cell; customdata: layer, head (0-based), then STAT_NAMES."""
    L, H = labels.shape
    ll, hh = np.meshgrid(np.arange(L), np.arange(H), indexing="ij")  # (L, H)
    cols = [np.asarray(stats[s], dtype=np.float64) for s in STAT_NAMES]
    custom = np.stack([ll, hh] + cols, -1).reshape(L * H, 2 + len(cols))
    hover = (
        "<b>layer %{y}, head %{x}</b>: %{text}<br>to [CLS] %{customdata[2]:.2f} · "
        "to [SEP] %{customdata[3]:.2f}<br>previous %{customdata[4]:.2f} · next %{customdata[5]:.2f}"
        " · self %{customdata[6]:.2f}<br>punctuation %{customdata[7]:.2f} · "
        "entropy %{customdata[8]:.2f}<extra></extra>"
    )
    invisible = dict(marker=dict(opacity=0))
    return go.Scatter(
        x=(hh + 1).ravel(),
        y=(ll + 1).ravel(),
        mode="markers",
        marker=dict(size=22, symbol="square", opacity=0, color="black"),
        selected=invisible,
        unselected=invisible,
        customdata=custom,
        text=labels.ravel().tolist(),
        hovertemplate=hover,
        showlegend=False,
        name="heads",
    )


def _pattern_legend(labels: np.ndarray) -> list[go.Scatter]:
    """One legend entry (an empty trace) per label in use, with how many heads have it."""
    counts = {name: int((labels == name).sum()) for name in PATTERN_COLOURS}
    return [
        go.Scatter(
            x=[None],
            y=[None],
            mode="markers",
            name=f"{esc(name)} ({counts[name]})",
            marker=dict(size=12, symbol="square", color=PATTERN_COLOURS[name]),
            hoverinfo="skip",
        )
        for name in PATTERN_COLOURS
        if counts[name]
    ]


@fitted
def head_stats_bar(stats: dict[str, np.ndarray], layer: int, head: int) -> go.Figure:
    """One head's average attention to each target, and its normalised entropy."""
    names = list(STAT_NAMES)
    vals = [float(np.asarray(stats[s])[layer, head]) for s in names]
    colours = [PATTERN_COLOURS.get(s, "#c7c7c7") for s in names]
    fig = go.Figure(
        go.Bar(
            x=[esc(s) for s in names],
            y=vals,
            marker_color=colours,
            text=[f"{v:.2f}" for v in vals],
            textposition="auto",
            hovertemplate="%{x}: %{y:.3f}<extra></extra>",
        )
    )
    fig.update_layout(title=f"layer {layer + 1}, head {head + 1}", height=300, margin=dict(l=10, r=10, t=40, b=10))
    fig.update_yaxes(range=[0, 1], title="average weight (entropy: 0 focused, 1 uniform)")
    return fig


# --- 4. head ablation ------------------------------------------------------------------------------


@fitted
def topk_before_after(before_tokens, before_probs, after_tokens, after_probs, title: str = "") -> go.Figure:
    """Top-k guesses with every head on (left) and with the chosen heads off (right)."""
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.18, subplot_titles=("all heads on", "chosen heads off"))
    for c, (toks, probs, colour) in enumerate(
        ((before_tokens, before_probs, BEFORE_COLOUR), (after_tokens, after_probs, AFTER_COLOUR)), 1
    ):
        probs = np.asarray(probs, dtype=np.float32)
        fig.add_trace(probability_bars(probs, safe_labels(toks), colour, showlegend=False), row=1, col=c)
    top = max([float(np.max(p)) for p in (before_probs, after_probs) if len(p)] + [1e-6])
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_xaxes(range=[0, min(1.0, top * 1.15)], title="probability")
    k = max(len(before_tokens), len(after_tokens), 1)
    fig.update_layout(title=esc(title), height=int(110 + 30 * k), margin=dict(l=10, r=10, t=70, b=10))
    return fig


@fitted
def class_probs_before_after(labels, before: np.ndarray, after: np.ndarray, title: str = "") -> go.Figure:
    """Class probabilities with every head on, and with the chosen heads off."""
    y = safe_labels(labels)
    fig = go.Figure()
    for name, v, colour in (("all heads on", before, BEFORE_COLOUR), ("chosen heads off", after, AFTER_COLOUR)):
        v = np.asarray(v, dtype=np.float32)
        fig.add_trace(probability_bars(v, y, colour, name=name))
    fig.update_layout(
        barmode="group",
        title=esc(title),
        height=int(120 + 50 * len(y)),
        margin=dict(l=10, r=10, t=50, b=10),
        legend=dict(orientation="h", y=-0.2),
    )
    fig.update_xaxes(range=[0, 1], title="probability")
    fig.update_yaxes(autorange="reversed", type="category")
    return fig


@fitted
def importance_heatmap(scores: np.ndarray, unit: str = "log-probability", target: str = "", off=()) -> go.Figure:
    """Layers x heads: how much the prediction drops when that head alone is off (red = the
    head helps). Heads in `off` ((layer, head) pairs, 0-based) are marked with ×."""
    s = np.asarray(scores, dtype=np.float64)
    L, H = s.shape
    m = float(np.abs(s).max()) or 1.0
    text = [["×" if (l, h) in set(map(tuple, off)) else "" for h in range(H)] for l in range(L)]
    fig = go.Figure(
        go.Heatmap(
            z=s,
            x=np.arange(1, H + 1),
            y=np.arange(1, L + 1),
            **diverging(m),
            text=text,
            texttemplate="%{text}",
            xgap=1,
            ygap=1,
            colorbar=dict(title="drop", thickness=12),
            hovertemplate=f"layer %{{y}}, head %{{x}}: drop in {esc(unit)} %{{z:.3f}}<extra></extra>",
        )
    )
    head_axes(fig, L, H)
    t = f"effect of switching each head off alone on “{esc(target)}”" if target else "head importance"
    fig.update_layout(
        title=t, height=int(min(800, max(300, 40 * L + 140))), margin=dict(l=10, r=10, t=80, b=10), plot_bgcolor="white"
    )
    return fig
