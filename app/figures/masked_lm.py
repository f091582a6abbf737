"""Masked-word and next-sentence figures: a [MASK]'s top guesses, ELECTRA's replaced-token
bars, the next-sentence head's two probabilities, and a gap read both ways beside read left only.

Dimension letters: K top-k.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .core import fitted, probability_bars, safe_labels

if TYPE_CHECKING:
    from bert.analysis.mlm import MLMPredictions


@fitted
def mlm_topk_bar(tokens, probs, title: str = "") -> go.Figure:
    """Top-k candidates for one [MASK], most likely on top. tokens: K strings, probs: K values."""
    probs = np.asarray(probs, dtype=np.float32)
    y = safe_labels(tokens)
    fig = go.Figure(probability_bars(probs, y, "#1f77b4"))
    fig.update_layout(title=html.escape(title), height=int(60 + 28 * len(y)), margin=dict(l=10, r=10, t=40, b=10))
    fig.update_xaxes(title="probability", range=[0, max(1e-6, float(probs.max()) * 1.1 if len(probs) else 1)])
    fig.update_yaxes(autorange="reversed", type="category")
    return fig


@fitted
def replaced_bar(tokens: list[str], probs) -> go.Figure:
    """ELECTRA's discriminator: one bar per token, P(replaced); red over one half."""
    probs = [float(p) for p in probs]
    x = safe_labels(tokens)  # escaped, unique: a word may repeat
    colours = ["#d62728" if p > 0.5 else "#1f77b4" for p in probs]
    fig = go.Figure(
        go.Bar(x=x, y=probs, marker_color=colours, hovertemplate="%{x}<br>P(replaced) %{y:.1%}<extra></extra>")
    )
    fig.add_hline(y=0.5, line_dash="dot", line_color="grey")
    fig.update_layout(height=300, margin=dict(l=10, r=10, t=30, b=10), title="P(this token was replaced)")
    fig.update_yaxes(range=[0, 1], title="probability")
    return fig


@fitted
def nsp_bar(p_is_next: float) -> go.Figure:
    """The NSP head's two probabilities: B follows A (IsNext) or not (NotNext)."""
    p = float(p_is_next)
    labels = ["B follows A (IsNext)", "B is random (NotNext)"]
    fig = go.Figure(probability_bars([p, 1 - p], labels, ["#2ca02c", "#d62728"]))
    fig.update_layout(height=200, margin=dict(l=10, r=10, t=20, b=10))
    fig.update_xaxes(range=[0, 1], title="probability")
    fig.update_yaxes(autorange="reversed")
    return fig


def two_readings(both: MLMPredictions, left: MLMPredictions, gap: int = 0) -> go.Figure:
    """A gap's top guesses read both ways (left) and read left only (right), side by side (the
    encoders-and-decoders lesson, the class board's "both ways or left only" question)."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("reads both ways", "reads left only"), horizontal_spacing=0.2)
    for c, (p, colour) in enumerate(((both, "#1f77b4"), (left, "#ff7f0e")), 1):
        fig.add_trace(probability_bars(p.top_probs[gap], safe_labels(p.top_tokens[gap]), colour), row=1, col=c)
        fig.update_yaxes(autorange="reversed", type="category", row=1, col=c)
    top = max(float(both.top_probs[gap].max()), float(left.top_probs[gap].max()), 1e-6)
    fig.update_xaxes(title_text="probability", range=[0, top * 1.15])  # one scale for both, the bars readable
    fig.update_layout(showlegend=False, height=80 + 34 * len(both.top_tokens[gap]), margin=dict(l=10, r=10, t=40, b=10))
    return fig
