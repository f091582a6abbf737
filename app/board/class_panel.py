"""Follow me, the Streamlit side: the sidebar's class section, the teacher's lead written after
each run of the teacher's session, and a follower moved to the teacher's page and view.

A class is a board (its class code; its board key makes one the teacher). The teacher ticks
"Lead the class": after every run the teacher's page and view (links.view_values: what a link
holds, never an upload, a session's model or the projector mode) are written to the class
(`after_run`). A student who joined ticks "Follow the teacher": the class panel on top of every
page (`panel`, a fragment polling once every POLL_S) sees the lead's version change and moves the
student's own app to that page with those values (the whole view from session state, the address
the teacher's own), computed on the student's own session. A follower who then changes anything
(another page, a slider, a sentence) has left: the panel says so and "Follow again" rejoins.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import streamlit as st

from ..class_store.checks import CODE_LEN, nick_key, normal_code
from ..class_store.classroom import LEAD_BEAT_S
from ..class_store.errors import BoardError
from ..class_store.service import JOINED, TEACHER, board_store, classroom, enabled
from ..formatting import md_escape
from ..server import shared_network
from ..server.new_students import address_key, client_address
from ..ui import links, show_figure
from . import question_view

LEADING = "class_leading"  # toggle: the teacher leads
FOLLOWING = "class_following"  # toggle: this student follows
APPLIED = "class_applied"  # (version, page, view) of the lead applied last
LEFT = "class_left"  # the follower changed something since
WROTE = "class_wrote"  # (page, view, time.time()) of the lead written last
JOIN_BOX = "class_join_code"
KEY_BOX = "class_key_typed"
NOTE = "class_note"
CLASS_SIZE = "class_size"  # number input: the class's size, for "this class shares one network"
POLL_S = 1.0


def joined() -> str | None:
    code = st.session_state.get(JOINED)
    return code if enabled() and code else None


def teacher_key() -> str | None:
    """The board key of the joined class, when this session proved it."""
    t = st.session_state.get(TEACHER)
    return t[1] if t and t[0] == joined() else None


def names_for_teacher(code: str) -> Callable[[str], str] | None:
    """On the teacher's own screen of board `code` (this session proved its key, projector mode
    off): a nickname -> the real name (and email) of the signed-in or launched student using it
    ('' for an anonymous one). Else None: the projector and classmates see nicknames only."""
    key = teacher_key()
    if not key or joined() != code or show_figure.projector_on():
        return None
    try:
        names = board_store().names(code, key)
    except BoardError:
        return None

    def name_of(nickname: str) -> str:
        name, email = names.get(nick_key(nickname), ("", ""))
        return f"{name} ({email})" if name and email else name or email

    return name_of


def _note(e: Exception) -> None:
    st.session_state[NOTE] = str(e)


def _join() -> None:
    try:
        code = normal_code(st.session_state.get(JOIN_BOX, ""))
        classroom().class_poll(code)  # BoardError when there is no such class
    except BoardError as e:
        _note(e)
        return
    st.session_state[JOINED] = code


def _leave() -> None:
    _stop_leading()
    for k in (JOINED, TEACHER, LEADING, FOLLOWING, APPLIED, LEFT, WROTE):
        st.session_state.pop(k, None)


def _prove() -> None:
    typed = st.session_state.get(KEY_BOX, "")
    st.session_state[KEY_BOX] = ""  # the key is not kept in the box
    try:
        code = classroom().check_teacher(joined() or "", typed)
    except BoardError as e:
        _note(e)
        return
    st.session_state[TEACHER] = (code, typed.strip())
    st.session_state[FOLLOWING] = False


def _stop_leading() -> None:
    key, code = teacher_key(), joined()
    st.session_state.pop(WROTE, None)
    if key and code:
        try:
            classroom().stop_leading(code, key)
        except BoardError as e:
            _note(e)


def _lead_toggled() -> None:
    if st.session_state.get(LEADING):
        st.session_state.pop(WROTE, None)  # the next write begins leading
    else:
        _stop_leading()


def _follow_again() -> None:
    st.session_state[FOLLOWING] = True
    st.session_state[LEFT] = False
    st.session_state[APPLIED] = None


def _follow_toggled() -> None:
    st.session_state[LEFT] = False
    st.session_state[APPLIED] = None


def sidebar_section(lessons: Callable[[], Sequence] = tuple) -> None:
    """The sidebar's "Your class" part (inside `with st.sidebar`): nothing when the board is off.
    `lessons()` (app.lessons.LESSONS, handed down by the entry) are what "Ask the class" offers besides
    its own kinds."""
    if not enabled():
        return
    with st.expander("Your class", icon=":material/groups:", expanded=bool(st.session_state.get(JOINED))):
        _class_section(lessons)


def _class_section(lessons: Callable[[], Sequence]) -> None:
    ss = st.session_state
    note = ss.pop(NOTE, None)
    if note:
        st.error(md_escape(note), icon=":material/error:")
    code = joined()
    if not code:
        st.text_input("Code of your class", key=JOIN_BOX, max_chars=CODE_LEN, placeholder="e.g. K7QX2M")
        st.button("Join the class", key="class_join", on_click=_join, width="stretch")
        return
    st.markdown(f"Class **{code}**")
    if teacher_key():
        st.toggle(
            "Lead the class",
            key=LEADING,
            on_change=_lead_toggled,
            help="The students who follow see your page and view.",
        )
        if ss.get(LEADING):
            st.caption("Your page and view go to every student who follows (never your uploads or models).")
        question_view.ask_popover(code, teacher_key(), lessons)
        _shared_network()
    else:
        st.toggle("Follow the teacher", key=FOLLOWING, on_change=_follow_toggled)
        with st.popover("I am the teacher", icon=":material/key:", width="stretch"):
            st.text_input(
                "The board's key (shown when the board was started)", key=KEY_BOX, type="password", max_chars=64
            )
            st.button("Unlock", key="class_prove", on_click=_prove)
    st.button("Leave the class", key="class_leave", on_click=_leave, width="stretch")


def _declare() -> None:
    ip = client_address()
    if not teacher_key():  # drawn only for the class's teacher; a forged click lands here
        return
    if ip is None:
        _note(BoardError("This session has no network address to declare (no connection)."))
        return
    shared_network.declare(address_key(ip), st.session_state.get(CLASS_SIZE, 30))


def _undeclare() -> None:
    ip = client_address()
    if teacher_key() and ip is not None:
        shared_network.undeclare(address_key(ip))


def _shared_network() -> None:
    """The teacher's "This class shares one network": the per-network caps become those of the
    class's browsers (app/server/shared_network.py) for this session's own network."""
    ip = client_address()
    hit = shared_network.declared(None if ip is None else address_key(ip))
    with st.popover("This class shares one network", icon=":material/router:", width="stretch"):
        if hit:
            until = time.strftime("%H:%M", time.localtime(hit[1]))
            st.caption(
                f"Your network counts as a class of {hit[0]} until {until}: each browser still has its own caps."
            )
            st.button("Undo", key="class_undeclare", on_click=_undeclare)
            return
        st.caption(
            "When the whole class reaches this server through one router (one address), the limits meant for "
            "one machine would hold it back. Declare it from the classroom: your network's limits become those "
            "of the class's browsers, for a few hours; each browser keeps its own."
        )
        st.number_input("Students", 2, shared_network.MAX_CLASS, 30, key=CLASS_SIZE)
        st.button("Declare", key="class_declare", on_click=_declare)


def _lead_now(code: str, key: str, page: str, view: dict) -> bool:
    """Write the lead; False (leading turned off, the reason noted) when it cannot be."""
    try:
        classroom().lead(
            code, key, page, view, address=links.address_values(), start=st.session_state.get(WROTE) is None
        )
    except BoardError as e:
        _note(e)
        st.session_state[LEADING] = False
        st.session_state.pop(WROTE, None)
        return False
    st.session_state[WROTE] = (page, view, time.time())
    return True


def after_run(page: str) -> None:
    """After a full run (streamlit_app.py, the page drawn and published): the teacher's lead is
    written when the view changed; a follower whose view is no longer the lead's has left."""
    ss = st.session_state
    code = joined()
    if not code:
        return
    view = links.view_values()
    key = teacher_key()
    if key and ss.get(LEADING):
        wrote = ss.get(WROTE)
        if wrote is None or wrote[:2] != (page, view) or time.time() - wrote[2] > LEAD_BEAT_S:
            _lead_now(code, key, page, view)
    elif ss.get(FOLLOWING) and ss.get(APPLIED):
        _, lead_page, lead_view = ss[APPLIED]
        if lead_page != page or any(view[k] != v for k, v in lead_view.items() if k in view):
            ss[FOLLOWING] = False
            ss[LEFT] = True
            st.rerun()  # once: the page says so at its top, with "Follow again"


def _follow(lead: dict | None, pages: dict) -> None:
    """Move this follower to the lead's page and view when it changed (a new run of the app)."""
    ss = st.session_state
    if not ss.get(FOLLOWING):
        return
    if lead is None:
        st.caption("Following the teacher: waiting for the teacher to lead.")
        return
    applied = ss.get(APPLIED)
    if applied is not None and applied[0] == lead["version"]:
        return
    target = pages.get(lead["page"])
    if target is None:
        return  # a page this server does not show (the board turned off): stay
    ss[APPLIED] = (lead["version"], lead["page"], lead["view"])
    # The whole view is applied from session state, the address is the teacher's: the arriving run
    # then changes no query parameter, which Chromium could apply before the page switch's address.
    links.arrive_with(lead["view"])
    st.switch_page(target, query_params=lead["address"])


@st.fragment(run_every=POLL_S)
def _panel(code: str, pages: dict) -> None:
    ss = st.session_state
    try:
        poll = classroom().class_poll(code)
    except BoardError as e:
        st.caption(md_escape(str(e)))
        return
    key = teacher_key()
    if key:
        wrote = ss.get(WROTE)
        if ss.get(LEADING) and wrote and time.time() - wrote[2] > LEAD_BEAT_S:
            if not _lead_now(code, key, wrote[0], wrote[1]):  # the heartbeat: still leading
                st.rerun(scope="app")  # leading ended: the sidebar says why
    else:
        _follow(poll["lead"], pages)
        if ss.get(FOLLOWING) and poll["lead"]:
            st.caption(
                ":material/co_present: Following the teacher: this page and view are the teacher's, computed "
                "here. Change anything to explore on your own."
            )
    question_view.live(code, poll["question"], key)


def panel(pages: dict) -> None:
    """The class panel on top of every page (nothing when this session joined no class): the
    follower's moves, the "you left" line and the open question."""
    code = joined()
    if code:
        if st.session_state.get(LEFT) and not teacher_key():  # drawn by the whole run: "Follow again" moves it
            c1, c2 = st.columns([3, 1], vertical_alignment="center")
            c1.warning("You left the teacher's view.", icon=":material/directions_walk:")
            c2.button("Follow again", key="class_follow_again", on_click=_follow_again, type="primary")
        question_view.revealed(code, teacher_key())
        _panel(code, pages)
