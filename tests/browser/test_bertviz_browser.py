"""The offline bertviz views, drawn by a real Chromium with no network.

Each view is written to a file and opened from file://, so these tests need neither the
app nor a model; tests/browser/test_pages_browser.py shows them inside the running app.
"""

import numpy as np
import pytest

from app.bertviz import views as bv

pytestmark = pytest.mark.browser

L, H, D = 3, 4, 8
TOKENS = ["[CLS]", "the", "cat", "sat", "[SEP]", "on", "the", "mat", "[SEP]"]
SCRIPT_TOKEN = "</script>"
IMG_TOKEN = '"><img src=x onerror=alert(1)>'
HOSTILE = [
    "[CLS]",
    SCRIPT_TOKEN,
    "<script>alert(2)</script>",
    IMG_TOKEN,
    "a&amp;b",
    "[SEP]",
    "\u2028x",
    "\u6f22\u5b57",
    "\U0001f600",
    "[SEP]",
]


def arrays(T, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.random((L, H, T, T)) ** 4
    a /= a.sum(-1, keepdims=True)
    return a, rng.normal(size=(L, H, T, D)), rng.normal(size=(L, H, T, D))


def build(kind, tokens, **kw):
    a, q, k = arrays(len(tokens))
    if kind == "head":
        return bv.head_view_html(tokens, a, **kw)
    if kind == "model":
        return bv.model_view_html(tokens, a, **kw)
    return bv.neuron_view_html(tokens, q, k, a, **kw)


def open_model_detail(page):
    """Click the first thumbnail of the model view: it then draws that head with its tokens."""
    box = page.locator("#vis svg").first.bounding_box()
    page.mouse.click(box["x"] + 60, box["y"] + 60)
    page.wait_for_timeout(300)


def expand_neuron(page, token="cat"):
    """Hover a token of the neuron view and click its "+" (bertviz's expand icon): the view
    then shows the query and key vectors, q x k, q . k and the softmax for that token."""
    page.locator("#vis svg #collapsed text", has_text=token).first.hover(timeout=10_000)
    plus = page.locator("#vis svg #collapsed .plus-sign").nth(TOKENS.index(token)).bounding_box()
    page.mouse.click(plus["x"] + plus["width"] / 2, plus["y"] + plus["height"] / 2)
    page.locator("#vis svg #expanded text", has_text=token).first.hover(timeout=10_000)
    assert page.locator("#vis svg #expanded").get_attribute("visibility") == "visible"


def open_view(page, view, tmp_path, name):
    f = tmp_path / f"{name}.html"
    f.write_text(view.html, encoding="utf-8")
    page.goto(f.as_uri())
    page.wait_for_selector("#vis svg", state="attached")
    return page


@pytest.mark.parametrize("kind", ["head", "model", "neuron"])
def test_view_draws_svg_offline(page, kind, tmp_path, artifacts):
    view = build(kind, TOKENS, sentence_b_start=5)
    open_view(page, view, tmp_path, kind)
    n_svg = page.locator("#vis svg *").count()
    assert n_svg > 0
    T = len(TOKENS)
    if kind == "head":
        # one line per (head, query token, key token) of the layer shown, tokens on both sides
        assert page.locator("#vis svg #attention line").count() == H * T * T
        assert page.locator("#layer option").all_text_contents() == [str(x) for x in range(L)]
        page.locator("#vis svg #left text").nth(2).hover()  # highlight one token's attention
        page.select_option("#layer", "2")
        page.select_option("#filter", "3")  # sentence A -> sentence B
        assert page.locator("#vis svg #attention line").count() == H * 5 * 4
    elif kind == "model":
        assert page.locator("#vis svg line").count() >= L * H * T * T
        before = page.locator("#vis svg text").count()
        open_model_detail(page)
        assert page.locator("#vis svg text").count() >= before + 2 * T  # tokens of the detail
    else:
        expand_neuron(page)
        assert page.locator("#vis svg #expanded #queries rect").count() > 0
        page.select_option("#att_head", "3")
        page.select_option("#layer", "1")
        assert page.locator("#vis svg line, #vis svg path").count() > 0
    page.wait_for_timeout(300)
    page.screenshot(path=str(artifacts / f"bertviz_{kind}_file.png"), full_page=True)
    page.guard.assert_clean()
    assert not [u for u in page.guard.requests if not u.startswith("file://")], page.guard.requests


def test_neuron_view_labels_kept_layers(page, tmp_path):
    view = build("neuron", TOKENS, layers=[0, 2], layer=2, head=1)
    open_view(page, view, tmp_path, "neuron_layers")
    assert page.locator("#layer option").all_text_contents() == ["0", "2"]
    assert page.locator("#layer").input_value() == "1"  # index of layer 2
    assert page.locator("#att_head").input_value() == "1"
    page.guard.assert_clean()


@pytest.mark.parametrize("kind", ["head", "model", "neuron"])
def test_hostile_tokens_shown_literally_without_running(page, kind, tmp_path, artifacts):
    view = build(kind, HOSTILE, sentence_b_start=6)
    open_view(page, view, tmp_path, f"xss_{kind}")
    if kind == "model":
        open_model_detail(page)
    page.wait_for_timeout(300)
    texts = page.locator("#vis svg text").all_text_contents()
    for token in (SCRIPT_TOKEN, IMG_TOKEN, "<script>alert(2)</script>", "a&amp;b", "\U0001f600"):
        assert token in texts, (token, texts[:20])
    assert page.locator("img").count() == 0  # no markup was injected
    assert page.locator("script").count() == (8 if kind == "neuron" else 7)  # + Save as SVG
    assert page.guard.dialogs == []
    page.screenshot(path=str(artifacts / f"bertviz_{kind}_hostile_tokens.png"), full_page=True)
    page.guard.assert_clean()


@pytest.mark.parametrize("kind", ["model", "neuron"])
def test_wide_views_shrink_to_fit_a_narrow_frame(page, kind, tmp_path):
    """st.iframe cannot scroll: the model view (970 px) and the expanded neuron view must
    fit a narrower column, so the document zooms out."""
    page.set_viewport_size({"width": 760, "height": 900})
    view = build(kind, TOKENS)
    open_view(page, view, tmp_path, f"fit_{kind}")
    zoom = float(page.evaluate("() => document.body.style.zoom || '1'"))
    assert 0.5 <= zoom < 1
    if kind == "model":
        last = page.locator("#vis svg text", has_text=str(H - 1)).first  # the last head's label
    else:
        expand_neuron(page)
        last = page.locator("#vis svg #expanded text", has_text="mat").last  # right-hand column
    box = last.bounding_box()
    assert box["x"] > 300 and box["x"] + box["width"] <= 760, box
    page.guard.assert_clean()
