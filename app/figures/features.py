"""Figures for the Features page: a dictionary's training curves (the trained model's beside the
control's) and one feature's activation histogram.

Pure functions: numbers in, plotly Figure out; no streamlit, no model. Names reach plotly escaped.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from .core import esc, fitted, model_line

CURVE_COLOURS = ("#1f77b4", "#888888")  # the model's dictionary, the control's


@fitted
def training_curves(named_curves) -> go.Figure:
    """Variance explained per step (solid) and the share of dead features (dotted), one colour
    per dictionary; named_curves: [(name, [DictionaryStep])]."""
    fig = go.Figure()
    for i, (name, steps) in enumerate(named_curves):
        colour = CURVE_COLOURS[i % len(CURVE_COLOURS)]
        x = [s.step for s in steps]
        for what, values, dash in (
            ("variance explained", [s.variance_explained for s in steps], "solid"),
            ("dead features", [s.dead for s in steps], "dot"),
        ):
            fig.add_trace(model_line(name, what, x, values, colour, dash, "step "))
    fig.update_yaxes(title="share", range=[0, 1.02])
    fig.update_xaxes(title="training step")
    fig.update_layout(height=320, margin=dict(l=10, r=10, t=30, b=10), legend=dict(orientation="h", y=-0.25))
    return fig


@fitted
def activation_histogram(counts: np.ndarray, edges: np.ndarray, feature: int) -> go.Figure:
    """How many held-out tokens the feature reached each activation on (only where it is active)."""
    counts, edges = np.asarray(counts, dtype=np.float64), np.asarray(edges, dtype=np.float64)
    mids = (edges[:-1] + edges[1:]) / 2 if len(edges) > 1 else np.zeros(0)
    fig = go.Figure(
        go.Bar(
            x=mids,
            y=counts,
            width=np.diff(edges) if len(edges) > 1 else None,
            marker_color=CURVE_COLOURS[0],
            hovertemplate="activation %{x:.2f}: %{y:.0f} tokens<extra></extra>",
        )
    )
    fig.update_xaxes(title=f"feature {int(feature)}'s activation (where active)")
    fig.update_yaxes(title="held-out tokens")
    fig.update_layout(height=260, margin=dict(l=10, r=10, t=20, b=10), bargap=0.05)
    return fig


@fitted
def purity_bars(named: list[tuple[str, float, float]]) -> go.Figure:
    """Each dictionary's mean part-of-speech purity (a bar) and the purity of 50 words drawn at
    random from the same text (a black tick on it); named: [(name, purity, chance)]."""
    names = [esc(n) for n, _, _ in named]
    fig = go.Figure(
        go.Bar(
            x=names,
            y=np.asarray([p for _, p, _ in named], dtype=np.float64),
            marker_color=[CURVE_COLOURS[0]] + [CURVE_COLOURS[1]] * (len(named) - 1),
            name="purity",
            hovertemplate="%{x}: purity %{y:.3f}<extra></extra>",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=names,
            y=np.asarray([c for _, _, c in named], dtype=np.float64),
            mode="markers",
            marker=dict(symbol="line-ew", size=40, line=dict(width=3, color="black")),
            name="50 words at random",
            hovertemplate="%{x}: 50 words at random %{y:.3f}<extra></extra>",
        )
    )
    fig.update_yaxes(title="share of a feature's top 50 words with its commonest tag", range=[0, 1.02])
    fig.update_layout(height=300, margin=dict(l=10, r=10, t=20, b=10), legend=dict(orientation="h", y=-0.2))
    return fig
