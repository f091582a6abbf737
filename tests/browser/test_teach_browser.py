"""Teaching from the app in Chromium: a link reopens the same view in another browser, figures
download as PNG (3x) and SVG, bertviz views save as SVG and as a stamped HTML file that works offline,
and projector mode draws with a colour-blind-safe scale (that it is large enough for the back of a room
is checked page by page in the projector accessibility audit, test_accessibility_browser.py)."""

import re
import struct
import xml.etree.ElementTree as ET
from urllib.parse import parse_qs, quote, urlsplit

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

SENTENCE = "The teacher read the book because she loved it."


def plotted(page, kind: str = "heatmap"):
    """The first plotted trace of `kind` on the page: its numbers and labels (waiting for it to be drawn)."""
    page.wait_for_function(
        """(kind) => [...document.querySelectorAll('.js-plotly-plot')]
                     .some(el => (el.data || []).some(t => t.type === kind))""",
        arg=kind,
        timeout=60_000,
    )
    return page.evaluate(
        """(kind) => {
            for (const el of document.querySelectorAll('.js-plotly-plot')) {
                const t = (el.data || []).find(t => t.type === kind);
                if (t) return {x: t.x, y: t.y, z: t.z || null};
            }
            return null;
        }""",
        kind,
    )


def slider_values(page, count: int = 2):
    """The values of the page's sliders, once all `count` are drawn (a rerun draws them one by one)."""
    sliders = page.locator('[data-testid="stSlider"] input[type="range"]')
    expect(sliders).to_have_count(count, timeout=30_000)
    return sliders.evaluate_all("els => els.map(e => e.value)")


def query(url: str) -> dict:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", data[16:24])


def test_a_link_reopens_the_same_attention_view(page, page_factory, app_url, app_ready):
    page.goto(f"{app_url}/attention?a={quote(SENTENCE)}&layer=3&head=5")
    app_ready(page)
    # one change by hand: the head one step on, then the link must say so
    page.locator('[data-testid="stSlider"] input[type="range"]').nth(1).press("ArrowRight")
    app_ready(page)
    page.wait_for_function("() => location.search.includes('head=6')", timeout=30_000)
    link = page.url
    q = query(link)
    assert q["a"] == SENTENCE and q["layer"] == "3" and q["head"] == "6", q
    assert "model" not in q  # the default model is left out: links stay short
    first, sliders = plotted(page), slider_values(page)
    assert first and "teacher" in first["x"] and sliders == ["3", "6"]
    # the sidebar's "Link for students" shows the same address
    page.get_by_role("button", name="Link for students").click()
    code = page.locator('[data-testid="stPopoverBody"] code').first
    expect(code).to_contain_text("head=6", timeout=30_000)  # the box is drawn by the run that made the link
    shown = code.inner_text()
    assert query(shown) == q
    page.keyboard.press("Escape")
    # a student opens the link in another browser: same tokens, same numbers, same sliders
    student = page_factory()
    student.goto(link)
    app_ready(student)
    assert plotted(student) == first
    assert slider_values(student) == ["3", "6"]
    # another view, and the link follows
    student.locator('[data-testid="stRadio"] label', has_text="All heads").first.click()
    app_ready(student)
    student.wait_for_function("() => location.search.includes('view=heads')", timeout=30_000)
    page.guard.assert_clean()
    student.guard.assert_clean()


def test_a_link_naming_an_unknown_model_falls_back_with_a_note(page, app_url, app_ready):
    page.goto(f"{app_url}/masked_lm?model=no-such-model&mask={quote('She opened the [MASK] and walked in.')}&k=3")
    app_ready(page)
    assert page.get_by_text("The link names a model this server does not have").count() == 1
    bars = plotted(page, "bar")
    assert bars and len(bars["y"]) == 3 and "door" in bars["y"], bars
    assert "model" not in query(page.url)
    page.guard.assert_clean()


def test_figures_download_as_png_at_3x_and_as_svg(page, app_url, app_ready, artifacts):
    page.goto(f"{app_url}/attention?a={quote(SENTENCE)}&layer=2&head=3")
    app_ready(page)
    chart = page.locator(".js-plotly-plot").first
    chart.hover()
    width = chart.evaluate("el => el._fullLayout.width")
    height = chart.evaluate("el => el._fullLayout.height")
    with page.expect_download() as dl:
        chart.locator('.modebar-btn[data-title^="Download plot"]').click()
    d = dl.value
    assert d.suggested_filename == "attention-L2-H3.png"
    data = open(d.path(), "rb").read()
    got = png_size(data)  # a figure in a column can be a fraction of a pixel wide: the file rounds it
    assert abs(got[0] - 3 * width) < 1 and abs(got[1] - 3 * height) < 1, (got, width, height)
    (artifacts / "attention-L2-H3.png").write_bytes(data)
    # SVG instead, from the sidebar
    page.locator('[data-testid="stSidebar"] [data-testid="stRadio"] label', has_text="SVG").click()
    app_ready(page)
    chart = page.locator(".js-plotly-plot").first
    chart.hover()
    with page.expect_download() as dl:
        chart.locator('.modebar-btn[data-title^="Download plot"]').click()
    assert dl.value.suggested_filename == "attention-L2-H3.svg"
    svg = ET.parse(dl.value.path()).getroot()
    assert svg.tag.endswith("svg") and "teacher" in ET.tostring(svg, encoding="unicode")
    page.guard.assert_clean()


def test_bertviz_saves_svg_and_standalone_html_that_works_offline(page, page_factory, app_url, app_ready, artifacts):
    page.goto(f"{app_url}/attention?a={quote(SENTENCE)}&view=bv-head")
    app_ready(page)
    frame = page.frame_locator('[data-testid="stIFrame"]').first
    frame.locator("#vis svg #attention line").first.wait_for(state="attached", timeout=60_000)
    with page.expect_download() as dl:
        frame.get_by_role("button", name="Save as SVG").click()
    assert dl.value.suggested_filename == "bertviz-head-view.svg"
    text = open(dl.value.path(), encoding="utf-8").read()
    root = ET.fromstring(text.split("?>", 1)[1])
    ns = "{http://www.w3.org/2000/svg}"
    assert len(root.findall(f".//{ns}line")) > 0 and "teacher" in text  # the lines and the tokens
    (artifacts / "bertviz-head-view.svg").write_text(text, encoding="utf-8")
    with page.expect_download() as dl:
        page.get_by_role("button", name="Save this view (HTML)").click()
    assert dl.value.suggested_filename == "bertviz-head-view.html"
    html_path = artifacts / "bertviz-head-view.html"
    dl.value.save_as(html_path)
    # opened from disk in a browser that may reach nothing at all: it still draws its lines, stamped
    offline = page_factory(offline=True)
    offline.goto(html_path.as_uri())
    offline.locator("#vis svg #attention line").first.wait_for(state="attached", timeout=30_000)
    assert offline.locator("#vis svg #attention line").count() > 0
    assert "minilm-l6" in offline.locator(".bx-stamp").inner_text() and "weights sha256" in offline.content()
    assert offline.locator(".bx-inputs dd").first.inner_text() == SENTENCE
    assert "made with BERT Explorer" in offline.locator("footer").inner_text()
    assert not [u for u in offline.guard.requests if not u.startswith(("file:", "data:", "blob:"))]
    page.guard.assert_clean()


def test_projector_mode_uses_a_colour_blind_safe_scale(page, app_url, app_ready):
    page.goto(f"{app_url}/attention?projector=1&a={quote(SENTENCE)}")
    app_ready(page)
    plotted(page)  # drawn
    scale = page.evaluate(
        """() => {
            for (const el of document.querySelectorAll('.js-plotly-plot')) {
                const t = (el.data || []).find(t => t.type === 'heatmap');
                if (t) return t.colorscale;
            }
            return null;
        }"""
    )
    # cividis runs from dark blue to yellow
    assert scale and re.sub(r"\s", "", str(scale[0][1])).lower() == "#00224e", scale


@pytest.mark.parametrize("path", ["/attention", "/masked_lm"])
def test_every_control_is_reached_by_tab_and_has_a_name(page, app_url, app_ready, path):
    page.goto(app_url + path)
    app_ready(page)
    if path == "/attention":  # its head's sliders are drawn with the map, after the text boxes
        page.locator('[data-testid="stSlider"]', has_text="Head").first.wait_for(timeout=60_000)
        app_ready(page)
    page.evaluate("() => document.activeElement && document.activeElement.blur()")  # Tab from the top
    seen, unnamed = [], []
    for _ in range(400):  # the sidebar first (pages, model, class tools), then the page, once round
        page.keyboard.press("Tab")
        info = page.evaluate(
            """() => {
                const e = document.activeElement;
                if (!e || e === document.body) return null;
                if (e.dataset.tabVisited) return {wrapped: true};
                e.dataset.tabVisited = "1";
                const by = (e.getAttribute('aria-labelledby') || '').split(/\\s+/)
                    .map(id => document.getElementById(id)).filter(Boolean).map(n => n.innerText).join(' ');
                const label = e.labels && e.labels.length ? e.labels[0].innerText : '';
                const name = (e.getAttribute('aria-label') || by || label || e.getAttribute('title')
                              || e.innerText || e.value || '').trim();
                return {tag: e.tagName, type: e.type || '', name: name.slice(0, 60)};
            }"""
        )
        if info is None:
            continue
        if info.get("wrapped"):  # back at a control already visited: every one was reached
            break
        seen.append(info)
        if not info["name"]:
            unnamed.append(info)
    kinds = {(i["tag"], i["type"]) for i in seen}
    visited = [f"{i['tag']}:{i['name']}" for i in seen]
    assert ("TEXTAREA", "textarea") in kinds and any(t == "INPUT" for t, _ in kinds), (kinds, visited)
    assert not unnamed, unnamed
    if path == "/attention":
        names = " ".join(i["name"] for i in seen)
        assert "Layer" in names and "Head" in names, names
