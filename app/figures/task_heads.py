"""Figures of the per-token heads' runs: the live curves (loss; accuracy and F1, or exact match and
F1) and a reader's start and end probabilities over a passage's tokens."""

from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from bert.train.events import TaskHeadEval, TaskHeadStep, of_type

from ..formatting import finite_float
from .core import fitted, safe_labels
from .training import EXTRA_COLOUR, TRAIN_COLOUR, VALID_COLOUR, ema, thin

SCORE_NAMES = {"accuracy": "word accuracy", "f1": "F1", "exact_match": "exact match"}


def _line(fig: go.Figure, x, y, name: str, col: int, **style) -> None:
    style.setdefault("mode", "lines")
    hover = f"step %{{x}}: %{{y:.3f}}<extra>{name}</extra>"
    fig.add_trace(go.Scatter(x=x, y=y, name=name, hovertemplate=hover, **style), row=1, col=col)


@fitted
def task_head_curves(metrics, total_steps: int | None = None, height: int = 340) -> go.Figure:
    """Left: the training loss (faint) and its moving average, with the validation loss at each
    evaluation. Right: the task's scores at each evaluation (as fractions; a reader's EM and F1
    are in percent and drawn so)."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("loss", "validation scores"), horizontal_spacing=0.1)
    train = [m for m in of_type(metrics, TaskHeadStep) if finite_float(m.loss) is not None]
    if train:
        x, y, s = thin([m.step for m in train], [m.loss for m in train], list(ema([m.loss for m in train])))
        _line(fig, x, y, "loss per step", 1, line=dict(color=TRAIN_COLOUR, width=1), opacity=0.3)
        _line(fig, x, s, "smoothed loss", 1, line=dict(color=TRAIN_COLOUR, width=2.5))
    evals = of_type(metrics, TaskHeadEval)
    if evals:
        steps = [e.step for e in evals]
        _line(fig, steps, [finite_float(e.val_loss) for e in evals], "validation loss", 1, mode="lines+markers",
              line=dict(color=EXTRA_COLOUR, width=1.5, dash="dot"))  # fmt: skip
        colours = iter((VALID_COLOUR, "#ff7f0e", "#9467bd"))
        for name in evals[-1].scores:
            ys = [e.scores.get(name) for e in evals]
            if any(v is not None for v in ys):
                _line(fig, steps, ys, SCORE_NAMES.get(name, name), 2, mode="lines+markers",
                      line=dict(color=next(colours), width=2.5))  # fmt: skip
    if total_steps:
        fig.update_xaxes(range=[0, total_steps * 1.02])
    fig.update_xaxes(title="step")
    fig.update_yaxes(title="cross-entropy", rangemode="tozero", row=1, col=1)
    fig.update_yaxes(rangemode="tozero", row=1, col=2)
    fig.update_layout(
        height=height, margin=dict(l=10, r=10, t=40, b=10), legend=dict(orientation="h", y=-0.25), uirevision="keep"
    )
    return fig


@fitted
def span_probs(tokens: list[str], start: list[float], end: list[float], height: int = 260) -> go.Figure:
    """Each passage token's probability of starting the answer and of ending it (the two heads)."""
    x = list(range(len(tokens)))
    labels = safe_labels(tokens)
    fig = go.Figure()
    for name, probs, colour in (("start", start, VALID_COLOUR), ("end", end, TRAIN_COLOUR)):
        fig.add_trace(
            go.Bar(
                x=x,
                y=probs,
                name=f"P({name})",
                marker_color=colour,
                customdata=labels,
                hovertemplate="%{customdata}: %{y:.1%}<extra>" + name + "</extra>",
            )  # fmt: skip
        )
    fig.update_layout(barmode="group", height=height, margin=dict(l=10, r=10, t=10, b=10), legend=dict(orientation="h"))
    fig.update_xaxes(tickvals=x, ticktext=labels, tickangle=-60)
    fig.update_yaxes(range=[0, 1], tickformat=".0%", title="probability")
    return fig


@fitted
def tag_heatmap(tokens: list[str], tags: list[str], probs, height: int | None = None) -> go.Figure:
    """A tagger's probabilities: one row per token, one column per tag (each row sums to 1)."""
    rows, cols = safe_labels(tokens), safe_labels(tags)
    fig = go.Figure(
        go.Heatmap(
            z=probs, x=cols, y=rows, colorscale="Blues", zmin=0, zmax=1,
            hovertemplate="%{y} as %{x}: %{z:.1%}<extra></extra>", colorbar=dict(title="P(tag)", tickformat=".0%"),
        )
    )  # fmt: skip
    fig.update_layout(height=height or int(min(700, 120 + 26 * len(rows))), margin=dict(l=10, r=10, t=30, b=10))
    fig.update_xaxes(side="top", type="category")
    fig.update_yaxes(autorange="reversed", type="category")
    return fig
