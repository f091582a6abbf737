"""The analysis pages in Chromium: every view draws its charts with no console error and no
request leaving localhost, a full-page screenshot each (tests/artifacts/analysis_*.png);
clicking a cell of the head-pattern map picks that head, and its button opens the head on
the Attention page.
"""

import re

import pytest

from tests.browser.page_checks import assert_page_ok, choose_view, screenshot_full

pytestmark = pytest.mark.browser

PLOT = '[data-testid="stPlotlyChart"]'


def _open(page, app_url, app_ready, path):
    page.goto(app_url + path)
    app_ready(page)
    page.locator(PLOT).first.wait_for(state="visible", timeout=60_000)


def _charts(page) -> int:
    return page.locator(f"{PLOT} .main-svg").count()


def test_head_patterns_click_a_cell_then_open_it(page, app_url, app_ready, artifacts):
    _open(page, app_url, app_ready, "/head_patterns")
    assert_page_ok(page)
    screenshot_full(page, artifacts / "analysis_head_patterns.png")
    # click the cell of layer 2, head 3 in the map (the first chart): its plot area spans
    # heads 0.5..H+0.5 across and layers 0.5..L+0.5 down
    area = page.locator(PLOT).first.locator(".nsewdrag").first.bounding_box()
    L, H = 6, 12
    x = area["x"] + area["width"] * (2.5 / H)
    y = area["y"] + area["height"] * (1.5 / L)
    page.mouse.click(x, y)
    app_ready(page)
    # the head's own chart (its title) follows the click
    page.locator(f"{PLOT} .gtitle", has_text="layer 2, head 3").wait_for(timeout=30_000)
    choose_view(page, app_ready, "The built-in probe sentences")
    assert_page_ok(page)
    screenshot_full(page, artifacts / "analysis_head_patterns_probe.png")
    page.get_by_role("button", name=re.compile("Open this head on the Attention page")).click()
    page.wait_for_url(re.compile(r"/attention(\?|$)"), timeout=60_000)  # its query may come with it
    app_ready(page)
    sliders = page.locator('[data-testid="stSlider"]')
    assert "2" in sliders.nth(0).inner_text() and "3" in sliders.nth(1).inner_text()
    assert_page_ok(page)
    screenshot_full(page, artifacts / "analysis_head_opened_on_attention.png")


@pytest.mark.parametrize(
    ("path", "view", "charts"),
    [
        ("/explanations", "Rollout vs saliency", 1),
        ("/explanations", "Logit lens", 1),
        ("/compare", "Two models side by side", 2),
        ("/compare", "One word in many sentences", 2),
    ],
)
def test_views(page, app_url, app_ready, artifacts, path, view, charts):
    """Each view of the Explanations and Compare pages draws its charts (at least `charts`)."""
    _open(page, app_url, app_ready, path)
    choose_view(page, app_ready, view)
    page.locator(PLOT).first.wait_for(state="visible", timeout=60_000)
    assert _charts(page) >= charts
    assert_page_ok(page)
    screenshot_full(page, artifacts / f"analysis_{path[1:]}_{view.split()[0].lower()}.png")


def test_ablation_switch_off_the_top_heads(page, app_url, app_ready, artifacts):
    _open(page, app_url, app_ready, "/ablation")
    page.get_by_role("button", name=re.compile("most important")).click()
    app_ready(page)
    assert page.get_by_text("5 of 72 heads switched off").count() == 1
    assert _charts(page) >= 2
    assert_page_ok(page)
    screenshot_full(page, artifacts / "analysis_ablation.png")
