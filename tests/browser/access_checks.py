"""What the accessibility tests measure on a page of the real app or a saved view (WCAG 2.2 AA,
docs/ACCESSIBILITY.md): axe-core's violations (every frame), the counts per impact and their table,
how far the main column reaches past the screen, tap targets under 24x24 CSS px, plotly's toolbar
over a figure's title, a figure's text outside it, and the keyboard's focus."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from app.ui.access import SR_ONLY
from tests.browser.page_checks import ALL_PAGES, settle, unavailable

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
# the narrowest phone the issue names (a 360 px Android): the class, Home, Attention, Masked LM
PHONE_SMALL = ({"width": 360, "height": 800}, "", {**VIEWPORTS["phone"][2]})
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


# the pages whose projector mode is checked readable from the back of a room (projector_readable), each
# photographed as the class sees it: tests/artifacts/projector_<name>.png
PROJECTOR_PAGES = tuple(name for name in ALL_PAGES if name not in ("decoder", "causes", "features", "status"))


def projector_readable(pg, shot: Path) -> None:
    """Projector mode large enough for the back of a room on the page as it stands: root text at
    least 22 px, widget labels and figures' tick labels at least 18 px, projector=1 kept in the
    address; then a screenshot of the first figure (or the top) at `shot`."""
    root_px = pg.evaluate("() => parseFloat(getComputedStyle(document.documentElement).fontSize)")
    assert root_px >= 22
    labels = pg.locator('[data-testid="stWidgetLabel"]')
    if labels.count():
        px = labels.first.evaluate("e => parseFloat(getComputedStyle(e).fontSize)")
        assert px >= 18, f"widget labels {px} px"
    ticks = pg.locator(".js-plotly-plot .xtick text, .js-plotly-plot .ytick text")
    if ticks.count():
        sizes = ticks.evaluate_all("els => els.map(e => parseFloat(e.style.fontSize || getComputedStyle(e).fontSize))")
        assert min(sizes) >= 18, f"tick labels from {min(sizes)} px"
    assert "projector=1" in pg.url  # part of the link
    charts = pg.locator(".js-plotly-plot")
    if charts.count():  # the screenshot shows the first figure, as the class would see it
        charts.first.evaluate("e => e.scrollIntoView({block: 'center'})")
    pg.wait_for_timeout(500)
    pg.screenshot(path=str(shot))


def overflow(page) -> float:
    """How many CSS px the main column (where there is one) or the whole document reaches past the
    screen's right edge."""
    return page.evaluate(
        """() => {
             const main = document.querySelector('[data-testid="stMain"]');
             const doc = document.documentElement;
             const inner = main ? main.scrollWidth - main.clientWidth : 0;  // a saved view has no main column
             return Math.max(inner, doc.scrollWidth - window.innerWidth, 0);
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


# Whether a page of the app lacks the app's own stylesheet (app/ui/access.py: focus ring, tap
# targets): it is drawn by each script run, so a page under load can show its elements a moment
# before it. A saved view is no page of the app and has none to wait for.
APP_STYLES_MISSING_JS = f"""() => !!document.querySelector('[data-testid="stApp"]')
  && ![...document.querySelectorAll('style')].some(s => s.textContent.includes('{SR_ONLY}'))"""
APP_STYLES_BOUND_S = 60


def wait_for_app_styles(page) -> None:
    """Until a page of the app has its stylesheet, for at most APP_STYLES_BOUND_S (then the look
    that follows shows the page as it is)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout  # here: without playwright the tests skip

    if page.evaluate(APP_STYLES_MISSING_JS):
        with contextlib.suppress(PlaywrightTimeout):
            page.wait_for_function(f"() => !({APP_STYLES_MISSING_JS})()", timeout=APP_STYLES_BOUND_S * 1000)


def focused(page) -> dict:
    """The focused element: its test id, text, label (a field's), whether it is in the sidebar or the main column,
    and how its focus is drawn (outline width and style; measured again once the app's stylesheet is
    in the page when the first look finds no ring)."""
    look = _focused(page)
    if look["outline"] < 2 and page.evaluate(APP_STYLES_MISSING_JS):
        wait_for_app_styles(page)
        look = _focused(page)
    return look


def _focused(page) -> dict:
    return page.evaluate(
        """() => { const e = document.activeElement; const s = getComputedStyle(e);
             const label = e.getAttribute('aria-label') || (e.labels && e.labels[0] ? e.labels[0].innerText : '');
             return {testid: e.getAttribute('data-testid'), id: e.id, text: (e.textContent || '').trim().slice(0, 80),
                     label: (label || '').trim(), tag: e.tagName.toLowerCase(),
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


def steady_violations(page, source: str) -> list[dict]:
    """axe-core's violations that hold on a settled page: when a first look finds any, the page is
    let settle again and looked at once more, and only what both looks find (rule and element)
    counts. A script run that starts between app_ready and the audit greys the old elements for a
    moment (Streamlit's stale state), which is not what a reader of the settled page sees; a real
    violation is there both times."""
    first = run_axe(page, source)
    if not first:
        return first
    settle([page], 60.0)
    again = {(v["id"], n["target"]) for v in run_axe(page, source) for n in v["nodes"]}
    kept = []
    for v in first:
        nodes = [n for n in v["nodes"] if (v["id"], n["target"]) in again]
        if nodes:
            kept.append({**v, "nodes": nodes})
    return kept


def steady_small_targets(page) -> list[str]:
    """The small tap targets of a settled page: when a first look finds any, the page is let settle
    again and the second look is what counts (a run starting between looks redraws the page's
    elements and its styles for a moment, as in `steady_violations`)."""
    if not small_targets(page):
        return []
    settle([page], 60.0)
    wait_for_app_styles(page)
    return small_targets(page)


def audit(page, source: str) -> dict:
    """One page, settled: axe-core's steady violations, the main column's overflow (px) and its
    steady small tap targets."""
    return {
        "violations": steady_violations(page, source),
        "overflow": overflow(page),
        "small": steady_small_targets(page),
    }


def serious(rows: dict[str, dict]) -> dict[str, list[str]]:
    """The critical and serious violations of each audited page (`audit`), one line each."""
    out = {
        name: [
            f"{v['id']} ({v['impact']}, {len(v['nodes'])}): {v['help']} — {v['nodes'][0]['target']}"
            for v in r["violations"]
            if v["impact"] in FAILING
        ]
        for name, r in rows.items()
    }
    return {k: v for k, v in out.items() if v}


def phone_problems(page) -> dict:
    """What a phone's screen shows wrong on the page as it stands (empty: nothing): the main column
    wider than the screen, tap targets under MIN_TARGET px, plotly's toolbar over a figure's title,
    a figure's text (a label, an annotation) past the figure's edges."""
    found = {
        "overflow": overflow(page),
        "small": small_targets(page),
        "figures": page.evaluate(FIGURE_PROBLEMS),
    }
    return {k: v for k, v in found.items() if v and (k != "overflow" or v > 1)}


# Per plotly figure shown: its toolbar meeting its title, and any annotation's text reaching past
# the figure's box (0.5 px of rounding).
FIGURE_PROBLEMS = """() => {
  const box = e => e && e.getBoundingClientRect();
  const meet = (a, b) => a && b && a.width && b.width && a.left < b.right && a.right > b.left
                         && a.top < b.bottom && a.bottom > b.top;
  const out = [];
  [...document.querySelectorAll('.js-plotly-plot')].filter(el => el.offsetParent).forEach((el, n) => {
    const fig = box(el.querySelector('.main-svg'));
    const bar = box(el.querySelector('.modebar'));
    const title = el.querySelector('.gtitle');
    if (title && title.textContent.trim() && meet(bar, box(title))) out.push(`figure ${n}: toolbar over its title`);
    for (const t of el.querySelectorAll('.annotation-text')) {
      const r = box(t);
      if (t.textContent.trim() && r.width && (r.left < fig.left - 0.5 || r.right > fig.right + 0.5))
        out.push(`figure ${n}: text past its edge: ${t.textContent.slice(0, 40)}`);
    }
  });
  return out;
}"""


def tab_stops(page, want, limit: int = 150) -> list[dict]:
    """Press Tab until `want(focused)`; every stop in the main column on the way (`focused`), the
    wanted one last."""
    stops = []
    for _ in range(limit):
        page.keyboard.press("Tab")
        f = focused(page)
        if f["main"]:
            stops.append(f)
        if want(f):
            return stops
    raise AssertionError(f"{limit} presses of Tab never reached it; the last stops: {stops[-3:]}")


def unringed(stops: list[dict]) -> list[dict]:
    """The stops whose focus is not drawn (an outline under 2 px)."""
    return [f for f in stops if f["outline"] < 2]


STATEMENT = ROOT / "docs" / "ACCESSIBILITY.md"


def documented_rules() -> set[str]:
    """The moderate and minor axe rules docs/ACCESSIBILITY.md lists as left, with their reasons
    (its table's first column, each rule in backticks)."""
    text = STATEMENT.read_text(encoding="utf-8")
    table = text.split("\n### Moderate and minor rules left", 1)[1].split("\n## ", 1)[0]
    return {line.split("`")[1] for line in table.splitlines() if line.startswith("| `")}


def undocumented(rows: dict[str, dict]) -> dict[str, list[str]]:
    """The moderate and minor rules each audited page breaks that the statement does not list."""
    known = documented_rules()
    out = {name: sorted({v["id"] for v in r["violations"]} - known) for name, r in rows.items()}
    return {k: v for k, v in out.items() if v}
