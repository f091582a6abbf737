"""The Causes page in Chromium, in one session: the number-agreement preset's patching heatmap
drawn, a click on a cell showing that patched run's top-k (tests/artifacts/causes_patching.png,
the README's picture), then the Minimal pairs view scoring a typed pair."""

import pytest

from tests.browser.page_checks import assert_page_ok, choose_view, screenshot_full

pytestmark = pytest.mark.browser

PLOT = '[data-testid="stPlotlyChart"]'
ROWS, COLUMNS = 7, 12  # minilm-l6's residual stream (embeddings + 6 layers) x the preset's tokens
MASK = 6  # [CLS] the keys/key to the cabinet [MASK] ...


def test_patching_heatmap_a_clicked_cell_and_a_typed_pair(page, app_url, app_ready, artifacts):
    page.goto(app_url + "/causes")
    app_ready(page)
    heatmap = page.locator(PLOT).first
    heatmap.locator(".hm").first.wait_for(state="attached", timeout=120_000)  # the heatmap's trace
    assert heatmap.locator(".xtick", has_text="keys/key").count() == 1
    assert page.get_by_text("on the clean sentence").count() >= 1
    # click the cell of layer 4 at the [MASK]: rows run bottom up (embeddings lowest), columns left
    # to right, each a unit wide around its index
    area = heatmap.locator(".nsewdrag").first.bounding_box()
    row, x = 4, area["x"] + area["width"] * (MASK + 0.5) / COLUMNS
    y = area["y"] + area["height"] * (1 - (row + 0.5) / ROWS)
    page.mouse.click(x, y)
    app_ready(page)
    top = page.locator(f"{PLOT} .gtitle", has_text="layer 4 [MASK] patched")
    top.wait_for(timeout=60_000)  # the patched run's top-k, titled by the clicked cell
    assert top.count() == 1
    picked = page.get_by_role("combobox", name="The patched run to show (or click a cell)").input_value()
    assert picked.startswith("layer 4, [MASK]: "), picked
    assert_page_ok(page)
    screenshot_full(page, artifacts / "causes_patching.png")

    choose_view(page, app_ready, "Minimal pairs")
    choose_view(page, app_ready, "Your pairs")
    area = page.get_by_label("One pair a line", exact=False)
    area.fill("The cats sleep on the sofa. | The cats sleeps on the sofa.")
    area.press("Control+Enter")
    app_ready(page)
    page.get_by_text("1 of 1 pairs").wait_for(timeout=60_000)
    assert page.get_by_text("100%").count() >= 1
    assert_page_ok(page)
    screenshot_full(page, artifacts / "causes_pairs.png")
