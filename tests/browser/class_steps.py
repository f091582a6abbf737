"""A class in a real Chromium, the steps the class browser tests share: a server with the board
on, where a browser is (its address), the sidebar's class section, joining, moving by the nav."""

from __future__ import annotations

import re
import time
from urllib.parse import parse_qs, urlsplit

from benchmarks import server
from tests.browser.page_checks import DRAWN_PATH_JS
from tests.helpers import link_built_data

TEACHER_KEY = "the teacher's own key"
BOARD_HEADING = re.compile(r"^Board [A-Z0-9]{6}$")


def start(cache, log_path):
    """A server with the class board on and its own cache folder: (process, url)."""
    link_built_data(cache)  # the Fine-tuning page opens on the built-in data: no fetch
    port = server.free_port()
    env = {"BERT_EXPLORER_BOARD": "1", "BERT_EXPLORER_CACHE": str(cache), "BERT_EXPLORER_TEACHER_KEY": TEACHER_KEY}
    proc = server.start_server(port, log_path, env)
    url = f"http://127.0.0.1:{port}"
    server.wait_healthy(proc, url, timeout_s=120)
    return proc, url


def where(pg) -> tuple[str, dict]:
    """(page path, query) a browser shows: the page the app drew (page_checks.DRAWN_PATH_JS) and the
    query of its address, which the app publishes after its run."""
    query = urlsplit(pg.url).query
    return pg.evaluate(DRAWN_PATH_JS), {k: v[0] for k, v in parse_qs(query, keep_blank_values=True).items()}


def open_sidebar(pg):
    """Unfold the sidebar where it is folded away (a phone's, projector mode's)."""
    unfold = pg.locator('[data-testid="stExpandSidebarButton"]')
    if unfold.count() and unfold.first.is_visible():
        unfold.first.click()
        unfold.first.wait_for(state="hidden")


def close_sidebar(pg):
    """Fold the sidebar away: on a phone it covers the page."""
    pg.get_by_role("button", name="Collapse sidebar").click()
    pg.locator('[data-testid="stExpandSidebarButton"]').first.wait_for(state="visible")


def sidebar_class(pg):
    """The sidebar's "Your class" section, opened (the sidebar first, where it is folded away)."""
    open_sidebar(pg)
    box = pg.locator('[data-testid="stSidebar"] [data-testid="stExpander"]', has_text="Your class")
    if not box.locator('[data-testid="stExpanderDetails"]').is_visible():
        box.locator("summary").click()
        box.locator('[data-testid="stExpanderDetails"]').wait_for(state="visible")
    return box


def join(pg, url, code, app_ready):
    pg.goto(url)
    app_ready(pg)
    box = sidebar_class(pg)
    box.get_by_label("Code of your class").fill(code)
    box.get_by_label("Code of your class").press("Enter")
    app_ready(pg)
    box.get_by_role("button", name="Join the class").click()
    box.get_by_text(f"Class {code}").wait_for(timeout=30_000)
    app_ready(pg)


def go(pg, title):
    """Click the page `title` in the sidebar's nav (unfolding "View N more" when it is folded away)."""
    link = pg.locator('[data-testid="stSidebarNav"] a', has_text=title).first
    more = pg.locator('[data-testid="stSidebarNavViewButton"]')
    if not link.is_visible() and more.count() and "more" in more.first.inner_text():
        more.first.click()
    link.click()


def start_board(teacher, url, app_ready, query: str = "") -> str:
    """The teacher unlocks the server's teacher tools on the Class board page (its address with
    `query`, e.g. "?projector=1") and starts a board; its class code (the teacher's session has
    joined it and holds its key)."""
    teacher.goto(url + "/board" + query)
    app_ready(teacher)
    teacher.get_by_label("Teacher key").fill(TEACHER_KEY)
    teacher.get_by_label("Teacher key").press("Enter")
    app_ready(teacher)
    teacher.get_by_role("button", name="Unlock").click()
    app_ready(teacher)
    teacher.get_by_role("button", name="Start a board").click()
    teacher.get_by_text("is started: hand out the class code").first.wait_for(timeout=60_000)
    heading = teacher.get_by_role("heading", name=BOARD_HEADING).first
    heading.wait_for(timeout=30_000)
    return heading.inner_text().split()[-1]


def shown_board_key(teacher, app_ready) -> str:
    """The board's key, from behind its reveal on the started board's banner."""
    teacher.get_by_text("Show the board's key").click()
    app_ready(teacher)
    return teacher.locator('[data-testid="stCode"]').first.inner_text().strip()


# How long a follower may take to show the teacher's page: generous, as another lane's training can
# hold the processor; a follower left behind or on an empty page stays so past it.
FOLLOW_BOUND_S = 90


def followed(teacher, students, what, app_ready):
    """Wait until every student's address equals the teacher's (the teacher's run done first);
    the seconds each took after the teacher's screen showed the change."""
    app_ready(teacher)
    want = where(teacher)
    t0 = time.monotonic()
    took = [None] * len(students)
    while time.monotonic() - t0 < FOLLOW_BOUND_S and None in took:
        for i, pg in enumerate(students):
            if took[i] is None and where(pg) == want:
                took[i] = time.monotonic() - t0
        time.sleep(0.05)
    assert None not in took, f"{what}: students at {[where(pg) for pg in students]}, teacher at {want}"
    return took
