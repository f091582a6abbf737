"""Embedding figures: each embedding part as tokens x dimensions, their norms, the positions'
principal components, cosine similarity between positions, and a word's similarity by layer.

Dimension letters: T tokens, C hidden size, P positions.
"""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .core import DIVERGING, diverging, fitted, height_for, safe_labels

PART_NAMES = {
    "token": "token (word) embedding",
    "segment": "segment embedding",
    "position": "position embedding",
    "sum": "sum of the three",
    "normed": "after LayerNorm (the encoder's input)",
}


@fitted
def embedding_part_heatmap(part: np.ndarray, tokens, name: str = "", zmax: float | None = None) -> go.Figure:
    """One embedding part as tokens x dimensions. part: (T, C)."""
    part = np.asarray(part, dtype=np.float32)
    y = safe_labels(tokens)
    # colour range from the 99th percentile: a few huge dimensions would wash out the rest
    z = zmax if zmax else float(np.percentile(np.abs(part), 99) or np.abs(part).max() or 1.0)
    fig = go.Figure(
        go.Heatmap(
            z=part,
            y=y,
            **diverging(z),
            hovertemplate="%{y}, dim %{x}: %{z:.3f}<extra></extra>",
            colorbar=dict(thickness=12),
        )
    )
    fig.update_layout(
        title=PART_NAMES.get(name, name),
        height=height_for(len(y), per=14, lo=280, hi=700),
        margin=dict(l=10, r=10, t=40, b=10),
    )
    fig.update_xaxes(title="dimension")
    fig.update_yaxes(autorange="reversed", type="category", showticklabels=len(y) <= 60)
    return fig


@fitted
def embedding_parts_heatmaps(parts: dict[str, np.ndarray], tokens) -> go.Figure:
    """All embedding parts stacked, one heatmap per part (tokens x dimensions), shared colours."""
    names = list(parts)
    y = safe_labels(tokens)
    fig = make_subplots(
        rows=len(names),
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.04,
        subplot_titles=[PART_NAMES.get(n, n) for n in names],
    )
    for i, n in enumerate(names):
        p = np.asarray(parts[n], dtype=np.float32)
        fig.add_trace(
            go.Heatmap(z=p, y=y, coloraxis="coloraxis", hovertemplate="%{y}, dim %{x}: %{z:.3f}<extra></extra>"),
            row=i + 1,
            col=1,
        )
    zmax = max(float(np.percentile(np.abs(np.asarray(parts[n])), 99)) for n in names) or 1.0
    fig.update_layout(
        coloraxis=dict(colorscale=DIVERGING, cmid=0, cmin=-zmax, cmax=zmax),
        height=int(len(names) * height_for(len(y), per=10, lo=180, hi=360) + 60),
        margin=dict(l=10, r=10, t=40, b=10),
    )
    fig.update_yaxes(autorange="reversed", type="category", showticklabels=len(y) <= 40)
    fig.update_xaxes(title_text="dimension", row=len(names), col=1)
    return fig


@fitted
def norms_bar(norms: dict[str, np.ndarray], tokens) -> go.Figure:
    """Length (L2 norm) of each part's vector, per token, as grouped bars."""
    x = safe_labels(tokens)
    fig = go.Figure()
    for name, v in norms.items():
        fig.add_trace(
            go.Bar(
                name=PART_NAMES.get(name, name),
                x=x,
                y=np.asarray(v, dtype=np.float32),
                hovertemplate="%{x}: %{y:.2f}<extra></extra>",
            )
        )
    fig.update_layout(
        barmode="group",
        height=380,
        margin=dict(l=10, r=10, t=40, b=10),
        title="vector length per token",
        legend=dict(orientation="h", y=-0.3),
        yaxis_title="L2 norm",
    )
    fig.update_xaxes(type="category", tickangle=-60, showticklabels=len(x) <= 80)
    return fig


@fitted
def position_pca(coords: np.ndarray, ratio=None, used: int | None = None) -> go.Figure:
    """The learned position embeddings projected to 2-D, one point per position (coords (P, 2))."""
    coords = np.asarray(coords, dtype=np.float32)
    P = coords.shape[0]
    pos = np.arange(P)
    fig = go.Figure(
        go.Scatter(
            x=coords[:, 0],
            y=coords[:, 1],
            mode="markers+lines",
            line=dict(color="rgba(150,150,150,0.3)", width=1),
            marker=dict(color=pos, colorscale="Viridis", size=6, colorbar=dict(title="position", thickness=12)),
            customdata=pos,
            hovertemplate="position %{customdata}<extra></extra>",
            name="positions",
        )
    )
    if used:
        u = min(used, P)
        fig.add_trace(
            go.Scatter(
                x=coords[:u, 0],
                y=coords[:u, 1],
                mode="markers",
                marker=dict(size=11, color="rgba(0,0,0,0)", line=dict(color="#d62728", width=2)),
                customdata=pos[:u],
                hovertemplate="position %{customdata} (used)<extra></extra>",
                name="used by your input",
            )
        )
    r = "" if ratio is None else f" (PC1 {100 * float(ratio[0]):.0f}%, PC2 {100 * float(ratio[1]):.0f}% of variance)"
    fig.update_layout(
        title=f"position embeddings, PCA to 2-D{r}",
        height=480,
        margin=dict(l=10, r=10, t=50, b=10),
        showlegend=bool(used),
        legend=dict(orientation="h", y=-0.12),
    )
    fig.update_xaxes(title="PC1")
    fig.update_yaxes(title="PC2", scaleanchor="x", scaleratio=1)
    return fig


@fitted
def cosine_heatmap(sim: np.ndarray, labels=None, title: str = "cosine similarity", axis_title: str = "") -> go.Figure:
    """(N, N) cosine similarities, -1..1."""
    sim = np.asarray(sim, dtype=np.float32)
    kw = {}
    if labels is not None:
        kw = dict(x=safe_labels(labels), y=safe_labels(labels))
    fig = go.Figure(
        go.Heatmap(
            z=sim,
            **diverging(1),
            hovertemplate="%{y} vs %{x}: %{z:.2f}<extra></extra>",
            colorbar=dict(thickness=12),
            **kw,
        )
    )
    fig.update_layout(title=title, height=480, margin=dict(l=10, r=10, t=50, b=10))
    fig.update_xaxes(title=axis_title)
    fig.update_yaxes(title=axis_title, autorange="reversed", scaleanchor="x", scaleratio=1)
    return fig


@fitted
def layer_similarity(
    series: dict[str, list[float]], title: str = "cosine similarity by layer", y_title: str = "cosine similarity"
) -> go.Figure:
    """Lines over layers (x = 0 for the embedding output, then 1..L)."""
    fig = go.Figure()
    for name, ys in series.items():
        fig.add_trace(
            go.Scatter(
                x=list(range(len(ys))),
                y=[float(v) for v in ys],
                mode="lines+markers",
                name=html.escape(name),
                hovertemplate="layer %{x}: %{y:.3f}<extra></extra>",
            )
        )
    fig.update_layout(
        title=title, height=380, margin=dict(l=10, r=10, t=50, b=10), legend=dict(orientation="h", y=-0.25)
    )
    fig.update_xaxes(title="layer (0 = embeddings)", dtick=1)
    fig.update_yaxes(title=y_title)
    return fig
