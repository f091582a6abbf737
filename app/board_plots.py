"""The class board's figures (pages/board.py): every posted run's validation curve on one plot,
and one live run's curves. Nicknames are escaped (plotly renders a few tags)."""

from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .plots import safe_labels


def _layout(fig: go.Figure, title: str, height: int) -> go.Figure:
    fig.update_layout(
        title=title, height=height, margin=dict(l=10, r=10, t=50, b=10), uirevision="keep", legend=dict(orientation="h")
    )
    return fig


def posted_curves(runs: list[dict]) -> go.Figure:
    """The validation accuracy of every posted run, one line each."""
    fig = go.Figure()
    for name, r in zip(safe_labels([r["nickname"] for r in runs]), runs):
        pts = r["val_accuracy"]
        fig.add_trace(go.Scatter(x=[p[0] for p in pts], y=[p[1] for p in pts], mode="lines+markers", name=name))
    fig.update_xaxes(title="step")
    fig.update_yaxes(title="accuracy", range=[0, 1.02], tickformat=".0%")
    return _layout(fig, "validation accuracy of every posted run", 420)


def live_curves(run: dict) -> go.Figure:
    """One live run: its training loss (left axis) and validation accuracy (right) so far."""
    (name,) = safe_labels([run["nickname"]])
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    loss, acc = run["train_loss"], run["val_accuracy"]
    fig.add_trace(
        go.Scatter(x=[p[0] for p in loss], y=[p[1] for p in loss], mode="lines", name="training loss"),
        secondary_y=False,
    )
    fig.add_trace(
        go.Scatter(x=[p[0] for p in acc], y=[p[1] for p in acc], mode="lines+markers", name="validation accuracy"),
        secondary_y=True,
    )
    fig.update_xaxes(title="step")
    fig.update_yaxes(title="loss", rangemode="tozero", secondary_y=False)
    fig.update_yaxes(title="accuracy", range=[0, 1.02], tickformat=".0%", dtick=0.25, secondary_y=True, showgrid=False)
    return _layout(fig, f"{name}'s run, live", 360)
