"""The class board's figures (pages/board.py): every posted run's validation curve on one plot,
and one live run's curves. Nicknames are escaped (plotly renders a few tags).

Cheap for a class watching: the posted runs' figure draws each curve with at most DRAWN_POINTS
points, rounded, and is built once per board version for every viewer (`posted_figure`; a page
redraws it only when a run was posted or removed); a live run's once per update (`live_figure`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..class_store.classroom import normal_answer
from ..class_store.summary import TASK_SCORES
from ..figures.core import safe_labels

DRAWN_POINTS = 40  # per posted curve: 200 runs x 40 points is what a projector shows
MARKERS_UP_TO = 20  # runs drawn with markers; more are lines only
CACHED = 64  # figures kept, server-wide (board versions and live updates)
ANSWERS_DRAWN = 15  # different answers drawn (the rest are fewer)
ANSWER_SHOWN = 30  # characters of an answer on the chart

_built: OrderedDict[tuple, go.Figure] = OrderedDict()
_lock = threading.Lock()


def _layout(fig: go.Figure, title: str, height: int) -> go.Figure:
    fig.update_layout(
        title=title, height=height, margin=dict(l=10, r=10, t=50, b=10), uirevision="keep", legend=dict(orientation="h")
    )
    return fig


def thinned(points: list, n: int = DRAWN_POINTS) -> tuple[list, list]:
    """(x, y) of at most `n` of the points, evenly spread, the first and last kept; y rounded."""
    if len(points) > n:
        points = [points[round(i * (len(points) - 1) / (n - 1))] for i in range(n)]
    return [p[0] for p in points], [round(p[1], 4) for p in points]


def posted_curves(runs: list[dict]) -> go.Figure:
    """The validation curve of every posted run, one line each: runs of one task, their main score
    (a classifier's accuracy, a tagger's word accuracy, a reader's F1)."""
    label = TASK_SCORES[runs[0].get("task", "classifier") if runs else "classifier"][0]
    mode = "lines+markers" if len(runs) <= MARKERS_UP_TO else "lines"
    traces = []
    for name, r in zip(safe_labels([r["nickname"] for r in runs]), runs):
        x, y = thinned(r["val_accuracy"])
        traces.append(go.Scatter(x=x, y=y, mode=mode, name=name))
    fig = go.Figure(traces)
    fig.update_xaxes(title="step")
    fig.update_yaxes(title=label, range=[0, 1.02], tickformat=".0%")
    return _layout(fig, f"validation {label} of every posted run", 420)


def _shared(key: tuple, build) -> go.Figure:
    """The figure under `key`, built once for every viewer (figures.show copies it before
    restyling, so sharing it is safe); the CACHED newest kept."""
    with _lock:
        fig = _built.get(key)
        if fig is not None:
            _built.move_to_end(key)
            return fig
    fig = build()
    with _lock:
        _built[key] = fig
        while len(_built) > CACHED:
            _built.popitem(last=False)
    return fig


def posted_figure(code: str, version: int | None, runs: list[dict]) -> go.Figure:
    """`posted_curves(runs)` of board `code` at `version` (runs: its entries of one task then), built once."""
    task = runs[0].get("task", "classifier") if runs else "classifier"
    return _shared(("posted", code, version, task), lambda: posted_curves(runs))


def live_figure(run: dict) -> go.Figure:
    """`live_curves(run)`, built once per update of the live run (the class watches the same one)."""
    return _shared(("live", run["id"], run["updated"], run["state"]), lambda: live_curves(run))


def live_curves(run: dict) -> go.Figure:
    """One live run: its training loss (left axis) and validation curve (right: its task's main
    score) so far."""
    (name,) = safe_labels([run["nickname"]])
    label = TASK_SCORES[run.get("task", "classifier")][0]
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    loss, acc = run["train_loss"], run["val_accuracy"]
    fig.add_trace(
        go.Scatter(x=[p[0] for p in loss], y=[p[1] for p in loss], mode="lines", name="training loss"),
        secondary_y=False,
    )
    fig.add_trace(
        go.Scatter(x=[p[0] for p in acc], y=[p[1] for p in acc], mode="lines+markers", name=f"validation {label}"),
        secondary_y=True,
    )
    fig.update_xaxes(title="step")
    fig.update_yaxes(title="loss", rangemode="tozero", secondary_y=False)
    fig.update_yaxes(title=label, range=[0, 1.02], tickformat=".0%", dtick=0.25, secondary_y=True, showgrid=False)
    return _layout(fig, f"{name}'s run, live", 360)


def shorter(text: str, n: int = ANSWER_SHOWN) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def answers_figure(tally: dict[str, int], model_answer: str | None = None) -> go.Figure:
    """The class's answers to a question (answer -> how many), most given on top; after the reveal
    the model's answer is green. Answers are escaped and no student is named."""
    answers = list(tally)[:ANSWERS_DRAWN]
    right = normal_answer(model_answer) if model_answer is not None else None
    colours = ["#2ca02c" if right is not None and normal_answer(a) == right else "#1f77b4" for a in answers]
    counts = [tally[a] for a in answers]
    fig = go.Figure(
        go.Bar(
            x=counts,
            y=safe_labels([shorter(a) for a in answers]),
            orientation="h",
            marker_color=colours,
            text=counts,
            textposition="auto",
        )
    )
    fig.update_xaxes(title="students", dtick=1 if max(counts, default=0) <= 10 else None, rangemode="tozero")
    fig.update_yaxes(autorange="reversed", type="category")
    return _layout(fig, "The class's answers", int(120 + 32 * max(len(answers), 1)))
