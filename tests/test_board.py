"""The class board (app/board.py, pages/board.py): the SQLite store in a temporary cache folder,
its limits, and the page drawing a hostile nickname escaped."""

import importlib
import json
import time
from pathlib import Path

import pytest

from app import board
from bert.finetune import FinetuneArgs
from tests.helpers import finetune_done, finetune_eval, finetune_start, finetune_step

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = "<img src=x onerror=a(1)>"  # 24 characters: the longest a nickname may be
DAY = 24 * 3600


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BERT_EXPLORER_CACHE", str(tmp_path))
    return tmp_path


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


def test_round_trip_and_restart(cache):
    code, key = board.new_board()
    assert len(code) == 6 and code.isalnum() and code.isupper() and key
    assert (cache / "board" / "board.sqlite").is_file()
    eid = board.post(code.lower() + " ", "Ada", run_summary())
    (e,) = board.entries(code)
    assert e["id"] == eid and e["nickname"] == "Ada" and e["accuracy"] == 0.8 and e["pooling"] == "mean"
    assert e["val_accuracy"] == [[5, pytest.approx(0.7)], [10, 0.8]] and e["batch_size"] == 16
    again = importlib.reload(board)  # a "restart": a new module, new connections, same file
    assert again.entries(code) == [e]


def test_refusals(cache):
    code, key = board.new_board()
    with pytest.raises(board.BoardError, match="no board"):
        board.post("ZZZZZZ" if code != "ZZZZZZ" else "YYYYYY", "Ada", run_summary())
    with pytest.raises(board.BoardError, match="6 letters"):
        board.entries("../x")
    for bad in ("", "   ", "x" * 25, "a\nb", "<img src=x onerror=alert(1)>", "<b>" * 3_500):  # 10 kB: refused
        with pytest.raises(board.BoardError):
            board.post(code, bad, run_summary())
    board.post(code, "x" * 24, run_summary())
    with pytest.raises(board.BoardError, match="teacher key"):
        board.clear(code, "wrong")
    assert board.clear(code, key) == 1 and board.entries(code) == []


def test_max_entries_and_bounded_curves(cache, monkeypatch):
    monkeypatch.setattr(board, "MAX_ENTRIES", 3)
    code, _ = board.new_board()
    long = {**run_summary(), "val_accuracy": [(i, 0.5) for i in range(5000)], "pooling": "p" * 1000, "texts": ["t"]}
    for i in range(3):
        board.post(code, f"s{i}", long)
    with pytest.raises(board.BoardError, match="full"):
        board.post(code, "s4", run_summary())
    e = board.entries(code)[0]
    assert len(e["val_accuracy"]) == board.MAX_POINTS and e["val_accuracy"][-1][0] == 4999
    assert len(e["pooling"]) == board.TEXT_CHARS and "texts" not in e


def test_expiry_after_a_day(cache):
    t0 = time.time()
    old, _ = board.new_board(now=t0 - DAY - 60)
    code, _ = board.new_board(now=t0 - 3600)
    board.post(code, "early", run_summary(), now=t0 - 3600)
    board.post(code, "late", run_summary(), now=t0)
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
    s = board.summary_of(res)
    assert secret not in json.dumps(s)
    assert s["dataset"] == "reviews.csv" and s["accuracy"] == 0.9 and s["pooling"] == "cls" and s["lr"] == 1e-3
    assert s["val_accuracy"] == [[10, 0.8], [20, 0.9]] and len(s["train_loss"]) == board.MAX_POINTS


def test_what_the_best_share():
    runs = [
        {"nickname": "a", **run_summary(0.9, lr=2e-4, pooling="mean", batch=16)},
        {"nickname": "b", **run_summary(0.88, lr=2e-4, pooling="mean", batch=32)},
        {"nickname": "c", **run_summary(0.87, lr=2e-4, pooling="mean", batch=8)},
        {"nickname": "d", **run_summary(0.5, lr=1e-5, pooling="cls", batch=16)},
        {"nickname": "e", **run_summary(), "accuracy": None},
    ]
    share = board.what_the_best_share(runs)
    assert "pooling: mean" in share and "learning rate: 0.0002" in share
    assert not any(s.startswith("batch size") for s in share)
    assert board.what_the_best_share(runs[:1]) == []


def test_page_draws_a_hostile_nickname_escaped(cache, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("BERT_EXPLORER_BOARD", "1")
    code, _ = board.new_board()
    board.post(code, HOSTILE, run_summary())
    board.post(code, "Bo", run_summary(0.7))
    assert board.entries(code)[0]["nickname"] == HOSTILE  # stored verbatim
    at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=60)
    at.run()
    at.session_state[board.JOINED] = code
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


def test_post_button_on_the_finetuning_results(cache, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from app import state
    from app import train_state as ts
    from tests.test_training_pages import _finished_result

    base, res = _finished_result()
    at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=60)
    at.run()
    at.session_state[state.USER_MODELS]["tiny"] = base
    at.session_state[state.USER_MODEL_IDS]["tiny"] = "session:tiny:t"
    at.session_state[ts.FT_RESULTS] = [res]
    at.switch_page("pages/finetune.py").run()
    assert not at.exception and not [t for t in at.text_input if t.key == "ft_board_nick"]  # the board is off
    monkeypatch.setenv("BERT_EXPLORER_BOARD", "1")
    code, _ = board.new_board()
    at.session_state[board.JOINED] = code
    at.run()
    at.button(key=f"ft_board_post_{res['job_id']}").click().run()
    assert [e.value for e in at.error] == ["Type a nickname to post under\\."]
    at.text_input(key="ft_board_nick").input("Ada").run()
    at.button(key=f"ft_board_post_{res['job_id']}").click().run()
    assert not at.exception and any("Posted to board" in s.value for s in at.success)
    (e,) = board.entries(code)
    assert e["nickname"] == "Ada" and e["pooling"] == "mean" and e["accuracy"] == res["report"]["accuracy"]


def test_page_start_join_and_clear(cache, monkeypatch):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=60)
    at.run()
    with pytest.raises(ValueError, match="Could not find a navigation page"):
        at.switch_page("pages/board.py")  # off: not in the page list
    monkeypatch.setenv("BERT_EXPLORER_BOARD", "1")
    at.run()
    at.switch_page("pages/board.py").run()
    at.text_input(key="board_join_code").input("nope").run()
    at.button(key="board_join").click().run()
    assert "6 letters" in at.error[0].value and board.JOINED not in at.session_state
    at.button(key="board_start").click().run()
    code = at.session_state[board.JOINED]
    assert not at.exception and code in at.success[0].value and board.exists(code)
    key = next(c.value for c in at.code if len(c.value) == 16)  # token_urlsafe(12)
    board.post(code, "Ada", run_summary())
    at.text_input(key="board_clear_key").input("wrong").run()
    at.button(key="board_clear").click().run()
    assert "teacher key" in at.error[0].value and len(board.entries(code)) == 1
    at.text_input(key="board_clear_key").input(key).run()
    at.button(key="board_clear").click().run()
    assert not at.exception and board.entries(code) == []
    assert not any(c.value == key for c in at.code)  # the key was shown once


def test_live_runs_store_limits_and_expiry(cache):
    code, key = board.new_board()
    t0 = 1_000_000.0
    ids = [board.go_live(code, f"s{i}", now=t0) for i in range(board.MAX_LIVE)]
    with pytest.raises(board.BoardError, match="live on board"):
        board.go_live(code, "one more", now=t0)
    assert board.update_live(code, ids[0], "running", 0.4, "Step 4 of 10", run_summary(), now=t0 + 1)
    assert board.update_live(code, ids[1], "done", 7, "x" * 999, run_summary(acc=0.9), now=t0 + 1)
    runs = {r["id"]: r for r in board.live_runs(code, now=t0 + 2)}
    assert runs[ids[0]]["state"] == "running" and runs[ids[0]]["progress"] == 0.4
    assert runs[ids[0]]["val_accuracy"] == [[5, pytest.approx(0.7)], [10, 0.8]]
    assert runs[ids[1]]["progress"] == 1.0 and len(runs[ids[1]]["line"]) == board.LINE_CHARS
    assert runs[ids[2]]["state"] == "queued"
    board.go_live(code, "next", now=t0 + 2)  # one finished: a slot is free again
    later = t0 + board.LIVE_STALE_S + 10  # not heard from for a minute: lost, and its slot is free
    assert {r["state"] for r in board.live_runs(code, now=later) if r["id"] != ids[1]} == {"lost"}
    board.go_live(code, "after", now=later)
    assert board.live_runs(code, now=t0 + board.LIVE_KEEP_S + 20)[0]["nickname"] == "after"  # the rest expired
    board.clear(code, key)
    assert board.live_runs(code, now=later) == []
    assert not board.update_live(code, ids[0], "running", 0.5, "", run_summary(), now=later)  # cleared: gone


def test_a_run_shown_live_from_the_finetuning_page(cache, monkeypatch):
    """A student shows a running fine-tuning job live; the board's live section draws it with its
    nickname escaped, and its last state (stopped) is written when the job ends."""
    from streamlit.testing.v1 import AppTest

    from app import board_view
    from app import train_state as ts
    from app import training as tr
    from bert.events import FinetuneEval, of_type
    from bert.labelled import stratified_split
    from tests.helpers import tiny_bundle
    from tests.test_training_pages import fast_args, tiny_data

    monkeypatch.setenv("BERT_EXPLORER_BOARD", "1")
    code, _ = board.new_board()
    at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=60)
    at.run()
    at.session_state[board.JOINED] = code
    at.switch_page("pages/finetune.py").run()
    train, valid = stratified_split(tiny_data(80), 0.25, seed=0)
    jm = tr.manager()
    fn = tr.finetune_job(tiny_bundle(), train, valid, fast_args(epochs=500, eval_every=2, name="live"))
    job, _ = jm.submit_for(at.session_state[ts.OWNER], tr.FINETUNE, fn, "live")
    job.info = {"base_name": "tiny", "args": fast_args(epochs=500), "code": "ABCDEF"}  # as start does
    try:
        at.session_state[ts.FT_JOB] = job.id
        deadline = time.time() + 60
        while len(of_type(job.metrics, FinetuneEval)) < 2 and time.time() < deadline:
            at.run()
            time.sleep(0.3)
        at.text_input(key=board_view.LIVE_NICK).input(HOSTILE).run()
        at.button(key="ft_board_go_live").click().run()
        assert not at.exception and any("live on board" in s.value for s in at.success)
        (r,) = board.live_runs(code)
        assert r["nickname"] == HOSTILE and r["state"] == "running" and r["train_loss"] and r["val_accuracy"]
        assert r["base_model"] == "tiny" and r["pooling"] == "mean" and "Step" in r["line"]
        viewer = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=60)  # another student
        viewer.run()
        viewer.session_state[board.JOINED] = code
        viewer.switch_page("pages/board.py").run()
        assert not viewer.exception and any(m.value == "Live now" for m in viewer.subheader)
        assert any("&lt;img" in m.value or "\\<img" in m.value for m in viewer.markdown), "nickname escaped"
        spec = next(e for e in viewer.main if getattr(e, "type", "") == "plotly_chart").proto.spec
        assert HOSTILE not in spec and "&lt;img" in spec
    finally:
        job.stop()
        jm.wait(job, 30)
    at.run()
    (r,) = board.live_runs(code)
    assert r["state"] == "stopped" and r["progress"] == 1.0 and r["accuracy"] is not None
