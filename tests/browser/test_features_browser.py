"""The Features page in Chromium, on the built-in dictionary of minilm-l6: its quality and
part-of-speech purity shown as the files hold them, beside the random-weights control's at the
same layer; a typed sentence's features, one of them opened in the feature card, that feature
zeroed at every word piece changing the [MASK]'s first guess as the model says it does, and a
sentence without [MASK] refused with why; no console error, nothing leaving localhost
(tests/artifacts/features_*.png)."""

import pytest

from app.jobs.dictionary_events import CONTROL
from tests.browser.page_checks import assert_page_ok, screenshot_full

pytestmark = pytest.mark.browser

GRID = '[data-testid="stDataFrame"]'
TEXT = "The capital of France is [MASK]."


@pytest.fixture(scope="module")
def expected():
    """What the model says, asked here: the built-in dictionary, and a feature of TEXT whose
    zeroing at every word piece changes the [MASK]'s first guess (with the guesses)."""
    import bert
    from bert.analysis.dictionary_builtin import builtin_dictionary
    from bert.analysis.dictionary_features import text_features
    from bert.analysis.dictionary_steering import steer

    bundle = bert.load("minilm-l6")
    shipped = builtin_dictionary(bundle.name)
    d = shipped.dictionary
    for feats in text_features(bundle, d, TEXT, k=3).features.values():
        for feature, _ in feats:
            s = steer(bundle, d, TEXT, feature, 0.0)
            if s.after[0][0][0] != s.before[0][0][0]:
                return shipped, feature, s.before[0][0][0], s.after[0][0][0]
    pytest.fail(f"zeroing no feature among the strongest of {TEXT!r} changes its first guess")


def _cells(grid) -> list[str]:
    """The texts of a table's drawn cells (the grid's accessible copy of what it paints)."""
    grid.locator('[role="gridcell"]').first.wait_for(state="attached", timeout=60_000)
    return [c.strip() for c in grid.locator('[role="gridcell"]').all_inner_texts()]


def _tab(page, app_ready, name):
    page.get_by_role("tab", name=name).click()
    panel = page.get_by_role("tabpanel", name=name)
    panel.wait_for(state="visible")
    return panel


def _type(page, app_ready, box, text):
    box.fill(text)
    box.press("Enter")
    app_ready(page)


def test_features_page_reads_steers_and_refuses(page, app_url, app_ready, artifacts, expected):
    shipped, feature, first, steered_first = expected
    d, purity = shipped.dictionary, shipped.purity
    page.goto(app_url + "/features")
    app_ready(page)
    page.get_by_role("heading", name=f"The built-in dictionary: layer {d.layer}, {d.n_features:,} features").wait_for()
    explained = f"{shipped.quality.variance_explained:.3f}"
    table = page.locator('[data-testid="stTable"]').filter(has_text=explained).first
    table.wait_for(timeout=60_000)  # the heading can be drawn a moment before the table's cells
    quality = table.inner_text()
    assert f"{purity['this model']['mean']:.3f}" in quality
    caption = page.get_by_text("on the Brown Corpus files pre-training held out", exact=False).first.inner_text()
    for name, p in purity.items():  # each dictionary's layer and model, as the files say
        assert f"{name}: layer {p['layer']} of {p['model']}" in caption, (name, caption)
    assert purity[CONTROL]["layer"] == d.layer and "on another model at the same layer" in caption, caption
    assert f"minus the control's: {purity['this model']['mean'] - purity[CONTROL]['mean']:+.3f}" in caption
    assert_page_ok(page)
    screenshot_full(page, artifacts / "features_builtin.png")

    panel = _tab(page, app_ready, "Features of a sentence")
    _type(page, app_ready, panel.get_by_role("textbox", name="A sentence", exact=True), TEXT)
    assert str(feature) in _cells(panel.locator(GRID).first)  # a feature the typed sentence shows

    panel = _tab(page, app_ready, "Feature card")
    _type(page, app_ready, panel.get_by_role("spinbutton", name="Feature"), str(feature))
    panel.get_by_text(f"Feature {feature} is active on", exact=False).wait_for()
    assert panel.locator(GRID).count() >= 2  # its strongest contexts and its effect on the head

    panel = _tab(page, app_ready, "Steering")
    _type(page, app_ready, panel.get_by_role("textbox", name="A sentence with [MASK]"), TEXT)
    _type(page, app_ready, panel.get_by_role("spinbutton", name="Feature"), str(feature))
    panel.get_by_text("set to 0 at", exact=False).wait_for()
    cells = _cells(panel.locator(GRID).first)  # columns: before, p before, after, p after
    assert cells[0] == first and cells[2] == steered_first, cells
    assert_page_ok(page)
    screenshot_full(page, artifacts / "features_steering.png")

    _type(page, app_ready, panel.get_by_role("textbox", name="A sentence with [MASK]"), "The capital of France.")
    panel.get_by_text("there is no [MASK] in the text", exact=False).wait_for()
    assert page.locator('[data-testid="stException"]').count() == 0
    page.guard.assert_clean()
