"""The class board past one machine: two stores on one database are two app replicas,
each with connections of its own (`board` and `replica`, conftest.py, on SQLite and on
PostgreSQL). They see each other's boards, posts and live runs, and the caps hold when both act at
once from many threads. The database going down leaves the board page with a message, never a
traceback, the rest of the app working, and the board back once the database is."""

import threading
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from app.class_store import store
from app.class_store.errors import UNAVAILABLE, BoardError, BoardUnavailable
from app.class_store.service import JOINED
from app.formatting import md_escape

ROOT = Path(__file__).resolve().parent.parent
AT_ONCE = 8  # threads, half on each replica
RUN = {"base_model": "tiny", "accuracy": 0.8, "val_accuracy": [(1, 0.7), (2, 0.8)], "train_loss": [(1, 0.5)]}


def at_once(calls) -> list:
    """Each call in a thread of its own, all let go together: what each returned or raised."""
    start = threading.Barrier(len(calls))
    out: list = [None] * len(calls)

    def run(i, call):
        start.wait()
        try:
            out[i] = call()
        except Exception as e:  # noqa: BLE001 - each is counted below
            out[i] = e

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(calls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return out


def done(results) -> int:
    """How many went through; anything raised is a refusal of the board's, never a database error."""
    assert all(isinstance(r, BoardError) for r in results if isinstance(r, Exception)), results
    return sum(not isinstance(r, Exception) for r in results)


def refused(results, match: str) -> int:
    return sum(isinstance(r, BoardError) and match in str(r) for r in results)


def test_two_replicas_see_each_others_boards_posts_and_live_runs(board, replica):
    code, key = board.new_board()
    assert replica.exists(code) and replica.version(code) == 0
    eid = replica.post(code, "Ada", RUN, run_code="RUN001", student="browser:a", owner="browser:a")
    assert [e["id"] for e in board.entries(code)] == [eid] and board.version(code) == 1
    with pytest.raises(BoardError, match="posted once"):
        board.post(code, "Ada", RUN, run_code="run001", student="browser:a", owner="browser:a")
    with pytest.raises(BoardError, match="Someone else"):  # Ada's, claimed on the other
        board.post(code, "ADA", RUN, run_code="RUN002", student="browser:b", owner="browser:b")
    live = board.go_live(code, "Ada", student="browser:a")
    assert replica.update_live(code, live, "running", 0.5, "Step 5", RUN)
    (r,) = board.live_runs(code)
    assert r["state"] == "running" and r["progress"] == 0.5 and replica.live_runs(code) == [r]
    assert replica.remove(code, key, eid) and board.entries(code) == [] and board.version(code) == 2
    assert replica.clear(code, key) == 0 and board.live_runs(code) == [] and board.version(code) == 3


def test_the_caps_hold_when_two_replicas_act_at_once(board, replica, monkeypatch):
    stores = [board, replica]
    code, _ = board.new_board()
    # one browser posts eight runs at once through both replicas: three go on
    got = at_once(
        [
            lambda i=i: stores[i % 2].post(code, "Ada", RUN, run_code=f"A{i}", student="browser:a", owner="browser:a")
            for i in range(8)
        ]
    )
    assert done(got) == store.MAX_POSTS_EACH and refused(got, "the most each") == AT_ONCE - store.MAX_POSTS_EACH
    # one run posted eight times at once by its browser: once
    got = at_once(
        [
            lambda i=i: stores[i % 2].post(code, "Bo", RUN, run_code="SAME01", student="browser:b", owner="browser:b")
            for i in range(8)
        ]
    )
    assert done(got) == 1 and refused(got, "posted once") == AT_ONCE - 1
    # one nickname taken by eight browsers at once: one of them owns it
    got = at_once([lambda i=i: stores[i % 2].go_live(code, "Cy", student=f"browser:c{i}") for i in range(AT_ONCE)])
    assert done(got) == 1 and refused(got, "Someone else") == AT_ONCE - 1
    # eight browsers show a run live at once: MAX_LIVE of them
    other, _ = replica.new_board()
    got = at_once([lambda i=i: stores[i % 2].go_live(other, f"d{i}", student=f"browser:d{i}") for i in range(8)])
    assert done(got) == store.MAX_LIVE and len(board.live_runs(other)) == store.MAX_LIVE
    # eight browsers post to a board with room for five: five go on
    monkeypatch.setattr(store, "MAX_ENTRIES", 5)
    got = at_once(
        [
            lambda i=i: stores[i % 2].post(
                other, f"e{i}", RUN, run_code=f"E{i}", student=f"browser:e{i}", owner=f"browser:e{i}"
            )
            for i in range(8)
        ]
    )
    assert done(got) == 5 and refused(got, "is full") == 3 and len(replica.entries(other)) == 5
    # eight new boards at once on a server that keeps four: four kept, the two in use among them
    monkeypatch.setattr(store, "MAX_BOARDS", 4)
    got = at_once([lambda i=i: stores[i % 2].new_board() for i in range(8)])
    assert done(got) == AT_ONCE and board.boards_kept() == 4 and board.exists(code) and replica.exists(other)


@pytest.mark.slow
@pytest.mark.parametrize("board", ["postgres"], indirect=True)
def test_the_database_down_the_board_page_says_so_and_the_rest_works(board, postgres_server, monkeypatch):
    import psycopg

    from app.class_store import postgres

    monkeypatch.setenv("BERT_EXPLORER_BOARD", "1")
    monkeypatch.setattr(postgres, "RETRY_S", 1.0)
    tries = []
    real_connect = psycopg.connect
    monkeypatch.setattr(psycopg, "connect", lambda *a, **k: tries.append(1) or real_connect(*a, **k))
    code, _ = board.new_board()
    board.post(code, "Ada", RUN, run_code="RUN001", student="browser:a", owner="browser:a")
    at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=60)
    at.run()
    at.session_state[JOINED] = code
    at.switch_page("pages/board.py").run()
    assert not at.exception and list(at.dataframe[0].value["nickname"]) == ["Ada"]
    postgres_server.stop()  # every connection closed, the server gone
    tries.clear()
    try:
        for action in (
            lambda: board.version(code),
            lambda: board.entries(code),
            lambda: board.exists(code),
            lambda: board.new_board(),
            lambda: board.post(code, "Ada", RUN, run_code="RUN002", student="browser:a", owner="browser:a"),
            lambda: board.update_live(code, 1, "running", 0.5, "", RUN),
        ):
            with pytest.raises(BoardUnavailable, match="unavailable right now"):
                action()
        assert len(tries) <= 2, "one refused connection, then refusals at once for RETRY_S"
        at.run()
        assert not at.exception and [e.value for e in at.error] == [md_escape(UNAVAILABLE)]
        assert not at.dataframe and at.title[0].value == "Class board"
        at.text_input(key="board_join_code").input(code).run()
        at.button(key="board_join").click().run()
        assert not at.exception and md_escape(UNAVAILABLE) in [e.value for e in at.error]
        at.switch_page("pages/status.py").run()  # another page: as ever
        assert not at.exception and not at.error and any("for the teacher" in i.value for i in at.info)
    finally:
        postgres_server.start()
    time.sleep(postgres.RETRY_S)
    assert [e["nickname"] for e in board.entries(code)] == ["Ada"]  # its dead connections replaced
    at.switch_page("pages/board.py").run()
    assert not at.exception and not at.error and list(at.dataframe[0].value["nickname"]) == ["Ada"]


@pytest.mark.parametrize("board", ["sqlite"], indirect=True)
def test_a_board_file_that_cannot_be_opened_is_unavailable_too(board, monkeypatch):
    """SQLite's share of the same rule: the file unusable (here a folder in its place), every
    action is BoardUnavailable, and the page's buttons say so (a traceback before)."""
    monkeypatch.setenv("BERT_EXPLORER_BOARD", "1")
    board.path.mkdir(parents=True)
    with pytest.raises(BoardUnavailable, match="unavailable right now"):
        board.new_board()
    at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=60)
    at.run()
    at.switch_page("pages/board.py").run()
    at.text_input(key="board_join_code").input("ABCDEF").run()
    at.button(key="board_join").click().run()
    assert not at.exception and [e.value for e in at.error] == [md_escape(UNAVAILABLE)]


def listening_on(port: int) -> set[str]:
    """The local addresses (hex, as /proc/net/tcp* write them) listening on `port`."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.split(":")
            if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                found.add(address)
    return found


@pytest.mark.slow
def test_the_test_database_listens_on_127_0_0_1_only(postgres_server):
    assert listening_on(postgres_server.port) == {"0100007F"}  # 127.0.0.1, and no IPv6 socket
