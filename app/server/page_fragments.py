"""A page's fragments end with the page: a fragment rerun asked for a page the session has left
runs on the page the session is on, or not at all; once per process (`install()`, from the entry).

A browser asks for a fragment's rerun (a `run_every` timer, a widget inside it) tagged with the
page it shows. When the session leaves that page meanwhile (`st.switch_page`, a follower moved by
the class panel), Streamlit would still run the request: folded into the pending switch it takes
the switch's page away (the session lands back on the page it left), or run after the new page
it starts with the old page's id and the browser clears the new page for it (a follower left on
an empty page). So, at the two points where Streamlit's script thread takes a request:

- a fragment run is run as the page the session drew last (the page `st.navigation` resolved in
  its latest run, read in the script thread between runs, so no request can overtake it): a
  fragment of a page left is then skipped (Streamlit runs a fragment only if a run of the page
  now drawn registered it), the app's fragments on every page (the class panel) run on that page,
  and the browser is never told of the page left; before a first page was drawn nothing changes;
- and where a request is folded into the waiting one: a fragment request never folds into a full
  run that is waiting for another page: it is dropped, since that run redraws every fragment of
  its own page.
"""

from __future__ import annotations

import dataclasses
import logging
import threading

log = logging.getLogger(__name__)

_lock = threading.Lock()
_installed = False


def install() -> None:
    """Wrap Streamlit's rerun requests with the rule above (cheap after the first call)."""
    global _installed
    if _installed:
        return
    with _lock:
        if _installed:
            return
        from streamlit.runtime.scriptrunner_utils.script_requests import ScriptRequests

        ScriptRequests.on_scriptrunner_yield = _taken_on_page(ScriptRequests.on_scriptrunner_yield)
        ScriptRequests.on_scriptrunner_ready = _taken_on_page(ScriptRequests.on_scriptrunner_ready)
        ScriptRequests._request_rerun_locked = _folded_request(ScriptRequests._request_rerun_locked)
        _installed = True


def left_page(asked_page: str, drawn_page: str, main_script: str) -> bool:
    """Whether a fragment request tagged `asked_page` is for a page the session has left, the
    session having drawn `drawn_page` last ("" or the entry's own id: no page drawn yet)."""
    named = bool(drawn_page) and drawn_page != main_script
    return named and bool(asked_page) and asked_page != drawn_page


def on_drawn_page(request, drawn_page: str, main_script: str):
    """`request` (Streamlit's ScriptRequest, or None) with a fragment run for a page left re-addressed
    to `drawn_page`; anything else as it is."""
    from streamlit.runtime.scriptrunner_utils.script_requests import ScriptRequest, ScriptRequestType

    if request is None or request.type != ScriptRequestType.RERUN:
        return request
    data = request.rerun_data
    fragment_run = bool(data.fragment_id or data.fragment_id_queue or data.is_fragment_scoped_rerun)
    if not fragment_run or not left_page(data.page_script_hash, drawn_page, main_script):
        return request
    log.debug("a fragment run asked for a page the session left runs on the page drawn")
    return ScriptRequest(request.type, dataclasses.replace(data, page_script_hash=drawn_page, page_name=""))


def _taken_on_page(original):
    def take(self):
        from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

        request = original(self)
        ctx = get_script_run_ctx()  # the script thread's: the session's pages manager
        if ctx is None or ctx.pages_manager is None:
            return request
        pages = ctx.pages_manager
        return on_drawn_page(request, pages.current_page_script_hash, pages.main_script_hash)

    take.__wrapped__ = original
    take.__name__ = original.__name__
    return take


def _folded_request(original):
    def request_rerun_locked(self, new_data):
        from streamlit.runtime.scriptrunner_utils.script_requests import ScriptRequestType

        pending = self._rerun_data
        if (
            self._state == ScriptRequestType.RERUN
            and new_data.fragment_id
            and not pending.fragment_id
            and not pending.fragment_id_queue
            and not pending.is_fragment_scoped_rerun
            and new_data.page_script_hash != pending.page_script_hash
        ):
            return True  # the waiting full run goes to its own page and redraws its fragments
        return original(self, new_data)

    request_rerun_locked.__wrapped__ = original
    return request_rerun_locked
