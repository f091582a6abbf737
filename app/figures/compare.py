"""Figures for the Compare page: two models side by side, a word's senses across layers, and
how attention moved over training.

Pure functions: numpy in, plotly Figure out; no streamlit, no model; the pages import them
from here. Every token or text that reaches a
label or a hover is HTML-escaped first.

Dimension letters: L layers, H heads, T tokens, K classes, N sentences, S snapshots.
"""

from __future__ import annotations

import textwrap

import numpy as np
import plotly.graph_objects as go

from .attention_heads import head_axes
from .core import diverging, esc, fitted, probability_bars, safe_labels

# Okabe & Ito's palette: senses a reader with red-green colour blindness tells apart too
SENSE_COLOURS = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#56B4E9", "#CC79A7", "#F0E442", "#000000")


def _wrap(text: str, width: int = 60) -> str:
    return "<br>".join(textwrap.wrap(esc(text), width)) or "&nbsp;"


# --- 6. two models side by side -----------------------------------------------------------------


@fitted
def attention_diff_heatmap(diff: np.ndarray, tokens, title: str = "A − B") -> go.Figure:
    """One head's attention in model A minus model B (T, T): red where A looks more."""
    d = np.asarray(diff, dtype=np.float32)
    m = float(np.abs(d).max()) or 1e-6
    lab = safe_labels(tokens)
    fig = go.Figure(
        go.Heatmap(
            z=d,
            x=lab,
            y=lab,
            **diverging(m),
            colorbar=dict(title="A − B", thickness=12),
            hovertemplate="%{y} → %{x}: %{z:+.3f}<extra></extra>",
        )
    )
    fig.update_xaxes(title="key (looked at)", side="top", tickangle=-60, type="category", showticklabels=len(lab) <= 60)
    fig.update_yaxes(title="query (looking)", autorange="reversed", type="category", showticklabels=len(lab) <= 60)
    fig.update_layout(
        title=esc(title), height=int(max(380, min(860, 16 * len(lab) + 200))), margin=dict(l=10, r=10, t=50, b=10)
    )
    return fig


@fitted
def moved_heatmap(
    moved: np.ndarray, selected: tuple[int, int] | None = None, title: str = "how much each head's attention differs"
) -> go.Figure:
    """Layers x heads: the share of attention that goes somewhere else in B (0 same, 1 disjoint)."""
    mv = np.asarray(moved, dtype=np.float64)
    L, H = mv.shape
    fig = go.Figure(
        go.Heatmap(
            z=mv,
            x=np.arange(1, H + 1),
            y=np.arange(1, L + 1),
            colorscale="Reds",
            zmin=0,
            zmax=max(float(mv.max()), 1e-6),
            xgap=1,
            ygap=1,
            colorbar=dict(title="moved", thickness=12),
            hovertemplate="layer %{y}, head %{x}: %{z:.1%} moved<extra></extra>",
        )
    )
    if selected is not None:
        l, h = selected
        fig.add_shape(type="rect", x0=h + 0.5, x1=h + 1.5, y0=l + 0.5, y1=l + 1.5, line=dict(color="black", width=3))
    head_axes(fig, L, H)
    fig.update_layout(
        title=esc(title),
        plot_bgcolor="white",
        height=int(min(800, max(280, 40 * L + 130))),
        margin=dict(l=10, r=10, t=80, b=10),
    )
    return fig


@fitted
def class_probs_bar(labels, probs: np.ndarray, title: str = "") -> go.Figure:
    """One classifier's class probabilities."""
    p = np.asarray(probs, dtype=np.float32)
    fig = go.Figure(probability_bars(p, safe_labels(labels), "#1f77b4"))
    fig.update_layout(title=esc(title), height=int(90 + 40 * len(p)), margin=dict(l=10, r=10, t=40, b=10))
    fig.update_xaxes(range=[0, 1], title="probability")
    fig.update_yaxes(autorange="reversed", type="category")
    return fig


# --- 7. contextual embedding map ----------------------------------------------------------------


@fitted
def sense_scatter(coords: np.ndarray, senses, sentences, word: str = "", layer: int = 0) -> go.Figure:
    """One point per sentence: the word's vector at one layer, projected to 2-D by PCA,
    coloured by the sense written next to the sentence (hover: the sentence)."""
    xy = np.asarray(coords, dtype=np.float64)
    senses = [str(s) for s in senses]
    fig = go.Figure()
    for n, sense in enumerate(dict.fromkeys(senses)):  # first-seen order
        idx = [i for i, s in enumerate(senses) if s == sense]
        fig.add_trace(
            go.Scatter(
                x=xy[idx, 0],
                y=xy[idx, 1],
                mode="markers+text",
                name=esc(sense or "(no sense)"),
                text=[str(i + 1) for i in idx],
                textposition="top center",
                marker=dict(size=13, color=SENSE_COLOURS[n % len(SENSE_COLOURS)]),
                customdata=[_wrap(sentences[i]) for i in idx],
                hovertemplate="%{customdata}<extra>" + esc(sense) + "</extra>",
            )
        )
    where = "the embeddings" if layer == 0 else f"layer {layer}"
    fig.update_layout(
        title=f"“{esc(word)}” in each sentence, after {where} (PCA to 2-D)",
        height=460,
        margin=dict(l=10, r=10, t=50, b=10),
        legend=dict(orientation="h", y=-0.15),
    )
    fig.update_xaxes(title="PC1", zeroline=False)
    fig.update_yaxes(title="PC2", zeroline=False, scaleanchor="x", scaleratio=1)
    return fig


@fitted
def separation_line(scores: np.ndarray, layer: int | None = None) -> go.Figure:
    """Separation of the senses (mean silhouette, -1..1) at each layer; the shown layer marked."""
    s = np.asarray(scores, dtype=np.float64)
    x = list(range(len(s)))
    fig = go.Figure(
        go.Scatter(
            x=x, y=s, mode="lines+markers", name="separation", hovertemplate="layer %{x}: %{y:.2f}<extra></extra>"
        )
    )
    if layer is not None and 0 <= layer < len(s):
        fig.add_trace(
            go.Scatter(
                x=[layer],
                y=[s[layer]],
                mode="markers",
                name="shown above",
                marker=dict(size=14, color="#d62728", symbol="circle-open", line=dict(width=3)),
                hoverinfo="skip",
            )
        )
    fig.update_layout(
        title="how well the senses separate, layer by layer",
        height=320,
        showlegend=False,
        margin=dict(l=10, r=10, t=50, b=10),
    )
    fig.update_xaxes(title="layer (0 = embeddings)", dtick=1)
    fig.update_yaxes(title="separation (−1 mixed … 1 apart)", range=[min(-0.1, float(s.min()) - 0.05), 1])
    return fig


# --- 5. attention over training -----------------------------------------------------------------


@fitted
def change_over_training(
    steps, change: np.ndarray, selected: tuple[int, int] | None = None, step_index: int | None = None
) -> go.Figure:
    """How far the heads' attention moved since the first snapshot, at each recorded step:
    the mean over all heads, the head that moved most, and the picked head. change: (S, L, H)."""
    c = np.asarray(change, dtype=np.float64)
    S, L, H = c.shape
    flat = c.reshape(S, L * H)
    top = int(flat[-1].argmax()) if S else 0
    series = [
        ("mean over heads", flat.mean(1), "#1f77b4"),
        (f"most changed: layer {top // H + 1}, head {top % H + 1}", flat[:, top], "#d62728"),
    ]
    if selected is not None and selected[0] * H + selected[1] != top:
        l, h = selected
        series.append((f"layer {l + 1}, head {h + 1}", c[:, l, h], "#2ca02c"))
    fig = go.Figure(
        [
            go.Scatter(
                x=list(steps),
                y=y,
                mode="lines+markers",
                name=name,
                line=dict(color=col),
                hovertemplate="step %{x}: %{y:.1%} moved<extra></extra>",
            )
            for name, y, col in series
        ]
    )
    if step_index is not None and 0 <= step_index < S:
        fig.add_vline(x=list(steps)[step_index], line=dict(color="#7f7f7f", dash="dot"))
    fig.update_layout(
        title="attention moved since the first snapshot",
        height=340,
        margin=dict(l=10, r=10, t=50, b=10),
        legend=dict(orientation="h", y=-0.25),
    )
    fig.update_xaxes(title="training step")
    fig.update_yaxes(title="share of attention moved", range=[0, max(0.05, float(c.max()) * 1.1) if S else 1])
    return fig
