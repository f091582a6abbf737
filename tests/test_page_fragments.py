"""A page's fragments end with the page (app/server/page_fragments.py), on Streamlit's own request
objects: a fragment rerun asked for a page the session left never folds into a waiting switch to
another page, and when the script thread takes it, it runs as the page drawn last (so only a
fragment that page registered runs, and the browser is never told of the old page), whenever the
request arrived; a fragment of the page the session is on runs as asked. The browser
side (a follower moved off the Class board page never left on an empty page) is
tests/browser/test_class_follow_board_browser.py."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest
from streamlit.runtime.scriptrunner_utils.script_requests import RerunData, ScriptRequests, ScriptRequestType
from streamlit.runtime.scriptrunner_utils.script_run_context import SCRIPT_RUN_CONTEXT_ATTR_NAME

from app.server import page_fragments

BOARD, HOME, ENTRY = "board-page-hash", "home-page-hash", "entry-script-hash"


@pytest.fixture(scope="module", autouse=True)
def installed():
    page_fragments.install()


def pending_after(*requests: RerunData) -> RerunData:
    reqs = ScriptRequests()
    for r in requests:
        assert reqs.request_rerun(r)
    assert reqs._state == ScriptRequestType.RERUN
    return reqs._rerun_data


def test_install_wraps_streamlits_three_request_points_once():
    page_fragments.install()  # a second call changes nothing
    for name in ("_request_rerun_locked", "on_scriptrunner_yield", "on_scriptrunner_ready"):
        wrapped = getattr(ScriptRequests, name)
        assert wrapped.__wrapped__.__name__ == name
        assert not hasattr(wrapped.__wrapped__, "__wrapped__")


def test_a_fragment_of_the_page_left_never_takes_the_waiting_switch_away():
    switch = RerunData(query_string="a=1", page_script_hash=HOME)
    tick = RerunData(query_string="", page_script_hash=BOARD, fragment_id="board-live")
    pending = pending_after(switch, tick)
    assert pending.page_script_hash == HOME and pending.query_string == "a=1"
    assert not pending.fragment_id_queue and not pending.is_fragment_scoped_rerun
    # Streamlit's own folding gives the waiting full run the fragment's page
    unwrapped = ScriptRequests()
    assert ScriptRequests._request_rerun_locked.__wrapped__(unwrapped, switch)
    assert ScriptRequests._request_rerun_locked.__wrapped__(unwrapped, tick)
    assert unwrapped._rerun_data.page_script_hash == BOARD


def test_fragments_of_the_page_the_session_is_on_still_fold_and_run():
    tick = RerunData(page_script_hash=HOME, fragment_id="home-panel")
    assert pending_after(tick).fragment_id_queue == ["home-panel"]
    # a full run of this page waiting: Streamlit's folding, the fragment's widgets kept
    full = RerunData(page_script_hash=HOME)
    pending = pending_after(full, tick)
    assert pending.page_script_hash == HOME and not pending.fragment_id_queue
    two = pending_after(tick, RerunData(page_script_hash=HOME, fragment_id="home-live"))
    assert two.fragment_id_queue == ["home-panel", "home-live"]


def test_left_page_needs_a_named_latest_page():
    assert page_fragments.left_page(BOARD, HOME, ENTRY)
    assert not page_fragments.left_page(HOME, HOME, ENTRY)
    assert not page_fragments.left_page(BOARD, ENTRY, ENTRY)  # a first load: the page resolved later
    assert not page_fragments.left_page(BOARD, "", ENTRY)
    assert not page_fragments.left_page("", HOME, ENTRY)


class ScriptThread:
    """The script thread's context as the two wrapped take points read it: the pages manager."""

    def __init__(self, drawn_page: str):
        self.ctx = SimpleNamespace(
            pages_manager=SimpleNamespace(current_page_script_hash=drawn_page, main_script_hash=ENTRY)
        )

    def __enter__(self):
        setattr(threading.current_thread(), SCRIPT_RUN_CONTEXT_ATTR_NAME, self.ctx)
        return self

    def __exit__(self, *exc):
        delattr(threading.current_thread(), SCRIPT_RUN_CONTEXT_ATTR_NAME)


def taken(drawn_page: str, *requests: RerunData):
    """What the script thread takes between runs after `requests`, the page drawn last `drawn_page`."""
    reqs = ScriptRequests()
    for r in requests:
        assert reqs.request_rerun(r)
    with ScriptThread(drawn_page):
        return reqs.on_scriptrunner_ready()


def test_a_fragment_run_queued_for_the_page_left_runs_on_the_page_drawn():
    # asked while the switch to Home was running, tagged with the board the browser still showed
    got = taken(HOME, RerunData(page_script_hash=BOARD, fragment_id="board-live"))
    assert got.type == ScriptRequestType.RERUN
    assert got.rerun_data.page_script_hash == HOME and got.rerun_data.page_name == ""
    assert got.rerun_data.fragment_id_queue == ["board-live"]  # Streamlit skips it unless Home registered it
    # two fragments, the app's class panel among them: both run on Home
    two = taken(
        HOME,
        RerunData(page_script_hash=BOARD, fragment_id="board-live"),
        RerunData(page_script_hash=BOARD, fragment_id="class-panel"),
    )
    assert two.rerun_data.page_script_hash == HOME
    assert two.rerun_data.fragment_id_queue == ["board-live", "class-panel"]


def test_full_runs_and_fragments_of_the_page_drawn_are_taken_as_asked():
    assert taken(HOME, RerunData(page_script_hash=BOARD)).rerun_data.page_script_hash == BOARD  # a nav click
    same = taken(HOME, RerunData(page_script_hash=HOME, fragment_id="home-panel"))
    assert same.rerun_data.page_script_hash == HOME and same.rerun_data.fragment_id_queue == ["home-panel"]
    # before a first page was drawn (a first load resolves it later) nothing changes
    assert taken("", RerunData(page_script_hash=BOARD, fragment_id="x")).rerun_data.page_script_hash == BOARD
    assert taken(ENTRY, RerunData(page_script_hash=BOARD, fragment_id="x")).rerun_data.page_script_hash == BOARD


def test_a_fragment_scoped_rerun_that_preempts_is_readdressed_too():
    reqs = ScriptRequests()
    reqs.request_rerun(RerunData(page_script_hash=BOARD, fragment_id="board-live", is_fragment_scoped_rerun=True))
    with ScriptThread(HOME):
        got = reqs.on_scriptrunner_yield()  # taken in the middle of a run
    assert got.rerun_data.page_script_hash == HOME
    # a plain fragment run does not preempt a run: nothing is taken there
    calm = ScriptRequests()
    calm.request_rerun(RerunData(page_script_hash=BOARD, fragment_id="board-live"))
    with ScriptThread(HOME):
        assert calm.on_scriptrunner_yield() is None


def test_outside_a_script_thread_requests_pass_unchanged():
    reqs = ScriptRequests()
    reqs.request_rerun(RerunData(page_script_hash=BOARD, fragment_id="board-live"))
    assert reqs.on_scriptrunner_ready().rerun_data.page_script_hash == BOARD
    assert ScriptRequests().on_scriptrunner_ready().type == ScriptRequestType.STOP
