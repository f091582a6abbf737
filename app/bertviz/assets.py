"""The JavaScript of the offline bertviz views (app/bertviz/views.py), read at run time.

* bertviz's own view code (`head_view.js`, `model_view.js`, `neuron_view.js`) from the
  installed package, its CDN `require.config` removed and its params pointed at ours;
* d3 5.7.0 (from `mpld3`, BSD-3-Clause) and jQuery 3.7.1 (from `xstatic-jquery`, MIT),
  read from those packages and inlined (never copied into this repo);
* our few lines: the require.js stand-in and the loader that rebuilds bertviz's params
  from the data block, the neuron view's layer labels, the fit-to-width zoom;
* the document's Content-Security-Policy: only these inline scripts (by hash), no network.

No streamlit and no bertviz Python (it imports IPython) here.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import importlib.util
import re
from collections.abc import Sequence
from pathlib import Path

ROOT_ID = "bertviz-view"  # the id of the view's root element: the scripts below and the views' markup use it


# ---------------------------------------------------------------------------------------
# Assets read at run time from installed packages


class BertvizAssetError(RuntimeError):
    """A package we read JavaScript from is missing or no longer has the expected shape."""


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


def _library_js(package: str, folder: str, name: str, banner: str, error: str) -> str:
    """A library's script read from an installed package, checked by the `banner` in its first
    200 characters (else BertvizAssetError(error)), made safe to inline."""
    js = _read(package, folder, name)
    if banner not in js[:200]:
        raise BertvizAssetError(error)
    return _safe_inline(js)


@functools.cache
def d3_js() -> str:
    return _library_js("mpld3", "js", "d3.v5.min.js", "d3js.org v5", "mpld3's js/d3.v5.min.js is not d3 version 5")


@functools.cache
def jquery_js() -> str:
    error = "xstatic-jquery's data/jquery.min.js is not jQuery"
    return _library_js("xstatic.pkg.jquery", "data", "jquery.min.js", "jQuery v", error)


_REQUIRE_CONFIG = re.compile(r"require\.config\(\s*\{.*?\}\s*\);", re.DOTALL)


@functools.cache
def bertviz_js(name: str) -> str:
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
LOADER_JS = r"""
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
NEURON_RELABEL_JS = r"""
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
FIT_WIDTH_JS = r"""
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
# The Content-Security-Policy: only the document's own inline scripts, by hash


def csp(scripts: Sequence[str]) -> str:
    hashes = " ".join(
        "'sha256-" + base64.b64encode(hashlib.sha256(s.encode("utf-8")).digest()).decode("ascii") + "'" for s in scripts
    )
    return (
        "default-src 'none'; script-src " + hashes + "; style-src 'unsafe-inline'; "
        "img-src data:; font-src data:; connect-src 'none'; form-action 'none'; base-uri 'none'"
    )
