"""Accessibility of the real app in Chromium (WCAG 2.2 AA, docs/ACCESSIBILITY.md).

* The audit: axe-core (npm `axe-core`, pinned in scripts/install_axe.sh, installed by `make browser`
  into the git-ignored .node/) runs on every page at 1400x1000, as projected (1280x720,
  ?projector=1) and on a phone (390x844, touch): no critical and no serious violation. The counts
  per page, viewport and impact go to tests/artifacts/axe_table.md (the table in
  docs/ACCESSIBILITY.md comes from it). One server and one browser for every page. At 1400x1000
  every page's full-page screenshot (tests/artifacts/page_<name>.png, the README's pictures) is
  taken after its audit: this is also the test that every page opens clean (no exception box, no
  console error, nothing fetched past localhost). As projected, the pages a class sees from the
  back of a room are checked large enough there (access_checks.projector_readable) and photographed.
"""

from __future__ import annotations

import json

import pytest

from tests.browser.access_checks import (
    MIN_TARGET,
    PROJECTOR_PAGES,
    VIEWPORTS,
    audit,
    axe_source,
    focused,
    overflow,
    projector_readable,
    serious,
    tab_until,
    undocumented,
    write_table,
)
from tests.browser.page_checks import ALL_PAGES as PAGES
from tests.browser.page_checks import assert_page_ok, choose_view, screenshot_full

pytestmark = pytest.mark.browser


@pytest.mark.slow
@pytest.mark.parametrize("viewport", list(VIEWPORTS))
def test_axe_finds_no_critical_or_serious_violation(page_factory, app_url, app_ready, artifacts, viewport):
    source = axe_source()
    size, query, extra = VIEWPORTS[viewport]
    page = page_factory(viewport=size, **extra)
    rows = {}
    for name, path in PAGES.items():
        page.goto(app_url + path + query)
        app_ready(page)
        assert_page_ok(page)
        rows[name] = audit(page, source)
        if viewport == "desktop":
            screenshot_full(page, artifacts / f"page_{name}.png")
        if viewport == "projector" and name in PROJECTOR_PAGES:
            projector_readable(page, artifacts / f"projector_{name}.png")
    write_table(artifacts, viewport, rows)
    failing = serious(rows)
    assert not failing, f"axe-core at {viewport}: {json.dumps(failing, indent=1, ensure_ascii=False)}"
    assert not undocumented(rows), f"rules docs/ACCESSIBILITY.md does not list: {undocumented(rows)}"
    wide = {name: r["overflow"] for name, r in rows.items() if r["overflow"] > 1}
    assert not wide, f"at {viewport} the main column is wider than the screen by (px): {wide}"
    if viewport == "phone":
        small = {name: r["small"] for name, r in rows.items() if r["small"]}
        assert not small, f"tap targets under {MIN_TARGET}x{MIN_TARGET} px on a phone: {small}"


@pytest.mark.slow
def test_keyboard_alone_skips_the_sidebar_sees_focus_and_opens_a_figures_table(page, app_url, app_ready):
    """Only keys: the first Tab is "Skip to main content", which lands in the main column (the
    sidebar's page links and model picker come before it otherwise); every focused control shows
    a ring, a focused page link looks unlike the current page's, and a figure's "Show as a table"
    opens with Enter."""
    page.goto(app_url + PAGES["attention"])
    app_ready(page)
    without_skip, _ = tab_until(page, lambda f: f["main"])
    assert without_skip > 10, f"the main column came after only {without_skip} Tab stops: is the sidebar there?"

    page.goto(app_url + PAGES["attention"])
    app_ready(page)
    page.keyboard.press("Tab")
    first = focused(page)
    assert first["testid"] == "stSkipToContent" and first["text"] == "Skip to main content", first
    box = page.locator('[data-testid="stSkipToContent"]').bounding_box()
    assert box and box["y"] >= 0 and box["width"] > 0, f"the focused skip link is off screen: {box}"
    page.keyboard.press("Enter")
    n, f = tab_until(page, lambda f: f["main"] or f["sidebar"], limit=5)
    assert f["main"] and n == 1, f"after the skip link, Tab {n} reached {f}"
    assert f["outline"] >= 2, f"no visible focus on {f}"

    # a page link the keyboard is on, and the current page's link: told apart by the focus ring
    page.goto(app_url + PAGES["attention"])
    app_ready(page)
    _, link = tab_until(page, lambda f: f["testid"] == "stSidebarNavLink" and f["current"] != "page")
    assert link["outline"] >= 2, link
    current = page.locator('[data-testid="stSidebarNavLink"][aria-current="page"]')
    ring = current.evaluate(
        "e => { const s = getComputedStyle(e); return s.outlineStyle === 'none' ? 0 : parseFloat(s.outlineWidth); }"
    )
    assert ring == 0 and current.inner_text().strip().endswith("Attention")

    page.goto(app_url + PAGES["attention"])
    app_ready(page)
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    tab_until(page, lambda f: f["text"].endswith("Show as a table") or f["text"] == "Show as a table", limit=200)
    page.keyboard.press("Enter")
    table = page.locator('[data-testid="stExpander"] [data-testid="stTable"] table').first
    table.wait_for(state="visible", timeout=30_000)
    assert table.locator("td").count() >= 4
    page.guard.assert_clean()


@pytest.mark.slow
def test_on_a_phone_the_grid_of_every_head_is_a_table_first(page_factory, app_url, app_ready):
    size, _, extra = VIEWPORTS["phone"]
    page = page_factory(viewport=size, **extra)
    page.goto(app_url + PAGES["attention"])
    app_ready(page)
    choose_view(page, app_ready, "All heads")
    page.get_by_text("too dense to read on a phone").first.wait_for(timeout=30_000)
    table = page.locator('[data-testid="stTable"] table').first
    assert table.is_visible()
    assert "strongest" in table.inner_text()
    assert table.locator("tbody tr").count() >= 12  # one row a head
    assert overflow(page) <= 1
    page.guard.assert_clean()
