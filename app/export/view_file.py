"""A view as one self-contained HTML file: it opens from disk with no network and no server.

- plotly.js is inlined once per file, from the installed plotly package (no CDN), gzipped (well under
  half its size: the browser unpacks it); every figure stays interactive (hover, zoom, the
  modebar's PNG).
- A figure with a choice (a layer and a head) carries one precomputed frame per combination and
  a menu per axis that redraws it, within FRAMES_BUDGET bytes of figure JSON per figure; past
  that the file keeps the figure as shown and says so.
- The stamp (model, a short hash of its weights, the inputs, the date, "made with BERT
  Explorer <version>") is at the top. Every text in the HTML is escaped (html.escape); the
  figures travel in one JSON block with `<`, `>`, `&` escaped (script_json), so a typed
  `</script>` or `<img onerror>` stays text. A Content-Security-Policy lets only the file's own
  scripts run (by hash) and reach nothing.
- bertviz's views, each already one whole offline document with its own scripts and policy, get
  the same stamp and footer (`stamped`).

No streamlit: app/ui/show_figure.py offers the file, tests and the benchmark build it directly.
"""

from __future__ import annotations

import base64
import functools
import gzip
import hashlib
import html
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from itertools import product
from typing import Any

import plotly.graph_objects as go

from ..bertviz.data import script_json
from ..figures.core import fit_labels, is_fitted
from .stamp import Stamp

FRAMES_BUDGET = 3_000_000  # bytes of figure JSON for one figure's precomputed choices
# Files built at once in one process: building holds the interpreter (plotly figures, JSON), so ten
# students saving together queue here instead of starving every other session's page.
BUILDS_AT_ONCE = 1
_building = threading.BoundedSemaphore(BUILDS_AT_ONCE)
KEPT_CHOICES = 8  # the latest choices' frames kept, by Choice.key (each within FRAMES_BUDGET)
_kept: OrderedDict = OrderedDict()  # (key, axes) -> frames, used only under _building
MIME = "text/html"
SIGNIFICANT = 4  # digits kept of each number a figure plots
# Streamlit's plotly template (the app's default) carries placeholder colours that its page swaps for
# the theme's; a saved view has no Streamlit, so the file swaps them for the light theme's own.
STREAMLIT_COLOURS = {  # placeholders #000001-#000030: ten categorical, ten sequential, ten diverging colours
    f"#{n:06d}": colour
    for n, colour in enumerate(
        "#0068c9 #83c9ff #ff2b2b #ffabab #29b09d #7defa1 #ff8700 #ffd16a #6d3fc0 #d5dae5 "
        "#e4f5ff #c7ebff #a6dcff #83c9ff #60b4ff #3d9df3 #1c83e1 #0068c9 #0054a3 #004280 "
        "#7d353b #bd4043 #ff4b4b #ff8c8c #ffc7c7 #a6dcff #60b4ff #1c83e1 #0054a3 #004280".split(),
        start=1,
    )
} | {  # increasing, decreasing, total; grey 70 and 90, background, faded text, background mix
    "#000032": "#29b09d",
    "#000033": "#ff2b2b",
    "#000034": "#0068c9",
    "#000036": "#555867",
    "#000037": "#262730",
    "#000038": "#ffffff",
    "#000039": "#e6e8ec",
    "#000040": "#f0f2f6",
}


@dataclass(frozen=True)
class Choice:
    """A figure's choice, precomputed: one figure per combination of the axes' positions.

    axes: (label, count) per menu, e.g. (("Layer", 6), ("Head", 12)); the menus show 1..count or `names`.
    draw: draw(i, j, ...) with one 0-based position per axis -> the figure for it.
    start: the positions shown first (the page's current choice).
    key: what the frames depend on (model, inputs, settings), hashable, or None: files of the
        same key share their frames (KEPT_CHOICES of them, the latest), so a class saving the
        view its teacher leads draws them once.
    names: the options' names of each axis ("0 (embeddings)", a class's label), or None for 1..count."""

    axes: tuple[tuple[str, int], ...]
    draw: Callable[..., go.Figure]
    start: tuple[int, ...]
    key: Hashable | None = None
    names: tuple[tuple[str, ...] | None, ...] = ()  # per axis, its options' names; else 1..count

    @property
    def count(self) -> int:
        n = 1
        for _, k in self.axes:
            n *= k
        return n


@dataclass(frozen=True)
class Panel:
    """One figure of a file, with its text alternative and, optionally, its choice; or a table
    (a pandas DataFrame, drawn as an HTML table, every cell escaped) instead of the figure."""

    figure: go.Figure | None = None
    caption: str = ""
    choice: Choice | None = None
    table: Any = None


@functools.cache
def plotly_js() -> str:
    """plotly.js as the installed plotly package ships it (minified)."""
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


@functools.cache
def plotly_packed() -> str:
    """plotly.js gzipped and in base64: the file unpacks it with the browser's own
    DecompressionStream and runs it as an inline script its policy names by hash."""
    return base64.b64encode(gzip.compress(plotly_js().encode("utf-8"), 9, mtime=0)).decode("ascii")


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


@functools.cache
def _plotly_hash() -> str:
    return _sha256(plotly_js())


# Unpacks plotly.js, then draws every panel from the JSON block; a panel's menus pick its frame
# (row-major over the axes).
DRAW_JS = """(function () {
  "use strict";
  // a touch screen (no hover) shows plotly's toolbar for good, over a narrow figure's title: none
  // there, as in the app
  var phone = window.matchMedia("(hover: none)").matches;
  var PHONE_MODEBAR = {displayModeBar: false};
  function drawAll() {
    var views = JSON.parse(document.getElementById("bx-views").textContent);
    views.panels.forEach(function (p, n) {
      if (!p.frames.length) return;  // a table
      var el = document.getElementById("bx-plot-" + n);
      var menus = Array.prototype.slice.call(document.querySelectorAll("#bx-panel-" + n + " select"));
      function draw() {
        var k = 0;
        menus.forEach(function (m, a) { k = k * p.sizes[a] + Number(m.value); });
        var f = p.frames[k];
        var layout = Object.assign({template: p.template}, p.layouts[f[1]]);
        Plotly.react(el, f[0], layout, phone ? Object.assign({}, views.config[n], PHONE_MODEBAR) : views.config[n]);
        el.setAttribute("data-frame", String(k));
      }
      menus.forEach(function (m) { m.addEventListener("change", draw); });
      draw();
    });
  }
  var packed = atob(document.getElementById("bx-plotly").textContent);
  var bytes = new Uint8Array(packed.length);
  for (var i = 0; i < packed.length; i++) bytes[i] = packed.charCodeAt(i);
  var unpacked = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  new Response(unpacked).text().then(function (js) {
    var script = document.createElement("script");
    script.textContent = js;
    document.head.appendChild(script);
    drawAll();
  });
})();"""


def _rounded(obj):
    """Every float in `obj` to SIGNIFICANT digits (hover shows three): a 20-token map's numbers
    take a third of the bytes."""
    if isinstance(obj, float):
        return float(f"{obj:.{SIGNIFICANT}g}")
    if isinstance(obj, list):
        return [_rounded(x) for x in obj]
    if isinstance(obj, dict):
        return {k: _rounded(v) for k, v in obj.items()}
    return obj


def _themed(template: dict) -> dict:
    """`template` with Streamlit's placeholder colours (STREAMLIT_COLOURS) swapped for real ones."""
    text = re.sub(r"#0000[0-4]\d", lambda m: STREAMLIT_COLOURS.get(m.group(0), m.group(0)), json.dumps(template))
    return json.loads(text)


def _figure_json(fig: go.Figure) -> dict:
    """The figure as the file carries it: its labels fitted (fit_labels, on a copy: a page's figure
    may be shared), its numbers rounded, its template's colours real."""
    if not is_fitted(fig):
        fig = fit_labels(go.Figure(fig))
    out = json.loads(fig.to_json())
    out["data"] = _rounded(out.get("data", []))
    layout = out.get("layout", {})
    if isinstance(layout.get("template"), dict):
        layout["template"] = _themed(layout["template"])
    return out


def _frames(panel: Panel) -> tuple[dict, str | None]:
    """The panel's frames and layouts ({sizes, frames: [[data, layout#]], layouts, template}: the
    layouts' shared plotly template once), and a note when its choice was left out for size."""
    if panel.figure is None:
        return {"sizes": [], "frames": [], "layouts": []}, None
    first = _figure_json(panel.figure)
    choice = panel.choice
    if choice is None or choice.count <= 1:
        return {"sizes": [], "frames": [[first["data"], 0]], "layouts": [first.get("layout", {})]}, None
    estimate = len(json.dumps(first["data"])) * choice.count
    if estimate > FRAMES_BUDGET:
        what = " and ".join(label.lower() for label, _ in choice.axes)
        note = (
            f"The {what} choice is left out of this file: its {choice.count:,} figures would take about "
            f"{estimate / 1e6:.1f} MB (the budget is {FRAMES_BUDGET / 1e6:.0f} MB). It shows the one picked "
            "in the app; pick another there and save again."
        )
        return {"sizes": [], "frames": [[first["data"], 0]], "layouts": [first.get("layout", {})]}, note
    kept = None if choice.key is None else (choice.key, choice.axes)
    if kept in _kept:
        _kept.move_to_end(kept)
        return _kept[kept], None
    try:
        return _drawn_frames(choice, first, kept), None
    except LookupError:  # the page's analysis was released meanwhile (app/figures/attention.py head_maps)
        note = "The other choices are left out of this file: the app no longer holds them. Save again from the page."
        return {"sizes": [], "frames": [[first["data"], 0]], "layouts": [first.get("layout", {})]}, note


def _drawn_frames(choice: Choice, first: dict, kept) -> dict:
    layouts: dict[str, int] = {}
    frames = []
    template = first.get("layout", {}).get("template")  # kept once, not in every frame
    for pos in product(*(range(k) for _, k in choice.axes)):
        fig = _figure_json(choice.draw(*pos))
        layout = fig.get("layout", {})
        if layout.get("template") == template:
            layout.pop("template", None)
        key = json.dumps(layout, sort_keys=True)
        frames.append([fig["data"], layouts.setdefault(key, len(layouts))])
    out = {
        "sizes": [k for _, k in choice.axes],
        "frames": frames,
        "layouts": [json.loads(k) for k in layouts],
        "template": template,
    }
    if kept is not None:
        _kept[kept] = out
        while len(_kept) > KEPT_CHOICES:
            _kept.popitem(last=False)
    return out


def _menus(choice: Choice | None) -> str:
    if choice is None or choice.count <= 1:
        return ""
    out = []
    names = list(choice.names) + [None] * (len(choice.axes) - len(choice.names))
    for (label, k), at, named in zip(choice.axes, choice.start, names):
        shown = [html.escape(str(n)) for n in named] if named else [str(i + 1) for i in range(k)]
        options = "".join(f'<option value="{i}"{" selected" if i == at else ""}>{shown[i]}</option>' for i in range(k))
        out.append(f"<label>{html.escape(label)} <select>{options}</select></label>")
    return f'<div class="bx-menus">{" ".join(out)}</div>'


def _stamp_html(title: str, stamp: Stamp) -> str:
    e = html.escape
    model = ""
    if stamp.model:
        weights = f" · weights sha256 <code>{e(stamp.weights)}</code>" if stamp.weights else ""
        model = f"Model <b>{e(stamp.model)}</b>{weights} · "
    inputs = "".join(f"<dt>{e(label)}</dt><dd>{e(text)}</dd>" for label, text in stamp.inputs if text)
    return (
        f"<header><h1>{e(title)}</h1>"
        f'<p class="bx-stamp">{model}saved {e(stamp.saved)}</p>'
        + (f'<dl class="bx-inputs">{inputs}</dl>' if inputs else "")
        + "</header>"
    )


def _footer(stamp: Stamp) -> str:
    return f"<footer>made with BERT Explorer {html.escape(stamp.version)}</footer>"


STYLE = """body{font-family:system-ui,sans-serif;margin:1.5rem auto;max-width:1200px;color:#1f2328;padding:0 1rem}
h1{font-size:1.4rem;margin:0 0 .3rem}.bx-stamp,.bx-caption,footer{color:#555;font-size:.9rem}
.bx-inputs dt{font-weight:600;margin-top:.4rem}.bx-inputs dd{margin:0 0 0 1rem;white-space:pre-wrap}
.bx-panel{margin:1.5rem 0}.bx-menus{margin:.5rem 0}.bx-menus select{margin-right:1rem}
.bx-note{background:#fff8e1;padding:.4rem .6rem;border-radius:4px}
.bx-table{border-collapse:collapse;font-size:.9rem}.bx-scroll{overflow-x:auto;max-width:100%}
.bx-table td,.bx-table th{border:1px solid #ddd;padding:.2rem .5rem}"""


def view_html(title: str, panels: Sequence[Panel], stamp: Stamp, config: dict | None = None) -> str:
    """The whole file: `title`, the stamp, each panel's figure (with its menus, caption and any
    note) and the footer. `config` is plotly's (the modebar), the same for every figure. The
    figures are built one file at a time per process (BUILDS_AT_ONCE)."""
    e = html.escape
    config = {"displaylogo": False, "responsive": True, **(config or {})}
    body, data = [], []
    with _building:
        built = [_frames(panel) for panel in panels]
    for n, (panel, (frames, note)) in enumerate(zip(panels, built)):
        data.append(frames)
        body.append(
            f'<section class="bx-panel" id="bx-panel-{n}">{_menus(panel.choice if note is None else None)}'
            + (f'<div class="bx-plot" id="bx-plot-{n}"></div>' if panel.figure is not None else "")
            + (
                # wider than a phone: the table scrolls in its own box (keyboard-reachable), the page does not
                '<div class="bx-scroll" tabindex="0" role="region" aria-label="table">'
                + panel.table.to_html(index=False, escape=True, border=0, classes="bx-table")
                + "</div>"
                if panel.table is not None
                else ""
            )
            + (f'<p class="bx-caption">In words: {e(panel.caption)}</p>' if panel.caption else "")
            + (f'<p class="bx-note">{e(note)}</p>' if note else "")
            + "</section>"
        )
    views = script_json({"panels": data, "config": [config] * len(panels)})
    plots = any(panel.figure is not None for panel in panels)  # a file of tables needs no plotly.js
    policy = (
        f"default-src 'none'; script-src {_plotly_hash()} {_sha256(DRAW_JS)}; "
        "style-src 'unsafe-inline'; img-src data: blob:; font-src data:"
        if plots
        else "default-src 'none'; style-src 'unsafe-inline'"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{e(policy, quote=False)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(title)}</title><style>{STYLE}</style></head><body>"
        + "<main>"  # every view inside the page's landmarks (main, then the footer), for screen readers
        + _stamp_html(title, stamp)
        + "".join(body)
        + "</main>"
        + _footer(stamp)
        + (
            f'<script type="application/json" id="bx-views">{views}</script>'
            f'<script type="application/gzip;base64" id="bx-plotly">{plotly_packed()}</script>'
            f"<script>{DRAW_JS}</script>"
            if plots
            else ""
        )
        + "</body></html>\n"
    )


# The stamp's look inside a document of another style (bertviz's): its own classes only, the page's
# colours kept (a dark view stays dark).
STAMP_STYLE = """.bx-own{font-family:system-ui,sans-serif;margin:.3rem .5rem .8rem}
.bx-own h1{font-size:1.2rem;margin:0 0 .2rem}.bx-own .bx-stamp,footer.bx-own{opacity:.75;font-size:.85rem}
.bx-own .bx-inputs dt{font-weight:600;margin-top:.3rem}.bx-own .bx-inputs dd{margin:0 0 0 1rem;white-space:pre-wrap}"""


def stamped(document: str, title: str, stamp: Stamp) -> str:
    """A view that is already one whole offline document (bertviz's views, app/bertviz/views.py) as
    this file: the stamp at the top of its body, the footer at its end, a style element for them;
    its scripts, its data and its Content-Security-Policy (which allows inline styles) untouched."""
    head, sep, rest = document.partition("<body>")
    body, end, tail = rest.rpartition("</body>")
    if not sep or not end or "</head>" not in head:
        raise ValueError("not a whole HTML document")
    header = _stamp_html(title, stamp).replace("<header>", '<header class="bx-own">', 1)
    footer = _footer(stamp).replace("<footer>", '<footer class="bx-own">', 1)
    head = head.replace("</head>", f"<style>{STAMP_STYLE}</style>\n</head>", 1)
    return f"{head}<body>\n{header}{body}{footer}\n</body>{tail}"
