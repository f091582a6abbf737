"""The class board in a real Chromium: a teacher starts a board, three students (three
browser contexts, so three cookies and sessions) join it, one shows her run live while it trains and
the teacher watches it, each posts a fine-tuning run, each sees all three; the server restarts and
the board is still there. A nickname with HTML is shown as text.

Its own server (the board is opt-in: BERT_EXPLORER_BOARD=1) with a fresh cache folder. Kept small
for 2 cores: 60-200 synthetic reviews, 32 tokens, one job at a time (the others queue).
Screenshots: tests/artifacts/board_live.png, tests/artifacts/board.png.
"""

import os
import re
import subprocess
import time
import urllib.request

import pytest

from benchmarks import server
from tests.helpers import link_built_data

pytestmark = pytest.mark.browser

NICKS = ("Ada", "Bo", "<b>Cy</b>")
TEACHER_KEY = "the teacher's own key"


def start_server(cache, log_path):
    link_built_data(cache)  # the Fine-tuning page opens on the built-in data: no fetch
    port = server.free_port()
    env = {
        **os.environ,
        "BERT_EXPLORER_BOARD": "1",
        "BERT_EXPLORER_CACHE": str(cache),
        "BERT_EXPLORER_TEACHER_KEY": TEACHER_KEY,
    }
    log = open(log_path, "a")
    proc = server.own_session(
        server.streamlit_cmd("streamlit_app.py", port), cwd=server.ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the app exited; see {log_path}"
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.read().decode().strip() == "ok":
                    return proc, url
        except OSError:
            time.sleep(0.5)
    server.stop_server(proc)
    pytest.fail("the board server did not answer within 90 s")


def go(pg, title, app_ready):
    """To another page through the sidebar (the same session: the joined board is kept)."""
    more = pg.locator('[data-testid="stSidebarNavViewButton"]', has_text="more")
    if more.count():  # the list of pages is folded after the first ten
        more.first.click()
    pg.locator('[data-testid="stSidebarNav"] a', has_text=title).first.click()
    app_ready(pg)


def join(pg, url, code, app_ready):
    pg.goto(url + "/board")
    app_ready(pg)
    box = pg.get_by_label("Class code")
    box.fill(code)
    box.press("Enter")
    pg.get_by_role("button", name="Join a board").click()
    pg.get_by_role("heading", name=f"Board {code}").wait_for(timeout=60_000)
    app_ready(pg)


def set_number(pg, label, value):
    box = pg.get_by_label(label, exact=True)
    box.fill(str(value))
    box.press("Enter")
    pg.wait_for_timeout(400)


def start_finetuning(pg, csv, epochs, app_ready, upload_file):
    go(pg, "Fine-tuning", app_ready)
    upload_file(pg, csv)
    pg.get_by_text("Usable texts").first.wait_for(timeout=60_000)
    app_ready(pg)
    pg.locator('[data-testid="stExpander"] summary', has_text="Model and training settings").click()
    set_number(pg, "Max tokens per text", 32)
    set_number(pg, "Epochs", epochs)
    set_number(pg, "Evaluations per epoch", 3)
    app_ready(pg)
    pg.get_by_role("button", name="Start fine-tuning").click()
    pg.locator('[data-testid="stProgress"]').first.wait_for(timeout=60_000)


def post_when_done(pg, nick, app_ready):
    pg.get_by_text("5. Results").first.wait_for(timeout=600_000)
    app_ready(pg)
    box = pg.get_by_role("textbox", name="Your nickname on the board")
    box.fill(nick)
    box.press("Enter")
    app_ready(pg)
    pg.get_by_role("button", name="Post this run to the class board").click()
    pg.get_by_text("Posted to board").first.wait_for(timeout=120_000)


def plots(pg):
    """(title, trace names, points of the first trace) of every plotly figure drawn on the page."""
    return pg.evaluate(
        """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(el => {
            const t = (el.layout || {}).title;
            const data = el.data || [];
            return [t && typeof t === 'object' ? t.text : t, data.map(d => d.name), ((data[0] || {}).x || []).length];
        })"""
    )


def curve_names(pg, title="validation accuracy of every posted run"):
    """The trace names of the board's plot of posted runs (as plotly holds them: escaped)."""
    return next((names for t, names, _ in plots(pg) if title in (t or "")), None)


def wait_for_names(pg, want, timeout_s=60):
    end = time.monotonic() + timeout_s
    names = None
    while time.monotonic() < end:
        names = curve_names(pg)
        if names is not None and sorted(names) == sorted(want):
            return names
        pg.wait_for_timeout(500)
    raise AssertionError(f"the board shows {names}, not {want}; plots: {plots(pg)}")


def test_three_students_post_to_one_board_and_it_survives_a_restart(
    page_factory, app_ready, upload_file, artifacts, tmp_path
):
    cache, log = tmp_path / "cache", artifacts / "board-server.log"
    small, big = tmp_path / "small.csv", tmp_path / "big.csv"
    small.write_bytes(server.reviews_csv(60, 1))
    big.write_bytes(server.reviews_csv(200, 0))
    proc, url = start_server(cache, log)
    try:
        teacher = page_factory()
        teacher.goto(url + "/board")
        app_ready(teacher)
        teacher.get_by_label("Teacher key").fill(TEACHER_KEY)  # starting a board is the teacher's
        teacher.get_by_label("Teacher key").press("Enter")
        app_ready(teacher)
        teacher.get_by_role("button", name="Unlock").click()
        app_ready(teacher)
        teacher.get_by_role("button", name="Start a board").click()
        heading = teacher.get_by_role("heading", name=re.compile(r"^Board [A-Z0-9]{6}$"))
        heading.first.wait_for(timeout=60_000)
        code = heading.first.inner_text().split()[-1]
        assert len(code) == 6
        students = [page_factory() for _ in NICKS]
        for pg in students:
            join(pg, url, code, app_ready)

        # Ada shows her run live; the teacher's board draws it while it trains
        start_finetuning(students[0], big, 4, app_ready, upload_file)
        students[0].get_by_role("textbox", name="Your nickname on the board").fill(NICKS[0])
        students[0].get_by_role("textbox", name="Your nickname on the board").press("Enter")
        app_ready(students[0])
        students[0].get_by_role("button", name=f"Show this run live on board {code}").click()
        students[0].get_by_text(f"Shown live on class board {code}").first.wait_for(timeout=60_000)
        teacher.get_by_text("Live now").first.wait_for(timeout=30_000)
        teacher.get_by_text(f"{NICKS[0]} · training").first.wait_for(timeout=60_000)
        live = f"{NICKS[0]}'s run, live"
        end = time.monotonic() + 120
        while time.monotonic() < end and not any(live in (t or "") and n >= 6 for t, _, n in plots(teacher)):
            teacher.wait_for_timeout(500)  # the live curve grows on the teacher's screen
        assert any(live in (t or "") and n >= 6 for t, _, n in plots(teacher)), plots(teacher)
        teacher.get_by_text("Live now").first.evaluate("e => e.scrollIntoView({block: 'start'})")
        teacher.wait_for_timeout(1500)
        teacher.screenshot(path=str(artifacts / "board_live.png"), full_page=False)

        # the other two start theirs (queued behind Ada's: one job at a time on 2 cores)
        for pg in students[1:]:
            start_finetuning(pg, small, 1, app_ready, upload_file)
        for pg, nick in zip(students, NICKS):
            post_when_done(pg, nick, app_ready)
        teacher.get_by_text(f"{NICKS[0]} · finished").first.wait_for(timeout=60_000)

        escaped = [n.replace("<", "&lt;").replace(">", "&gt;") for n in NICKS]
        for pg in students:
            go(pg, "Class board", app_ready)
            wait_for_names(pg, escaped)
            assert pg.locator('[data-testid="stException"]').count() == 0
        wait_for_names(teacher, escaped)  # the teacher's board polls: it draws the last post in its own time
        legend = teacher.locator(".legendtext").evaluate_all("els => els.map(e => e.textContent)")
        assert NICKS[2] in legend, legend  # shown as text, not bold
        assert teacher.locator(".legendtext b").count() == 0
        teacher.get_by_text("3 run(s) posted").first.evaluate("e => e.scrollIntoView({block: 'start'})")
        teacher.wait_for_timeout(1500)
        teacher.screenshot(path=str(artifacts / "board.png"), full_page=False)
        for pg in [teacher, *students]:
            pg.guard.assert_clean()
    finally:
        server.stop_server(proc)

    proc, url = start_server(cache, log)  # a restart keeps the board
    try:
        again = page_factory()
        join(again, url, code, app_ready)
        wait_for_names(again, escaped)
        again.guard.assert_clean()
    finally:
        server.stop_server(proc)
