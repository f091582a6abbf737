"""The class board and the Server status page belong to the
teacher and to each run's student. The store's limits are driven through its methods (as the pages
call them), on both stores (the `board` fixture, conftest.py), the pages with AppTest."""

import json
import sqlite3
import time
from collections import OrderedDict
from pathlib import Path

import plotly.io as pio
import pytest
from streamlit.testing.v1 import AppTest

from app.board import charts as board_charts
from app.class_store import store
from app.class_store import summary as board_summary
from app.class_store.errors import BoardError
from app.class_store.service import JOINED
from tests.helpers import use_cache

ROOT = Path(__file__).resolve().parent.parent
KEY = "a long teacher key"
SQLITE_ONLY = pytest.mark.parametrize("board", ["sqlite"], indirect=True)  # slow page tests: the default store


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    use_cache(monkeypatch, tmp_path)
    monkeypatch.setenv("BERT_EXPLORER_BOARD", "1")
    monkeypatch.delenv("BERT_EXPLORER_TEACHER_KEY", raising=False)
    return tmp_path


def summary(acc=0.8, points=2):
    return {
        "base_model": "minilm-l6",
        "lr": 1e-4,
        "pooling": "mean",
        "accuracy": acc,
        "val_accuracy": [(j, acc * j / points) for j in range(1, points + 1)],
        "train_loss": [(j, 1 / j) for j in range(1, points + 1)],
    }


def page(code=None):
    at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=60)
    at.run()
    if code:
        at.session_state[JOINED] = code
    at.switch_page("pages/board.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def unlock(at, typed):
    at.text_input(key="teacher_key_typed").input(typed).run()
    at.button(key="teacher_unlock").click().run()


# --- row 8: "Start a board" 520 times from 4 sessions made 500 boards -------------------------


@pytest.mark.slow
@SQLITE_ONLY
def test_only_the_teacher_starts_a_board(cache, board, monkeypatch):
    at = page()  # no teacher key on the server: nobody starts a board, and the page says how
    assert not [b for b in at.button if b.key == "board_start"]
    assert any("BERT_EXPLORER_TEACHER_KEY" in i.value for i in at.info)
    monkeypatch.setenv("BERT_EXPLORER_TEACHER_KEY", "short")  # too short to count: still nobody
    at.run()
    assert not [b for b in at.button if b.key == "board_start"] and not [
        t for t in at.text_input if t.key == "teacher_key_typed"
    ]
    monkeypatch.setenv("BERT_EXPLORER_TEACHER_KEY", KEY)
    board.new_board()  # the teacher's board, which students must not be able to crowd out
    for _ in range(4):  # four students' sessions try keys
        student = page()
        for typed in ("", "a long teacher kez", KEY[:-1]):
            unlock(student, typed)
            assert any("not this server's teacher key" in e.value for e in student.error)
            assert not [b for b in student.button if b.key == "board_start"]
    assert board.boards_kept() == 1
    at.run()
    unlock(at, KEY)  # the teacher, once per session
    at.button(key="board_start").click().run()
    assert not at.exception and board.exists(at.session_state[JOINED]) and board.boards_kept() == 2
    at.button(key="board_start").click().run()  # still unlocked
    assert board.boards_kept() == 3 and "teacher_key_typed" not in at.session_state  # the key is not kept


def test_boards_per_server_are_bounded_and_empty_ones_go_first(cache, board, monkeypatch):
    monkeypatch.setattr(store, "MAX_BOARDS", 3)
    posted, _ = board.new_board(now=1000.0)
    live, _ = board.new_board(now=1001.0)
    board.new_board(now=1002.0)
    board.post(posted, "Ada", summary(), run_code="RUN001", student="browser:a", owner="browser:a", now=1003.0)
    board.go_live(live, "Bo", student="browser:b", now=1003.0)
    for i in range(10):  # a full server makes room from its empty boards, oldest first
        newest, _ = board.new_board(now=1010.0 + i)
        assert board.boards_kept() == 3 and board.exists(posted, now=1020.0) and board.exists(live, now=1020.0)
    board.post(newest, "Cy", summary(), run_code="RUN002", student="browser:c", owner="browser:c", now=1020.0)
    with pytest.raises(BoardError, match="3 boards in use"):
        board.new_board(now=1021.0)


# --- row 9: another's run posted 199 times as "bob"; "carol" refused; only "clear all" ------------


def test_a_run_once_a_nickname_its_students_and_three_posts_each(cache, board):
    code, key = board.new_board()
    bob = "browser:mallory"
    first = board.post(code, "bob", summary(), run_code="BOB001", student=bob, owner=bob)
    for _ in range(198):
        with pytest.raises(BoardError, match="posted once"):
            board.post(code, "bob", summary(), run_code="bob001", student=bob, owner=bob)
    for fresh in range(3):  # a fresh cookie is another student, but the run and "bob" stay taken
        with pytest.raises(BoardError, match="another browser"):
            board.post(code, "bob2", summary(), run_code="BOB001", student=f"browser:fresh{fresh}", owner=bob)
        for same in ("bob", "BOB ", "ｂｏｂ"):
            with pytest.raises(BoardError, match="Someone else"):
                board.post(
                    code,
                    same,
                    summary(),
                    run_code=f"F{fresh}XXXX",
                    student=f"browser:fresh{fresh}",
                    owner=f"browser:fresh{fresh}",
                )
    board.post(code, "bob", summary(), run_code="MAL002", student=bob, owner=bob)
    board.post(code, "bobby", summary(), run_code="MAL003", student=bob, owner=bob)
    with pytest.raises(BoardError, match="most each"):
        board.post(code, "bob", summary(), run_code="MAL004", student=bob, owner=bob)
    other = "browser:other"
    for i in range(1, 4):  # not bob's nicknames: fine, but three a student
        board.post(code, f"bob{i}", summary(), run_code=f"OTH00{i}", student=other, owner=other)
    with pytest.raises(BoardError, match="3 nicknames"):
        board.go_live(code, "bob4", student=other)
    board.post(code, "carol", summary(0.9), run_code="CAROL1", student="browser:carol", owner="browser:carol")
    assert [e["nickname"] for e in board.entries(code)] == ["bob", "bob", "bobby", "bob1", "bob2", "bob3", "carol"]

    before = board.version(code)
    with pytest.raises(BoardError, match="teacher key"):
        board.remove(code, "guess", first)
    assert board.remove(code, key, first) and not board.remove(code, key, first)
    assert [e["nickname"] for e in board.entries(code)] == [
        "bob",
        "bobby",
        "bob1",
        "bob2",
        "bob3",
        "carol",
    ]  # only that one
    assert board.version(code) == before + 1
    board.post(code, "bob", summary(0.7), run_code="BOB001", student=bob, owner=bob)  # its run may go on again


# --- a run is posted by the browser that trained it; removing an entry frees its nickname --------


def test_a_run_reopened_in_another_browser_cannot_be_posted(cache, board):
    code, _ = board.new_board()
    alice, mallory = "browser:alice", "browser:mallory"
    for nick in ("alice", "mallory"):  # her run, reopened by its code: under her name or his own
        with pytest.raises(BoardError, match="trained in another browser: only the student who trained"):
            board.post(code, nick, summary(0.99), run_code="ALICE1", student=mallory, owner=alice)
    with pytest.raises(BoardError, match="does not record which browser trained it"):
        board.post(code, "mallory", summary(), run_code="OLD001", student=mallory, owner=None)
    assert board.entries(code) == [] and board.version(code) == 0
    board.post(code, "alice", summary(0.7), run_code="alice1", student=alice, owner=alice)  # nothing was taken
    assert [(e["nickname"], e["accuracy"]) for e in board.entries(code)] == [("alice", 0.7)]


def test_removing_an_entry_gives_its_nickname_back(cache, board):
    code, key = board.new_board()
    alice, mallory = "browser:alice", "browser:mallory"
    taken = board.post(code, "Alice", summary(), run_code="MAL001", student=mallory, owner=mallory)
    with pytest.raises(BoardError, match="Someone else"):
        board.post(code, "alice", summary(), run_code="ALICE1", student=alice, owner=alice)
    assert board.remove(code, key, taken)
    board.post(code, "ａｌｉｃｅ ", summary(), run_code="ALICE1", student=alice, owner=alice)  # hers now
    with pytest.raises(BoardError, match="Someone else"):
        board.post(code, "ALICE", summary(), run_code="MAL002", student=mallory, owner=mallory)

    # a nickname its student still shows elsewhere on the board (another entry, a live run) stays theirs
    one = board.post(code, "Mal", summary(), run_code="MAL003", student=mallory, owner=mallory)
    board.post(code, "mal", summary(), run_code="MAL004", student=mallory, owner=mallory)
    live = board.go_live(code, "Cy", student="browser:cy")
    cy = board.post(code, "Cy", summary(), run_code="CY0001", student="browser:cy", owner="browser:cy")
    assert board.remove(code, key, one) and board.remove(code, key, cy)
    for nick in ("Mal", "cy"):
        with pytest.raises(BoardError, match="Someone else"):
            board.post(code, nick, summary(), run_code=f"{nick.upper()}999", student=alice, owner=alice)
    assert board.update_live(code, live, "done", 1.0, "", summary())


@pytest.mark.slow
@SQLITE_ONLY
def test_the_teacher_removes_one_entry_on_the_page(cache, board):
    code, key = board.new_board()
    bob = board.post(code, "bob", summary(0.99), run_code="BOB001", student="browser:m", owner="browser:m")
    board.post(code, "carol", summary(0.8), run_code="CAROL1", student="browser:c", owner="browser:c")
    at = page(code)
    at.text_input(key="board_clear_key").input(key).run()
    pick = at.selectbox(key="board_remove_pick")
    assert pick.options[0].startswith("bob · 99.0 % · posted ") and pick.options[1].startswith("carol · 80.0 %")
    pick.set_value(bob).run()
    at.button(key="board_remove").click().run()
    assert not at.exception and any("is removed" in i.value for i in at.info)
    assert [e["nickname"] for e in board.entries(code)] == ["carol"]
    assert list(at.dataframe[0].value["nickname"]) == ["carol"]


@SQLITE_ONLY
def test_a_board_file_of_the_first_version_is_upgraded_with_its_posts(cache, board):
    path = board.path
    path.parent.mkdir(parents=True)
    with sqlite3.connect(path) as conn:  # the tables as the first board made them
        conn.execute("CREATE TABLE boards (code TEXT PRIMARY KEY, key_hash TEXT NOT NULL, created REAL)")
        conn.execute(
            "CREATE TABLE entries (id INTEGER PRIMARY KEY AUTOINCREMENT, code TEXT NOT NULL, "
            "nickname TEXT NOT NULL, posted REAL NOT NULL, summary TEXT NOT NULL)"
        )
        conn.execute(
            "CREATE TABLE live (id INTEGER PRIMARY KEY AUTOINCREMENT, code TEXT NOT NULL, nickname TEXT NOT NULL, "
            "started REAL NOT NULL, updated REAL NOT NULL, state TEXT NOT NULL, progress REAL NOT NULL, "
            "line TEXT NOT NULL, summary TEXT NOT NULL)"
        )
        conn.execute("INSERT INTO boards VALUES ('ABCDEF', 'x', ?)", (time.time(),))
        conn.execute(
            "INSERT INTO entries (code, nickname, posted, summary) VALUES ('ABCDEF', 'old', ?, ?)",
            (time.time(), json.dumps(board_summary.clean_summary(summary()))),
        )
    assert [e["nickname"] for e in board.entries("ABCDEF")] == ["old"] and board.version("ABCDEF") == 0
    board.post("ABCDEF", "new", summary(), run_code="RUN001", student="browser:n", owner="browser:n")
    assert [e["nickname"] for e in board.entries("ABCDEF")] == ["old", "new"] and board.version("ABCDEF") == 1


# --- row 10: 200 runs x 200 points, refreshed every 5 s: 0.33 s and 0.52 MB a render a viewer -----


@pytest.mark.slow
@SQLITE_ONLY
def test_a_full_board_is_drawn_once_per_change_and_small(cache, board, monkeypatch):
    code, key = board.new_board()
    for i in range(store.MAX_ENTRIES):
        board.post(
            code,
            f"s{i}",
            summary(0.5 + i / 1000, points=200),
            run_code=f"R{i:05d}",
            student=f"browser:{i}",
            owner=f"browser:{i}",
        )
    runs = board.entries(code)
    assert len(runs) == 200 and len(runs[0]["val_accuracy"]) == 200  # stored in full, drawn thinned
    spec = pio.to_json(board_charts.posted_curves(runs), validate=False)
    assert len(spec) < 150_000, len(spec)  # drawn thinned: not 200 points a curve, with markers

    built, parsed = [], []
    real_curves, real_clean = board_charts.posted_curves, board_summary.clean_summary
    monkeypatch.setattr(board_charts, "_built", OrderedDict())
    monkeypatch.setattr(board_charts, "posted_curves", lambda r: built.append(1) or real_curves(r))
    monkeypatch.setattr(store, "clean_summary", lambda s: parsed.append(1) or real_clean(s))
    monkeypatch.setattr(store, "_read", OrderedDict())
    viewers = [page(code) for _ in range(3)]
    for v in viewers:
        v.run()
    assert len(built) == 1 and len(parsed) == 200  # six renders: one figure, the entries read once
    with pytest.raises(BoardError, match="full"):
        board.post(code, "late", summary(), run_code="LATE01", student="browser:late", owner="browser:late")
    assert board.remove(code, key, runs[0]["id"])
    for v in viewers:
        v.run()
    assert len(built) == 2 and len(parsed) == 200 + 1 + 199, "a change is read and drawn once more, for all"
    assert len(viewers[2].dataframe[0].value) == 199


def test_the_board_version_changes_only_with_the_posted_runs(cache, board):
    code, key = board.new_board()
    assert board.version(code) == 0 and board.version("ZZZZZZ" if code != "ZZZZZZ" else "YYYYYY") is None
    eid = board.post(code, "Ada", summary(), run_code="RUN001", student="browser:a", owner="browser:a")
    assert board.version(code) == 1
    live = board.go_live(code, "Ada", student="browser:a")
    board.update_live(code, live, "running", 0.5, "Step 5", summary())
    board.entries(code)
    board.live_runs(code)
    assert board.version(code) == 1  # live updates and reads do not redraw the posted runs
    board.remove(code, key, eid)
    assert board.version(code) == 2
    board.clear(code, key)
    assert board.version(code) == 3


# --- row 15: the Server status page was open to every student ----------------------------------


def test_the_status_page_is_the_teachers(cache, monkeypatch):
    at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=60)
    at.run()
    at.switch_page("pages/status.py").run()
    assert not at.exception and not at.metric  # no key on the server: nobody sees it
    assert [i.value for i in at.info] == [
        "This page is for the teacher. The person running this server turns it on by setting "
        "BERT_EXPLORER_TEACHER_KEY (at least 12 characters, README) and telling the teacher the key."
    ]
    monkeypatch.setenv("BERT_EXPLORER_TEACHER_KEY", KEY)
    at.run()
    assert not at.metric and any("for the teacher" in i.value for i in at.info)
    unlock(at, "wrong key, typed by a student")
    assert not at.metric and any("not this server's teacher key" in e.value for e in at.error)
    unlock(at, KEY)
    assert {"Jobs training", "Server memory now (RSS)"} <= {m.label for m in at.metric}
    monkeypatch.setenv("BERT_EXPLORER_TEACHER_KEY", KEY + " changed")  # a new key locks old sessions out
    at.run()
    assert not at.metric


# --- a class question answered as 199 students by one machine; a real student then refused -----

QUESTION = {"kind": "pieces", "prompt": "How many?", "choices": ["1", "2"], "answer": "1", "accept": ["1"]}


def classroom_on(board, clock):
    """A Classroom on `board` counting new answerers per address on the fake `clock`; a class
    (code, key) with a question open."""
    from app.class_store.classroom import Classroom
    from app.server.new_students import NewStudents

    answerers = NewStudents("BERT_EXPLORER_NEW_ANSWERERS_BURST", "BERT_EXPLORER_NEW_ANSWERER_EVERY_S", clock=clock)
    c = Classroom(board, answerers=answerers)
    code, key = board.new_board()
    q = c.ask(code, key, {**QUESTION, "why": "", "figure": None, "model": "tiny"})
    return c, code, key, q


def test_one_address_answers_a_question_as_a_class_not_as_two_hundred(cache, board, monkeypatch):
    from app.class_store.classroom import TooManyAnswerers

    monkeypatch.setenv("BERT_EXPLORER_NEW_ANSWERERS_BURST", "60")
    monkeypatch.setenv("BERT_EXPLORER_NEW_ANSWERER_EVERY_S", "30")
    now = [0.0]
    c, code, _, q = classroom_on(board, lambda: now[0])
    taken, refused = 0, []
    for i in range(199):  # the script: a fresh cookie an answer, 199 of them in 96 s
        now[0] = i * 96 / 199
        try:
            c.answer(code, q, f"browser:script{i}", "2", address="10.0.0.66")
            taken += 1
        except TooManyAnswerers as e:
            refused.append(str(e))
    assert taken == 60 + 3, taken  # a class's burst, then one every 30 s
    assert refused[0].startswith(
        "60 browsers on your network have just answered this question (then one more every 30 s). Try again in 2 s;"
    ), refused[0]
    c.answer(code, q, "browser:script0", "1", address="10.0.0.66")  # an answer given may still be changed
    for i in range(30):  # a class of 30 behind one router answers at once
        c.answer(code, q, f"browser:class{i}", "1", address="192.0.2.1")
    c.answer(code, q, "browser:real", "1", address="198.51.100.7")  # a student elsewhere is served
    c.answer(code, q, "browser:apptest", "1")  # no connection (AppTest, scripts): not counted
    tally, n = c.tally(q, c.class_poll(code)["question"]["version"])
    assert n == 63 + 30 + 1 + 1 and tally == {"1": 33, "2": 62}


def test_one_address_never_holds_more_than_half_a_question(cache, board, monkeypatch):
    from app.class_store.classroom import ANSWERS_PER_ADDRESS, MAX_ANSWERS, TooManyAnswerers

    monkeypatch.setenv("BERT_EXPLORER_NEW_ANSWERERS_BURST", "60")
    monkeypatch.setenv("BERT_EXPLORER_NEW_ANSWERER_EVERY_S", "30")
    now = [0.0]
    c, code, key, q = classroom_on(board, lambda: now[0])
    taken = 0
    for i in range(MAX_ANSWERS):  # the question left open for hours: a token every 30 s, then none
        now[0] += 30.0
        try:
            c.answer(code, q, f"browser:script{i}", "2", address="10.0.0.66")
            taken += 1
        except TooManyAnswerers as e:
            assert "have answered this question, the most one network may" in str(e), str(e)
    assert taken == ANSWERS_PER_ADDRESS == MAX_ANSWERS // 2
    for i in range(MAX_ANSWERS - ANSWERS_PER_ADDRESS):  # the other half is there for students elsewhere
        c.answer(code, q, f"browser:real{i}", "1", address=f"198.51.{i // 50}.{i % 50 + 1}")
    with pytest.raises(BoardError, match="200 students have answered"):
        c.answer(code, q, "browser:late", "1", address="203.0.113.9")
    c.reveal(code, key, q)
    q2 = c.ask(code, key, {**QUESTION, "why": "", "figure": None, "model": "tiny"})
    c.answer(code, q2, "browser:script0", "2", address="10.0.0.66")  # each question is a share of its own


def test_the_answer_box_counts_the_clients_address_and_says_when_to_retry(cache, board, monkeypatch):
    from app.board import question_view

    monkeypatch.setenv("BERT_EXPLORER_NEW_ANSWERERS_BURST", "1")
    monkeypatch.setenv("BERT_EXPLORER_NEW_ANSWERER_EVERY_S", "30")
    c, code, _, q = classroom_on(board, lambda: 0.0)
    who = {"student": "browser:a", "address": "10.0.0.66"}
    monkeypatch.setattr(question_view, "classroom", lambda: c)
    monkeypatch.setattr(question_view, "student_key", lambda: who["student"])
    monkeypatch.setattr(question_view, "client_address", lambda: who["address"])
    ss = question_view.st.session_state
    monkeypatch.setitem(ss, f"{question_view.TYPED}_{q}", "1")  # the radio's choice
    question_view._answer(code, q)
    assert c.my_answer(q, "browser:a") == "1" and question_view.ANSWER_NOTE not in ss
    who["student"] = "browser:b"  # a second fresh cookie from the same machine
    question_view._answer(code, q)
    assert c.my_answer(q, "browser:b") is None
    assert ss[question_view.ANSWER_NOTE] == (
        q,
        "1 browsers on your network have just answered this question (then one more every 30 s). "
        "Try again in 30 s; answers already given can still be changed.",
    )
    who["address"] = "198.51.100.7"  # the same browser on another network is a student of its own there
    question_view._answer(code, q)
    assert c.my_answer(q, "browser:b") == "1" and question_view.ANSWER_NOTE not in ss
