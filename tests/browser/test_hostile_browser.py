"""Hostile input in a real Chromium (the Attention page and the bertviz views have their own
tests in test_pages_browser.py and test_bertviz_browser.py):

* the XSS strings typed on the Masked LM and Tokenization pages: no dialog, no injected
  element, the text shown as text;
* Streamlit's own table export (which keeps `=cmd|...` as a formula) is switched off;
* a 300 MB upload is refused by the configured limit (50 MB) with Streamlit's message, and the
  page goes on working.
"""

import pytest

pytestmark = pytest.mark.browser

XSS = '</script> "><img src=x onerror=alert(1)> <script>alert(2)</script>'


def _no_injection(page):
    page.wait_for_timeout(500)
    assert page.guard.dialogs == []
    assert page.locator("img[src='x']").count() == 0
    # the app's own scripts carry an id of "bx-..." (the skip link's target, a lesson's scroll); typed text makes none
    assert page.locator('[data-testid="stMainBlockContainer"] script:not([id^="bx-"])').count() == 0
    assert page.locator('[data-testid="stException"]').count() == 0
    page.guard.assert_clean()


def test_masked_lm_page_shows_xss_as_text(page, app_url, app_ready, artifacts):
    page.goto(app_url + "/masked_lm")
    app_ready(page)
    box = page.get_by_role("textbox", name="A sentence with [MASK] in it", exact=True)
    box.fill(XSS + " the [MASK] is here .")
    box.press("Control+Enter")
    app_ready(page)
    code = page.locator('[data-testid="stCode"]').filter(has_text="«").first.inner_text()
    for piece in ("<", "/", "script", ">", "img", "onerror", "alert"):
        assert piece in code, (piece, code)
    _no_injection(page)
    page.screenshot(path=str(artifacts / "hostile_masked_lm.png"))


def test_tokenization_page_xss_and_no_unsafe_table_export(page, app_url, app_ready, artifacts):
    page.goto(app_url + "/tokenization")
    app_ready(page)
    box = page.get_by_role("textbox", name="Sentence A", exact=True)
    box.fill(XSS)
    box.press("Control+Enter")
    app_ready(page)
    _no_injection(page)
    table = page.locator('[data-testid="stDataFrame"]').first
    table.hover()
    page.wait_for_timeout(500)
    toolbar = page.locator('[data-testid="stElementToolbar"]')
    assert toolbar.count() > 0, "the table's toolbar should show on hover"
    labels = [b.get_attribute("aria-label") or b.inner_text() for b in toolbar.first.locator("button").all()]
    assert not any("Download" in (x or "") for x in labels), labels
    page.screenshot(path=str(artifacts / "hostile_tokenization.png"))


def test_300_mb_upload_is_refused_with_a_message(page, app_url, app_ready, upload_file, tmp_path):
    big = tmp_path / "huge.csv"
    with open(big, "wb") as f:  # sparse: 300 MB long, nothing written
        f.truncate(300 * 2**20)
    page.goto(app_url + "/finetune")
    app_ready(page)
    upload_file(page, big)
    page.get_by_text("or smaller").first.wait_for(timeout=60_000)
    text = page.locator('[data-testid="stFileUploader"]').first.inner_text()
    assert "50" in text and "MB" in text, text
    app_ready(page)
    assert page.locator('[data-testid="stException"]').count() == 0
    assert page.get_by_text("Usable texts").count() == 0  # nothing was read
    page.guard.assert_clean()
