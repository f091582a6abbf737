"""Figures for the Explanations page: attention rollout against saliency, and the logit lens.

Pure functions: numpy in, plotly Figure out; no streamlit, no model; the pages import them
from here. Every token or text that reaches a
label or a hover is HTML-escaped first.

Dimension letters: L layers (L+1 with the embedding output), T tokens, k top predictions.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from .core import esc, fitted, safe_labels

ROLLOUT_COLOUR, SALIENCY_COLOUR = "#1f77b4", "#ff7f0e"


def _layer_names(n: int) -> list[str]:
    """Row names for L+1 hidden states: the embedding output, then layer 1..L."""
    return ["embeddings"] + [f"layer {i}" for i in range(1, n)]


# --- 2. rollout vs saliency --------------------------------------------------------------------------


@fitted
def saliency_bars(
    tokens, rollout: np.ndarray, saliency: np.ndarray, position: int | None = None, title: str = ""
) -> go.Figure:
    """Two bars per token: attention rollout and input x gradient saliency (each sums to 1)."""
    x = safe_labels(tokens)
    bars = (
        ("attention rollout", "rollout", rollout, ROLLOUT_COLOUR),
        ("saliency (input × gradient)", "saliency", saliency, SALIENCY_COLOUR),
    )
    fig = go.Figure(
        [
            go.Bar(
                name=name,
                x=x,
                y=np.asarray(values, dtype=np.float32),
                marker_color=colour,
                hovertemplate=f"%{{x}}: {what} %{{y:.3f}}<extra></extra>",
            )
            for name, what, values, colour in bars
        ]
    )
    if position is not None and 0 <= position < len(x):
        fig.add_annotation(
            x=x[position],
            y=0,
            yref="paper",
            yanchor="top",
            text="▲ predicted here",
            showarrow=False,
            font=dict(color="#d62728", size=11),
            yshift=-2,
        )
    fig.update_layout(
        barmode="group",
        title=esc(title),
        height=400,
        margin=dict(l=10, r=10, t=50 if title else 20, b=10),
        legend=dict(orientation="h", y=1.02, yanchor="bottom", x=1, xanchor="right"),
    )
    fig.update_xaxes(type="category", tickangle=-60, showticklabels=len(x) <= 100)
    fig.update_yaxes(title="share of the explanation")
    return fig


# --- 3. logit lens ---------------------------------------------------------------------------------


@fitted
def logit_lens_heatmap(top_tokens, top_probs: np.ndarray, answer: str | None = None, title: str = "") -> go.Figure:
    """Layers (rows, embeddings at the top) x rank (columns): each cell the token the MLM head
    reads out at that layer, coloured by its probability; the final answer is in bold.
    top_tokens: [L+1][k] strings; top_probs: (L+1, k)."""
    p = np.asarray(top_probs, dtype=np.float32)
    n, k = p.shape
    text = [[(f"<b>{esc(t)}</b>" if answer is not None and t == answer else esc(t)) for t in row] for row in top_tokens]
    fig = go.Figure(
        go.Heatmap(
            z=p,
            x=[f"#{i + 1}" for i in range(k)],
            y=_layer_names(n),
            text=text,
            texttemplate="%{text}<br>%{z:.1%}",
            textfont=dict(size=11),
            colorscale="Blues",
            zmin=0,
            zmax=1,
            colorbar=dict(title="probability", thickness=12),
            hovertemplate="%{y}, guess %{x}: %{text} (%{z:.1%})<extra></extra>",
        )
    )
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_xaxes(side="top", title="rank of the guess")
    fig.update_layout(title=esc(title), height=int(70 + 52 * n), margin=dict(l=10, r=10, t=70 if title else 40, b=10))
    return fig


@fitted
def answer_by_layer(answer_prob: np.ndarray, answer_rank: np.ndarray, answer: str) -> go.Figure:
    """The final answer's probability at each layer (hover: its rank there)."""
    p = np.asarray(answer_prob, dtype=np.float64)
    r = np.asarray(answer_rank)
    fig = go.Figure(
        go.Scatter(
            x=list(range(len(p))),
            y=p,
            mode="lines+markers",
            customdata=r,
            name=esc(answer),
            hovertemplate="layer %{x}: %{y:.1%}, rank %{customdata}<extra></extra>",
        )
    )
    fig.update_layout(
        title=f"probability of the final answer “{esc(answer)}” at each layer",
        height=300,
        margin=dict(l=10, r=10, t=50, b=10),
    )
    fig.update_xaxes(title="layer (0 = embeddings)", dtick=1)
    fig.update_yaxes(title="probability", range=[0, 1])
    return fig
