"""What several browser tests check on a page of the real app: a full-page screenshot, no
exception box and a clean guard, a view chosen by its radio label; and what a missing
prerequisite (Chromium, axe-core) means: a skip, or in CI a failure."""

import os

import pytest

# Every page but the class board (opt-in, with its own server in its tests), by the URL
# st.navigation derives from its file name; the default page is "/".
ALL_PAGES = {
    name: "/" if name == "home" else f"/{name}"
    for name in (
        "home",
        "lessons",
        "tokenization",
        "embeddings",
        "attention",
        "masked_lm",
        "finetune",
        "pretrain",
        "decoder",
        "head_patterns",
        "explanations",
        "causes",
        "features",
        "ablation",
        "compare",
        "status",
    )
}


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def unavailable(reason: str):
    """Skip outside CI; in CI a missing prerequisite is a failure."""
    if in_ci():
        pytest.fail(f"CI=true but {reason}", pytrace=False)
    pytest.skip(reason)


def screenshot_full(page, path):
    """Streamlit scrolls inside its own container, so Playwright's full_page shows one
    screen; grow the viewport to the content's height first."""
    size = page.viewport_size
    height = page.evaluate(
        """() => Math.max(...['[data-testid="stMain"]', '[data-testid="stAppViewContainer"]']
             .map(s => document.querySelector(s)).filter(Boolean).map(e => e.scrollHeight))"""
    )
    page.set_viewport_size({"width": size["width"], "height": int(min(max(height + 40, size["height"]), 16000))})
    page.wait_for_timeout(500)
    page.screenshot(path=str(path), full_page=True)
    page.set_viewport_size(size)


def assert_page_ok(page):
    assert page.locator('[data-testid="stException"]').count() == 0, page.locator(
        '[data-testid="stException"]'
    ).first.inner_text()
    assert page.locator('[data-testid="stMainBlockContainer"]').inner_text().strip()
    page.guard.assert_clean()


def choose_view(page, app_ready, label):
    page.locator('[data-testid="stRadio"] label', has_text=label).first.click()
    app_ready(page)
