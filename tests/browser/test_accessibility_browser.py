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
from tests.browser.page_checks import assert_page_ok, unavailable

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
AXE_JS = Path(os.environ.get("BERT_EXPLORER_AXE", ROOT / ".node" / "node_modules" / "axe-core" / "axe.min.js"))

VIEWPORTS = {
    "desktop": ({"width": 1400, "height": 1000}, "", {}),
    "projector": ({"width": 1280, "height": 720}, "?projector=1", {}),
    "phone": ({"width": 390, "height": 844}, "", {"is_mobile": True, "has_touch": True, "device_scale_factor": 2}),
}
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
        rows[name] = {"violations": run_axe(page, source)}
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
