"""Figures for the analysis pages (head patterns, explanations, ablation, side by side).

Pure functions: numpy in, plotly Figure out; no streamlit, no model. Every token or text that
reaches a label or a hover is HTML-escaped first (plotly labels accept a little HTML).

Dimension letters: L layers (L+1 with the embedding output), H heads, T tokens, k top
predictions, K classes, N sentences.
"""

from __future__ import annotations

import html
import textwrap

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .plots import DIVERGING, safe_labels

# one colour per head-pattern label (bert.analysis.LABELS), and a short name for the cells
PATTERN_COLOURS = {
    "[CLS]": "#1f77b4",
    "[SEP]": "#ff7f0e",
    "previous": "#2ca02c",
    "next": "#98df8a",
    "self": "#9467bd",
    "punctuation": "#d62728",
    "broad": "#c7c7c7",
    "other": "#8c564b",
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
ROLLOUT_COLOUR, SALIENCY_COLOUR = "#1f77b4", "#ff7f0e"
BEFORE_COLOUR, AFTER_COLOUR = "#7f7f7f", "#d62728"
SENSE_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf")


def _esc(text) -> str:
    return html.escape(str(text))


def _wrap(text: str, width: int = 60) -> str:
    return "<br>".join(textwrap.wrap(_esc(text), width)) or "&nbsp;"


def _head_axes(fig: go.Figure, L: int, H: int) -> None:
    """Heads across the top as H1..H12, layers down as L1..L6 (no axis titles to clash with
    the figure's title)."""
    fig.update_xaxes(tickvals=list(range(1, H + 1)), ticktext=[f"H{h}" for h in range(1, H + 1)], side="top")
    fig.update_yaxes(tickvals=list(range(1, L + 1)), ticktext=[f"L{l}" for l in range(1, L + 1)], autorange="reversed")


def _layer_names(n: int) -> list[str]:
    """Row names for L+1 hidden states: the embedding output, then layer 1..L."""
    return ["embeddings"] + [f"layer {i}" for i in range(1, n)]


# --- 1. head patterns ------------------------------------------------------------------------------


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
    names = list(PATTERN_COLOURS)
    n = len(names)
    z = np.array([[names.index(x) if x in names else n - 1 for x in row] for row in labels])
    scale = []
    for i, name in enumerate(names):  # stepwise: value i -> colour i
        scale += [(i / n, PATTERN_COLOURS[name]), ((i + 1) / n, PATTERN_COLOURS[name])]
    heads, layers = np.arange(1, H + 1), np.arange(1, L + 1)
    text = [[PATTERN_SHORT.get(x, x) for x in row] for row in labels]
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=heads,
            y=layers,
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
    )
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
    fig.add_trace(
        go.Scatter(
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
    )
    counts = {name: int((labels == name).sum()) for name in names}
    for name in names:
        if counts[name]:
            fig.add_trace(
                go.Scatter(
                    x=[None],
                    y=[None],
                    mode="markers",
                    name=f"{_esc(name)} ({counts[name]})",
                    marker=dict(size=12, symbol="square", color=PATTERN_COLOURS[name]),
                    hoverinfo="skip",
                )
            )
    if selected is not None:
        l, h = selected
        fig.add_shape(type="rect", x0=h + 0.5, x1=h + 1.5, y0=l + 0.5, y1=l + 1.5, line=dict(color="black", width=3))
    fig.update_xaxes(
        title="head", tickvals=list(heads), side="top", showgrid=False, zeroline=False, range=[0.5, H + 0.5]
    )
    fig.update_yaxes(title="layer", tickvals=list(layers), autorange="reversed", showgrid=False, zeroline=False)
    fig.update_layout(
        title=_esc(title),
        height=int(min(900, max(320, 46 * L + 150))),
        margin=dict(l=10, r=10, t=70 if title else 50, b=10),
        plot_bgcolor="white",
        legend=dict(orientation="h", y=-0.05, yanchor="top"),
        clickmode="event+select",
        dragmode=False,
    )
    return fig


def head_stats_bar(stats: dict[str, np.ndarray], layer: int, head: int) -> go.Figure:
    """One head's average attention to each target, and its normalised entropy."""
    names = list(STAT_NAMES)
    vals = [float(np.asarray(stats[s])[layer, head]) for s in names]
    colours = [PATTERN_COLOURS.get(s, "#c7c7c7") for s in names]
    fig = go.Figure(
        go.Bar(
            x=[_esc(s) for s in names],
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


# --- 2. rollout vs saliency --------------------------------------------------------------------------


def saliency_bars(
    tokens, rollout: np.ndarray, saliency: np.ndarray, position: int | None = None, title: str = ""
) -> go.Figure:
    """Two bars per token: attention rollout and input x gradient saliency (each sums to 1)."""
    x = safe_labels(tokens)
    fig = go.Figure(
        [
            go.Bar(
                name="attention rollout",
                x=x,
                y=np.asarray(rollout, dtype=np.float32),
                marker_color=ROLLOUT_COLOUR,
                hovertemplate="%{x}: rollout %{y:.3f}<extra></extra>",
            ),
            go.Bar(
                name="saliency (input × gradient)",
                x=x,
                y=np.asarray(saliency, dtype=np.float32),
                marker_color=SALIENCY_COLOUR,
                hovertemplate="%{x}: saliency %{y:.3f}<extra></extra>",
            ),
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
        title=_esc(title),
        height=400,
        margin=dict(l=10, r=10, t=50 if title else 20, b=10),
        legend=dict(orientation="h", y=1.02, yanchor="bottom", x=1, xanchor="right"),
    )
    fig.update_xaxes(type="category", tickangle=-60, showticklabels=len(x) <= 100)
    fig.update_yaxes(title="share of the explanation")
    return fig


# --- 3. logit lens ---------------------------------------------------------------------------------


def logit_lens_heatmap(top_tokens, top_probs: np.ndarray, answer: str | None = None, title: str = "") -> go.Figure:
    """Layers (rows, embeddings at the top) x rank (columns): each cell the token the MLM head
    reads out at that layer, coloured by its probability; the final answer is in bold.
    top_tokens: [L+1][k] strings; top_probs: (L+1, k)."""
    p = np.asarray(top_probs, dtype=np.float32)
    n, k = p.shape
    text = [
        [(f"<b>{_esc(t)}</b>" if answer is not None and t == answer else _esc(t)) for t in row] for row in top_tokens
    ]
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
    fig.update_layout(title=_esc(title), height=int(70 + 52 * n), margin=dict(l=10, r=10, t=70 if title else 40, b=10))
    return fig


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
            name=_esc(answer),
            hovertemplate="layer %{x}: %{y:.1%}, rank %{customdata}<extra></extra>",
        )
    )
    fig.update_layout(
        title=f"probability of the final answer “{_esc(answer)}” at each layer",
        height=300,
        margin=dict(l=10, r=10, t=50, b=10),
    )
    fig.update_xaxes(title="layer (0 = embeddings)", dtick=1)
    fig.update_yaxes(title="probability", range=[0, 1])
    return fig


# --- 4. head ablation ------------------------------------------------------------------------------


def topk_before_after(before_tokens, before_probs, after_tokens, after_probs, title: str = "") -> go.Figure:
    """Top-k guesses with every head on (left) and with the chosen heads off (right)."""
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.18, subplot_titles=("all heads on", "chosen heads off"))
    for c, (toks, probs, colour) in enumerate(
        ((before_tokens, before_probs, BEFORE_COLOUR), (after_tokens, after_probs, AFTER_COLOUR)), 1
    ):
        probs = np.asarray(probs, dtype=np.float32)
        fig.add_trace(
            go.Bar(
                x=probs,
                y=safe_labels(toks),
                orientation="h",
                marker_color=colour,
                text=[f"{v:.1%}" for v in probs],
                textposition="auto",
                hovertemplate="%{y}: %{x:.2%}<extra></extra>",
                showlegend=False,
            ),
            row=1,
            col=c,
        )
    top = max([float(np.max(p)) for p in (before_probs, after_probs) if len(p)] + [1e-6])
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_xaxes(range=[0, min(1.0, top * 1.15)], title="probability")
    k = max(len(before_tokens), len(after_tokens), 1)
    fig.update_layout(title=_esc(title), height=int(110 + 30 * k), margin=dict(l=10, r=10, t=70, b=10))
    return fig


def class_probs_before_after(labels, before: np.ndarray, after: np.ndarray, title: str = "") -> go.Figure:
    """Class probabilities with every head on, and with the chosen heads off."""
    y = safe_labels(labels)
    fig = go.Figure()
    for name, v, colour in (("all heads on", before, BEFORE_COLOUR), ("chosen heads off", after, AFTER_COLOUR)):
        v = np.asarray(v, dtype=np.float32)
        fig.add_trace(
            go.Bar(
                name=name,
                x=v,
                y=y,
                orientation="h",
                marker_color=colour,
                text=[f"{p:.1%}" for p in v],
                textposition="auto",
                hovertemplate="%{y}: %{x:.2%}<extra></extra>",
            )
        )
    fig.update_layout(
        barmode="group",
        title=_esc(title),
        height=int(120 + 50 * len(y)),
        margin=dict(l=10, r=10, t=50, b=10),
        legend=dict(orientation="h", y=-0.2),
    )
    fig.update_xaxes(range=[0, 1], title="probability")
    fig.update_yaxes(autorange="reversed", type="category")
    return fig


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
            colorscale=DIVERGING,
            zmid=0,
            zmin=-m,
            zmax=m,
            text=text,
            texttemplate="%{text}",
            xgap=1,
            ygap=1,
            colorbar=dict(title="drop", thickness=12),
            hovertemplate=f"layer %{{y}}, head %{{x}}: drop in {_esc(unit)} %{{z:.3f}}<extra></extra>",
        )
    )
    _head_axes(fig, L, H)
    t = f"effect of switching each head off alone on “{_esc(target)}”" if target else "head importance"
    fig.update_layout(
        title=t, height=int(min(800, max(300, 40 * L + 140))), margin=dict(l=10, r=10, t=80, b=10), plot_bgcolor="white"
    )
    return fig


# --- 6. two models side by side -----------------------------------------------------------------


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
            colorscale=DIVERGING,
            zmid=0,
            zmin=-m,
            zmax=m,
            colorbar=dict(title="A − B", thickness=12),
            hovertemplate="%{y} → %{x}: %{z:+.3f}<extra></extra>",
        )
    )
    fig.update_xaxes(title="key (looked at)", side="top", tickangle=-60, type="category", showticklabels=len(lab) <= 60)
    fig.update_yaxes(title="query (looking)", autorange="reversed", type="category", showticklabels=len(lab) <= 60)
    fig.update_layout(
        title=_esc(title), height=int(max(380, min(860, 16 * len(lab) + 200))), margin=dict(l=10, r=10, t=50, b=10)
    )
    return fig


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
    _head_axes(fig, L, H)
    fig.update_layout(
        title=_esc(title),
        plot_bgcolor="white",
        height=int(min(800, max(280, 40 * L + 130))),
        margin=dict(l=10, r=10, t=80, b=10),
    )
    return fig


def class_probs_bar(labels, probs: np.ndarray, title: str = "") -> go.Figure:
    """One classifier's class probabilities."""
    p = np.asarray(probs, dtype=np.float32)
    fig = go.Figure(
        go.Bar(
            x=p,
            y=safe_labels(labels),
            orientation="h",
            marker_color="#1f77b4",
            text=[f"{v:.1%}" for v in p],
            textposition="auto",
            hovertemplate="%{y}: %{x:.2%}<extra></extra>",
        )
    )
    fig.update_layout(title=_esc(title), height=int(90 + 40 * len(p)), margin=dict(l=10, r=10, t=40, b=10))
    fig.update_xaxes(range=[0, 1], title="probability")
    fig.update_yaxes(autorange="reversed", type="category")
    return fig


# --- 7. contextual embedding map ----------------------------------------------------------------


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
                name=_esc(sense or "(no sense)"),
                text=[str(i + 1) for i in idx],
                textposition="top center",
                marker=dict(size=13, color=SENSE_COLOURS[n % len(SENSE_COLOURS)]),
                customdata=[_wrap(sentences[i]) for i in idx],
                hovertemplate="%{customdata}<extra>" + _esc(sense) + "</extra>",
            )
        )
    where = "the embeddings" if layer == 0 else f"layer {layer}"
    fig.update_layout(
        title=f"“{_esc(word)}” in each sentence, after {where} (PCA to 2-D)",
        height=460,
        margin=dict(l=10, r=10, t=50, b=10),
        legend=dict(orientation="h", y=-0.15),
    )
    fig.update_xaxes(title="PC1", zeroline=False)
    fig.update_yaxes(title="PC2", zeroline=False, scaleanchor="x", scaleratio=1)
    return fig


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
