"""app/bertviz_html: bertviz views as self-contained, offline, escaped HTML.

These tests read the HTML as text; tests/browser/test_bertviz_browser.py draws it in Chromium.
"""

import base64
import hashlib
import json
import re
from html.parser import HTMLParser

import numpy as np
import pytest
import torch

from app.bertviz import views as bv
from app.bertviz.assets import bertviz_js

# all-MiniLM-L6-v2's dimensions: 6 layers, 12 heads, head size 32
L, H, D = 6, 12, 32
HOSTILE = [
    "[CLS]",
    "</script>",
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "a&b",
    "\u2028",
    "\u2029",
    "<!--",
    "caf\u00e9",
    "\u6f22",
    "\U0001f600",
    "[SEP]",
]


def fake(T, layers=L, heads=H, d=D, seed=0):
    """Random attention (rows sum to 1) and queries/keys, shaped as our model returns them."""
    g = torch.Generator().manual_seed(seed)
    att = tuple(torch.softmax(3 * torch.randn(1, heads, T, T, generator=g), -1) for _ in range(layers))
    q = tuple(torch.randn(1, heads, T, d, generator=g) for _ in range(layers))
    k = tuple(torch.randn(1, heads, T, d, generator=g) for _ in range(layers))
    return att, q, k


def all_views(tokens, att, q, k, **kw):
    return [
        bv.head_view_html(tokens, att, **kw),
        bv.model_view_html(tokens, att, **kw),
        bv.neuron_view_html(tokens, q, k, att, **kw),
    ]


class Tags(HTMLParser):
    """The elements an HTML parser sees (script bodies are raw text, as in a browser)."""

    def __init__(self, html):
        super().__init__(convert_charrefs=True)
        self.tags, self.scripts, self._in_script = [], [], False
        self.feed(html)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"
        if self._in_script:
            self.scripts.append("")

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts[-1] += data


def data_block(html):
    m = re.search(r'<script type="application/json" id="bertexplorer-data">(.*?)</script>', html, re.S)
    assert m, "no data block"
    return json.loads(m.group(1))


def unpack(p):
    ints = np.frombuffer(base64.b64decode(p["data"]), dtype="<i2").astype(np.float64)
    return ints.reshape(p["shape"]) / p["scale"]


@pytest.fixture(scope="module")
def views16():
    att, q, k = fake(16)
    return all_views([f"w{i}" for i in range(16)], att, q, k)


def test_no_network_reference_and_libraries_inlined(views16):
    for v in views16:
        html = v.html
        assert html.startswith("<!DOCTYPE html>")
        tags = Tags(html).tags
        names = {t for t, _ in tags}
        assert names <= {
            "html",
            "head",
            "meta",
            "title",
            "style",
            "body",
            "div",
            "span",
            "select",
            "option",
            "script",
            "button",  # Save as SVG
        }, names  # no link, img, iframe, object...
        assert not any("src" in attrs or "href" in attrs for _, attrs in tags)
        for cdn in ("cdnjs", "cloudflare", "jsdelivr", "unpkg", "googleapis", "require.min.js", "require.config"):
            assert cdn not in html, cdn
        assert "https://" not in re.sub(r"//[^\n]*|/\*.*?\*/", "", bertviz_js(v.kind + "_view"), flags=re.S)
        assert "d3js.org v5.7.0" in html  # d3 inlined
        assert "jQuery v3.7.1" in html  # jQuery inlined
        assert "window.require = window.requirejs" in html  # our require.js stand-in
        assert "Content-Security-Policy" in html and "connect-src 'none'" in html


def test_csp_allows_exactly_the_inline_scripts(views16):
    for v in views16:
        html = v.html
        csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', html).group(1)
        allowed = set(re.findall(r"'sha256-([^']+)'", csp))
        parsed = Tags(html)
        kinds = [attrs.get("type") for t, attrs in parsed.tags if t == "script"]
        assert kinds[0] == "application/json"  # data: never executed
        scripts = parsed.scripts[1:]
        got = {base64.b64encode(hashlib.sha256(s.encode()).digest()).decode() for s in scripts}
        assert got == allowed and len(scripts) == (7 if v.kind == "neuron" else 6)
        assert "'unsafe-inline'" not in csp.split("style-src")[0]  # scripts: hashes only


def test_hostile_tokens_cannot_break_out_and_round_trip():
    T = len(HOSTILE)
    att, q, k = fake(T)
    for v in all_views(HOSTILE, att, q, k, sentence_b_start=6):
        html = v.html
        # data block, d3, jQuery, loader, bertviz view, (neuron view's layer relabel,) fit to width, save as SVG
        expected = 8 if v.kind == "neuron" else 7
        assert html.count("</script>") == expected
        parsed = Tags(html)
        assert [t for t, _ in parsed.tags].count("script") == expected
        assert not any(t in ("img", "a", "iframe") for t, _ in parsed.tags)
        assert "<img src=x" not in html and '"><img' not in html
        assert "\u2028" not in html and "\u2029" not in html
        assert data_block(html)["tokens"] == HOSTILE  # shown literally, nothing lost


def test_script_json_escapes():
    s = bv.script_json({"t": "</script><!-- & \u2028\u2029 >"})
    assert not set("<>&") & set(s) and "\u2028" not in s and "\u2029" not in s
    assert json.loads(s) == {"t": "</script><!-- & \u2028\u2029 >"}


def test_size_at_64_tokens_under_3_mb_and_not_capped():
    att, q, k = fake(64)
    head, model, neuron = all_views([f"w{i}" for i in range(64)], att, q, k)
    for v in (head, model, neuron):
        assert v.size_bytes <= 3_000_000, (v.kind, v.size_bytes)
    assert head.capped_message is None and neuron.capped_message is None
    assert head.layers == neuron.layers == tuple(range(L)) and head.num_tokens == 64


def test_values_rounded_to_3_decimals():
    att, q, k = fake(10)
    v = bv.neuron_view_html([str(i) for i in range(10)], q, k, att)
    data = data_block(v.html)
    want = np.stack([a[0].numpy() for a in att]).astype(np.float64)
    got = unpack(data["attn"])
    assert got.shape == want.shape
    np.testing.assert_allclose(got, np.round(want, 3), atol=1e-9)
    np.testing.assert_allclose(unpack(data["queries"]), np.stack([x[0].numpy() for x in q]), atol=0.0051)


def test_accepts_numpy_and_torch_in_several_layouts():
    att, q, k = fake(8, layers=2, heads=4, d=8)
    toks = list("abcdefgh")
    stacked = np.stack([a.numpy()[0] for a in att])  # (L, H, T, T)
    ref = bv.head_view_html(toks, att).html
    assert bv.head_view_html(toks, stacked).html == ref
    assert bv.head_view_html(toks, [a[0] for a in att]).html == ref  # (H, T, T) per layer
    assert bv.head_view_html(toks, stacked[:, None]).html == ref  # (L, 1, H, T, T)
    qn = np.stack([x.numpy()[0] for x in q])
    kn = np.stack([x.numpy()[0] for x in k])
    assert bv.neuron_view_html(toks, qn, kn, stacked).html == bv.neuron_view_html(toks, q, k, att).html


@pytest.mark.parametrize(
    "bad",
    [
        dict(tokens=list("abc")),  # 3 tokens, 8 positions
        dict(attentions=torch.rand(2, 2, 4, 8, 8)),  # batch 2
        dict(attentions=torch.rand(2, 4, 8, 7)),  # not square
        dict(sentence_b_start=8),
        dict(layers=[5]),
    ],
)
def test_bad_input_raises_value_error(bad):
    att, _, _ = fake(8, layers=2, heads=4)
    kw = dict(tokens=list("abcdefgh"), attentions=att)
    kw.update(bad)
    with pytest.raises(ValueError):
        bv.head_view_html(**kw)


def test_long_input_capped_with_message():
    att, q, k = fake(128)
    toks = [f"w{i}" for i in range(128)]
    head, model, neuron = all_views(toks, att, q, k)
    assert head.num_tokens == neuron.num_tokens == 64 and model.num_tokens == 48
    assert "first 64 of 128 tokens" in head.capped_message
    assert len(data_block(head.html)["tokens"]) == 64
    # more tokens than the budget allows in all layers: whole layers go, the chosen one stays
    wide = bv.head_view_html(toks, att, max_tokens=128, layer=1)
    assert wide.num_tokens == 128 and 1 in wide.layers and len(wide.layers) < L
    assert f"{len(wide.layers)} of {L} layers" in wide.capped_message
    assert wide.size_bytes <= 3_000_000
    assert data_block(wide.html)["params"]["include_layers"] == list(wide.layers)
    # sentence B beyond the cut: no A/B filter, and the message says so
    capped_pair = bv.head_view_html(toks, att, sentence_b_start=100)
    assert data_block(capped_pair.html)["b_start"] is None and "Sentence B" in capped_pair.capped_message
    assert 'id="filter"' not in capped_pair.html


def test_sentence_pair_menus():
    att, q, k = fake(12)
    head, model, neuron = all_views([f"w{i}" for i in range(12)], att, q, k, sentence_b_start=5)
    for v in (head, model, neuron):
        assert 'id="filter"' in v.html and data_block(v.html)["b_start"] == 5
    assert 'value="ba"' in neuron.html


def test_neuron_layer_and_head_selection_kept_under_cap():
    att, q, k = fake(64, layers=12, heads=12, d=64)  # bert-base sized
    v = bv.neuron_view_html([f"w{i}" for i in range(64)], q, k, att, layer=7, head=3)
    assert 7 in v.layers and len(v.layers) < 12 and v.size_bytes <= 3_000_000
    params = data_block(v.html)["params"]
    assert v.layers[params["layer"]] == 7 and params["head"] == 3


def test_markup_matches_what_bertviz_writes():
    """Our documents carry the elements bertviz's own Python writes for its JS to find."""
    pytest.importorskip("IPython")
    import bertviz

    att, q, k = fake(4, layers=1, heads=2, d=4)
    theirs = bertviz.head_view(att, list("abcd"), html_action="return").data
    assert "cdnjs.cloudflare.com" in theirs  # why we rebuild the document
    ours = bv.head_view_html(list("abcd"), att).html
    for needle in ('<select id="layer"', "<div id='vis'>"):
        assert needle in theirs and needle in ours
    assert '<select id="layer" aria-label="Layer">' in ours  # ours named for screen readers (axe's select-name)
    theirs = bertviz.model_view(att, list("abcd"), html_action="return").data
    assert "<div id='vis'>" in theirs and "<div id='vis'>" in bv.model_view_html(list("abcd"), att).html
