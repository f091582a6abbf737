"""Plotly figures of the Decoder page: the training curves and a decoding's attention. No streamlit here.

Tokens are escaped and made unique with app.figures.core.safe_labels (a typed `<b>` shows as text).
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from bert.train.events import of_type
from bert.train.seq2seq import Seq2SeqEval, Seq2SeqStep

from ..figures.core import fitted, safe_labels
from ..figures.training import EXTRA_COLOUR, TRAIN_COLOUR, VALID_COLOUR, thin


@fitted
def curves(metrics, steps: int | None = None) -> go.Figure:
    """Training loss (left) and held-out exact match and token accuracy (right) against the step."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("training loss", "held-out exact match"))
    tr = of_type(metrics, Seq2SeqStep)
    if tr:
        x, y = thin([m.step for m in tr], [m.loss for m in tr])
        fig.add_trace(go.Scatter(x=x, y=y, name="loss", line=dict(color=TRAIN_COLOUR)), row=1, col=1)
    ev = of_type(metrics, Seq2SeqEval)
    if ev:
        x = [m.step for m in ev]
        exact = go.Scatter(x=x, y=[m.exact_match for m in ev], name="exact match", line=dict(color=VALID_COLOUR))
        tokens = go.Scatter(
            x=x, y=[m.token_acc for m in ev], name="token accuracy", line=dict(color=EXTRA_COLOUR, dash="dot")
        )
        fig.add_trace(exact, row=1, col=2)
        fig.add_trace(tokens, row=1, col=2)
    fig.update_yaxes(range=[0, 1.02], row=1, col=2)
    if steps:
        fig.update_xaxes(range=[0, steps])
    fig.update_xaxes(title_text="step")
    fig.update_layout(height=320, margin=dict(l=40, r=10, t=40, b=40), legend=dict(orientation="h", y=-0.25))
    return fig


@fitted
def attention(matrix: np.ndarray, rows, cols, title: str, upto: int | None = None, xaxis: str = "") -> go.Figure:
    """A (rows, cols) attention heatmap; rows after `upto` (the decoding so far) left blank and
    row `upto` outlined: the step being looked at."""
    z = np.array(matrix, dtype=float)
    if upto is not None:
        z[upto + 1 :] = np.nan
    y, x = safe_labels(rows), safe_labels(cols)
    fig = go.Figure(
        go.Heatmap(
            z=z, x=x, y=y, colorscale="Blues", zmin=0, zmax=1, hovertemplate="%{y} → %{x}: %{z:.2f}<extra></extra>"
        )
    )
    if upto is not None:
        fig.add_shape(type="rect", x0=-0.5, x1=len(x) - 0.5, y0=upto - 0.5, y1=upto + 0.5, line=dict(color="#d62728"))
    fig.update_yaxes(autorange="reversed", title_text="decoder step (what it had written)", type="category")
    fig.update_xaxes(title_text=xaxis, type="category", tickangle=-45)
    fig.update_layout(title=title, height=120 + 26 * len(y), margin=dict(l=10, r=10, t=40, b=10))
    return fig
