"""Accessibility of the real app in Chromium (WCAG 2.2 AA, docs/ACCESSIBILITY.md).

* The audit: axe-core (npm `axe-core`, pinned in scripts/install_axe.sh, installed by `make browser`
  into the git-ignored .node/) runs on every page at 1400x1000, as projected (1280x720,
  ?projector=1) and on a phone (390x844, touch): no critical and no serious violation. The counts
  per page, viewport and impact go to tests/artifacts/axe_table.md (the table in
  docs/ACCESSIBILITY.md comes from it). One server and one browser for every page.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.browser.page_checks import ALL_PAGES as PAGES
from tests.browser.page_checks import assert_page_ok, choose_view, unavailable

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
AXE_JS = Path(os.environ.get("BERT_EXPLORER_AXE", ROOT / ".node" / "node_modules" / "axe-core" / "axe.min.js"))

VIEWPORTS = {
    "desktop": ({"width": 1400, "height": 1000}, "", {}),
    "projector": ({"width": 1280, "height": 720}, "?projector=1", {}),
    "phone": ({"width": 390, "height": 844}, "", {"is_mobile": True, "has_touch": True, "device_scale_factor": 2}),
}
# a phone's browser names itself "Mobile" (Android's Chrome, iOS's Safari): the app shows heavy grids
# as tables first on one
PHONE_AGENT = (
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/131.0.0.0 Mobile Safari/537.36"
)
VIEWPORTS["phone"][2]["user_agent"] = PHONE_AGENT
MIN_TARGET = 24  # CSS px, WCAG 2.2 2.5.8 (target size, minimum)
IMPACTS = ("critical", "serious", "moderate", "minor")
FAILING = ("critical", "serious")


def axe_source() -> str:
    if not AXE_JS.exists():
        unavailable(f"axe-core is not installed at {AXE_JS} (`make browser` runs scripts/install_axe.sh)")
    return AXE_JS.read_text(encoding="utf-8")


def run_axe(page, source: str) -> list[dict]:
    """axe-core's violations on the page as it stands (every frame the page has: bertviz's view is
    one), each {id, impact, help, nodes: [target, ...]}."""
    for frame in page.frames:
        try:
            frame.evaluate(source)
        except Exception:  # noqa: BLE001 - a frame that went away while we looked: nothing to audit
            pass
    result = page.evaluate(
        """async () => {
             const r = await axe.run(document, {resultTypes: ['violations'], iframes: true});
             return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
               nodes: v.nodes.map(n => ({target: n.target.join(' '), summary: n.failureSummary}))}));
           }"""
    )
    return result


def counts(violations: list[dict]) -> dict[str, int]:
    """Violating nodes per impact."""
    out = dict.fromkeys(IMPACTS, 0)
    for v in violations:
        out[v["impact"] or "minor"] += len(v["nodes"])
    return out


def write_table(artifacts: Path, name: str, rows: dict[str, dict]) -> None:
    """tests/artifacts/axe_<viewport>.json (every violation of every page) and axe_<viewport>.md
    (the counts per page and impact, as docs/ACCESSIBILITY.md shows them)."""
    (artifacts / f"axe_{name}.json").write_text(json.dumps(rows, indent=1), encoding="utf-8")
    lines = [f"| page ({name}) | " + " | ".join(IMPACTS) + " | moderate/minor rules |", "|---" * 6 + "|"]
    for page_name, r in rows.items():
        c = counts(r["violations"])
        rules = sorted({v["id"] for v in r["violations"] if v["impact"] not in FAILING})
        lines.append(f"| {page_name} | " + " | ".join(str(c[i]) for i in IMPACTS) + f" | {', '.join(rules)} |")
    (artifacts / f"axe_{name}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


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
        rows[name] = {"violations": run_axe(page, source), "overflow": overflow(page), "small": small_targets(page)}
    write_table(artifacts, viewport, rows)
    failing = {
        name: [
            f"{v['id']} ({v['impact']}, {len(v['nodes'])}): {v['help']} — {v['nodes'][0]['target']}"
            for v in r["violations"]
            if v["impact"] in FAILING
        ]
        for name, r in rows.items()
    }
    failing = {k: v for k, v in failing.items() if v}
    assert not failing, f"axe-core at {viewport}: {json.dumps(failing, indent=1, ensure_ascii=False)}"
    wide = {name: r["overflow"] for name, r in rows.items() if r["overflow"] > 1}
    assert not wide, f"at {viewport} the main column is wider than the screen by (px): {wide}"
    if viewport == "phone":
        small = {name: r["small"] for name, r in rows.items() if r["small"]}
        assert not small, f"tap targets under {MIN_TARGET}x{MIN_TARGET} px on a phone: {small}"


def overflow(page) -> float:
    """How many CSS px the main column (or the whole document) reaches past the screen's right edge."""
    return page.evaluate(
        """() => {
             const main = document.querySelector('[data-testid="stMain"]');
             const doc = document.documentElement;
             return Math.max(main.scrollWidth - main.clientWidth, doc.scrollWidth - window.innerWidth, 0);
           }"""
    )


def small_targets(page) -> list[str]:
    """Help icons, heading anchors and slider thumbs on screen whose box is under MIN_TARGET px."""
    return page.evaluate(
        """(min) => [...document.querySelectorAll(
               '[data-testid="stTooltipHoverTarget"], [data-testid="stHeaderActionElements"] a, [role="slider"]')]
             .map(e => [e, e.getBoundingClientRect()])
             .filter(([e, r]) => r.width > 0 && r.height > 0 && getComputedStyle(e).visibility !== 'hidden')
             .filter(([e, r]) => r.width < min || r.height < min)
             .map(([e, r]) => `${e.getAttribute('data-testid') || e.getAttribute('role') || e.tagName}`
                              + ` ${Math.round(r.width)}x${Math.round(r.height)}`)""",
        MIN_TARGET,
    )


def focused(page) -> dict:
    """The focused element: its test id, text, whether it is in the sidebar or the main column,
    and how its focus is drawn (outline width and style)."""
    return page.evaluate(
        """() => { const e = document.activeElement; const s = getComputedStyle(e);
             return {testid: e.getAttribute('data-testid'), id: e.id, text: (e.textContent || '').trim().slice(0, 80),
                     current: e.getAttribute('aria-current'),
                     sidebar: !!e.closest('[data-testid="stSidebar"]'),
                     main: !!e.closest('[data-testid="stMain"]') && e.id !== 'stMain',
                     outline: parseFloat(s.outlineWidth) * (s.outlineStyle === 'none' ? 0 : 1)}; }"""
    )


def tab_until(page, want, limit: int = 120) -> tuple[int, dict]:
    """Press Tab until `want(focused)`; how many presses it took and the focused element."""
    for n in range(1, limit + 1):
        page.keyboard.press("Tab")
        f = focused(page)
        if want(f):
            return n, f
    raise AssertionError(f"{limit} presses of Tab never reached it; last focused: {f}")


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
