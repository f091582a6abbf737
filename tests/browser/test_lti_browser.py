"""Launched from the course (LTI 1.3) in a real Chromium, against a platform run by the test on
127.0.0.1 (tests/lti_platform.py) and the app as the tool (`streamlit run lti_app.py`):

- the instructor's launch (platform link -> /lti/login -> the platform's authorization -> the
  form-posted id_token at /lti/launch) opens the course's class board, as its teacher;
- a student's launch opens the same board with their own name in their sidebar, not the teacher's
  powers; the class questions' scores the instructor sends reach the platform's gradebook column
  (Assignment and Grade Services: a token for the tool's signed assertion); a reload keeps the
  student (the launch's signed cookie); the launch's address, opened again, gives nothing;
- the instructor's deep linking launch places the view on screen in the course: the platform
  receives the tool's signed response and checks it against the tool's key set.
"""

from __future__ import annotations

import re

import pytest

from benchmarks import server
from tests.browser.class_steps import go
from tests.helpers import link_built_data
from tests.lti_platform import CLIENT_ID, COURSE, DEPLOYMENT, INSTRUCTOR, LEARNER, Platform, start_tool

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def lti(tmp_path_factory, artifacts):
    pytest.importorskip("joserfc", reason="pip install -r requirements.txt")
    platform = Platform()
    platform.launches = {
        "ina": {"name": "Ina Instructor", "roles": [INSTRUCTOR]},
        "stu": {"name": "Stu Student", "roles": [LEARNER]},
        "ina-place": {"name": "Ina Instructor", "roles": [INSTRUCTOR], "kind": "LtiDeepLinkingRequest"},
    }
    folder = tmp_path_factory.mktemp("lti_browser")
    env = {
        "BERT_EXPLORER_BOARD": "1",
        "BERT_EXPLORER_CACHE": str(link_built_data(folder / "cache")),
        "BERT_EXPLORER_TEACHER_KEY": "",
    }
    proc, url = start_tool(folder, platform, env, artifacts / "lti_server.log")
    yield platform, url, folder
    server.stop_server(proc)
    platform.stop()


def launch(pg, platform: Platform, url: str, name: str, app_ready) -> str:
    """Start launch `name` from the platform; the address the app opened at (with its ticket)."""
    opened = []
    pg.on("request", lambda r: opened.append(r.url) if "lti=" in r.url and r.url.startswith(url) else None)
    pg.goto(platform.start_url(name))
    pg.wait_for_url(re.compile(re.escape(url) + r"/.*"))
    app_ready(pg)
    return opened[0]


def test_a_launch_opens_the_courses_board_the_instructor_teaches_and_a_student_joins_and_is_graded(
    lti, page_factory, app_ready, monkeypatch, artifacts
):
    platform, url, folder = lti
    ina = page_factory()
    launch(ina, platform, url, "ina", app_ready)
    ina.get_by_test_id("stSidebar").get_by_text("From your course as Ina Instructor (teacher).").wait_for()
    header = ina.get_by_role("heading", name=re.compile(r"^Board [A-Z2-9]{6}$"))
    header.wait_for()
    code = header.inner_text().split()[-1]
    assert ina.get_by_label("Teacher key").count() == 0

    stu = page_factory()
    ticket_url = launch(stu, platform, url, "stu", app_ready)
    sidebar = stu.get_by_test_id("stSidebar")
    sidebar.get_by_text("From your course as Stu Student.").wait_for()
    stu.get_by_role("heading", name=f"Board {code}").wait_for()
    assert stu.get_by_text("Ina Instructor").count() == 0  # a classmate's name never reaches another screen
    stu.get_by_test_id("stExpander").get_by_text("Start or join a board").click()
    stu.get_by_text("Starting a board is for the course's instructors.").wait_for()
    assert stu.get_by_role("button", name="Start a board").count() == 0

    # the class answers a question (written to the board's store as the pages do), then the
    # instructor sends today's scores: the platform's gradebook column gets Stu's, by her subject
    from app.class_store.classroom import Classroom
    from app.class_store.sqlite_store import SqliteStore
    from app.lti import arrive, tool
    from app.students import user_id

    monkeypatch.setattr(tool, "section", lambda: {"private_key_file": str(folder / "tool-key.pem")})
    course = tool.Launch(tool.RESOURCE_LINK, platform.url, CLIENT_ID, DEPLOYMENT, "", "", "", True, COURSE["id"], "")
    assert arrive.course_board(course)[0] == code
    room = Classroom(SqliteStore(folder / "cache" / "board" / "board.sqlite"))
    body = {"kind": "mask", "prompt": "Paris is in [MASK].", "choices": None, "answer": "france", "accept": ["france"]}
    qid = room.ask(code, arrive.course_board(course)[1], {**body, "why": "", "figure": None, "model": "minilm-l6"})
    room.answer(code, qid, f"user:{user_id(platform.url, 'stu-student')}", "France")
    room.answer(code, qid, "browser:someone-not-launched", "spain")  # no gradebook column: not sent
    ina.get_by_test_id("stSidebar").get_by_role("button", name="Send today's class-question scores").click()
    ina.get_by_text("Sent 1 student(s)' scores (1 question(s) today) to the gradebook.").wait_for()
    (score,) = platform.scores
    assert (score["userId"], score["scoreGiven"], score["scoreMaximum"]) == ("stu-student", 1.0, 1.0)
    assert score["activityProgress"] == "Completed" and score["gradingProgress"] == "FullyGraded"

    stu.reload()  # a new session of the launched browser: still Stu, by the launch's signed cookie
    app_ready(stu)
    stu.get_by_test_id("stSidebar").get_by_text("From your course as Stu Student.").wait_for()

    again = page_factory()  # the launch's address (its ticket spent), opened in another browser
    again.goto(ticket_url)
    app_ready(again)
    again.get_by_text("This launch was used already or is too old").wait_for()
    assert again.get_by_text("Stu Student").count() == 0
    for pg in (ina, stu, again):
        pg.guard.assert_clean()
    log = (artifacts / "lti_server.log").read_text(errors="replace")
    for private in ("Ina Instructor", "Stu Student", "stu-student@school.example", "ina-instructor@school.example"):
        assert private not in log, f"{private!r} in the server log"


def test_deep_linking_places_the_view_on_screen_in_the_course(lti, page_factory, app_ready):
    platform, url, _ = lti
    ina = page_factory()
    launch(ina, platform, url, "ina-place", app_ready)
    go(ina, "Tokenization")  # the view to place, chosen in the launched session
    ina.wait_for_url(re.compile(re.escape(url) + r"/tokenization.*"))
    app_ready(ina)
    sidebar = ina.get_by_test_id("stSidebar")
    sidebar.get_by_text("Place a view in your course").wait_for()
    sidebar.get_by_label("Its title in the course").fill("Attention in BERT")
    sidebar.get_by_label("Its title in the course").press("Enter")
    app_ready(ina)
    with ina.context.expect_page() as placed:
        sidebar.get_by_role("link", name="Place this view in the course").click()
    done = placed.value
    done.get_by_text("Placed: Attention in BERT").wait_for()
    (item,) = platform.placed
    assert item["type"] == "ltiResourceLink" and item["title"] == "Attention in BERT"
    assert item["url"].split("?")[0] == f"{url}/tokenization"  # the view on screen, with what its link holds

    # a student opens the placed item: the same view, as themselves
    platform.launches["stu-item"] = {"name": "Stu Student", "roles": [LEARNER], "target": item["url"]}
    stu = page_factory()
    launch(stu, platform, url, "stu-item", app_ready)
    assert stu.url.split("?")[0] == f"{url}/tokenization" and "lti=" not in stu.url
    stu.get_by_test_id("stSidebar").get_by_text("From your course as Stu Student.").wait_for()
    stu.get_by_role("heading", name="Tokenization").wait_for()
