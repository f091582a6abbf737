"""One screen, one task, in Chromium at the class's three screens: the teacher opens the projector
link (1280x720) and reaches the sidebar and every teacher control in it (pages, leading, asking,
leaving projector mode), and presenter view fits a lesson step on the screen; a student on a
laptop (1366x768) and on a phone (390x844) has Lessons' Next and Attention's sliders on screen
together with what they change (bounding boxes). Screenshots: tests/artifacts/screens_*.png."""

import pytest
from playwright.sync_api import TimeoutError as PageTimeout

from tests.browser.class_steps import go, sidebar_class, start_board

pytestmark = pytest.mark.browser

MAIN = '[data-testid="stMain"]'
LAPTOP, PROJECTOR, PHONE = {"width": 1366, "height": 768}, {"width": 1280, "height": 720}, {"width": 390, "height": 844}


def box(locator) -> dict:
    locator.first.wait_for(state="visible", timeout=60_000)
    b = locator.first.bounding_box()
    assert b is not None, f"{locator} has no box"
    return b


def on_screen(pg, *boxes) -> bool:
    """Every box lies inside the viewport (to a pixel: a box scrolled to the top may start at -0.4)."""
    size = pg.viewport_size
    return all(
        b["y"] >= -1
        and b["y"] + b["height"] <= size["height"] + 1
        and b["x"] >= -1
        and b["x"] + b["width"] <= size["width"] + 1
        for b in boxes
    )


def step_heading(pg):
    return pg.locator(f"{MAIN} h3", has_text=". ").first


def test_the_projector_link_keeps_every_teacher_control_and_a_step_fits_the_screen(
    page_factory, class_url, app_ready, artifacts
):
    pg = page_factory(viewport=PROJECTOR)
    start_board(pg, class_url, app_ready, "?projector=1")
    opener = pg.locator('[data-testid="stExpandSidebarButton"]')
    leave = pg.get_by_role("button", name="Leave projector mode")
    pg.locator(MAIN).evaluate("e => e.scrollTo(0, 0)")
    assert on_screen(pg, box(opener), box(leave))  # the sidebar folded, its opener and the way out in view

    opener.click()  # the teacher opens the sidebar: pages, the class's lead and questions, the mode's switch
    sidebar = pg.locator('[data-testid="stSidebar"]')
    box(sidebar.locator('[data-testid="stSidebarNav"]'))
    section = sidebar_class(pg)
    for control in (section.get_by_text("Lead the class"), section.get_by_role("button", name="Ask the class")):
        control.first.scroll_into_view_if_needed()
        assert on_screen(pg, box(control))
    assert sidebar.get_by_text("Projector mode").first.is_visible()
    pg.screenshot(path=str(artifacts / "screens_projector_sidebar.png"))

    go(pg, "Lessons")  # another page, still projected
    app_ready(pg)
    assert "projector=1" in pg.url
    pg.get_by_role("button", name="Leave projector mode").click()
    app_ready(pg)
    assert pg.evaluate("() => parseFloat(getComputedStyle(document.documentElement).fontSize)") < 22
    assert "projector" not in pg.url and pg.get_by_role("button", name="Leave projector mode").count() == 0

    pg.get_by_text("Presenter view").first.click()
    app_ready(pg)
    pg.locator(f"{MAIN} [data-testid='stDataFrame'], {MAIN} .js-plotly-plot").first.wait_for(timeout=60_000)
    heading = step_heading(pg)
    heading.scroll_into_view_if_needed()
    shown = pg.locator(f"{MAIN} [data-testid='stDataFrame'], {MAIN} .js-plotly-plot").first
    nxt = pg.locator(f"{MAIN} button", has_text="Next").first
    assert on_screen(pg, box(heading), box(shown), box(nxt)), (box(heading), box(shown), box(nxt))
    pg.screenshot(path=str(artifacts / "screens_presenter.png"))

    pg.guard.assert_clean()


@pytest.mark.parametrize("viewport", [LAPTOP, PHONE], ids=["laptop", "phone"])
def test_a_students_control_and_its_result_share_the_screen(page_factory, class_url, app_ready, artifacts, viewport):
    pg = page_factory(viewport=viewport)
    name = "laptop" if viewport is LAPTOP else "phone"
    pg.goto(f"{class_url}/lessons")
    app_ready(pg)
    nxt = pg.locator(f"{MAIN} button", has_text="Next").first
    assert on_screen(pg, box(nxt)), box(nxt)  # step 1: Next without scrolling
    first = step_heading(pg).inner_text()
    pg.locator(MAIN).evaluate("e => e.scrollTo(0, e.scrollHeight)")  # read to the end, then the lower Next
    pg.locator(f"{MAIN} button", has_text="Next").last.click()
    pg.wait_for_function(
        "(h) => [...document.querySelectorAll('[data-testid=stMain] h3')].some(e => e.innerText.startsWith('2.'))",
        arg=first,
        timeout=60_000,
    )
    app_ready(pg)
    top_third = f"""() => {{
        const h = [...document.querySelectorAll('[data-testid=stMain] h3')].find(e => e.innerText.includes('. '));
        const y = h && h.getBoundingClientRect().y;
        return h && y >= 0 && y <= {viewport["height"] / 3};
    }}"""
    try:  # the new step from its top, once the run's elements have settled
        pg.wait_for_function(top_third, timeout=30_000)
    except PageTimeout:
        pass  # the assertion below says where the heading stayed
    heading = box(step_heading(pg))
    assert 0 <= heading["y"] <= viewport["height"] / 3, heading
    pg.screenshot(path=str(artifacts / f"screens_lesson_next_{name}.png"))

    pg.goto(f"{class_url}/attention")
    app_ready(pg)
    head = pg.locator('[data-testid="stSlider"]', has_text="Head").first
    head.scroll_into_view_if_needed()
    heatmap = pg.locator(f"{MAIN} .js-plotly-plot").first
    if viewport is PHONE:  # stacked: the student scrolls the slider to the top, the map is under it
        head.evaluate("e => e.scrollIntoView({block: 'start'})")
    assert on_screen(pg, box(head), box(heatmap)), (box(head), box(heatmap))
    pg.screenshot(path=str(artifacts / f"screens_attention_{name}.png"))
    pg.guard.assert_clean()
