"""bertviz's head, model and neuron views as self-contained HTML documents that work offline.

bertviz's own view code runs unchanged on data we pack (app/bertviz/data.py) with d3 and jQuery
inlined from installed packages and a few lines standing in for require.js (app/bertviz/assets.py):
no network, no CDN. Not `bertviz.head_view(html_action='return')`: it writes its JSON raw into a
`<script>` (a typed `</script>` would end it) and ships the attention twice.

Typed tokens reach the page only inside one JSON block with `<`, `>`, `&`, U+2028/9 escaped, and
bertviz draws them with d3's `.text()`; each document's Content-Security-Policy allows only its own
inline scripts (by hash) and no network. Inputs over `max_tokens` tokens or `max_values` numbers are
cut (whole layers dropped, the asked `layer` kept) and `ViewHtml.capped_message` says so.
No streamlit, no bertviz Python (it pulls in IPython).

Dimension letters: L layers, H heads, T tokens, D head size.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import save_svg
from .assets import (
    FIT_WIDTH_JS,
    LOADER_JS,
    NEURON_RELABEL_JS,
    ROOT_ID,
    BertvizAssetError,
    bertviz_js,
    csp,
    d3_js,
    jquery_js,
)
from .data import Prepared, pack_int16, prepare, script_json, stack_layers

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
# Tokens: the head view draws H x T x T lines per layer, so the browser's time grows with the
# square of the tokens (docs/PERFORMANCE.md): the views take the first 64 tokens (the model
# view 48) unless told otherwise.
ATTN_SCALE = 1000  # attention sent as round(p * 1000): 3 decimals
QK_SCALE = 100  # queries/keys as round(x * 100): 2 decimals (drawn as colours)


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
# The document around a view


def _document(title: str, vis_html: str, data: dict, view_js: str, after_js: Sequence[str] = ()) -> str:
    """The whole view as one offline document; `title` ("bertviz head view") also names the
    file its "Save as SVG" button saves (bertviz-head-view.svg)."""
    scripts = [d3_js(), jquery_js(), LOADER_JS, view_js, *after_js, FIT_WIDTH_JS, save_svg.SAVE_SVG_JS]
    vis_html = save_svg.button_html(title.replace(" ", "-") + ".svg") + "\n" + vis_html
    body_scripts = "".join(f"<script>{s}</script>\n" for s in scripts)
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{csp(scripts)}">\n'
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
    return f'Attention: <select id="filter" aria-label="Attention">{options}</select>'


def _check_display_mode(display_mode: str) -> None:
    if display_mode not in ("light", "dark"):
        raise ValueError("display_mode must be 'light' or 'dark'")


def _dark(html: str, display_mode: str) -> str:
    """The document with a dark page background when display_mode is 'dark'."""
    if display_mode == "dark":
        html = html.replace("background:#fff;color:#202020", "background:#000;color:#ccc", 1)
    return html


def _view_data(kind: str, p: Prepared, params: dict, **extra: Any) -> dict:
    """A view's data block: the kept tokens, layers and attention, then `extra`, then bertviz's params."""
    return {
        "kind": kind,
        "tokens": p.tokens,
        "b_start": p.b_start,
        "layers": p.layers,
        "attn": pack_int16(p.attn, ATTN_SCALE),
        **extra,
        "params": params,
    }


def _attn_vis_html(menus: str) -> str:
    """The head and model views' menus and drawing area."""
    return (
        f'<div id="{ROOT_ID}" style="font-family:\'Helvetica Neue\', Helvetica, Arial, sans-serif;">'
        f'<span style="user-select:none">{menus}</span>'
        "<div id='vis'></div></div>"
    )


def _view(p: Prepared, html: str, height: float, kind: str) -> ViewHtml:
    n = len(p.tokens)
    return ViewHtml(
        html=html,
        capped_message=p.message,
        layers=tuple(p.layers),
        num_tokens=n,
        total_tokens=p.total_tokens,
        height=int(height),
        kind=kind,
    )


# ---------------------------------------------------------------------------------------
# The three views


def head_view_html(
    tokens: Sequence[str],
    attentions: Any,
    *,
    sentence_b_start: int | None = None,
    layer: int | None = None,
    heads: Sequence[int] | None = None,
    layers: Sequence[int] | None = None,
    max_tokens: int = 64,
    max_values: int = DEFAULT_MAX_VALUES,
) -> ViewHtml:
    """bertviz's head view (one layer at a time, lines from each token to the tokens it
    attends to, one colour per head).

    tokens: T strings, shown literally. attentions: L per-layer (1, H, T, T) tensors or
    arrays (or one (L, H, T, T)), softmax probabilities. sentence_b_start: index of the
    first token of sentence B, to offer bertviz's A/B filter. layers: model layers to
    include (default all). layer: the layer shown first (kept when capping). heads: heads
    selected at first (default all).
    """
    p, full = prepare(tokens, attentions, sentence_b_start, layers, max_tokens, max_values, layer)
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
    data = _view_data("head", p, params)
    vis_html = _attn_vis_html(f'Layer: <select id="layer" aria-label="Layer"></select> {_filter_select(p.b_start)}')
    html = _document("bertviz head view", vis_html, data, bertviz_js("head_view"))
    n = len(p.tokens)
    return _view(p, html, 30 + n * 22.5 + 60, "head")


def model_view_html(
    tokens: Sequence[str],
    attentions: Any,
    *,
    sentence_b_start: int | None = None,
    layer: int | None = None,
    display_mode: str = "light",
    layers: Sequence[int] | None = None,
    max_tokens: int = 48,
    max_values: int = MODEL_VIEW_MAX_VALUES,
) -> ViewHtml:
    """bertviz's model view: a thumbnail per layer x head; click one to enlarge it.

    It draws every included layer at once, L x H x T x T SVG lines, which is what makes a
    browser slow (about 300k lines at 64 tokens for 6 x 12 heads): by default it takes at
    most 48 tokens and 200k values. Arguments as for `head_view_html`; display_mode
    'light' or 'dark'.
    """
    _check_display_mode(display_mode)
    p, full = prepare(tokens, attentions, sentence_b_start, layers, max_tokens, max_values, layer)
    H = full.shape[1]
    params = {
        "default_filter": "0",
        "display_mode": display_mode,
        "root_div_id": ROOT_ID,
        "include_layers": p.layers,
        "include_heads": list(range(H)),
        "total_heads": H,
    }
    data = _view_data("model", p, params)
    vis_html = _attn_vis_html(_filter_select(p.b_start))
    html = _dark(_document("bertviz model view", vis_html, data, bertviz_js("model_view")), display_mode)
    n = len(p.tokens)
    axis = 15 + 5 + 13 + 5
    thumb_h = n * 7 * (12 / H) + 10
    height = max(len(p.layers) * thumb_h + axis, n * 18 + 30 + 25) + (40 if p.b_start is not None else 20)
    return _view(p, html, height, "model")


def neuron_view_html(
    tokens: Sequence[str],
    queries: Any,
    keys: Any,
    attentions: Any,
    *,
    sentence_b_start: int | None = None,
    display_mode: str = "light",
    layer: int | None = None,
    head: int | None = None,
    layers: Sequence[int] | None = None,
    max_tokens: int = 64,
    max_values: int = DEFAULT_MAX_VALUES,
) -> ViewHtml:
    """bertviz's neuron view: for one layer and head, the query and key vectors, q x k,
    q . k / sqrt(d) and the softmax, for the token under the mouse (click the "+" icon
    to expand).

    bertviz builds this view from a model and tokenizer of its own types; we feed its
    neuron_view.js the same params from our arrays instead: queries and keys are L per-
    layer (1, H, T, D) (or one (L, H, T, D)), as `model.bert(..., output_qkv=True)`
    returns them; attentions as for `head_view_html`. layer/head: shown first.
    """
    _check_display_mode(display_mode)
    q = stack_layers(queries, "queries", "D")
    k = stack_layers(keys, "keys", "D")
    if q.shape != k.shape:
        raise ValueError(f"queries {q.shape} and keys {k.shape} differ in shape")
    D = q.shape[-1]
    p, full = prepare(
        tokens, attentions, sentence_b_start, layers, max_tokens, max_values, layer, extra_per_layer=2 * q.shape[1] * D
    )
    if q.shape[:3] != full.shape[:3]:
        raise ValueError(f"queries/keys {q.shape} do not match attention {full.shape}")
    H = full.shape[1]
    if head is not None and not 0 <= int(head) < H:
        raise ValueError(f"head must lie in 0..{H - 1}")
    n = len(p.tokens)
    data = _neuron_data(p, q, k, layer, head, display_mode)
    view_js = bertviz_js("neuron_view")
    html = _document("bertviz neuron view", _neuron_vis_html(p.b_start), data, view_js, after_js=[NEURON_RELABEL_JS])
    return _view(p, _dark(html, display_mode), n * 26 + 100 + 50, "neuron")


def _neuron_data(
    p: Prepared, q: np.ndarray, k: np.ndarray, layer: int | None, head: int | None, display_mode: str
) -> dict:
    """The neuron view's data block: bertviz's params, the kept attention and the kept
    layers' queries and keys (L', H, T', D)."""
    n = len(p.tokens)
    params = {
        "default_filter": "all",
        "root_div_id": ROOT_ID,
        "bidirectional": True,
        "display_mode": display_mode,
        "layer": 0 if layer is None else p.layers.index(int(layer)),  # index into kept layers
        "head": 0 if head is None else int(head),
    }
    queries = pack_int16(q[p.layers][:, :, :n], QK_SCALE)
    return _view_data("neuron", p, params, queries=queries, keys=pack_int16(k[p.layers][:, :, :n], QK_SCALE))


def _neuron_vis_html(b_start: int | None) -> str:
    """The neuron view's menus (layer, head and, for a sentence pair, the A/B filter) and its drawing area."""
    pair_menu = ""
    if b_start is not None:
        pair_menu = (
            '<span class="dropdown-label">Attention: </span><select id="filter" aria-label="Attention">'
            '<option value="all">All</option>'
            '<option value="aa">Sentence A -&gt; Sentence A</option>'
            '<option value="ab">Sentence A -&gt; Sentence B</option>'
            '<option value="ba">Sentence B -&gt; Sentence A</option>'
            '<option value="bb">Sentence B -&gt; Sentence B</option></select>'
        )
    return (
        f'<div id="{ROOT_ID}" style="padding:8px;font-family:\'Helvetica Neue\', Helvetica, Arial, sans-serif;">'
        '<span style="user-select:none">'
        '<span class="dropdown-label">Layer: </span><select id="layer" aria-label="Layer"></select>'
        '<span class="dropdown-label">Head: </span> <select id="att_head" aria-label="Head"></select>'
        f"{pair_menu}</span><div id='vis'></div></div>"
    )
