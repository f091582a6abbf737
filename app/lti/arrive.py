"""A launch from the course arriving in the app's session: the ticket /lti/launch put in the
address (app/lti/routes.py) is redeemed once; the session takes the launch's user
(app/students.py) and joins the course's class board: an instructor's launch opens it (made when
the course has none today), a student's joins it when it is open. An instructor's deep linking
launch leaves a token with which the session places a view in the course (`placing`)."""

from __future__ import annotations

import base64
import time

import streamlit as st

from .. import students
from ..class_store.checks import CODE_CHARS, CODE_LEN
from ..class_store.errors import BoardError
from ..class_store.service import JOINED, TEACHER, board_store, enabled
from . import gradebook, tool
from .routes import IDENTITY_COOKIE, TICKET

NOTE = "lti_note"  # (kind, message) about the launch, shown once
PLACING = "lti_placing"  # the deep-link token of an instructor placing a view, until placed
GRADED = "lti_graded"  # the instructor's launch with a gradebook column (scores go there)


def course_board(launch: tool.Launch) -> tuple[str, str]:
    """(code, key) of the launch's course's class board: derived from the tool's secret, so every
    launch of the course (on every replica, every day) names the same board and the instructor
    holds its key."""
    course = f"{launch.issuer}\n{launch.deployment}\n{launch.course}"
    raw = tool.tool_secret("course board:" + course)
    code = "".join(CODE_CHARS[b % len(CODE_CHARS)] for b in raw[:CODE_LEN])
    key = base64.urlsafe_b64encode(tool.tool_secret("course board key:" + course)[:12]).decode()
    return code, key


def _join_course(launch: tool.Launch) -> None:
    code, key = course_board(launch)
    store = board_store()
    if launch.teacher and not store.exists(code):
        try:
            store.new_board(code=code, key=key)
        except BoardError:
            if not store.exists(code):  # another launch made it meanwhile: fine; else say why
                raise
    if not store.exists(code):
        st.session_state[NOTE] = ("info", "Your course's class board opens when your teacher launches it today.")
        return
    st.session_state[JOINED] = code
    if launch.teacher:
        st.session_state[TEACHER] = (code, key)


def _remembered() -> None:
    """A session of a launched browser (a reload, a new tab) takes the launch's user from its
    signed cookie while that counts."""
    if students.LAUNCHED in st.session_state:
        return
    try:
        cookie = st.context.cookies.get(IDENTITY_COOKIE)
    except Exception:  # noqa: BLE001 - no browser (tests)
        cookie = None
    who = tool.identity_from_cookie(cookie) if cookie else None
    if who is not None:
        st.session_state[students.LAUNCHED] = who


def arrive() -> None:
    """Redeem the address's launch ticket, once (before anything is drawn); else take the user of
    the launched browser's cookie."""
    if not tool.enabled():
        return
    ticket = st.query_params.get(TICKET)
    if not ticket:
        _remembered()
        return
    del st.query_params[TICKET]
    launch = tool.redeem(ticket)
    if launch is None:
        st.session_state[NOTE] = (
            "error",
            "This launch was used already or is too old: open the tool from your course again.",
        )
        _remembered()
        return
    st.session_state[students.LAUNCHED] = {f: getattr(launch, f) for f in tool.IDENTITY_FIELDS}
    if launch.lineitem:
        if launch.teacher:
            st.session_state[GRADED] = launch
        else:  # where the teacher's "send scores" finds this student's column
            gradebook.GRADEBOOK.put(students.launched(**st.session_state[students.LAUNCHED]).key, launch, time.time())
    if launch.kind == tool.DEEP_LINKING:
        if launch.teacher:
            st.session_state[PLACING] = tool.deep_link_token(launch)
        return
    if enabled() and launch.course:
        try:
            _join_course(launch)
        except BoardError as e:
            st.session_state[NOTE] = ("error", str(e))
