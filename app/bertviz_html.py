"""bertviz's head, model and neuron views as self-contained HTML documents.

bertviz 1.4.1 loads require.js, d3 5.7 and jQuery from a CDN, so offline (a classroom
without internet, or a browser that blocks third parties) its views stay blank. Here
we build the same views with no network at all:

* bertviz's own view code (`head_view.js`, `model_view.js`, `neuron_view.js`) is read
  from the installed package at run time; only its `require.config({paths: CDN...})`
  block is removed and its `PYTHON_PARAMS` marker pointed at our data;
* d3 5.7.0 (from `mpld3`, BSD-3-Clause) and jQuery 3.7.1 (from `xstatic-jquery`, MIT)
  are read from those packages at run time and inlined (never copied into this repo);
* a few lines of our own JavaScript stand in for require.js: bertviz only calls
  `require.config({...})` and `requirejs(['jquery', 'd3'], function ($, d3) {...})`,
  so `require`/`requirejs` hand the inlined globals to the callback at once
  (bertviz never calls `define`, so none is provided);
* the data travel once, as JSON in a `<script type="application/json">` block, the
  arrays as base64 int16: attention in thousandths (3 decimals), queries/keys in
  hundredths (the neuron view draws them as colours);
  our script rebuilds bertviz's `params` (including the sentence A/B filters, which
  bertviz's Python would ship as extra copies) before bertviz's code runs.

Why not call `bertviz.head_view(..., html_action='return')` and patch its output?
It writes `json.dumps(params)` raw into a `<script>` (a token `</script>` would end
it) and, because it replaces *every* `PYTHON_PARAMS` in head_view.js, ships the whole
attention array twice (once in a comment). We keep bertviz's templates and markup
(ids `layer`, `att_head`, `filter`, `vis`) and fix those two things.

Escaping: tokens a user typed reach the page only inside that JSON block, with `<`,
`>`, `&`, U+2028 and U+2029 written as \\u escapes, so `</script>` or
`"><img src=x onerror=alert(1)>` cannot end the block; bertviz draws tokens with
d3's `.text()`, so they show literally. As a second line of defence each document
carries a Content-Security-Policy that allows only its own inline scripts (by hash),
no inline event handlers and no network.

Large inputs are capped so the HTML stays small and the browser quick: at most
`max_tokens` tokens (the first ones) and at most `max_values` numbers in the data,
dropping whole layers (evenly spaced, always keeping the `layer` asked for). What was
cut is said in `ViewHtml.capped_message`, for the page to show.

This module does not import streamlit (or bertviz's Python, which pulls in IPython).

Dimension letters: L layers, H heads, T tokens, D head size.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import importlib.util
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import bertviz_save

__all__ = [
    "ViewHtml",
    "BertvizAssetError",
    "head_view_html",
    "model_view_html",
    "neuron_view_html",
    "script_json",
    "DEFAULT_MAX_VALUES",
    "MODEL_VIEW_MAX_VALUES",
]

# At most this many numbers (attention + queries + keys) go into one view's data: about
# 2.5-3 MB of HTML. 6 layers x 12 heads x 64 x 64 = 294,912 attention values, so a
# MiniLM head or neuron view at 64 tokens is never capped.
DEFAULT_MAX_VALUES = 800_000
# The model view draws all it gets at once (one SVG line per value); Chromium needs
# seconds per 100k lines on a busy 2-core machine, so it gets a smaller budget.
MODEL_VIEW_MAX_VALUES = 200_000
# Tokens: the head view draws H x T x T lines per layer (12 x 128 x 128 = 197k lines took
# 16 s in Chromium here, 64 tokens about 4 s), so the views take the first 64 tokens
# (the model view 48) unless told otherwise.
ATTN_SCALE = 1000  # attention sent as round(p * 1000): 3 decimals
QK_SCALE = 100  # queries/keys as round(x * 100): 2 decimals (drawn as colours)

ROOT_ID = "bertviz-view"


class BertvizAssetError(RuntimeError):
    """A package we read JavaScript from is missing or no longer has the expected shape."""


@dataclass(frozen=True)
class ViewHtml:
    """A bertviz view as one HTML document, and what was left out of it.

    html: a complete `<!DOCTYPE html>` document; pass it to `st.iframe(view.html, height=view.height)`
        with an int height: with height="content" Streamlit appends its own inline sizing
        script to the document, which the document's Content-Security-Policy refuses (a
        console error, and no sizing). st.iframe cannot scroll, so the document zooms
        itself out to fit a column narrower than bertviz's drawing.
    capped_message: None when everything is shown, else one sentence for the page to show
        (e.g. "To keep the view light it shows the first 128 of 300 tokens and 3 of 6 layers (0, 2, 5).").
    layers: the model layers included, in order.
    num_tokens / total_tokens: tokens shown / tokens given.
    height: a suggested iframe height in CSS pixels for the initial drawing.
    """

    html: str = field(repr=False)
    capped_message: str | None
    layers: tuple[int, ...]
    num_tokens: int
    total_tokens: int
    height: int
    kind: str = field(default="head")

    @property
    def size_bytes(self) -> int:
        return len(self.html.encode("utf-8"))

    def __str__(self) -> str:  # so st.iframe(str(view)) and f-strings give the document
        return self.html


# ---------------------------------------------------------------------------------------
# Assets read at run time from installed packages


def _package_dir(package: str) -> Path:
    """The folder of an installed package, found without importing it (mpld3 imports
    matplotlib, bertviz imports IPython: we only want their files)."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise BertvizAssetError(
            f"package {package!r} is not installed; run `.venv/bin/pip install --no-deps "
            f"-r requirements-nodeps.txt` (mpld3, xstatic-jquery) and `pip install -r requirements.txt` (bertviz)"
        )
    return Path(list(spec.submodule_search_locations)[0])


def _read(package: str, *parts: str) -> str:
    path = _package_dir(package).joinpath(*parts)
    try:
        return path.read_text(encoding="utf-8")
    except OSError as e:
        raise BertvizAssetError(f"cannot read {path}: {e}") from e


def _safe_inline(js: str) -> str:
    """Make a script's text safe between <script> and </script>: nothing in it may close
    the element or start an HTML comment that changes how the parser ends it. The bytes
    we inline contain neither today; this only guards against a future version."""
    js = re.sub(r"</(script)", r"<\\/\1", js, flags=re.IGNORECASE)
    return js.replace("<!--", "<\\!--")


@functools.cache
def _d3_js() -> str:
    js = _read("mpld3", "js", "d3.v5.min.js")
    if "d3js.org v5" not in js[:200]:
        raise BertvizAssetError("mpld3's js/d3.v5.min.js is not d3 version 5")
    return _safe_inline(js)


@functools.cache
def _jquery_js() -> str:
    js = _read("xstatic.pkg.jquery", "data", "jquery.min.js")
    if "jQuery v" not in js[:200]:
        raise BertvizAssetError("xstatic-jquery's data/jquery.min.js is not jQuery")
    return _safe_inline(js)


_REQUIRE_CONFIG = re.compile(r"require\.config\(\s*\{.*?\}\s*\);", re.DOTALL)


@functools.cache
def _bertviz_js(name: str) -> str:
    """bertviz's view script with its CDN require.config removed and its params pointed
    at the object our loader builds."""
    js = _read("bertviz", f"{name}.js")
    js, n = _REQUIRE_CONFIG.subn("", js, count=1)
    if n != 1:
        raise BertvizAssetError(f"bertviz/{name}.js has no require.config block (bertviz changed?)")
    # head/model views: `const params = PYTHON_PARAMS;` (bertviz's Python pastes JSON there);
    # the neuron view reads `window.bertviz_params`, which our loader sets.
    marker = "const params = window.bertviz_params" if name == "neuron_view" else "const params = PYTHON_PARAMS;"
    if marker not in js or "requirejs(['jquery', 'd3']" not in js:
        raise BertvizAssetError(f"bertviz/{name}.js does not have the expected shape (bertviz changed?)")
    if name != "neuron_view":
        js = js.replace(marker, "const params = window.bertExplorerParams;", 1)
    if re.search(r"cdnjs|jsdelivr|unpkg|require\.config", js):
        raise BertvizAssetError(f"bertviz/{name}.js still refers to a CDN")
    return _safe_inline(js)


# Our stand-in for require.js and the loader that rebuilds bertviz's params from the data.
_LOADER_JS = r"""
(function () {
  "use strict";
  // require.js stand-in: d3 and jQuery are inlined above as globals.
  var modules = {jquery: window.jQuery, d3: window.d3};
  function requireShim(deps, callback) {
    if (typeof deps === "string") { return modules[deps]; }
    var args = deps.map(function (name) {
      if (!modules[name]) { throw new Error("offline bertviz: no module " + name); }
      return modules[name];
    });
    if (typeof callback === "function") { callback.apply(window, args); }
  }
  requireShim.config = function () {};
  window.require = window.requirejs = requireShim;

  var raw = JSON.parse(document.getElementById("bertexplorer-data").textContent);
  // {shape, scale, data: base64 of little-endian int16} -> nested arrays of numbers
  function unpack(p) {
    var shape = p.shape, scale = p.scale, bin = atob(p.data), i;
    var bytes = new Uint8Array(bin.length);
    for (i = 0; i < bin.length; i++) { bytes[i] = bin.charCodeAt(i); }
    var view = new DataView(bytes.buffer), data = new Array(bin.length >> 1);
    for (i = 0; i < data.length; i++) { data[i] = view.getInt16(2 * i, true); }
    function build(offset, dim) {
      var n = shape[dim], out = new Array(n), i, stride = 1;
      if (dim === shape.length - 1) {
        for (i = 0; i < n; i++) { out[i] = data[offset + i] / scale; }
        return out;
      }
      for (i = dim + 1; i < shape.length; i++) { stride *= shape[i]; }
      for (i = 0; i < n; i++) { out[i] = build(offset + i * stride, dim + 1); }
      return out;
    }
    return build(0, 0);
  }
  // x[L][H][rows][cols]: keep rows r0..r1 and, when given, columns c0..c1
  function cut(x, r0, r1, c0, c1) {
    return x.map(function (layer) {
      return layer.map(function (head) {
        return head.slice(r0, r1).map(function (row) {
          return c0 === undefined ? row : row.slice(c0, c1);
        });
      });
    });
  }
  var tokens = raw.tokens, n = tokens.length, b = raw.b_start;
  var attn = unpack(raw.attn);
  var q = raw.queries ? unpack(raw.queries) : null;
  var k = raw.keys ? unpack(raw.keys) : null;
  function entry(name, r0, r1, c0, c1) {
    var whole = r0 === 0 && r1 === n && c0 === 0 && c1 === n;
    var e = {name: name, attn: whole ? attn : cut(attn, r0, r1, c0, c1),
             left_text: tokens.slice(r0, r1), right_text: tokens.slice(c0, c1)};
    if (q) { e.queries = whole ? q : cut(q, r0, r1); e.keys = whole ? k : cut(k, c0, c1); }
    return e;
  }
  var params = raw.params;
  if (raw.kind === "neuron") {
    params.attention = {all: entry(null, 0, n, 0, n)};
    if (b !== null) {
      params.attention.aa = entry(null, 0, b, 0, b);
      params.attention.bb = entry(null, b, n, b, n);
      params.attention.ab = entry(null, 0, b, b, n);
      params.attention.ba = entry(null, b, n, 0, b);
    }
    window.bertviz_params = params;
  } else if (b === null) {
    params.attention = [entry(null, 0, n, 0, n)];
  } else {
    params.attention = [
      entry("All", 0, n, 0, n),
      entry("Sentence A -> Sentence A", 0, b, 0, b),
      entry("Sentence B -> Sentence B", b, n, b, n),
      entry("Sentence A -> Sentence B", 0, b, b, n),
      entry("Sentence B -> Sentence A", b, n, 0, b)
    ];
  }
  window.bertExplorerParams = params;
  window.bertExplorerLayers = raw.layers;
})();
"""

# neuron_view.js numbers its layer menu 0..n-1 over the layers it was given; show the
# model's layer numbers instead when we kept only some layers.
_NEURON_RELABEL_JS = r"""
(function () {
  "use strict";
  var layers = window.bertExplorerLayers;
  document.querySelectorAll("#%s #layer option").forEach(function (o, i) {
    if (i < layers.length) { o.textContent = String(layers[i]); }
  });
})();
""".replace("%s", ROOT_ID)


# st.iframe cannot scroll, and bertviz draws at fixed widths (the model view 970 px, the
# neuron view about 1,000 px once expanded) that can be wider than the page's column:
# shrink the document (CSS zoom, never below half size) until the drawing fits.
_FIT_WIDTH_JS = r"""
(function () {
  "use strict";
  function fit() {
    var root = document.getElementById("%s");
    if (!root) { return; }
    document.body.style.zoom = "";
    var need = root.scrollWidth;
    root.querySelectorAll("svg").forEach(function (svg) {
      try {
        var box = svg.getBBox();
        need = Math.max(need, svg.getBoundingClientRect().left + box.x + box.width);
      } catch (e) { /* not rendered */ }
    });
    var zoom = Math.min(1, document.documentElement.clientWidth / (need + 12));
    if (zoom < 0.99) { document.body.style.zoom = String(Math.max(zoom, 0.5)); }
  }
  fit();
  window.addEventListener("resize", fit);
})();
""".replace("%s", ROOT_ID)


# ---------------------------------------------------------------------------------------
# Escaping and packing


def script_json(obj: Any) -> str:
    """JSON that is safe inside an HTML <script> element: no `<`, `>`, `&`, U+2028 or
    U+2029 appear literally (they become \\u escapes, which JSON.parse reads back), so
    no string in it can close the element or open a comment."""
    text = json.dumps(obj, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _to_numpy(x: Any) -> np.ndarray:
    if hasattr(x, "detach"):  # torch.Tensor, without importing torch here
        x = x.detach().to("cpu").float().numpy()
    return np.asarray(x, dtype=np.float64)


def _stack(per_layer: Any, what: str, last: str) -> np.ndarray:
    """Per-layer arrays -> one (L, H, T, `last`) array.

    Accepts a sequence of L tensors/arrays each (1, H, T, X) or (H, T, X) (what our
    model and transformers return), or one array (L, H, T, X) or (L, 1, H, T, X).
    """
    if isinstance(per_layer, (list, tuple)):
        if not per_layer:
            raise ValueError(f"{what}: no layers given")
        layers = []
        for i, a in enumerate(per_layer):
            a = _to_numpy(a)
            if a.ndim == 4:
                if a.shape[0] != 1:
                    raise ValueError(f"{what}[{i}] has batch size {a.shape[0]}; pass one sequence (batch 1)")
                a = a[0]
            if a.ndim != 3:
                raise ValueError(f"{what}[{i}] must be (1, H, T, {last}) or (H, T, {last}), got {a.shape}")
            layers.append(a)
        try:
            arr = np.stack(layers)
        except ValueError as e:
            raise ValueError(f"{what}: layers differ in shape") from e
    else:
        arr = _to_numpy(per_layer)
        if arr.ndim == 5:
            if arr.shape[1] != 1:
                raise ValueError(f"{what} has batch size {arr.shape[1]}; pass one sequence (batch 1)")
            arr = arr[:, 0]
        if arr.ndim != 4:
            raise ValueError(f"{what} must be (L, H, T, {last}) or a sequence of per-layer arrays, got {arr.shape}")
    return arr


def _pack(arr: np.ndarray, scale: int) -> dict:
    """floats -> {shape, scale, data}: data is base64 of round(x * scale) as little-endian
    int16 (2.7 characters a value, and 100x quicker to write than a JSON list)."""
    ints = np.rint(np.nan_to_num(arr, nan=0.0, posinf=0.0, neginf=0.0) * scale)
    ints = np.clip(ints, -32768, 32767).astype("<i2")
    return {"shape": list(arr.shape), "scale": scale, "data": base64.b64encode(ints.tobytes()).decode("ascii")}


def _choose_layers(
    num_layers: int, per_layer_values: int, max_values: int, requested: Sequence[int] | None, focus: int | None
) -> list[int]:
    """The layers to include: `requested` (default all), thinned to fit `max_values`,
    evenly spaced, always keeping `focus` (the layer the page has selected)."""
    if requested is None:
        wanted = list(range(num_layers))
    else:
        wanted = sorted({int(x) for x in requested})
        bad = [x for x in wanted if not 0 <= x < num_layers]
        if bad or not wanted:
            raise ValueError(f"layers must be a non-empty subset of 0..{num_layers - 1}, got {list(requested)}")
    if focus is not None and not 0 <= focus < num_layers:
        raise ValueError(f"layer {focus} is out of range 0..{num_layers - 1}")
    fit = max(1, max_values // max(1, per_layer_values))
    if len(wanted) > fit:
        picks = np.linspace(0, len(wanted) - 1, fit).round().astype(int)
        chosen = sorted({wanted[i] for i in picks})
        if focus is not None and focus not in chosen:
            nearest = min(range(len(chosen)), key=lambda i: abs(chosen[i] - focus))
            chosen[nearest] = focus
            chosen = sorted(set(chosen))
        wanted = chosen
    elif focus is not None and focus not in wanted:
        wanted = sorted(wanted + [focus])
    return wanted


def _capped_message(
    total_tokens: int,
    num_tokens: int,
    num_layers: int,
    layers: list[int],
    requested: Sequence[int] | None,
    b_dropped: bool,
) -> str | None:
    parts = []
    if num_tokens < total_tokens:
        parts.append(f"the first {num_tokens} of {total_tokens} tokens")
    expected = num_layers if requested is None else len(set(requested))
    if len(layers) < expected:
        parts.append(f"{len(layers)} of {num_layers} layers ({', '.join(map(str, layers))})")
    if not parts:
        return None
    msg = "To keep the view light it shows " + " and ".join(parts) + "."
    if b_dropped:
        msg += " Sentence B starts after the cut, so the sentence A/B filter is off."
    return msg


@dataclass
class _Prepared:
    tokens: list[str]
    attn: np.ndarray  # (L', H, T', T') the kept layers and tokens
    layers: list[int]
    b_start: int | None
    message: str | None
    total_tokens: int


def _prepare(
    tokens: Sequence[str],
    attentions: Any,
    sentence_b_start: int | None,
    layers: Sequence[int] | None,
    max_tokens: int,
    max_values: int,
    focus: int | None,
    extra_per_layer: int = 0,
) -> tuple[_Prepared, np.ndarray]:
    tokens = [str(t) for t in tokens]
    attn = _stack(attentions, "attentions", "T")  # (L, H, T, T)
    L, H, T, T2 = attn.shape
    if T != T2:
        raise ValueError(f"attention must be square over tokens, got {attn.shape}")
    if len(tokens) != T:
        raise ValueError(f"{len(tokens)} tokens but attention covers {T} positions")
    if T == 0:
        raise ValueError("no tokens to show")
    if max_tokens < 1:
        raise ValueError("max_tokens must be at least 1")
    n = min(T, int(max_tokens))
    b = sentence_b_start
    b_dropped = False
    if b is not None:
        b = int(b)
        if not 0 < b < T:
            raise ValueError(f"sentence_b_start must lie in 1..{T - 1}, got {sentence_b_start}")
        if b >= n:
            b, b_dropped = None, True
    per_layer = H * n * n + extra_per_layer * n
    kept = _choose_layers(L, per_layer, max_values, layers, focus)
    message = _capped_message(T, n, L, kept, layers, b_dropped)
    prepared = _Prepared(
        tokens=tokens[:n], attn=attn[kept][:, :, :n, :n], layers=kept, b_start=b, message=message, total_tokens=T
    )
    return prepared, attn


def _csp(scripts: Sequence[str]) -> str:
    hashes = " ".join(
        "'sha256-" + base64.b64encode(hashlib.sha256(s.encode("utf-8")).digest()).decode("ascii") + "'" for s in scripts
    )
    return (
        "default-src 'none'; script-src " + hashes + "; style-src 'unsafe-inline'; "
        "img-src data:; font-src data:; connect-src 'none'; form-action 'none'; base-uri 'none'"
    )


def _document(title: str, vis_html: str, data: dict, view_js: str, after_js: Sequence[str] = ()) -> str:
    """The whole view as one offline document; `title` ("bertviz head view") also names the
    file its "Save as SVG" button saves (bertviz-head-view.svg)."""
    scripts = [_d3_js(), _jquery_js(), _LOADER_JS, view_js, *after_js, _FIT_WIDTH_JS, bertviz_save.SAVE_SVG_JS]
    vis_html = bertviz_save.button_html(title.replace(" ", "-") + ".svg") + "\n" + vis_html
    body_scripts = "".join(f"<script>{s}</script>\n" for s in scripts)
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{_csp(scripts)}">\n'
        f"<title>{title}</title>\n"
        "<style>body{margin:0;padding:6px;background:#fff;color:#202020;"
        "font-family:'Helvetica Neue',Helvetica,Arial,sans-serif;font-size:14px}"
        "select{font-size:14px;margin:0 6px 6px 2px}</style>\n"
        "</head>\n<body>\n"
        f"{vis_html}\n"
        # d3 v5.7.0 (BSD-3-Clause) from mpld3; jQuery 3.7.1 (MIT) from xstatic-jquery;
        # bertviz 1.4.1 view code (Apache-2.0); all read from the installed packages.
        f'<script type="application/json" id="bertexplorer-data">{script_json(data)}</script>\n'
        f"{body_scripts}"
        "</body>\n</html>\n"
    )


def _filter_select(b_start: int | None) -> str:
    # the same menu bertviz's head_view.py / model_view.py write for a sentence pair
    if b_start is None:
        return ""
    names = [
        "All",
        "Sentence A -&gt; Sentence A",
        "Sentence B -&gt; Sentence B",
        "Sentence A -&gt; Sentence B",
        "Sentence B -&gt; Sentence A",
    ]
    options = "".join(f'<option value="{i}">{name}</option>' for i, name in enumerate(names))
    return f'Attention: <select id="filter">{options}</select>'


# ---------------------------------------------------------------------------------------
# The three views


def head_view_html(
    tokens: Sequence[str],
    attentions: Any,
    sentence_b_start: int | None = None,
    layers: Sequence[int] | None = None,
    max_tokens: int = 64,
    max_values: int = DEFAULT_MAX_VALUES,
    layer: int | None = None,
    heads: Sequence[int] | None = None,
) -> ViewHtml:
    """bertviz's head view (one layer at a time, lines from each token to the tokens it
    attends to, one colour per head).

    tokens: T strings, shown literally. attentions: L per-layer (1, H, T, T) tensors or
    arrays (or one (L, H, T, T)), softmax probabilities. sentence_b_start: index of the
    first token of sentence B, to offer bertviz's A/B filter. layers: model layers to
    include (default all). layer: the layer shown first (kept when capping). heads: heads
    selected at first (default all).
    """
    p, full = _prepare(tokens, attentions, sentence_b_start, layers, max_tokens, max_values, layer)
    H = full.shape[1]
    if heads is not None and any(not 0 <= int(h) < H for h in heads):
        raise ValueError(f"heads must lie in 0..{H - 1}")
    params = {
        "default_filter": "0",
        "root_div_id": ROOT_ID,
        "layer": p.layers[0] if layer is None else int(layer),
        "heads": None if heads is None else [int(h) for h in heads],
        "include_layers": p.layers,
    }
    data = {
        "kind": "head",
        "tokens": p.tokens,
        "b_start": p.b_start,
        "layers": p.layers,
        "attn": _pack(p.attn, ATTN_SCALE),
        "params": params,
    }
    vis_html = (
        f'<div id="{ROOT_ID}" style="font-family:\'Helvetica Neue\', Helvetica, Arial, sans-serif;">'
        f'<span style="user-select:none">Layer: <select id="layer"></select> {_filter_select(p.b_start)}</span>'
        "<div id='vis'></div></div>"
    )
    html = _document("bertviz head view", vis_html, data, _bertviz_js("head_view"))
    n = len(p.tokens)
    return ViewHtml(
        html=html,
        capped_message=p.message,
        layers=tuple(p.layers),
        num_tokens=n,
        total_tokens=p.total_tokens,
        height=int(30 + n * 22.5 + 60),
        kind="head",
    )


def model_view_html(
    tokens: Sequence[str],
    attentions: Any,
    sentence_b_start: int | None = None,
    layers: Sequence[int] | None = None,
    max_tokens: int = 48,
    max_values: int = MODEL_VIEW_MAX_VALUES,
    layer: int | None = None,
    display_mode: str = "light",
) -> ViewHtml:
    """bertviz's model view: a thumbnail per layer x head; click one to enlarge it.

    It draws every included layer at once, L x H x T x T SVG lines, which is what makes a
    browser slow (about 300k lines at 64 tokens for 6 x 12 heads): by default it takes at
    most 48 tokens and 200k values. Arguments as for `head_view_html`; display_mode
    'light' or 'dark'.
    """
    if display_mode not in ("light", "dark"):
        raise ValueError("display_mode must be 'light' or 'dark'")
    p, full = _prepare(tokens, attentions, sentence_b_start, layers, max_tokens, max_values, layer)
    H = full.shape[1]
    params = {
        "default_filter": "0",
        "display_mode": display_mode,
        "root_div_id": ROOT_ID,
        "include_layers": p.layers,
        "include_heads": list(range(H)),
        "total_heads": H,
    }
    data = {
        "kind": "model",
        "tokens": p.tokens,
        "b_start": p.b_start,
        "layers": p.layers,
        "attn": _pack(p.attn, ATTN_SCALE),
        "params": params,
    }
    vis_html = (
        f'<div id="{ROOT_ID}" style="font-family:\'Helvetica Neue\', Helvetica, Arial, sans-serif;">'
        f'<span style="user-select:none">{_filter_select(p.b_start)}</span>'
        "<div id='vis'></div></div>"
    )
    html = _document("bertviz model view", vis_html, data, _bertviz_js("model_view"))
    if display_mode == "dark":
        html = html.replace("background:#fff;color:#202020", "background:#000;color:#ccc", 1)
    n = len(p.tokens)
    axis = 15 + 5 + 13 + 5
    thumb_h = n * 7 * (12 / H) + 10
    height = max(len(p.layers) * thumb_h + axis, n * 18 + 30 + 25) + (40 if p.b_start is not None else 20)
    return ViewHtml(
        html=html,
        capped_message=p.message,
        layers=tuple(p.layers),
        num_tokens=n,
        total_tokens=p.total_tokens,
        height=int(height),
        kind="model",
    )


def neuron_view_html(
    tokens: Sequence[str],
    queries: Any,
    keys: Any,
    attentions: Any,
    sentence_b_start: int | None = None,
    layers: Sequence[int] | None = None,
    max_tokens: int = 64,
    max_values: int = DEFAULT_MAX_VALUES,
    layer: int | None = None,
    head: int | None = None,
    display_mode: str = "light",
) -> ViewHtml:
    """bertviz's neuron view: for one layer and head, the query and key vectors, q x k,
    q . k / sqrt(d) and the softmax, for the token under the mouse (click the "+" icon
    to expand).

    bertviz builds this view from a model and tokenizer of its own types; we feed its
    neuron_view.js the same params from our arrays instead: queries and keys are L per-
    layer (1, H, T, D) (or one (L, H, T, D)), as `model.bert(..., output_qkv=True)`
    returns them; attentions as for `head_view_html`. layer/head: shown first.
    """
    if display_mode not in ("light", "dark"):
        raise ValueError("display_mode must be 'light' or 'dark'")
    q = _stack(queries, "queries", "D")
    k = _stack(keys, "keys", "D")
    if q.shape != k.shape:
        raise ValueError(f"queries {q.shape} and keys {k.shape} differ in shape")
    D = q.shape[-1]
    p, full = _prepare(
        tokens, attentions, sentence_b_start, layers, max_tokens, max_values, layer, extra_per_layer=2 * q.shape[1] * D
    )
    if q.shape[:3] != full.shape[:3]:
        raise ValueError(f"queries/keys {q.shape} do not match attention {full.shape}")
    H = full.shape[1]
    if head is not None and not 0 <= int(head) < H:
        raise ValueError(f"head must lie in 0..{H - 1}")
    n = len(p.tokens)
    params = {
        "default_filter": "all",
        "root_div_id": ROOT_ID,
        "bidirectional": True,
        "display_mode": display_mode,
        "layer": 0 if layer is None else p.layers.index(int(layer)),  # index into kept layers
        "head": 0 if head is None else int(head),
    }
    data = {
        "kind": "neuron",
        "tokens": p.tokens,
        "b_start": p.b_start,
        "layers": p.layers,
        "attn": _pack(p.attn, ATTN_SCALE),
        "queries": _pack(q[p.layers][:, :, :n], QK_SCALE),
        "keys": _pack(k[p.layers][:, :, :n], QK_SCALE),
        "params": params,
    }
    pair_menu = ""
    if p.b_start is not None:
        pair_menu = (
            '<span class="dropdown-label">Attention: </span><select id="filter">'
            '<option value="all">All</option>'
            '<option value="aa">Sentence A -&gt; Sentence A</option>'
            '<option value="ab">Sentence A -&gt; Sentence B</option>'
            '<option value="ba">Sentence B -&gt; Sentence A</option>'
            '<option value="bb">Sentence B -&gt; Sentence B</option></select>'
        )
    vis_html = (
        f'<div id="{ROOT_ID}" style="padding:8px;font-family:\'Helvetica Neue\', Helvetica, Arial, sans-serif;">'
        '<span style="user-select:none">'
        '<span class="dropdown-label">Layer: </span><select id="layer"></select>'
        '<span class="dropdown-label">Head: </span> <select id="att_head"></select>'
        f"{pair_menu}</span><div id='vis'></div></div>"
    )
    html = _document("bertviz neuron view", vis_html, data, _bertviz_js("neuron_view"), after_js=[_NEURON_RELABEL_JS])
    if display_mode == "dark":
        html = html.replace("background:#fff;color:#202020", "background:#000;color:#ccc", 1)
    return ViewHtml(
        html=html,
        capped_message=p.message,
        layers=tuple(p.layers),
        num_tokens=n,
        total_tokens=p.total_tokens,
        height=int(n * 26 + 100 + 50),
        kind="neuron",
    )
