"""The class board (app/board/, pages/board.py) on each store (SQLite in a temporary cache folder,
PostgreSQL on the test set-up's server: the `board` fixture, conftest.py): its limits, a restart,
expiry, live runs, the page drawing a hostile nickname escaped, and a signed-in student's real name
kept for the board's teacher alone (shown on the teacher's own screen, never in projector mode, to a
classmate or on the Server status page; a board file of the previous schema upgraded). Two replicas
and the database going down: test_board_replicas.py."""

import json
import sqlite3
import time
from pathlib import Path

import pytest

from app.class_store import store
from app.class_store import summary as board_summary
from app.class_store.checks import nick_key
from app.class_store.errors import BoardError
from app.class_store.service import JOINED, TEACHER
from app.class_store.sqlite_store import SqliteStore
from app.class_store.store import KEEP_SECONDS, SCHEMA
from app.formatting import md_escape
from app.ui.links import PROJECTOR
from bert.train.finetune_args import FinetuneArgs
from tests.helpers import finetune_done, finetune_eval, finetune_start, finetune_step

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = "<img src=x onerror=a(1)>"  # 24 characters: the longest a nickname may be
DAY = 24 * 3600
TEACHER_KEY = "correct horse battery"
SQLITE_ONLY = pytest.mark.parametrize("board", ["sqlite"], indirect=True)  # slow page tests: the default store


_runs = iter(range(10**6))


def post(board, code, nick, summary, student=None, **kw):
    """board.post with a fresh run code; the student is the nickname's unless given, and the run
    theirs unless `owner` says whose."""
    student = student or f"browser:{nick}"
    kw.setdefault("owner", student)
    return board.post(code, nick, summary, run_code=f"R{next(_runs):05d}", student=student, **kw)


def run_summary(acc=0.8, lr=2e-4, pooling="mean", batch=16):
    return {
        "base_model": "minilm-l6",
        "lr": lr,
        "batch_size": batch,
        "epochs": 1,
        "pooling": pooling,
        "max_length": 64,
        "dataset": "reviews.csv",
        "accuracy": acc,
        "val_accuracy": [(5, acc - 0.1), (10, acc)],
        "train_loss": [(1, 0.7), (10, 0.4)],
    }


def test_round_trip_and_restart(board, replica, tmp_path, monkeypatch):
    code, key = board.new_board()
    assert len(code) == 6 and code.isalnum() and code.isupper() and key
    assert (tmp_path / "board" / "board.sqlite").is_file() == isinstance(board, SqliteStore)
    eid = post(board, code.lower() + " ", "Ada", run_summary())
    (e,) = board.entries(code)
    assert e["id"] == eid and e["nickname"] == "Ada" and e["accuracy"] == 0.8 and e["pooling"] == "mean"
    assert e["val_accuracy"] == [[5, pytest.approx(0.7)], [10, 0.8]] and e["batch_size"] == 16
    monkeypatch.setattr(store, "_read", type(store._read)())  # a "restart": nothing read yet,
    assert replica.entries(code) == [e]  # new connections, same database


def test_refusals(board):
    code, key = board.new_board()
    with pytest.raises(BoardError, match="no board"):
        post(board, "ZZZZZZ" if code != "ZZZZZZ" else "YYYYYY", "Ada", run_summary())
    with pytest.raises(BoardError, match="6 letters"):
        board.entries("../x")
    for bad in ("", "   ", "x" * 25, "a\nb", "<img src=x onerror=alert(1)>", "<b>" * 3_500):  # 10 kB: refused
        with pytest.raises(BoardError):
            post(board, code, bad, run_summary())
    post(board, code, "x" * 24, run_summary())
    with pytest.raises(BoardError, match="teacher key"):
        board.clear(code, "wrong")
    assert board.clear(code, key) == 1 and board.entries(code) == []


def test_max_entries_and_bounded_curves(board, monkeypatch):
    monkeypatch.setattr(store, "MAX_ENTRIES", 3)
    code, _ = board.new_board()
    long = {**run_summary(), "val_accuracy": [(i, 0.5) for i in range(5000)], "pooling": "p" * 1000, "texts": ["t"]}
    for i in range(3):
        post(board, code, f"s{i}", long)
    with pytest.raises(BoardError, match="full"):
        post(board, code, "s4", run_summary())
    e = board.entries(code)[0]
    assert len(e["val_accuracy"]) == board_summary.MAX_POINTS and e["val_accuracy"][-1][0] == 4999
    assert len(e["pooling"]) == board_summary.TEXT_CHARS and "texts" not in e


def test_expiry_after_a_day(board):
    t0 = time.time()
    old, _ = board.new_board(now=t0 - DAY - 60)
    code, _ = board.new_board(now=t0 - 3600)
    post(board, code, "early", run_summary(), now=t0 - 3600)
    post(board, code, "late", run_summary(), now=t0)
    assert not board.exists(old, now=t0)
    assert [e["nickname"] for e in board.entries(code, now=t0)] == ["early", "late"]
    board.expire(now=t0 - 3600 + DAY + 1)
    assert not board.exists(code, now=t0 - 3600 + DAY + 1)


def test_summary_of_never_holds_texts():
    secret = "my private review text"
    res = {
        "info": {
            "base_name": "minilm-l6",
            "args": FinetuneArgs(data="/tmp/uploads/reviews.csv", lr=1e-3, batch_size=8, epochs=2, pooling="cls"),
            "train": f"200 texts in 2 classes; first: {secret}",
            "classes": ["neg", "pos"],
        },
        "report": {"accuracy": 0.9, "mistakes": [{"text": secret}], "texts": [secret]},
        "done": finetune_done(20, accuracy=0.85, classes=[secret, "pos"], notes=[secret]),
        "metrics": [finetune_start(499, classes=[secret, "pos"])]
        + [finetune_step(s, loss=1 / s) for s in range(1, 500)]
        + [finetune_eval(10, accuracy=0.8), finetune_eval(20, accuracy=0.9)],
    }
    s = board_summary.summary_of(res)
    assert secret not in json.dumps(s)
    assert s["dataset"] == "reviews.csv" and s["accuracy"] == 0.9 and s["pooling"] == "cls" and s["lr"] == 1e-3
    assert s["val_accuracy"] == [[10, 0.8], [20, 0.9]] and len(s["train_loss"]) == board_summary.MAX_POINTS


def _head_res(head: str, scores: dict, evals: list[dict]) -> dict:
    """A finished per-token run's result dict: its settings, steps, evaluations and Done."""
    from bert.train.events import TaskHeadDone, TaskHeadEval, TaskHeadStep
    from bert.train.task_head_args import for_task_head

    steps = [TaskHeadStep(step=s, epoch=0, loss=1 / s, loss_smooth=1 / s, lr=1e-4, progress=s / 30, eta_s=1.0,
                      examples_per_s=9.0) for s in range(1, 31)]  # fmt: skip
    evs = [TaskHeadEval(step=10 * (k + 1), epoch=0, val_loss=0.5, scores=e, best=0.0, eval_seconds=1.0)
           for k, e in enumerate(evals)]  # fmt: skip
    done = TaskHeadDone(stopped=False, step=30, steps=30, best_step=30, error=None, scores=scores, seconds=9.0,
                    train_seconds=8.0, report={"worst": [{"words": ["my", "secret"]}]})  # fmt: skip
    args = for_task_head(head, data="/tmp/uploads/my-texts.json" if head == "reader" else "builtin:brown-pos")
    return {"info": {"base_name": "minilm-l6", "args": args}, "done": done, "metrics": [*steps, *evs]}


def test_a_head_runs_summary_posts_its_own_scores_as_fractions():
    tagger = _head_res("tagger", {"accuracy": 0.9, "f1": None}, [{"accuracy": 0.5, "f1": None}, {"accuracy": 0.9}])
    s = board_summary.summary_of(tagger)
    assert s["task"] == "tagger" and s["dataset"] == "brown-pos" and s["pooling"] is None and s["lr"] == 1e-4
    assert s["accuracy"] == 0.9 and s["other_score"] is None  # part of speech: no entities
    assert s["val_accuracy"] == [[10, 0.5], [20, 0.9]] and len(s["train_loss"]) == 30
    reader = _head_res("reader", {"exact_match": 50.0, "f1": 75.0}, [{"exact_match": 40.0, "f1": 60.0}])
    s = board_summary.summary_of(reader)  # the trainer's percent, posted as fractions
    assert s["task"] == "reader" and s["dataset"] == "my-texts.json" and s["max_length"] == 96
    assert s["accuracy"] == 0.75 and s["other_score"] == 0.5 and s["val_accuracy"] == [[10, 0.6]]
    assert "secret" not in json.dumps(s)
    assert board_summary.clean_summary({"task": "<b>x</b>"})["task"] == "classifier"  # an unknown task: none
    assert board_summary.clean_summary(run_summary())["task"] == "classifier"  # posts from before tasks


@SQLITE_ONLY
def test_page_draws_each_tasks_runs_in_a_table_and_chart_of_its_own(board, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("BERT_EXPLORER_BOARD", "1")
    code, _ = board.new_board()
    post(board, code, "Cy", run_summary(0.7))
    for nick, res in (
        ("Ada", _head_res("tagger", {"accuracy": 0.8, "f1": 0.6}, [{"accuracy": 0.8, "f1": 0.6}])),
        ("Bo", _head_res("reader", {"exact_match": 50.0, "f1": 75.0}, [{"exact_match": 50.0, "f1": 75.0}])),
    ):
        post(board, code, nick, board_summary.summary_of(res))
    at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=60)
    at.run()
    at.session_state[JOINED] = code
    at.switch_page("pages/board.py").run()
    assert not at.exception, [e.value for e in at.exception]
    tables = [t.value for t in at.dataframe]
    assert [list(t["nickname"]) for t in tables] == [["Cy"], ["Ada"], ["Bo"]]
    assert list(tables[0].columns[:2]) == ["nickname", "accuracy %"] and "pooling" in tables[0].columns
    assert list(tables[1].columns[1:3]) == ["word accuracy %", "entity F1 %"] and "pooling" not in tables[1]
    assert list(tables[2].iloc[0][["F1 %", "exact match %"]]) == [75.0, 50.0]
    shown = [m.value for m in at.markdown]
    assert any(v.startswith("**Label every word**") for v in shown) and any("**Find the answer**" in v for v in shown)
    charts = [json.loads(e.proto.spec) for e in at.main if getattr(e, "type", "") == "plotly_chart"]
    assert [c["layout"]["yaxis"]["title"]["text"] for c in charts] == ["accuracy", "word accuracy", "F1"]


def test_what_the_best_share():
    runs = [
        {"nickname": "a", **run_summary(0.9, lr=2e-4, pooling="mean", batch=16)},
        {"nickname": "b", **run_summary(0.88, lr=2e-4, pooling="mean", batch=32)},
        {"nickname": "c", **run_summary(0.87, lr=2e-4, pooling="mean", batch=8)},
        {"nickname": "d", **run_summary(0.5, lr=1e-5, pooling="cls", batch=16)},
        {"nickname": "e", **run_summary(), "accuracy": None},
    ]
    share = board_summary.what_the_best_share(runs)
    assert "pooling: mean" in share and "learning rate: 0.0002" in share
    assert not any(s.startswith("batch size") for s in share)
    assert board_summary.what_the_best_share(runs[:1]) == []


def test_page_draws_a_hostile_nickname_escaped(board, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("BERT_EXPLORER_BOARD", "1")
    code, _ = board.new_board()
    post(board, code, HOSTILE, run_summary())
    post(board, code, "Bo", run_summary(0.7))
    assert board.entries(code)[0]["nickname"] == HOSTILE  # stored verbatim
    at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=60)
    at.run()
    at.session_state[JOINED] = code
    at.switch_page("pages/board.py").run()
    assert not at.exception, [e.value for e in at.exception]
    shown = [m.value for m in at.markdown] + [c.value for c in at.caption] + [s.value for s in at.subheader]
    assert not any(HOSTILE in v for v in shown), shown
    assert any("pooling: mean" in v for v in shown) and at.title[0].value == "Class board"
    assert list(at.dataframe[0].value["nickname"]) == [HOSTILE, "Bo"]  # a table cell is text, sorted by accuracy
    charts = [e for e in at.main if getattr(e, "type", "") == "plotly_chart"]
    assert len(charts) == 1
    spec = charts[0].proto.spec
    assert HOSTILE not in spec and "&lt;img" in spec


@pytest.mark.slow
@SQLITE_ONLY
def test_post_button_on_the_finetuning_results(board, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from app import state, students
    from app.run_session import session as ts
    from tests.helpers import finished_result

    base, res = finished_result()
    res["code"] = "ABCDEF"  # as a run saved under its run code has
    res["student"] = "session:tester"  # trained here: a session without the browser's cookie
    at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=60)
    at.run()
    at.session_state[students.OWNER] = "tester"
    at.session_state[state.USER_MODELS]["tiny"] = base
    at.session_state[state.USER_MODEL_IDS]["tiny"] = "session:tiny:t"
    at.session_state[ts.FT_RESULTS] = [res]
    at.switch_page("pages/finetune.py").run()
    assert not at.exception and not [t for t in at.text_input if t.key == "ft_board_nick"]  # the board is off
    monkeypatch.setenv("BERT_EXPLORER_BOARD", "1")
    code, _ = board.new_board()
    at.session_state[JOINED] = code
    at.run()
    at.button(key=f"ft_board_post_{res['job_id']}").click().run()
    assert [e.value for e in at.error] == ["Type a nickname to post under\\."]
    at.text_input(key="ft_board_nick").input("Ada").run()
    at.button(key=f"ft_board_post_{res['job_id']}").click().run()
    assert not at.exception and any("Posted to board" in s.value for s in at.success)
    (e,) = board.entries(code)
    assert e["nickname"] == "Ada" and e["pooling"] == "mean" and e["accuracy"] == res["report"]["accuracy"]
    at.button(key=f"ft_board_post_{res['job_id']}").click().run()  # the same run again: once is enough
    assert any("posted once" in e.value for e in at.error) and len(board.entries(code)) == 1


@SQLITE_ONLY
def test_class_code_box_first_and_a_code_typed_as_the_key_is_sent_there(board, monkeypatch):
    """A phone stacks the columns: the students' Class code box comes before the teacher key's;
    a class code typed in the key's box gets a message that says where it goes."""
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("BERT_EXPLORER_TEACHER_KEY", TEACHER_KEY)
    monkeypatch.setenv("BERT_EXPLORER_BOARD", "1")
    at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=60)
    at.run()
    at.switch_page("pages/board.py").run()
    boxes = [t.key for t in at.text_input]
    assert boxes.index("board_join_code") < boxes.index("teacher_key_typed")
    at.text_input(key="teacher_key_typed").input(" k7qx2m ").run()
    at.button(key="teacher_unlock").click().run()
    assert [e.value for e in at.error] == [
        "That looks like a class code, not the teacher key: type it in the Class code box instead."
    ]
    at.text_input(key="teacher_key_typed").input("not the key at all").run()
    at.button(key="teacher_unlock").click().run()
    assert [e.value for e in at.error] == ["That is not this server's teacher key."]
    assert not [b for b in at.button if b.key == "board_start"]


@pytest.mark.slow
@SQLITE_ONLY
def test_page_start_join_and_clear(board, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("BERT_EXPLORER_TEACHER_KEY", TEACHER_KEY)
    at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=60)
    at.run()
    with pytest.raises(ValueError, match="Could not find a navigation page"):
        at.switch_page("pages/board.py")  # off: not in the page list
    monkeypatch.setenv("BERT_EXPLORER_BOARD", "1")
    at.run()
    at.switch_page("pages/board.py").run()
    at.text_input(key="board_join_code").input("nope").run()
    at.button(key="board_join").click().run()
    assert "6 letters" in at.error[0].value and JOINED not in at.session_state
    at.text_input(key="teacher_key_typed").input(TEACHER_KEY).run()
    at.button(key="teacher_unlock").click().run()
    at.button(key="board_start").click().run()
    code = at.session_state[JOINED]
    assert not at.exception and code in at.success[0].value and board.exists(code)
    at.toggle(key="board_show_key").set_value(True).run()
    key = next(c.value for c in at.code if len(c.value) == 16)  # token_urlsafe(12)
    at.button(key="board_created_done").click().run()
    post(board, code, "Ada", run_summary())
    at.text_input(key="board_clear_key").input("wrong").run()
    at.button(key="board_clear").click().run()
    assert "teacher key" in at.error[0].value and len(board.entries(code)) == 1
    at.text_input(key="board_clear_key").input(key).run()
    at.button(key="board_clear").click().run()
    assert not at.exception and board.entries(code) == []
    assert not any(c.value == key for c in at.code)  # shown until Done


def shown_text(at) -> list[str]:
    """Every text the page shows (main area and sidebar): what a projector would show."""
    kinds = ("markdown", "code", "success", "info", "warning", "error", "caption", "text", "title", "header")
    return [e.value for kind in kinds + ("subheader", "latex") for e in getattr(at, kind)]


@pytest.mark.slow
@SQLITE_ONLY
def test_a_started_board_shows_its_code_big_and_its_key_only_when_revealed(board, monkeypatch):
    """A teacher projects the page to hand out the class code: the board's key, which gives the
    teacher's powers, stays off the screen until revealed, and the page says why."""
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("BERT_EXPLORER_TEACHER_KEY", TEACHER_KEY)
    monkeypatch.setenv("BERT_EXPLORER_BOARD", "1")
    at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=60)
    at.run()
    at.switch_page("pages/board.py").run()
    at.text_input(key="teacher_key_typed").input(TEACHER_KEY).run()
    at.button(key="teacher_unlock").click().run()
    at.button(key="board_start").click().run()
    code = at.session_state[JOINED]
    key = at.session_state["board_clear_key"]  # the remove/clear box holds it, masked (a password box)
    assert not at.exception and len(key) == 16 and board.clear(code, key) == 0  # the board's key
    for _ in range(2):  # and on the next run of the page
        assert any(m.value == f"# Class code: {code}" for m in at.markdown)  # a heading: big on a projector
        assert not any(key in v for v in shown_text(at)), "the key is on the screen"
        assert "hidden so that this page can be projected" in at.success[0].value
        assert "teacher's powers" in at.toggle(key="board_show_key").label
        at.run()
    at.toggle(key="board_show_key").set_value(True).run()
    assert key in [c.value for c in at.code]
    at.toggle(key="board_show_key").set_value(False).run()
    assert not any(key in v for v in shown_text(at))
    at.button(key="board_created_done").click().run()
    assert not at.exception and not any(code in m.value for m in at.markdown if m.value.startswith("#"))
    assert not [t for t in at.toggle if t.key == "board_show_key"] and f"Board {code}" in at.header[0].value


@pytest.mark.slow
@SQLITE_ONLY
def test_a_run_reopened_in_another_browser_is_not_posted_from_the_finetuning_page(board, monkeypatch):
    """A classmate's run code reopened here can be explored, not posted: the page says why. A run
    this browser trained, reopened, is posted as before."""
    from streamlit.testing.v1 import AppTest

    from app import students
    from app.jobs import saved_runs
    from app.jobs.records import stored_record
    from tests.helpers import finished_result

    _, res = finished_result()
    record = stored_record({k: res[k] for k in ("kind", "status", "error", "metrics", "report", "done", "info")})
    saved_runs.save_run("ALICE2", res["bundle"], {**record, "name": "alice's"}, student="browser:alice")
    saved_runs.save_run("MINE22", res["bundle"], {**record, "name": "mine"}, student="session:tester")
    monkeypatch.setenv("BERT_EXPLORER_BOARD", "1")
    code, _ = board.new_board()
    at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=60)
    at.run()
    at.session_state[students.OWNER] = "tester"  # this session, without the browser's cookie: "session:tester"
    at.session_state[JOINED] = code
    at.switch_page("pages/finetune.py").run()
    at.text_input(key="ft_reopen_code").input("alice2").run()
    at.button(key="ft_reopen").click().run()  # the reopened run is the one shown
    assert not at.exception, [e.value for e in at.exception]
    at.text_input(key="ft_board_nick").input("alice").run()
    at.button(key="ft_board_post_ALICE2").click().run()
    errors = [e.value for e in at.error]
    assert any("trained in another browser" in e and "only the student who trained" in e for e in errors), errors
    assert board.entries(code) == []
    at.text_input(key="ft_reopen_code").input("mine22").run()
    at.button(key="ft_reopen").click().run()
    at.text_input(key="ft_board_nick").input("Tess").run()
    at.button(key="ft_board_post_MINE22").click().run()
    assert not at.exception and any("Posted to board" in s.value for s in at.success)
    board.post(code, "alice", {}, run_code="ALICE2", student="browser:alice", owner="browser:alice")  # still hers
    assert [e["nickname"] for e in board.entries(code)] == ["Tess", "alice"]


def test_live_runs_store_limits_and_expiry(board):
    code, key = board.new_board()
    t0 = 1_000_000.0
    ids = [board.go_live(code, f"s{i}", student=f"b{i}", now=t0) for i in range(store.MAX_LIVE)]
    with pytest.raises(BoardError, match="live on board"):
        board.go_live(code, "one more", student="b9", now=t0)
    assert board.update_live(code, ids[0], "running", 0.4, "Step 4 of 10", run_summary(), now=t0 + 1)
    assert board.update_live(code, ids[1], "done", 7, "x" * 999, run_summary(acc=0.9), now=t0 + 1)
    runs = {r["id"]: r for r in board.live_runs(code, now=t0 + 2)}
    assert runs[ids[0]]["state"] == "running" and runs[ids[0]]["progress"] == 0.4
    assert runs[ids[0]]["val_accuracy"] == [[5, pytest.approx(0.7)], [10, 0.8]]
    assert runs[ids[1]]["progress"] == 1.0 and len(runs[ids[1]]["line"]) == store.LINE_CHARS
    assert runs[ids[2]]["state"] == "queued"
    board.go_live(code, "next", student="b1", now=t0 + 2)  # one finished: a slot is free again
    later = t0 + store.LIVE_STALE_S + 10  # not heard from for a minute: lost, and its slot is free
    assert {r["state"] for r in board.live_runs(code, now=later) if r["id"] != ids[1]} == {"lost"}
    board.go_live(code, "after", student="b0", now=later)
    assert board.live_runs(code, now=t0 + store.LIVE_KEEP_S + 20)[0]["nickname"] == "after"  # the rest expired
    board.clear(code, key)
    assert board.live_runs(code, now=later) == []
    assert not board.update_live(code, ids[0], "running", 0.5, "", run_summary(), now=later)  # cleared: gone


@pytest.mark.slow
@SQLITE_ONLY
def test_a_run_shown_live_from_the_finetuning_page(board, monkeypatch):
    """A student shows a running fine-tuning job live; the board's live section draws it with its
    nickname escaped, and its last state (stopped) is written when the job ends."""
    from streamlit.testing.v1 import AppTest

    from app import students
    from app.jobs.local import manager
    from app.jobs.spec import FINETUNE
    from app.run_session import session as ts
    from app.training import board_buttons
    from bert.data.labelled import stratified_split
    from bert.train.events import FinetuneEval, of_type
    from tests.helpers import fast_args, finetune_fn, tiny_bundle, tiny_data

    monkeypatch.setenv("BERT_EXPLORER_BOARD", "1")
    code, _ = board.new_board()
    at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=60)
    at.run()
    at.session_state[JOINED] = code
    at.switch_page("pages/finetune.py").run()
    train, valid = stratified_split(tiny_data(80), 0.25, seed=0)
    jm = manager()
    fn = finetune_fn(tiny_bundle(), train, valid, fast_args(epochs=500, eval_every=2, name="live"))
    job, _ = jm.submit_for(at.session_state[students.OWNER], FINETUNE, fn, "live")
    job.info = {"base_name": "tiny", "args": fast_args(epochs=500), "code": "ABCDEF"}  # as start does
    try:
        at.session_state[ts.FT_JOB] = job.id
        deadline = time.time() + 60
        while len(of_type(job.metrics, FinetuneEval)) < 2 and time.time() < deadline:
            at.run()
            time.sleep(0.3)
        at.text_input(key=board_buttons.LIVE_NICK).input(HOSTILE).run()
        at.button(key="ft_board_go_live").click().run()
        assert not at.exception and any("live on board" in s.value for s in at.success)
        (r,) = board.live_runs(code)
        assert r["nickname"] == HOSTILE and r["state"] == "running" and r["train_loss"] and r["val_accuracy"]
        assert r["base_model"] == "tiny" and r["pooling"] == "mean" and "Step" in r["line"]
        viewer = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=60)  # another student
        viewer.run()
        viewer.session_state[JOINED] = code
        viewer.switch_page("pages/board.py").run()
        assert not viewer.exception and any(m.value == "Live now" for m in viewer.subheader)
        assert any(md_escape(HOSTILE) in m.value for m in viewer.markdown), "nickname escaped"
        spec = next(e for e in viewer.main if getattr(e, "type", "") == "plotly_chart").proto.spec
        assert HOSTILE not in spec and "&lt;img" in spec
    finally:
        job.stop()
        jm.wait(job, 30)
    at.run()
    (r,) = board.live_runs(code)
    assert r["state"] == "stopped" and r["progress"] == 1.0 and r["accuracy"] is not None


NAME, EMAIL = "Alice Liddell", "alice@school.example"


def test_a_signed_in_students_name_is_kept_for_the_boards_teacher_alone(board, replica, caplog):
    caplog.set_level("DEBUG")
    code, key = board.new_board()
    post(board, code, "rabbit", run_summary(), student="user:alice", name=NAME, email=EMAIL)
    post(board, code, "Bo", run_summary(0.7))  # anonymous: nothing kept
    board.go_live(code, "Cat", student="user:cy", name="Cy\x00 \u202eRay\n", email="")
    assert replica.names(code.lower(), key) == {  # another replica, or the server restarted
        nick_key("rabbit"): (NAME, EMAIL),
        nick_key("Cat"): ("Cy Ray", ""),  # one line, no control or format characters
    }
    assert all(NAME not in str(e) for e in board.entries(code))  # what everyone reads
    assert NAME not in str(board.live_runs(code))
    with pytest.raises(BoardError, match="teacher key"):
        board.names(code, "wrong")
    other, other_key = board.new_board()
    assert board.names(other, other_key) == {}  # another class's board knows none of them
    assert NAME not in caplog.text and EMAIL not in caplog.text


def test_a_name_goes_with_its_board(board):
    t0 = time.time()
    code, key = board.new_board(now=t0)
    post(board, code, "rabbit", run_summary(), student="user:alice", name=NAME, email=EMAIL, now=t0)
    board.expire(now=t0 + KEEP_SECONDS + 1)
    with board.transaction(write=False) as db:
        assert db.execute("SELECT COUNT(*) FROM names").fetchone()[0] == 0


@SQLITE_ONLY
def test_a_board_file_of_the_previous_schema_is_upgraded_with_its_posts_kept(board):
    code, key = board.new_board()
    post(board, code, "Ada", run_summary())
    with sqlite3.connect(board.path) as conn:  # as the previous version left it: no names table
        conn.execute("DROP TABLE names")
        conn.execute(f"PRAGMA user_version = {SCHEMA - 1}")
    again = SqliteStore(board.path)
    post(again, code, "rabbit", run_summary(), student="user:alice", name=NAME, email=EMAIL)
    assert [e["nickname"] for e in again.entries(code)] == ["Ada", "rabbit"]
    assert again.names(code, key) == {nick_key("rabbit"): (NAME, EMAIL)}
    with sqlite3.connect(board.path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA


def _page(path: str, **state):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=60)
    at.run()
    for k, v in state.items():
        at.session_state[k] = v
    at.switch_page(path).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _seen(at) -> str:
    """Everything the page shows, its tables' cells and metrics included, Markdown's escapes (and
    the word joiner that keeps an email from becoming a link) out."""
    cells = [t.value.to_csv() for t in at.dataframe] + [f"{m.label} {m.value}" for m in at.metric]
    return "\n".join(shown_text(at) + cells).replace("\\", "").replace("\u2060", "")


@pytest.mark.slow
@SQLITE_ONLY
def test_the_teachers_own_screen_names_students_and_the_projector_classmates_and_status_do_not(board, monkeypatch):
    monkeypatch.setenv("BERT_EXPLORER_BOARD", "1")
    monkeypatch.setenv("BERT_EXPLORER_TEACHER_KEY", TEACHER_KEY)
    code, key = board.new_board()
    post(board, code, "rabbit", run_summary(0.9), student="user:alice", name=NAME, email=EMAIL)
    post(board, code, "Bo", run_summary(0.7))
    board.go_live(code, "rabbit", student="user:alice", name=NAME, email=EMAIL)

    teacher = _page("pages/board.py", **{JOINED: code, TEACHER: (code, key)})
    (table,) = [t.value for t in teacher.dataframe]
    assert list(table["nickname"]) == ["rabbit", "Bo"] and list(table["name"]) == [f"{NAME} ({EMAIL})", ""]
    assert f"**rabbit** ({NAME} ({EMAIL})) · waiting" in _seen(teacher)  # the run shown live

    projector = _page("pages/board.py", **{JOINED: code, TEACHER: (code, key), PROJECTOR: True})
    classmate = _page("pages/board.py", **{JOINED: code})
    for at in (projector, classmate):
        assert list(at.dataframe[0].value["nickname"]) == ["rabbit", "Bo"] and "name" not in at.dataframe[0].value
        assert "rabbit" in _seen(at) and NAME not in _seen(at) and EMAIL not in _seen(at)

    status = _page("pages/status.py", **{JOINED: code, TEACHER: (code, key)})
    status.text_input(key="teacher_key_typed").input(TEACHER_KEY).run()
    status.button(key="teacher_unlock").click().run()
    assert status.metric and NAME not in _seen(status) and EMAIL not in _seen(status)
