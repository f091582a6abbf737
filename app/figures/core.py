"""What every figure shares: the colour scales, escaped and unique labels, labels and title fitted inside
the figure, the height for n rows, a run's line, probability bars and a plain bar chart. The figures
themselves are in one module a subject (attention.py, embeddings.py, masked_lm.py, ...). No streamlit
here: unit-tested alone.

Token strings are HTML-escaped before they reach plotly (its labels accept a little HTML).
Repeated tokens get invisible zero-width suffixes so that plotly does not merge them into
one category ("the" twice must stay two rows).
"""

from __future__ import annotations

import functools
import html
import re
import textwrap

import numpy as np
import plotly.graph_objects as go

DIVERGING = "RdBu_r"
_ZW = "\u200b"


def safe_labels(tokens) -> list[str]:
    """Escaped, unique labels for a plotly categorical axis."""
    seen: dict[str, int] = {}
    out = []
    for t in tokens:
        t = html.escape(str(t), quote=False)  # plotly renders a few tags; quotes are harmless
        n = seen.get(t, 0)
        seen[t] = n + 1
        out.append(t + _ZW * n)
    return out


FONT = 12  # plotly's default font size, px
CHAR_EM = 0.62  # a label character's width, in em: a generous sans-serif average, so a margin never falls short
TITLE_BAND = 36  # px above everything else for a figure's title
TITLE_CHARS = 40  # a longer title is wrapped at spaces: one line fits a phone's figure (~360 px)


def _label_extent(fig: go.Figure, axis) -> int:
    """The px a top axis' tick labels and title take above the plot area, from its labels' length
    (the traces' x values on it, or its ticktext), its tick angle and font size."""
    name = axis.plotly_name.replace("axis", "")  # "xaxis2" -> "x2"
    labels = list(axis.ticktext or [])
    if not labels:
        for trace in fig.data:
            if (getattr(trace, "xaxis", None) or "x") == name and getattr(trace, "x", None) is not None:
                labels += [str(v) for v in trace.x]
    size = axis.tickfont.size or fig.layout.font.size or FONT
    longest = max((len(html.unescape(re.sub(r"<[^>]+>", "", t)).rstrip(_ZW)) for t in labels), default=0)
    # "auto": plotly turns crowded labels up to 90° on a narrow figure (a phone): the worst case
    angle = np.radians(abs(axis.tickangle)) if isinstance(axis.tickangle, (int, float)) else np.pi / 2
    ticks = max(longest * CHAR_EM * size * np.sin(angle) + size * 1.3 * np.cos(angle), size * 1.3)
    ticks = ticks if axis.showticklabels is not False else 0
    title = (axis.title.font.size or size) * 1.8 if axis.title.text else 0
    return int(np.ceil(ticks + title + 12))


def fit_labels(fig: go.Figure) -> go.Figure:
    """`fig` (in place) with every tick label and axis title inside it and its title clear of them,
    whatever the template (Streamlit's has no automargin: its page adds it when drawing, a saved
    view has no Streamlit): automargin on every axis; the title, left-aligned, at the top of the
    figure in a band of its own, the top margin that band plus what a key axis on top takes
    (_label_extent, from its labels' length), so automargin never pushes labels into the title."""
    fig.update_xaxes(automargin=True)
    fig.update_yaxes(automargin=True)
    text = fig.layout.title.text
    if not text:
        return fig
    lines = [line.strip() for line in text.split("<br>")]
    if "<" not in text and len(html.unescape(text)) > TITLE_CHARS:  # plain (escaped) text: wrapped
        lines = textwrap.wrap(text, TITLE_CHARS, break_long_words=False, break_on_hyphens=False)
    size = fig.layout.title.font.size or (fig.layout.font.size or FONT) * 1.4
    band = int(max(TITLE_BAND, size * 2) + (len(lines) - 1) * size * 1.3)
    on_top = [ax for ax in fig.select_xaxes() if ax.side == "top" and ax.visible is not False]
    top = band + max((_label_extent(fig, ax) for ax in on_top), default=0)
    fig.update_layout(
        title=dict(
            text=" <br>".join(lines),  # the space keeps the words apart in the title as plain text
            x=0,
            xref="container",
            xanchor="left",
            y=1,
            yref="container",
            yanchor="top",
            pad=dict(t=8 + (len(lines) - 1) * size, l=10),  # plotly anchors a wrapped title by its middle line
        ),
        margin=dict(t=max(top, fig.layout.margin.t or 0)),
    )
    return fig


def fitted(build):
    """A figure builder whose figures get fit_labels: the same layout on the page, in a saved view
    and in a notebook."""

    @functools.wraps(build)
    def fitted_build(*args, **kwargs):
        return fit_labels(build(*args, **kwargs))

    return fitted_build


def is_fitted(fig: go.Figure) -> bool:
    """True when fit_labels has been applied to `fig` (its first axes' automargin is on)."""
    return fig.layout.xaxis.automargin is True and fig.layout.yaxis.automargin is True


def esc(text) -> str:
    """`text` as a string, HTML-escaped (quotes too) for a plotly title, label or hover."""
    return html.escape(str(text))


def model_line(
    name: str, what: str, x, values, colour: str, dash: str, at: str, mode: str = "lines", hover_what: str = ""
) -> go.Scatter:
    """One measure (`what`) of one model or run (`name`) over `x`, in its colour and dash; its hover
    names both (`hover_what` for the measure, when given), the x value after `at` ("step " or "")."""
    return go.Scatter(
        x=x,
        y=np.asarray(values, dtype=np.float64),
        mode=mode,
        name=f"{esc(name)}: {what}",
        line=dict(color=colour, dash=dash),
        hovertemplate=f"{esc(name)}, {at}%{{x}}: {hover_what or what} %{{y:.3f}}<extra></extra>",
    )


def diverging(m: float) -> dict:
    """A heatmap's colours for signed values: DIVERGING, white at 0, from -m to m."""
    return dict(colorscale=DIVERGING, zmid=0, zmin=-m, zmax=m)


def height_for(n: int, per: int = 18, lo: int = 360, hi: int = 900, extra: int = 160) -> int:
    return int(max(lo, min(hi, per * n + extra)))


def probability_bars(probs, labels, colour, **extra) -> go.Bar:
    """Horizontal bars of probabilities (x) for `labels` (y), each showing its percentage;
    `extra`: more go.Bar settings."""
    return go.Bar(
        x=probs,
        y=labels,
        orientation="h",
        marker_color=colour,
        text=[f"{p:.1%}" for p in probs],
        textposition="auto",
        hovertemplate="%{y}: %{x:.2%}<extra></extra>",
        **extra,
    )


@fitted
def values_bar(labels, values, title: str = "", y_title: str = "", range_y=None) -> go.Figure:
    """A plain bar chart with escaped labels."""
    fig = go.Figure(
        go.Bar(
            x=safe_labels(labels), y=np.asarray(values, dtype=np.float32), hovertemplate="%{x}: %{y:.3f}<extra></extra>"
        )
    )
    fig.update_layout(title=title, height=340, margin=dict(l=10, r=10, t=50, b=10))
    fig.update_xaxes(type="category", tickangle=-45)
    fig.update_yaxes(title=y_title, range=range_y)
    return fig
