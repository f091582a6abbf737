"""A page's fragments end with the page (app/server/page_fragments.py), on Streamlit's own request
objects: a fragment rerun asked for a page the session left never folds into a waiting switch to
another page, and once the switch has started it runs as the new page's (so only a fragment that
page registered runs, and the browser is never told of the old page); a fragment of the page the
session is on runs as asked. The browser
side (a follower moved off the Class board page never left on an empty page) is
tests/browser/test_class_follow_board_browser.py."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from streamlit.proto.ClientState_pb2 import ClientState
from streamlit.runtime.scriptrunner_utils.script_requests import RerunData, ScriptRequests, ScriptRequestType

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


def test_install_wraps_streamlits_two_request_points_once():
    from streamlit.runtime.app_session import AppSession

    page_fragments.install()  # a second call changes nothing
    assert AppSession.request_rerun.__wrapped__.__name__ == "request_rerun"
    assert ScriptRequests._request_rerun_locked.__wrapped__.__name__ == "_request_rerun_locked"
    assert not hasattr(AppSession.request_rerun.__wrapped__, "__wrapped__")


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


def session(latest_page: str):
    """What AppSession.request_rerun reads of a session, and what reached Streamlit's own."""
    reached = []
    s = SimpleNamespace(
        id="s1",
        _client_state=SimpleNamespace(page_script_hash=latest_page),
        _pages_manager=SimpleNamespace(main_script_hash=ENTRY),
    )
    return s, reached


def request(s, reached, page: str, fragment: str = "") -> None:
    from streamlit.runtime.app_session import AppSession

    wrapped = page_fragments._session_request(lambda self, cs: reached.append(cs))
    assert AppSession.request_rerun.__code__ is wrapped.__code__  # the rule under test is the one installed
    cs = ClientState(page_script_hash=page, fragment_id=fragment)
    wrapped(s, cs)


def test_a_fragment_request_for_the_page_left_runs_as_the_page_the_session_is_on():
    s, reached = session(latest_page=HOME)  # the switch to Home has started
    request(s, reached, BOARD, "board-live")  # Streamlit skips it unless Home registered that fragment
    request(s, reached, BOARD, "class-panel")  # the app's fragment on every page: runs on Home
    request(s, reached, HOME, "home-panel")
    request(s, reached, BOARD)  # a full run (a nav click) goes through as asked
    assert [(c.page_script_hash, c.fragment_id) for c in reached] == [
        (HOME, "board-live"),
        (HOME, "class-panel"),
        (HOME, "home-panel"),
        (BOARD, ""),
    ]


def test_after_a_first_load_the_session_lets_every_fragment_through():
    s, reached = session(latest_page=ENTRY)
    request(s, reached, BOARD, "board-live")
    assert len(reached) == 1
