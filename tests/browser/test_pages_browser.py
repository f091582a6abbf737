"""The Attention page of the real app in Chromium: the three bertviz views draw SVG inside their
iframe with nothing fetched, and hostile text stays text; no console error, no request leaving
localhost, no exception box, a full-page screenshot each (tests/artifacts/). Every page opening
clean, with its screenshot, is the desktop axe audit's (test_accessibility_browser.py).
"""

import re

import pytest

from tests.browser.page_checks import ALL_PAGES, assert_page_ok, choose_view, screenshot_full

pytestmark = pytest.mark.browser

BERTVIZ_VIEWS = {"head": "bertviz: head view", "model": "bertviz: model view", "neuron": "bertviz: neuron view"}


def bertviz_frame(page):
    iframe = page.locator('[data-testid="stIFrame"]')
    iframe.first.wait_for(state="attached", timeout=60_000)
    frame = page.frame_locator('[data-testid="stIFrame"]').first
    frame.locator("#vis svg").first.wait_for(state="attached", timeout=60_000)
    return frame


@pytest.mark.parametrize("kind", list(BERTVIZ_VIEWS))
def test_attention_page_bertviz_draws_offline(page, app_url, app_ready, artifacts, kind):
    page.goto(app_url + ALL_PAGES["attention"])
    app_ready(page)
    choose_view(page, app_ready, BERTVIZ_VIEWS[kind])
    frame = bertviz_frame(page)
    n = frame.locator("#vis svg *").count()
    assert n > 0, f"{kind} view drew nothing"
    if kind == "head":
        assert frame.locator("#vis svg #attention line").count() > 0
    # the view runs only our inlined scripts: nothing was fetched for it
    assert not [
        u for u in page.guard.requests if re.search(r"/(d3(\.v\d+)?|jquery|require)(\.min)?\.js(\?|$)", u, re.I)
    ]
    assert_page_ok(page)
    screenshot_full(page, artifacts / f"page_attention_bertviz_{kind}.png")


def test_attention_page_hostile_text(page, app_url, app_ready, artifacts):
    """`</script>` and an <img onerror> typed as the sentence: no dialog, no injected
    element in the page or in the bertviz frame, and the text appears as tokens."""
    page.goto(app_url + ALL_PAGES["attention"])
    app_ready(page)
    box = page.get_by_role("textbox", name="Sentence A", exact=True)
    box.fill('</script> "><img src=x onerror=alert(1)> <script>alert(2)</script>')
    box.press("Control+Enter")
    app_ready(page)
    choose_view(page, app_ready, BERTVIZ_VIEWS["head"])
    frame = bertviz_frame(page)
    texts = frame.locator("#vis svg text").all_text_contents()
    for piece in ("<", "/", "script", ">", '"', "=", "alert"):
        assert piece in texts, (piece, texts)
    assert frame.locator("img").count() == 0
    assert page.locator("img[src='x']").count() == 0
    page.wait_for_timeout(500)
    assert page.guard.dialogs == []
    assert_page_ok(page)
    screenshot_full(page, artifacts / "page_attention_hostile_text.png")
