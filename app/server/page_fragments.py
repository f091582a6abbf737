"""A page's fragments end with the page: a fragment rerun asked for a page the session has left
runs on the page the session is on, or not at all; once per process (`install()`, from the entry).

A browser asks for a fragment's rerun (a `run_every` timer, a widget inside it) tagged with the
page it shows. When the session leaves that page meanwhile (`st.switch_page`, a follower moved by
the class panel), Streamlit would still run the request: folded into the pending switch it takes
the switch's page away (the session lands back on the page it left), or run after the new page
it starts with the old page's id and the browser clears the new page for it (a follower left on
an empty page). So:

- a fragment request tagged with another page than the one the session's latest run named (a
  switch, a click in the nav) is run as that page's: Streamlit runs a fragment only if the page
  now drawn registered it, so the left page's own fragments (the board's live runs) are skipped,
  and the app's fragments on every page (the class panel) run on the page the session is on,
  which is what the browser is told; a latest run that named no page (a first load, resolved
  from the address by st.navigation) leaves the request as it is;
- a fragment request never folds into a full run that is waiting for another page: it is
  dropped, since that run redraws every fragment of its own page.
"""

from __future__ import annotations

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
        from streamlit.runtime.app_session import AppSession
        from streamlit.runtime.scriptrunner_utils.script_requests import ScriptRequests

        AppSession.request_rerun = _session_request(AppSession.request_rerun)
        ScriptRequests._request_rerun_locked = _folded_request(ScriptRequests._request_rerun_locked)
        _installed = True


def left_page(asked_page: str, latest_run_page: str, main_script: str) -> bool:
    """Whether a fragment request tagged `asked_page` is for a page the session has left, the
    latest run having started on `latest_run_page` ("" or the entry's own id: not named)."""
    named = bool(latest_run_page) and latest_run_page != main_script
    return named and bool(asked_page) and asked_page != latest_run_page


def _session_request(original):
    def request_rerun(self, client_state):
        if client_state is not None and client_state.fragment_id:
            latest = self._client_state.page_script_hash
            if left_page(client_state.page_script_hash, latest, self._pages_manager.main_script_hash):
                log.debug("a fragment rerun of a page the session left runs on its page (session %s)", self.id)
                client_state.page_script_hash = latest
                client_state.page_name = ""
        original(self, client_state)

    request_rerun.__wrapped__ = original
    return request_rerun


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
