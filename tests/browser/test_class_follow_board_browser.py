"""Following the teacher on and off the Class board page, in a real Chromium: the board page runs
fragments of its own (the live runs every 2 s, the posted runs' watch), and a follower's move away
from it must never leave the follower on an empty page. One teacher leads from the board page to
another page and back, 20 moves; after each, every one of three followers shows the teacher's page
(its address and its title, the page drawn and settled). Every move is checked before the test
fails, so its message counts the moves that went wrong.

The session's server with the board on (`class_url`); its own board. A soak test:
make test runs it once, `make soak` three times in a row.
"""

import pytest

from tests.browser.class_steps import FOLLOW_BOUND_S, go, join, sidebar_class, start_board, where
from tests.browser.page_checks import settle

pytestmark = [pytest.mark.browser, pytest.mark.soak]

# (nav title, the page's own title): the board page and light pages between its visits
BOARD = ("Class board", "Class board")
AWAY = [("Home", "BERT Explorer"), ("Tokenization", "Tokenization"), ("Embeddings", "Embeddings")]
MOVES = 20


def title(pg) -> str:
    """The page's own title (its first heading in the main area), "" on an empty page."""
    h = pg.locator('[data-testid="stMainBlockContainer"] h1')
    return h.first.inner_text().strip() if h.count() else ""


def settled_on(students, want_path: str, want_title: str, bound_s: float = FOLLOW_BOUND_S) -> list[str]:
    """Wait until every student shows the page at `want_path` titled `want_title`, drawn and idle,
    on page_checks.SETTLE_LOOKS looks in a row; what each one showed when it did not (empty: all
    arrived)."""
    late = settle(students, bound_s, want_path, want_title)
    return [f"student {i}: at /{where(students[i])[0]}, title {title(students[i])!r}" for i in late]


def test_followers_never_end_on_an_empty_page_when_the_teacher_leads_off_the_board(
    page_factory, app_ready, artifacts, class_url
):
    url = class_url
    teacher, students = None, []
    try:
        teacher = page_factory()
        code = start_board(teacher, url, app_ready)
        students = [page_factory() for _ in range(3)]
        for pg in students:
            join(pg, url, code, app_ready)
            sidebar_class(pg).get_by_text("Follow the teacher").click()
            app_ready(pg)
        sidebar_class(teacher).get_by_text("Lead the class").click()
        app_ready(teacher)
        assert settled_on(students, "board", BOARD[1]) == [], "the followers did not join the teacher on the board"

        wrong = []
        for move in range(MOVES):
            nav, want = BOARD if move % 2 else AWAY[(move // 2) % len(AWAY)]
            go(teacher, nav)
            app_ready(teacher)
            assert title(teacher) == want, f"move {move}: the teacher's own page shows {title(teacher)!r}"
            path = where(teacher)[0]
            wrong += [f"move {move} to {nav}: {w}" for w in settled_on(students, path, want)]
        assert wrong == [], f"{len(wrong)} follower arrival(s) of {MOVES * len(students)} went wrong: {wrong}"
        for pg in [teacher, *students]:
            assert pg.locator('[data-testid="stException"]').count() == 0
            pg.guard.assert_clean()
    except BaseException:
        for i, pg in enumerate([p for p in [teacher, *students] if p is not None]):
            pg.screenshot(path=str(artifacts / f"class_board_follow_failed_{i}.png"))
        raise
