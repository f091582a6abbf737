"""Every plotly figure goes on a page through `show`: a download for slides, projector styling and
a one-line text alternative.

- The modebar's camera button saves the figure as a PNG at 3x scale (or as an SVG, the sidebar's
  "Figure downloads" choice), named for what it shows (`attention-L4-H5.png`).
- In projector mode (a sidebar toggle, also in the link) every figure gets larger type (18 px
  ticks, token labels and legends, 22 px titles), thicker lines, taller rows, and the attention
  maps a perceptually uniform scale that colour-blind viewers read too (cividis).
- Under each figure, a caption says in words what it shows most strongly (`describe`), for
  screen readers and for the back of the room.
- "Save this view (HTML)" under each figure (and each bertviz view, `save_document`): one file that
  opens with no network (app/export), with the model and the inputs the page noted; built on
  click, off the page's run. Beside a view's "Open as a notebook", the project's wheel
  (app/export/wheel.py) that the notebook's first cell installs.
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Callable

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from ..export import context, wheel
from ..export.notebook import MIME as NOTEBOOK_MIME
from ..export.notebook import ModelRef
from ..export.stamp import Stamp, weights_hash
from ..export.view_file import MIME, Choice, Panel, stamped, view_html
from ..formatting import md_escape
from .colour_words import ColourWords, words_for
from .links import PROJECTOR

FORMAT = "figure_format"  # session key: "png" or "svg"
FORMATS = {"png": "PNG (3× size, for slides)", "svg": "SVG (vector, scales without blur)"}
PROJECTOR_FONT = 18
PROJECTOR_TITLE = 22
PROJECTOR_TYPE = 1.5  # the projector's type against plotly's default 12 px: margins sized for the type grow with it
PROJECTOR_SCALE = "Cividis"
PROJECTOR_INK = "#111111"  # labels nearly black: plotly's default grey fades on a projector
_SEQUENTIAL = {"Blues", "blues", "Viridis", "viridis", "Greys", "Reds", "Purples"}


def projector_on() -> bool:
    return bool(st.session_state.get(PROJECTOR))


def file_name(name: str) -> str:
    """A plain file name from a figure's name: 'Attention L4 H5' -> 'attention-L4-H5'."""
    cleaned = re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-")
    return cleaned[:80] or "figure"


def config(name: str, fmt: str | None = None) -> dict:
    """The modebar of a figure: its image button saves `name`.png at 3x scale, or `name`.svg."""
    fmt = fmt or st.session_state.get(FORMAT, "png")
    fmt = fmt if fmt in FORMATS else "png"
    return {
        "displaylogo": False,
        "toImageButtonOptions": {"format": fmt, "filename": file_name(name), "scale": 3 if fmt == "png" else 1},
    }


def style_for_projector(fig: go.Figure) -> go.Figure:
    """Larger type, thicker lines, taller figures and a colour-blind-safe sequential scale."""
    fig.update_layout(
        font=dict(size=PROJECTOR_FONT, color=PROJECTOR_INK),
        title_font=dict(size=PROJECTOR_TITLE),
        legend=dict(font=dict(size=PROJECTOR_FONT)),
        hoverlabel=dict(font_size=PROJECTOR_FONT),
    )
    axis_font = dict(size=PROJECTOR_FONT, color=PROJECTOR_INK)
    fig.update_xaxes(tickfont=axis_font, title_font=axis_font)
    fig.update_yaxes(tickfont=axis_font, title_font=axis_font)
    fig.update_annotations(font_size=PROJECTOR_FONT)
    fig.update_traces(line=dict(width=4), selector=dict(type="scatter"))
    fig.update_traces(textfont=dict(size=PROJECTOR_FONT), selector=dict(type="heatmap"))
    fig.update_traces(textfont=dict(size=PROJECTOR_FONT), selector=dict(type="bar"))
    for trace in fig.data:
        if trace.type == "heatmap":
            trace.colorscale = projected_scale(trace.colorscale, True)
    if fig.layout.coloraxis and fig.layout.coloraxis.colorscale:
        fig.layout.coloraxis.colorscale = projected_scale(fig.layout.coloraxis.colorscale, True)
    if fig.layout.height:
        fig.layout.height = int(fig.layout.height * 1.4)
    if fig.layout.margin.t:  # a title's band and a top axis' labels (fit_labels), for the larger type
        fig.layout.margin.t = int(fig.layout.margin.t * PROJECTOR_TYPE)
    return fig


def projected_scale(scale, projector: bool):
    """The scale a heatmap is drawn with: PROJECTOR_SCALE for a sequential one in projector mode,
    else its own (a diverging scale keeps its colours: its middle means 0)."""
    return PROJECTOR_SCALE if projector and _is_sequential(scale) else scale


def colour_words(fig: go.Figure | None, projector: bool | None = None) -> ColourWords | None:
    """The colour words of `fig`'s colour scale as it is drawn (its first heatmap's, else its
    colour axis'), in projector mode (`projector`, default: the session's) its projector scale;
    None for a figure without one. Captions take their colour words from here."""
    if not isinstance(fig, go.Figure):
        return None
    projector = projector_on() if projector is None else projector
    scale = next((t.colorscale for t in fig.data if t.type == "heatmap" and t.colorscale is not None), None)
    if scale is None and fig.layout.coloraxis and fig.layout.coloraxis.colorscale:
        scale = fig.layout.coloraxis.colorscale
    return None if scale is None else words_for(projected_scale(scale, projector))


def _is_sequential(scale) -> bool:
    """True for the named sequential scales the plots use (diverging ones stay: their middle means 0)."""
    if scale is None:
        return False
    if isinstance(scale, str):
        return scale in _SEQUENTIAL
    # plotly expands a named scale into ((0, colour), ...); Blues starts at a near-white blue
    first = str(scale[0][1]).lower() if len(scale) else ""
    return first in ("rgb(247,251,255)", "#f7fbff", "#440154", "rgb(255,255,255)")


def describe(fig: go.Figure) -> str:
    """What the figure shows, in words, from its numbers: a grid's size, range and strongest cell;
    a bar chart's largest bars; a curve's start, end and extremes; a cloud's number of points."""
    if not fig.data:
        return ""
    t = fig.data[0]
    title = _title(fig)
    meta = fig.layout.meta
    if isinstance(meta, dict) and isinstance(meta.get("words"), str):
        return f"{title}{meta['words']}"
    try:
        if t.type == "heatmap" and t.z is not None:
            return _describe_grid(fig, t, title)
        if t.type == "bar" and t.x is not None and t.y is not None:
            horizontal = t.orientation == "h"
            values = _floats(t.x if horizontal else t.y)
            names = t.y if horizontal else t.x
            order = [int(k) for k in np.argsort(-np.nan_to_num(values, nan=-np.inf), kind="stable")]
            # bars at numbered places (a passage's tokens) are named by their ticks; of several
            # series, the first is named ("largest P(start): ...")
            which = f" {_plain(t.name)}" if t.name and sum(d.type == "bar" for d in fig.data) > 1 else ""
            axis = "y" if horizontal else "x"
            words = f"{title}largest{which}: {_axis_label(fig, axis, names, order[0])} ({values[order[0]]:.3g})"
            rest = [f"{_axis_label(fig, axis, names, k)} ({values[k]:.3g})" for k in order[1:3]]
            return words + (f", then {', '.join(rest)}" if rest else "") + f"; {len(values)} bars"
        if t.type == "scatter" and _is_curve(t):
            name = f"{_plain(t.name)}: " if t.name else ""
            y = _floats(t.y)
            words = f"{title}{name}last value {float(y[-1]):.3g}" + (f" at {t.x[-1]}" if t.x is not None else "")
            if len(y) > 1 and np.isfinite(y).any():
                words += f" (first {y[0]:.3g}, lowest {np.nanmin(y):.3g}, highest {np.nanmax(y):.3g})"
            return words
        if t.type in ("scatter", "scattergl") and t.x is not None:
            return f"{title}{len(t.x)} points" + (f" ({_plain(t.name)})" if t.name else "")
    except (TypeError, ValueError):
        pass
    return title.rstrip(" ·")


def _describe_grid(fig: go.Figure, t, title: str) -> str:
    """A heatmap: its rows by columns, its range and its strongest cell (a similarity's diagonal,
    each item with itself, skipped)."""
    z = _floats(t.z)
    if z.ndim != 2 or not np.isfinite(z).any() or min(z.shape) < 1:
        return title.rstrip(" ·")
    low, high = float(np.nanmin(z)), float(np.nanmax(z))
    z = np.where(np.isfinite(z), z, -np.inf)
    if z.shape[0] == z.shape[1] and np.allclose(z, z.T):  # a similarity: skip each item with itself
        z = z.copy()
        np.fill_diagonal(z, -np.inf)
    i, j = np.unravel_index(np.argmax(z), z.shape)
    if not np.isfinite(z[i, j]):
        return title.rstrip(" ·")
    y = _axis_label(fig, "y", t.y, i)
    x = _axis_label(fig, "x", t.x, j)
    # a token-by-token map (attention) reads "from → to"; any other grid "row, column"
    square = t.x is not None and t.y is not None and list(t.x) == list(t.y)
    where = (f"{y} → {x}" if square else f"{y}, {x}") if x and y else f"row {i + 1}, column {j + 1}"
    size = f"; {z.shape[0]} rows × {z.shape[1]} columns, values {low:.2f} to {high:.2f}" if z.size > 1 else ""
    return f"{title}strongest: {where} ({z[i, j]:.2f}){size}"


# A table of more cells than this reads worse than the words above it: a figure that large (an
# attention grid of every head, tiled) carries its own smaller table in layout.meta["table"].
TABLE_CELLS = 4096


def tables(fig: go.Figure) -> list[tuple[str, pd.DataFrame]]:
    """The numbers a heatmap or bar chart draws, as (heading, table) pairs: a figure's own table
    (layout.meta["table"]: {"columns", "rows"}, for a grid whose cells are not one number each),
    else each heatmap's cells (rows and columns named by its labels) and the bars' values (one
    column per series). Empty for other figures (curves, clouds: their words carry them)."""
    meta = fig.layout.meta
    if isinstance(meta, dict) and isinstance(meta.get("table"), dict):
        own = meta["table"]
        frame = pd.DataFrame(own["rows"], columns=own["columns"])
        return [(_plain(own.get("title", "")), frame.set_index(own["columns"][0]))]
    out = []
    for n, t in enumerate(fig.data):
        flat = t.type == "heatmap" and t.colorscale is not None and len({c for _, c in t.colorscale}) == 1
        if t.type == "heatmap" and t.z is not None and not flat:  # a flat colour marks cells, holds no numbers
            z = _cells(t)
            if z is None or z.size > TABLE_CELLS:
                continue
            rows = [_axis_label(fig, "y", t.y, i) or str(i + 1) for i in range(z.shape[0])]
            cols = [_axis_label(fig, "x", t.x, j) or str(j + 1) for j in range(z.shape[1])]
            frame = pd.DataFrame(z, index=rows, columns=cols)
            frame.index.name = _plain(getattr(fig.layout.yaxis.title, "text", None) or "") or None
            out.append((_plain(t.name) if t.name else f"grid {n + 1}" if n else "", frame))
    bars = [t for t in fig.data if t.type == "bar" and t.x is not None and t.y is not None]
    if bars:
        series = []
        for n, t in enumerate(bars):
            horizontal = t.orientation == "h"
            names = list(t.y if horizontal else t.x)
            labels = [_axis_label(fig, "y" if horizontal else "x", names, k) for k in range(len(names))]
            values = np.round(_floats(t.x if horizontal else t.y), 4)
            column = _plain(t.name) if t.name else ("value" if len(bars) == 1 else f"series {n + 1}")
            series.append(pd.Series(values, index=pd.Index(labels, name=""), name=column))
        frame = series[0].to_frame() if len(series) == 1 else pd.concat(series, axis=1, sort=False)
        out.append(("", frame))
    return out


def _floats(v) -> np.ndarray:
    """A trace's numbers as floats: a list, an array, or plotly's typed-array form
    ({"dtype", "bdata", "shape"}) that a figure read back from JSON keeps."""
    if isinstance(v, dict) and "bdata" in v:
        a = np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"]))
        shape = v.get("shape")
        if shape:
            a = a.reshape([int(n) for n in str(shape).split(",")] if isinstance(shape, str) else shape)
        return a.astype(float)
    return np.asarray(v, dtype=float)


def _labelled_cells(t) -> bool:
    """A heatmap whose cells are named by a text each (the head-pattern map): its table is the text."""
    return t.type == "heatmap" and t.text is not None and np.ndim(t.text) == 2 and t.hoverinfo == "skip"


def _cells(t) -> np.ndarray | None:
    if _labelled_cells(t):
        return np.asarray(t.text, dtype=object)
    try:
        z = _floats(t.z)
    except (TypeError, ValueError):
        return None
    if z.ndim != 2:
        return None
    return np.round(z, 4)


def _title(fig: go.Figure) -> str:
    text = fig.layout.title.text if fig.layout.title else None
    return f"{_plain(text)} · " if text else ""


def _is_curve(t) -> bool:
    """A line over steps or layers (x increasing), not a cloud of points."""
    if t.y is None or not len(t.y) or t.x is None or "lines" not in (t.mode or "lines"):
        return False
    try:
        x = _floats(t.x)
    except (TypeError, ValueError):
        return False
    return bool(np.all(np.diff(x) > 0))


def _axis_label(fig: go.Figure, axis: str, labels, k: int) -> str:
    """A tick's label; a bare number gets its axis title ("layer 4"), a missing one the title and
    the index."""
    text = _label(labels, k)
    ax = getattr(fig.layout, f"{axis}axis")
    if ax.tickvals is not None and ax.ticktext is not None and labels is not None and k < len(labels):
        ticks = {str(v): str(s) for v, s in zip(ax.tickvals, ax.ticktext, strict=False)}
        text = ticks.get(str(labels[k]), text)
    title = getattr(getattr(fig.layout, f"{axis}axis").title, "text", None) or ""
    title = _plain(title).strip()
    if labels is None:
        return f"{title} {k}".strip() if title else ""
    if title and re.fullmatch(r"-?\d+(\.\d+)?", text):
        return f"{title} {text}"
    return text


def _label(labels, k: int) -> str:
    if labels is None or k >= len(labels):
        return ""
    return _plain(labels[k])


def _plain(text) -> str:
    """A plotly text (a title, a label, a trace's name: HTML, its names escaped) as the reader sees it."""
    return html.unescape(re.sub(r"<[^>]+>", "", str(text)))


def show(
    fig: go.Figure,
    name: str,
    where=None,
    key: str | None = None,
    caption: str | None = None,
    choice: Choice | None = None,
    notebook: Callable[[ModelRef, Stamp], str] | None = None,
    **kwargs,
):
    """Draw `fig` with its download named `name`, projector styling if on, a text alternative
    (`caption`, else `describe(fig)`) and its "Save this view (HTML)" button (`choice`: the
    page's layer/head choice, precomputed into the file); with `notebook` (a builder of
    app/export/notebook.py, its view's inputs bound) an "Open as a notebook" button too. Other
    keyword arguments go to st.plotly_chart (e.g. on_select); its return value is returned."""
    where = where or st
    plain = fig
    if projector_on():
        fig = style_for_projector(go.Figure(fig))  # a copy: a cached figure is shared by every session
    found = tables(plain)
    heavy = bool(found) and on_phone() and is_heavy(plain)
    if heavy:  # on a phone a grid of many cells is unreadable: the table first, the figure on request
        where.caption(
            f"{md_escape(_plain(name.replace('-', ' ')))}: a grid of {cell_count(plain):,} cells, too dense to read "
            "on a phone screen. Its numbers are in the table below; the figure is under “Show the figure”."
        )
        show_tables(found, where, expanded=True)
        with where.expander("Show the figure"):
            event = st.plotly_chart(fig, width="stretch", key=key, config=config(name), **kwargs)
    else:
        event = where.plotly_chart(fig, width="stretch", key=key, config=config(name), **kwargs)
    alt = caption if caption is not None else describe(fig)
    if alt:
        where.caption(f"In words: {md_escape(alt)}")
    if found and not heavy:
        show_tables(found, where, expanded=False)
    save_buttons(Panel(plain, alt, choice), name, where, key, notebook)
    return event


# A table of at most this many cells is drawn as an HTML table (what screen readers read best);
# a larger one as Streamlit's scrolling grid. A figure of more cells than HEAVY_CELLS is heavy.
HTML_TABLE_CELLS = 400
HEAVY_CELLS = 1024


def on_phone() -> bool:
    """The browser says it is a phone (its user agent names "Mobi", as Android's and iOS's do)."""
    try:
        agent = st.context.headers.get("User-Agent", "") or ""
    except Exception:  # noqa: BLE001 - no request (a test's script run): not a phone
        return False
    return "Mobi" in agent


def cell_count(fig: go.Figure) -> int:
    return sum(int(np.size(t.z)) for t in fig.data if t.type == "heatmap" and t.z is not None)


def is_heavy(fig: go.Figure) -> bool:
    """A grid too dense for a phone: one with its own summary table (every head's tile) or more
    than HEAVY_CELLS cells."""
    meta = fig.layout.meta
    return (isinstance(meta, dict) and "table" in meta) or cell_count(fig) > HEAVY_CELLS


def show_tables(found: list[tuple[str, pd.DataFrame]], where, expanded: bool) -> None:
    """ "Show as a table": the figure's numbers, each table under its heading."""
    with where.expander("Show as a table", expanded=expanded, icon=":material/table:"):
        for heading, frame in found:
            if heading:
                st.markdown(f"**{md_escape(heading)}**")
            if frame.size <= HTML_TABLE_CELLS:
                st.table(frame)
            else:
                st.dataframe(frame, width="stretch")


def save_table(table, name: str, where=None, key: str | None = None, caption: str = "", notebook=None) -> None:
    """ "Save this view (HTML)" for a page whose view is a table (a pandas DataFrame): the same
    file, the table in it as HTML (every cell escaped), no plotly; `notebook` as for `show`."""
    save_buttons(Panel(table=table.copy(), caption=caption), name, where or st, key, notebook)


SAVE_HELP = (
    "One file with this view (a figure stays interactive), the model and your inputs: it opens in any "
    "browser with no network, to keep or to put on a course page."
)


def _noted(name: str) -> tuple[str, ModelRef, Callable[[], Stamp]]:
    """The file's title from the view's `name` ("attention-L4-H5" -> "Attention L4 H5"), the model
    the page noted and the stamp's maker: the notes are read now, the weights hashed when called."""
    notes = context.current()
    label, model_key, model = (notes.model_label, notes.model_key, notes.model) if notes else (None, None, None)
    inputs = tuple(notes.inputs.items()) if notes else ()
    title = _plain(name.replace("-", " "))

    def stamp() -> Stamp:
        return Stamp(model=label, weights=weights_hash(model) if model is not None else None, inputs=inputs)

    return title[:1].upper() + title[1:], ModelRef(model_key, label), stamp


def _html_button(where, build, name: str, key: str | None, help: str) -> None:
    """The one "Save this view (HTML)" button: `build` runs only when clicked."""
    where.download_button(
        "Save this view (HTML)",
        build,
        file_name=f"{file_name(name)}.html",
        mime=MIME,
        key=f"{key}_html" if key else None,
        on_click="ignore",
        icon=":material/download:",
        type="tertiary",
        help=help,
    )


def save_document(document: str, name: str, where=None, key: str | None = None, help: str = SAVE_HELP) -> None:
    """ "Save this view (HTML)" for a view that is already one whole offline document (bertviz's):
    the same stamp and footer as every saved view (view_file.stamped), added when clicked."""
    title, _, stamp = _noted(name)

    def build() -> bytes:
        return stamped(document, title, stamp()).encode("utf-8")

    _html_button(where or st, build, name, key, help)


def save_buttons(panel: Panel, name: str, where, key: str | None, notebook=None):
    """The view's self-contained HTML file (and its notebook), built only when clicked (in a
    server thread, not the page's run): what the page noted (model, inputs) is read now, the
    weights hashed then."""
    title, ref, stamp = _noted(name)
    plotly_config = config(name, "png")

    def build() -> bytes:
        return view_html(title, [panel], stamp(), plotly_config).encode("utf-8")

    def build_notebook() -> bytes:
        return notebook(ref, stamp()).encode("utf-8")

    _html_button(where, build, name, key, SAVE_HELP)
    if notebook is not None:
        where.download_button(
            "Open as a notebook",
            build_notebook,
            file_name=f"{file_name(name)}.ipynb",
            mime=NOTEBOOK_MIME,
            key=f"{key}_ipynb" if key else None,
            on_click="ignore",
            icon=":material/code:",
            type="tertiary",
            help="A Jupyter notebook that computes this view again with the project's own code (bert) and "
            "draws it with the same figure builders. Save it with the bert package (the button beside it) in "
            "one folder: its first cell installs the package.",
        )
        if wheel.can_build():
            where.download_button(
                "Get the bert package (wheel)",
                wheel.project_wheel,  # built once per process, when first asked for
                file_name=wheel.wheel_name(),
                mime=wheel.MIME,
                key=f"{key or file_name(name)}_wheel",
                on_click="ignore",
                icon=":material/deployed_code:",
                type="tertiary",
                help="The project's code and its built-in models as one file (about 50 MB), for the notebook "
                "beside it: its first cell installs it with pip (torch and the rest come from PyPI).",
            )
