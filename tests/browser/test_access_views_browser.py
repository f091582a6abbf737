"""Accessibility beyond each page as it opens (WCAG 2.2 AA, docs/ACCESSIBILITY.md), on the session's
one server and one Chromium:

* every main view a page offers besides its first (Attention's grid of every head, its Q/K/V
  walk-through and bertviz's head and neuron views; Causes' minimal pairs and probes; Compare's
  one word in many sentences; Explanations' logit lens; a lesson's questions and its presenter view) at
  1400x1000, each with every "Show as a table" opened: axe-core finds no critical and no serious
  violation (counts in tests/artifacts/axe_views.md);
* a 360x800 phone (touch, a phone's browser) on Home, Attention and Masked LM: nothing wider than the
  screen, tap targets of at least 24x24 CSS px, plotly's toolbar clear of every title, the model
  diagram's text inside its boxes, every page listed in the sidebar (none folded behind "View
  more"), the grid of every head a table first whose rows name the tokens; no critical or serious
  violation (tests/artifacts/axe_phone360.md). The class on a phone (joining, following, answering,
  the reveal) is measured in tests/browser/test_class_follow_browser.py.

bertviz's model view is left out: axe-core takes about 15 s on its thousands of nodes (it was
audited when docs/ACCESSIBILITY.md's table was written).
"""

from __future__ import annotations

import pytest

from tests.browser.access_checks import (
    PHONE_SMALL,
    audit,
    axe_source,
    phone_problems,
    serious,
    undocumented,
    write_table,
)
from tests.browser.page_checks import assert_page_ok, choose_view

pytestmark = pytest.mark.browser

# A view by its address (each page's "view" link parameter): one page load, no click.
VIEWS = {
    "attention: all heads": "/attention?view=heads",
    "attention: Q/K/V walk-through": "/attention?view=qkv",
    "attention: bertviz head view": "/attention?view=bv-head",
    "attention: bertviz neuron view": "/attention?view=bv-neuron",
    "causes: minimal pairs": "/causes?view=pairs",
    "causes: probes": "/causes?view=probes",
    "compare: one word in many sentences": "/compare?view=word",
    "explanations: logit lens": "/explanations?view=lens",
    "lessons: check yourself": "/lessons?step=20",
    "lessons: presenter view": "/lessons?present=1",
}
TABLES = '[data-testid="stExpander"] summary'


def open_tables(page) -> int:
    """Open every "Show as a table" on the page (each one a click, as a reader would); how many."""
    n = 0
    for summary in page.locator(TABLES, has_text="Show as a table").all():
        if summary.is_visible() and summary.evaluate("e => !e.parentElement.open"):
            summary.click()
            n += 1
    return n


@pytest.mark.slow
def test_every_pages_other_views_with_their_tables_open_pass_axe(page_factory, app_url, app_ready, artifacts):
    source = axe_source()
    page = page_factory(viewport={"width": 1400, "height": 1000})
    rows, opened = {}, 0
    for name, path in VIEWS.items():
        page.goto(app_url + path)
        app_ready(page)
        assert_page_ok(page)
        opened += open_tables(page)
        rows[name] = audit(page, source)
    write_table(artifacts, "views", rows)
    assert opened >= 4, f"only {opened} tables were opened: the views lost their tables?"
    failing = serious(rows)
    assert not failing, f"axe-core on the pages' other views: {failing}"
    assert not undocumented(rows), f"rules docs/ACCESSIBILITY.md does not list: {undocumented(rows)}"


@pytest.mark.slow
def test_a_360_phone_reads_home_attention_and_masked_lm(page_factory, app_url, app_ready, artifacts):
    source = axe_source()
    size, _, extra = PHONE_SMALL
    page = page_factory(viewport=size, **extra)
    rows, problems = {}, {}

    page.goto(app_url + "/")
    app_ready(page)
    # every page in the sidebar's list, none behind "View more" (the list is there, folded or not)
    assert page.locator('[data-testid="stSidebarNavViewButton"]').count() == 0
    listed = page.locator('[data-testid="stSidebarNav"] a').all_inner_texts()
    assert any("Causes" in t for t in listed) and any("Compare" in t for t in listed), listed
    diagram = page.locator(".js-plotly-plot .annotation-text", has_text="Encoder layer 1")
    diagram.first.wait_for(timeout=60_000)  # plotly draws after the app's run has ended
    assert diagram.count() == 1  # the model's diagram, its text wrapped to the screen
    for name, path in (("home", "/"), ("attention", "/attention"), ("masked_lm", "/masked_lm")):
        if path != "/":
            page.goto(app_url + path)
            app_ready(page)
        assert_page_ok(page)
        rows[name] = audit(page, source)
        problems[name] = phone_problems(page)

    page.goto(app_url + "/attention")
    app_ready(page)
    choose_view(page, app_ready, "All heads")  # by touch
    page.get_by_text("too dense to read on a phone").first.wait_for(timeout=30_000)
    table = page.locator('[data-testid="stTable"] table').first
    assert "[CLS]" in table.inner_text(), "the grid's table names cells by number, not by token"
    rows["attention: all heads"] = audit(page, source)
    problems["attention: all heads"] = phone_problems(page)

    write_table(artifacts, "phone360", rows)
    assert not serious(rows), f"axe-core at 360x800: {serious(rows)}"
    assert not undocumented(rows), f"rules docs/ACCESSIBILITY.md does not list: {undocumented(rows)}"
    problems = {k: v for k, v in problems.items() if v}
    assert not problems, f"at 360x800: {problems}"
    page.guard.assert_clean()
