"""Plotly figures for the training pages: live curves and results. No streamlit here.

Every function takes the events a job produced (bert/train/events.py, from bert/train/finetune.py and
bert/train/pretrain.py) or plain numbers, and returns a Figure; class names and tokens are escaped and made
unique with app.figures.core.safe_labels (a class called `<b>x</b>` shows as text).
"""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from bert.train.events import FinetuneEval, FinetuneStep, PretrainEval, PretrainStart, PretrainStep, of_type

from ..formatting import finite_float
from .core import fitted, probability_bars, safe_labels

MAX_POINTS = 1500  # longer series are thinned for drawing (every k-th point, last kept)
# Okabe & Ito's blue, vermillion, bluish green and reddish purple: four colours a reader with
# red-green colour blindness tells apart too (tests/test_figure_access.py)
TRAIN_COLOUR = "#0072B2"
VALID_COLOUR = "#D55E00"
EXTRA_COLOUR = "#009E73"
PLATEAU_COLOUR = "#CC79A7"  # the moment a pre-training run left the unigram plateau


def ema(values, alpha: float = 0.1) -> np.ndarray:
    """Exponential moving average, started at the first value (the smoothed loss curve)."""
    out = np.empty(len(values), dtype=np.float64)
    acc = None
    for i, v in enumerate(values):
        v = float(v)
        acc = v if acc is None or not np.isfinite(acc) else (1 - alpha) * acc + alpha * v
        out[i] = acc
    return out


def thin(xs, *ys, max_points: int = MAX_POINTS):
    """Every k-th point so at most max_points remain; the last point is always kept."""
    n = len(xs)
    if n <= max_points:
        return (list(xs), *[list(y) for y in ys])
    k = int(np.ceil(n / max_points))
    idx = list(range(0, n, k))
    if idx[-1] != n - 1:
        idx.append(n - 1)
    return ([xs[i] for i in idx], *[[y[i] for i in idx] for y in ys])


def _step_curve(
    fig: go.Figure, x, y, name: str, tag: str, line: dict, *, col: int = 1, secondary_y=None, fmt=".3f", **extra
) -> None:
    """One curve over training steps in panel (1, col): hovering shows the step, the value
    (formatted with `fmt`) and `tag`; `extra`: more go.Scatter settings (mode is "lines" unless given)."""
    extra.setdefault("mode", "lines")
    hover = f"step %{{x}}: %{{y:{fmt}}}<extra>{tag}</extra>"
    trace = go.Scatter(x=x, y=y, name=name, line=line, hovertemplate=hover, **extra)
    fig.add_trace(trace, row=1, col=col, secondary_y=secondary_y)


def _placeholder(fig: go.Figure, text: str, row: int, col: int) -> None:
    """An empty trace (so the subplot's axes are drawn) and a grey note in its middle."""
    fig.add_trace(go.Scatter(x=[], y=[], showlegend=False, hoverinfo="skip"), row=row, col=col)
    if text:
        sub = fig.get_subplot(row, col)
        x0, x1 = sub.xaxis.domain
        y0, y1 = sub.yaxis.domain
        fig.add_annotation(
            text=text,
            showarrow=False,
            font=dict(color="#888888"),
            xref="paper",
            yref="paper",
            x=(x0 + x1) / 2,
            y=(y0 + y1) / 2,
        )


# --- fine-tuning -------------------------------------------------------------------------------


@fitted
def finetune_curves(metrics, total_steps: int | None = None, height: int = 360) -> go.Figure:
    """Left: training loss per step (faint) and smoothed. Right: validation accuracy (and loss,
    on its own axis) at each evaluation."""
    fig = make_subplots(
        rows=1,
        cols=2,
        specs=[[{}, {"secondary_y": True}]],
        subplot_titles=("training loss", "validation"),
        horizontal_spacing=0.1,
    )
    train = [m for m in of_type(metrics, FinetuneStep) if finite_float(m.loss) is not None]
    if train:
        _finetune_loss_traces(fig, train)
    else:
        _placeholder(fig, "waiting for the first step…", 1, 1)
    evals = [m for m in of_type(metrics, FinetuneEval) if finite_float(m.accuracy) is not None]
    if evals:
        _finetune_eval_traces(fig, evals)
    else:
        _placeholder(fig, "first evaluation pending…", 1, 2)
    if total_steps:
        fig.update_xaxes(range=[0, total_steps * 1.02])
    fig.update_xaxes(title="step")
    fig.update_yaxes(title="cross-entropy", row=1, col=1, rangemode="tozero")
    fig.update_yaxes(title="accuracy", range=[0, 1.02], tickformat=".0%", row=1, col=2, secondary_y=False)
    fig.update_yaxes(title="loss", row=1, col=2, secondary_y=True, rangemode="tozero", showgrid=False)
    fig.update_layout(
        height=height, margin=dict(l=10, r=10, t=40, b=10), legend=dict(orientation="h", y=-0.25), uirevision="keep"
    )
    return fig


def _finetune_loss_traces(fig: go.Figure, train: list[FinetuneStep]) -> None:
    """Left panel: the training loss at each step (faint) and its moving average (thinned)."""
    steps = [m.step for m in train]
    loss = [float(m.loss) for m in train]
    smooth = ema(loss, 0.1)
    x, y, s = thin(steps, loss, list(smooth))
    _step_curve(fig, x, y, "loss per step", "loss", dict(color=TRAIN_COLOUR, width=1), opacity=0.3)
    _step_curve(fig, x, s, "smoothed loss", "smoothed", dict(color=TRAIN_COLOUR, width=2.5))


def _finetune_eval_traces(fig: go.Figure, evals: list[FinetuneEval]) -> None:
    """Right panel: validation accuracy and, on the secondary axis, validation loss."""
    steps = [m.step for m in evals]
    acc, vl = [m.accuracy for m in evals], [finite_float(m.val_loss) for m in evals]
    right = dict(col=2, mode="lines+markers")
    line = dict(color=VALID_COLOUR, width=2.5)
    _step_curve(fig, steps, acc, "validation accuracy", "accuracy", line, secondary_y=False, fmt=".1%", **right)
    line = dict(color=EXTRA_COLOUR, width=1.5, dash="dot")
    _step_curve(fig, steps, vl, "validation loss", "validation loss", line, secondary_y=True, **right)


@fitted
def class_counts(counts: dict, title: str = "") -> go.Figure:
    labels = safe_labels(list(counts))
    values = [int(v) for v in counts.values()]
    fig = go.Figure(
        go.Bar(
            x=labels,
            y=values,
            text=[f"{v:,}" for v in values],
            textposition="auto",
            marker_color=TRAIN_COLOUR,
            hovertemplate="%{x}: %{y:,}<extra></extra>",
        )
    )
    fig.update_layout(title=html.escape(title), height=260, margin=dict(l=10, r=10, t=40 if title else 10, b=10))
    fig.update_xaxes(type="category", title="class")
    fig.update_yaxes(title="texts")
    return fig


@fitted
def confusion_matrix(conf, classes) -> go.Figure:
    """Rows: true class; columns: predicted class; each cell shows the count and the row share."""
    conf = np.asarray(conf, dtype=np.int64)
    rows = conf.sum(1, keepdims=True)
    share = conf / np.maximum(rows, 1)
    labels = safe_labels(classes)
    text = [[f"{conf[i, j]:,}<br>{share[i, j]:.0%}" for j in range(conf.shape[1])] for i in range(conf.shape[0])]
    fig = go.Figure(
        go.Heatmap(
            z=share,
            x=labels,
            y=labels,
            colorscale="Blues",
            zmin=0,
            zmax=1,
            text=text,
            texttemplate="%{text}",
            customdata=conf,
            hovertemplate="true %{y}, predicted %{x}: %{customdata:,} (%{z:.1%} of the true class)<extra></extra>",
            colorbar=dict(title="share of row", thickness=12, tickformat=".0%"),
        )
    )
    n = len(labels)
    fig.update_layout(height=int(min(700, max(300, 70 * n + 140))), margin=dict(l=10, r=10, t=30, b=10))
    fig.update_xaxes(title="predicted class", type="category", side="top")
    fig.update_yaxes(title="true class", type="category", autorange="reversed")
    return fig


@fitted
def class_probs(classes, probs, title: str = "") -> go.Figure:
    """The classifier's probability for each class, most likely on top."""
    probs = np.asarray(probs, dtype=np.float64).ravel()
    order = np.argsort(-probs)
    labels = safe_labels(classes)
    y = [labels[i] for i in order]
    p = probs[order]
    colours = [VALID_COLOUR if i == 0 else "#9ecae1" for i in range(len(p))]
    fig = go.Figure(probability_bars(p, y, colours))
    fig.update_layout(
        title=html.escape(title), height=int(80 + 34 * len(y)), margin=dict(l=10, r=10, t=40 if title else 10, b=10)
    )
    fig.update_xaxes(range=[0, 1], tickformat=".0%", title="probability")
    fig.update_yaxes(autorange="reversed", type="category")
    return fig


@fitted
def cls_attention(
    tokens, before, after, before_name: str = "before fine-tuning", after_name: str = "after fine-tuning"
) -> go.Figure:
    """Where [CLS] looks in the last layer (mean over heads), two models side by side."""
    labels = safe_labels(tokens)
    fig = go.Figure()
    fig.add_trace(
        go.Bar(
            x=labels,
            y=np.asarray(before, dtype=np.float32),
            name=html.escape(before_name),
            marker_color="#9ecae1",
            hovertemplate="%{x}: %{y:.3f}<extra>before</extra>",
        )
    )
    fig.add_trace(
        go.Bar(
            x=labels,
            y=np.asarray(after, dtype=np.float32),
            name=html.escape(after_name),
            marker_color=VALID_COLOUR,
            hovertemplate="%{x}: %{y:.3f}<extra>after</extra>",
        )
    )
    fig.update_layout(
        barmode="group", height=340, margin=dict(l=10, r=10, t=20, b=10), legend=dict(orientation="h", y=1.12)
    )
    fig.update_xaxes(type="category", tickangle=-45)
    fig.update_yaxes(title="attention from [CLS]", rangemode="tozero")
    return fig


# --- pre-training --------------------------------------------------------------------------------


@fitted
def pretrain_curves(metrics, total_steps: int | None = None, height: int = 360) -> go.Figure:
    """MLM loss, MLM accuracy (top-1; top-5 on validation) and NSP accuracy: training averages
    since the last log line (thin) and validation (markers). A next-word run (its PretrainStart
    says so) has two panels: next-word loss and top-1 against the most-frequent-token baseline."""
    starts = of_type(metrics, PretrainStart)
    next_word = bool(starts) and starts[-1].objective == "next-word"
    titles = (
        ("next-word loss", "next-word accuracy")
        if next_word
        else ("masked-LM loss", "masked-LM accuracy", "next-sentence accuracy")
    )
    fig = make_subplots(rows=1, cols=len(titles), horizontal_spacing=0.07, subplot_titles=titles)
    train = of_type(metrics, PretrainStep)
    evals = of_type(metrics, PretrainEval)
    if train:
        _pretrain_train_traces(fig, train, next_word)
    if evals:
        _pretrain_eval_traces(fig, evals, next_word)
        _plateau_marker(fig, evals, starts)
    if not train and not evals:
        for col in range(1, len(titles) + 1):
            _placeholder(fig, "waiting for the first steps…" if col == 2 else "", 1, col)
    if total_steps:
        fig.update_xaxes(range=[0, total_steps * 1.02])
    fig.update_xaxes(title="step")
    fig.update_yaxes(rangemode="tozero", row=1, col=1)
    fig.update_yaxes(range=[0, 1.02], tickformat=".0%", row=1, col=2)
    if not next_word:
        fig.add_hline(y=0.5, line=dict(color="#888888", width=1, dash="dot"), row=1, col=3)
        fig.update_yaxes(range=[0, 1.02], tickformat=".0%", row=1, col=3)
    fig.update_layout(
        height=height, margin=dict(l=10, r=10, t=40, b=10), legend=dict(orientation="h", y=-0.25), uirevision="keep"
    )
    return fig


def _plateau_marker(fig: go.Figure, evals: list[PretrainEval], start: list[PretrainStart]) -> None:
    """A vertical line in the MLM accuracy panel where the run left the unigram plateau."""
    from bert.train.plateau import plateau_exit

    first = plateau_exit(evals, start[-1].baseline_token if start else None)
    if first is not None:
        fig.add_vline(
            x=first.step,
            line=dict(color=PLATEAU_COLOUR, width=2, dash="dash"),
            annotation_text=f"left the plateau (step {first.step:,})",
            annotation_position="top left",
            row=1,
            col=2,
        )


def _pretrain_train_traces(fig: go.Figure, train: list[PretrainStep], next_word: bool = False) -> None:
    """One thin line per panel: the training averages logged (thinned)."""
    steps = [m.step for m in train]
    panels = (
        ((1, "mlm_loss", "training next-word loss"), (2, "mlm_acc", "training next-word top-1"))
        if next_word
        else (
            (1, "mlm_loss", "training MLM loss"),
            (2, "mlm_acc", "training MLM top-1"),
            (3, "nsp_acc", "training NSP accuracy"),
        )
    )
    for col, key, name in panels:
        x, y = thin(steps, [finite_float(getattr(m, key)) for m in train])
        line = dict(color=TRAIN_COLOUR, width=1.5)
        _step_curve(fig, x, y, name, "training", line, col=col, legendgroup="train", showlegend=col == 1)


def _pretrain_eval_traces(fig: go.Figure, evals: list[PretrainEval], next_word: bool = False) -> None:
    """Validation at each evaluation (lines with markers), and the most-frequent-token baseline
    in the accuracy panel when the evaluations carry it."""
    steps = [m.step for m in evals]
    panels = [
        (1, "mlm_loss", "validation", VALID_COLOUR),
        (2, "mlm_top1", "validation top-1", VALID_COLOUR),
        (2, "mlm_top5", "validation top-5", EXTRA_COLOUR),
    ]
    if not next_word:
        panels.append((3, "nsp_acc", "validation", VALID_COLOUR))
    for col, key, name, colour in panels:
        y = [finite_float(getattr(m, key)) for m in evals]
        line = dict(color=colour, width=2.5)
        _step_curve(
            fig, steps, y, name, name, line, col=col, mode="lines+markers", legendgroup=name, showlegend=col != 3
        )
    base = [finite_float(m.baseline_top1) for m in evals]
    if any(b is not None for b in base):
        line = dict(color="#888888", width=1, dash="dot")
        _step_curve(fig, steps, base, "always the most frequent token", "baseline", line, col=2)
