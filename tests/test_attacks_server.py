"""What a client sends the REAL server (one for the module, on
127.0.0.1, tests/live_server.py), as a hostile student's script would: websocket frames of
Streamlit's own protocol and raw HTTP uploads.

- a `BackMsg(clear_cache=True)` frame clears nothing: a running job, its owner's page and the
  one-job-per-student cap are unchanged;
- raw uploads are capped per session and server-wide (HTTP 429), a closed session's files are
  freed, and the server's peak memory stays within 300 MB of its baseline;
- a 24 MB widget value closes its connection before it is kept (`server.maxWidgetStateSize`);
- fresh `_streamlit_xsrf` cookies from one address become new students only at a bounded rate.

The memory tests run first (before any job trains). The unit tests at the end need no server.
"""

from __future__ import annotations

import asyncio
import os
import time

import pytest

from app.server.guard import DISCONNECTED_S, UNCLAIMED_S, UploadGuard, UploadRefused
from app.server.new_students import NewStudents, TooManyNewStudents, address_key
from benchmarks.server import run_async
from tests.live_server import LiveServer, browser, put_upload, xsrf_cookie

MB = 2**20
TIMEOUT = 120
START = "Start fine-tuning"
STOP = "Stop (keeps the best model so far)"
HAS_JOB = "when training ends, the model is saved under this code"  # shown queued or training
SERVER_ENV = {
    "BERT_EXPLORER_MAX_JOBS": "1",
    "BERT_EXPLORER_UPLOAD_MB": "150",  # per session 110 (the default): two sessions reach this
    "BERT_EXPLORER_UPLOAD_MB_PER_ADDRESS": "150",  # ... from one address (127.0.0.1)
    "BERT_EXPLORER_NEW_STUDENTS_BURST": "2",
    "BERT_EXPLORER_NEW_STUDENT_EVERY_S": "3600",
    "BERT_EXPLORER_JOB_THREADS": "1",
}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    pytest.importorskip("websockets")
    tmp = tmp_path_factory.mktemp("server")
    cache = tmp / "cache"  # its own runs and job folders; the fetched data shared read-only
    cache.mkdir()
    real = os.environ.get("BERT_EXPLORER_CACHE", ".cache/")
    for sub in ("corpora", "datasets", "downloads"):
        src = os.path.abspath(os.path.join(real, sub))
        if os.path.isdir(src):
            os.symlink(src, cache / sub)
    srv = LiveServer(tmp / "server.log", {**SERVER_ENV, "BERT_EXPLORER_CACHE": str(cache)})
    yield srv
    srv.stop()


def run(coro):
    return run_async(asyncio.wait_for(coro, TIMEOUT * 3))


def body(pg) -> str:
    return pg.state()["body"]


def button(pg, label: str):
    el = pg.find("button", label)
    assert el is not None, f"no {label!r} button: {[k for k, _ in pg.elements]}"
    return el


async def open_home(srv, headers=None):
    pg = srv.page(headers)
    await pg.connect()
    await pg.run(TIMEOUT, page="")
    assert pg.session_id
    return pg


async def start_job(srv, headers) -> tuple[object, str]:
    """A session on the Fine-tuning page (the built-in data set, default settings) pressing
    Start; returns the page and what it then shows."""
    pg = srv.page(headers)
    await pg.connect()
    await pg.run(TIMEOUT, page="finetune")
    assert not pg.state()["errors"], pg.state()["errors"]
    start = button(pg, START).id
    await pg.run(TIMEOUT, set_widget=(start, "trigger_value", True))
    pg.widgets.pop(start)  # a click is sent once
    return pg, body(pg)


# --- row 6: incoming widget state --------------------------------------------------------------


@pytest.mark.slow
def test_a_24_mb_widget_value_closes_its_connection_and_memory_stays_bounded(server):
    from websockets.exceptions import ConnectionClosed

    async def attack():
        pages = [await open_home(server) for _ in range(4)]
        await pages[0].run(TIMEOUT, page="attention")  # the model loaded: the baseline
        box = pages[0].find("text_area", "Sentence A")
        base = server.hwm_mb()
        codes = []
        for p in pages:
            try:
                await p.run(30, set_widget=(box.id, "string_value", "word " * 4_800_000))  # 24 MB (10^6)
                codes.append(None)
            except ConnectionClosed as e:
                codes.append(e.rcvd.code if e.rcvd else None)
        grown = server.hwm_mb() - base
        fresh = await open_home(server)  # the server still serves
        await fresh.run(TIMEOUT, page="attention")
        await fresh.run(TIMEOUT, set_widget=(box.id, "string_value", "A short sentence about a zebra."))
        ok = "zebra" in fresh.state()["plotText"] and not fresh.state()["errors"]
        await fresh.close()
        return codes, grown, ok

    codes, grown, ok = run(attack())
    print(f"widget state: peak +{grown:.0f} MB")
    assert codes == [1009] * 4, codes  # "message too big": nothing kept
    assert grown < 300, f"the server's peak grew {grown:.0f} MB"
    assert ok


# --- row 2: raw uploads ------------------------------------------------------------------------


@pytest.mark.slow
def test_raw_uploads_are_capped_per_session_and_server_wide_and_freed(server):
    data = b"text,label\n" + b"x" * (49 * MB) + b"\n"  # under the 50 MB a file, framing included
    probe = b"text,label\n" + b"x" * (10 * MB) + b"\n"

    async def attack():
        cookie = xsrf_cookie()
        a = await open_home(server, browser(cookie))
        base = server.hwm_mb()
        answers = [put_upload(server.url, a.session_id, cookie, data) for _ in range(10)]
        statuses, refusal = [status for status, _ in answers], answers[-1][1]
        grown = server.hwm_mb() - base
        b = await open_home(server, browser(cookie))
        b_first = put_upload(server.url, b.session_id, cookie, data)[0]  # 150 MB server-wide: 100 + 50
        b_second, b_refusal = put_upload(server.url, b.session_id, cookie, data)
        await a.close()  # a's 98 MB are freed once its socket has been closed DISCONNECTED_S
        closed = time.monotonic()
        deadline = closed + DISCONNECTED_S + 20
        b_after = 429
        while b_after == 429 and time.monotonic() < deadline:
            await asyncio.sleep(2)
            b_after = put_upload(server.url, b.session_id, cookie, probe)[0]  # 147 + 10 > 150 until a is freed
        print(f"uploads: a closed session's files freed within {time.monotonic() - closed:.0f} s")
        await b.close()
        return statuses, refusal, grown, b_first, b_second, b_refusal, b_after

    statuses, refusal, grown, b_first, b_second, b_refusal, b_after = run(attack())
    print(f"uploads: peak +{grown:.0f} MB")
    assert statuses == [204, 204] + [429] * 8, statuses  # 110 MB a session: two 50 MB files
    assert "at most 4 files, 110 MB a tab" in refusal, refusal
    assert grown < 300, f"the server's peak grew {grown:.0f} MB"
    assert (b_first, b_second) == (204, 429) and "at most 60 files, 150 MB" in b_refusal, b_refusal
    assert b_after == 204  # a's files were freed
    assert "refused an upload" in server.log()


@pytest.mark.slow
def test_one_machines_sessions_hold_a_share_of_the_upload_places_and_a_classmate_still_uploads(server):
    tiny = b"text,label\nthe cat sat,1\nthe dogs ran,0\n"  # a classmate's 40-byte CSV

    async def attack():
        pages, statuses = [], []
        for _ in range(15):  # one machine: 15 sessions, 4 tiny files each (the server holds 60)
            cookie = xsrf_cookie()
            pg = await open_home(server, browser(cookie, "10.0.5.1"))
            pages.append(pg)
            statuses += [put_upload(server.url, pg.session_id, cookie, tiny)[0] for _ in range(4)]
        refusal = put_upload(server.url, pages[-1].session_id, cookie, tiny)[1]
        cookie = xsrf_cookie()
        classmate = await open_home(server, browser(cookie, "10.0.6.1"))
        answer = put_upload(server.url, classmate.session_id, cookie, tiny)
        for pg in [*pages, classmate]:
            await pg.close()
        return statuses, refusal, answer

    statuses, refusal, (classmate_status, classmate_body) = run(attack())
    print(
        f"uploads from one address: {statuses.count(204)} kept, {statuses.count(429)} refused; "
        f"a classmate elsewhere: HTTP {classmate_status}"
    )
    assert statuses == [204] * 20 + [429] * 40, statuses  # 20 of the server's 60 files an address
    assert "at most 20 files, 150 MB from one network" in refusal, refusal
    assert classmate_status == 204, classmate_body  # another address still uploads


# --- row 1: clear cache, row 17: fresh cookies -------------------------------------------------


@pytest.mark.slow
def test_a_clear_cache_frame_leaves_jobs_and_the_one_job_cap_alone(server):
    from streamlit.proto.BackMsg_pb2 import BackMsg

    cookie = xsrf_cookie()

    async def attack():
        a, shown = await start_job(server, browser(cookie, "10.0.1.1"))
        assert HAS_JOB in shown, shown[-600:]
        await a.ws.send(BackMsg(clear_cache=True).SerializeToString())
        await asyncio.sleep(0.5)
        await a.run(TIMEOUT)
        a_still = HAS_JOB in body(a) and a.find("button", STOP) is not None  # its owner still sees and can stop it
        other_tab, refused = await start_job(server, browser(cookie, "10.0.1.1"))
        await other_tab.close()
        await a.run(TIMEOUT, set_widget=(button(a, STOP).id, "trigger_value", True))  # stop it
        await a.close()
        return a_still, refused

    a_still, refused = run(attack())
    assert a_still
    assert "one job per student at a time" in refused, refused[-600:]
    assert "refused a client's clear-cache request" in server.log()


@pytest.mark.slow
def test_fresh_cookies_from_one_address_become_new_students_only_at_a_bounded_rate(server):
    async def attack():
        first, shown = await start_job(server, browser(xsrf_cookie(), "10.0.2.1"))
        second, second_shown = await start_job(server, browser(xsrf_cookie(), "10.0.2.1"))
        third, third_shown = await start_job(server, browser(xsrf_cookie(), "10.0.2.1"))
        elsewhere, elsewhere_shown = await start_job(server, browser(xsrf_cookie(), "10.0.3.1"))
        again, again_shown = await start_job(server, browser(xsrf_cookie(), "10.0.2.1"))
        for pg in (first, second, third, elsewhere, again):
            await pg.close()
        return shown, second_shown, third_shown, elsewhere_shown, again_shown

    shown, second_shown, third_shown, elsewhere_shown, again_shown = run(attack())
    for page in (shown, second_shown, elsewhere_shown):  # 2 new browsers an address, then none
        assert HAS_JOB in page, page[-600:]
    for page in (third_shown, again_shown):
        assert "new browsers have just started jobs from your network" in page, page[-600:]


# --- the upload guard alone (a fake clock, a fake session) -------------------------------------


class _Rec:
    def __init__(self, file_id: str, size: int):
        self.file_id, self.data = file_id, b"x" * size


def _guard(alive: dict[str, bool], addresses: dict[str, str] | None = None):
    from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager

    now = [0.0]
    mgr = MemoryUploadedFileManager("/_stcore/upload_file")
    guard = UploadGuard(mgr, alive=lambda s: alive.get(s), clock=lambda: now[0], address=(addresses or {}).get)
    return mgr, guard, now


def _put(mgr, session: str, file_id: str, size: int) -> int:
    """An upload as Streamlit's route keeps it: 204, or the guard's HTTP status."""
    from starlette.exceptions import HTTPException

    try:
        mgr.add_file(session, _Rec(file_id, size))
    except HTTPException as e:
        return e.status_code
    return 204


def test_unclaimed_uploads_go_claimed_ones_stay_while_the_session_lives(monkeypatch):
    mgr, guard, now = _guard({"s": True})
    mgr.add_file("s", _Rec("raw", 10))  # a PUT no widget asks for
    mgr.add_file("s", _Rec("widget", 10))
    assert [r.file_id for r in mgr.get_files("s", ["widget"])] == ["widget"]  # a file_uploader reads it
    now[0] = UNCLAIMED_S + 1
    assert guard.sweep() == 1
    assert list(mgr.file_storage["s"]) == ["widget"]


def test_caps_count_files_and_bytes(monkeypatch):
    monkeypatch.setenv("BERT_EXPLORER_UPLOAD_FILES_PER_SESSION", "2")
    monkeypatch.setenv("BERT_EXPLORER_UPLOAD_MB_PER_SESSION", "1")
    mgr, guard, _ = _guard({"s": True})
    mgr.add_file("s", _Rec("a", 10))
    mgr.add_file("s", _Rec("a", 20))  # the same id again replaces, not adds
    mgr.add_file("s", _Rec("b", 10))
    with pytest.raises(UploadRefused, match="2 uploaded file"):
        guard.check("s", "c", 1)
    with pytest.raises(UploadRefused, match="at most 2 files, 1 MB a tab"):
        guard.check("s", "a", MB)


def test_a_file_the_session_keeps_counts_until_released_or_the_tab_closes(monkeypatch):
    """The Fine-tuning page keeps its file after the uploader lets go: that copy counts against the
    session's caps (once, not again while the uploader still holds the same file)."""
    monkeypatch.setenv("BERT_EXPLORER_UPLOAD_FILES_PER_SESSION", "2")
    alive = {"s": True}
    mgr, guard, now = _guard(alive)
    assert _put(mgr, "s", "train", 100) == 204
    guard.keep("s", "ft_upload", "train", 100)
    assert guard.held()["s"] == (1, 100)  # the uploader's file and the kept copy: one file
    mgr.remove_session_files("s")  # the uploader let go (a new widget after Start)
    assert guard.held()["s"] == (1, 100)
    guard.keep("s", "ft_val_upload", "valid", 50)
    assert _put(mgr, "s", "third", 10) == 429  # two kept files: the tab's cap
    guard.release("s", "ft_val_upload")  # "Remove file"
    assert _put(mgr, "s", "third", 10) == 204
    alive["s"] = False  # the tab closed: its kept copies stop counting after DISCONNECTED_S
    guard.sweep()
    now[0] = DISCONNECTED_S
    guard.sweep()
    assert guard.held() == {}


def test_one_address_holds_at_most_its_share_of_uploads_and_a_classmate_still_uploads():
    script = {f"s{i}": "10.0.0.66" for i in range(15)}  # 15 sessions of one machine, 4 tiny files each
    alive = dict.fromkeys([*script, "classmate", "local"], True)
    mgr, guard, now = _guard(alive, {**script, "classmate": "10.0.0.7"})
    statuses = [_put(mgr, sid, f"f{j}", 40) for sid in script for j in range(4)]
    assert statuses == [204] * 20 + [429] * 40, statuses  # 20 of the server's 60 files a network
    with pytest.raises(UploadRefused, match=r"already hold 20 uploaded file\(s\), 0 MB \(at most 20 files, 125 MB"):
        guard.check("s14", "f9", 40)
    assert _put(mgr, "classmate", "train.csv", 40) == 204  # another address is served
    assert _put(mgr, "local", "x", 40) == 204  # no address known (no connection): the other caps only
    alive["s0"] = False  # a closed session's files count for its address until they are freed
    assert _put(mgr, "s14", "f0", 40) == 429
    now[0] = DISCONNECTED_S
    guard.sweep()
    assert [_put(mgr, "s14", f"f{j}", 40) for j in range(5)] == [204] * 4 + [429]


def test_one_address_holds_at_most_its_share_of_upload_bytes(monkeypatch):
    monkeypatch.setenv("BERT_EXPLORER_UPLOAD_MB_PER_ADDRESS", "1")
    mgr, guard, _ = _guard({"a": True, "b": True, "c": True}, {"a": "10.0.0.66", "b": "10.0.0.66", "c": "10.0.0.7"})
    assert _put(mgr, "a", "f", MB // 2) == 204
    with pytest.raises(UploadRefused, match="at most 20 files, 1 MB from one network"):
        guard.check("b", "f", MB // 2 + 1)
    assert _put(mgr, "b", "f", MB // 2) == 204  # exactly the address's MB
    assert _put(mgr, "c", "f", MB // 2) == 204


# --- new students alone (a fake clock) ---------------------------------------------------------


def test_address_key_groups_an_ipv6_host_and_unwraps_ipv4():
    assert address_key("10.0.0.7") == "10.0.0.7"
    assert address_key("::ffff:10.0.0.7") == "10.0.0.7"
    assert address_key("2001:db8:1:2::5") == address_key("2001:db8:1:2:ffff::9") == "2001:db8:1:2::/64"
    assert address_key("not an address") == "other"


def test_new_students_take_tokens_known_ones_do_not(monkeypatch):
    monkeypatch.setenv("BERT_EXPLORER_NEW_STUDENTS_BURST", "2")
    monkeypatch.setenv("BERT_EXPLORER_NEW_STUDENT_EVERY_S", "10")
    now = [0.0]
    ns = NewStudents(clock=lambda: now[0])
    ns.admit("a", "10.0.0.1")
    ns.admit("b", "10.0.0.1")
    with pytest.raises(TooManyNewStudents, match="Try again in 10 s"):
        ns.admit("c", "10.0.0.1")
    ns.admit("a", "10.0.0.1")  # a student seen before: free, from any address
    ns.admit("a", "10.9.9.9")
    ns.admit("d", "10.0.0.2")  # another address has its own tokens
    ns.admit("e", None)  # no connection (AppTest): not counted
    now[0] = 10.0
    ns.admit("c", "10.0.0.1")  # one token back after EVERY_S
    with pytest.raises(TooManyNewStudents):
        ns.admit("f", "10.0.0.1")


def test_a_pages_copy_of_an_upload_counts_after_its_uploader_is_cleared(monkeypatch):
    """Three tabs of one machine each upload a file, the page keeps its copy, the uploader is
    cleared: the copies still count, so the third is over the address's bytes."""
    monkeypatch.setenv("BERT_EXPLORER_UPLOAD_MB_PER_ADDRESS", "5")
    alive = {"a": True, "b": True, "c": True}
    mgr, guard, now = _guard(alive, dict.fromkeys(alive, "10.0.0.66"))
    statuses = []
    for sid in alive:
        statuses.append(_put(mgr, sid, "big", 2 * MB))
        if statuses[-1] == 204:
            guard.keep(sid, "hd_reader_upload", "big", 2 * MB)  # the page copies the bytes
            mgr.remove_file(sid, "big")  # and the student clears the uploader
    assert statuses == [204, 204, 429]
    assert guard.held()["a"] == (1, 2 * MB)
    guard.release("a", "hd_reader_upload")  # its job started: the page let the copy go
    assert _put(mgr, "c", "big", 2 * MB) == 204
    alive["b"] = False  # a closed tab's copy counts until the sweep after DISCONNECTED_S
    guard.sweep()
    assert guard.held()["b"] == (1, 2 * MB)
    now[0] = DISCONNECTED_S
    guard.sweep()
    assert guard.held().get("b", (0, 0)) == (0, 0)


def test_the_training_pages_register_their_copy_of_an_upload(monkeypatch):
    import streamlit as st

    from app.run_session import uploads

    mgr, guard, _ = _guard({"s": True})
    monkeypatch.setattr(uploads, "upload_guard", lambda: guard)
    monkeypatch.setattr(uploads, "current_session_id", lambda: "s")

    class Upload:
        name, size, file_id = "q.json", 3, "f1"

        def getvalue(self):
            return b"abc"

    st.session_state.clear()
    uploads.remember_upload("hd_reader_upload", Upload())
    assert guard.held() == {"s": (1, 3)}  # the uploader's file is gone from the manager; the copy counts
    assert uploads.remember_upload("hd_reader_upload", None)["data"] == b"abc"  # a cleared uploader
    assert guard.held() == {"s": (1, 3)}
    uploads.free_uploads("hd_reader_upload")
    assert guard.held() == {}


# --- a class behind one router --------------------------------------------------------------------


@pytest.mark.parametrize("board", ["sqlite"], indirect=True)
def test_a_class_of_30_behind_one_router_uploads_starts_and_answers_once_declared(board):
    """30 browsers of one address: each uploads a file, starts a job, answers the question. Before
    the teacher declares the class, the per-address rules refuse some; after, every one is served,
    and one machine is still bounded: a tab's own caps, the server's caps, the burst past the class."""
    from app.class_store.classroom import Classroom
    from app.class_store.errors import BoardError
    from app.server import shared_network
    from app.server.new_students import NewStudents

    router, size = "10.0.0.66", 30
    browsers = [f"s{i}" for i in range(size)]
    alive = dict.fromkeys(browsers, True)

    def day(declared: bool):
        shared_network.undeclare(address_key(router))
        if declared:
            shared_network.declare(address_key(router), size)
        mgr, _, _ = _guard(alive, dict.fromkeys(browsers, router))
        uploads = [_put(mgr, sid, "train.csv", MB) for sid in browsers]
        jobs = NewStudents(clock=lambda: 0.0)
        starts = [jobs.wait(sid, router) for sid in browsers]
        code, key = board.new_board()
        c = Classroom(board, NewStudents("BERT_EXPLORER_NEW_ANSWERERS_BURST", "BERT_EXPLORER_NEW_ANSWERER_EVERY_S"))
        q = c.ask(code, key, {"kind": "pieces", "prompt": "Which word?", "choices": None, "answer": "are",
                              "accept": ["are"], "why": "", "figure": None})  # fmt: skip
        answers = 0
        for sid in browsers:
            try:
                c.answer(code, q, sid, "are", address=router)
                answers += 1
            except BoardError:
                pass
        return mgr, jobs, uploads, starts, answers

    try:
        _, _, uploads, starts, answers = day(declared=False)
        assert uploads.count(204) == 20 and sum(w == 0 for w in starts) == 4 and answers == size  # before
        mgr, jobs, uploads, starts, answers = day(declared=True)
        assert uploads == [204] * size and starts == [0.0] * size and answers == size, (uploads, starts)
        # still bounded: one tab holds its own 4 files; the address never more than the server's 60
        assert [_put(mgr, "s0", f"more{j}", 1) for j in range(4)] == [204, 204, 204, 429]
        assert sum(_put(mgr, sid, "second.csv", 1) == 204 for sid in browsers) == 60 - size - 3
        assert jobs.wait("script-cookie", router) > 0, "a 31st new browser waits for the rate"
    finally:
        shared_network.undeclare(address_key(router))


def test_a_declaration_is_for_a_few_hours_and_a_bounded_class():
    from app.server import shared_network

    key = address_key("10.9.8.7")
    try:
        assert shared_network.declare(key, 10_000, now=0.0) == shared_network.MAX_CLASS
        assert shared_network.declared(key, now=shared_network.DECLARED_S - 1) == (
            shared_network.MAX_CLASS,
            shared_network.DECLARED_S,
        )
        assert shared_network.declared(key, now=shared_network.DECLARED_S) is None
        assert shared_network.class_size(key) == 1
    finally:
        shared_network.undeclare(key)


@pytest.mark.parametrize("board", ["sqlite"], indirect=True)
def test_the_teacher_declares_the_class_network_and_a_student_cannot(board, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from app.board import class_panel
    from app.class_store.service import JOINED, TEACHER
    from app.server import shared_network
    from tests.helpers import ENTRY

    monkeypatch.setenv("BERT_EXPLORER_BOARD", "1")
    monkeypatch.setattr(class_panel, "client_address", lambda: "10.0.0.66")
    code, key = board.new_board()
    try:
        student = AppTest.from_file(ENTRY, default_timeout=120)
        student.run()
        student.session_state[JOINED] = code
        student.run()
        assert not student.exception and not [b for b in student.button if b.key == "class_declare"]
        teacher = AppTest.from_file(ENTRY, default_timeout=120)
        teacher.run()
        teacher.session_state[JOINED] = code
        teacher.session_state[TEACHER] = (code, key)
        teacher.run()
        teacher.number_input(key=class_panel.CLASS_SIZE).set_value(28)
        teacher.button(key="class_declare").click().run()
        assert not teacher.exception and shared_network.declared("10.0.0.66")[0] == 28
        assert any("counts as a class of 28" in c.value for c in teacher.caption)
        teacher.button(key="class_undeclare").click().run()
        assert shared_network.declared("10.0.0.66") is None
    finally:
        shared_network.undeclare("10.0.0.66")
