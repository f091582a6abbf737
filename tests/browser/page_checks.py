"""What several browser tests check on a page of the real app: a full-page screenshot, no
exception box and a clean guard, a view chosen by its radio label, the page settled (drawn and
idle, at a page and heading when asked); and what a missing prerequisite (Chromium, axe-core)
means: a skip, or in CI a failure."""

import os
import time

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


# The path of the page the app drew: its nav's current link (the address bar's when the nav is not
# drawn). The nav follows the app's run; Chromium's address bar can keep the page left after a
# switch made by a fragment while the processor is busy.
DRAWN_PATH_JS = """(() => {
  const link = document.querySelector('[data-testid="stSidebarNavLink"][aria-current="page"]');
  return (link ? new URL(link.href).pathname : location.pathname).replace(/^[/]+|[/]+$/g, '');
})()"""

# One look at a page: whether the app is connected, idle (no script run, no status widget) and
# drawn (content, no skeleton), and where asked at page `path` (DRAWN_PATH_JS) under the heading
# `title`; one round trip to the browser a look.
SETTLED_JS = (
    """([path, title]) => {
  const DRAWN_PATH = """
    + DRAWN_PATH_JS
    + """;
  const app = document.querySelector('[data-testid="stApp"]');
  const h1 = document.querySelector('[data-testid="stMainBlockContainer"] h1');
  return !!app && app.getAttribute('data-test-connection-state') === 'CONNECTED'
    && app.getAttribute('data-test-script-state') === 'notRunning'
    && !document.querySelector('[data-testid="stStatusWidget"]')
    && !!document.querySelector('[data-testid="stMainBlockContainer"] [data-testid="stElementContainer"]')
    && !document.querySelector('[data-testid="stAppSkeleton"]')
    && (path === null || DRAWN_PATH === path)
    && (title === null || (!!h1 && h1.innerText.trim() === title));
}"""
)
SETTLE_LOOKS = 3  # settled on this many looks in a row, LOOK_EVERY_S apart: no rerun right behind
LOOK_EVERY_S = 0.5


def settled_now(pg, path: str | None = None, title: str | None = None) -> bool:
    """One look (SETTLED_JS); a page that is navigating away is not settled."""
    from playwright.sync_api import Error as PlaywrightError  # here: without playwright the tests skip

    try:
        return bool(pg.evaluate(SETTLED_JS, [path, title]))
    except PlaywrightError as e:
        if "destroyed" in str(e) or "navigat" in str(e):
            return False
        raise


def settle(pages, bound_s: float, path: str | None = None, title: str | None = None) -> list[int]:
    """Look at every page every LOOK_EVERY_S until each has looked settled SETTLE_LOOKS times in a
    row (at `path` under `title` when given), for at most `bound_s`; the indexes of those that
    did not."""
    looks = [0] * len(pages)
    end = time.monotonic() + bound_s
    while True:
        for i, pg in enumerate(pages):
            looks[i] = looks[i] + 1 if settled_now(pg, path, title) else 0
        if min(looks) >= SETTLE_LOOKS or time.monotonic() >= end:
            return [i for i, n in enumerate(looks) if n < SETTLE_LOOKS]
        time.sleep(LOOK_EVERY_S)
