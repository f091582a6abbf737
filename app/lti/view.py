"""The sidebar's course line for a session launched from the course (app/lti/arrive.py): who it
is (the name on this screen only, not in projector mode), the launch's note, and for an instructor
placing a link (deep linking) the button that places the view on screen in the course."""

from __future__ import annotations

import time
from urllib.parse import urlencode, urlsplit

import streamlit as st

from .. import students
from ..class_store.errors import BoardError
from ..class_store.service import JOINED, TEACHER, classroom
from ..formatting import md_escape
from ..ui import links
from . import gradebook, tool
from .arrive import GRADED, NOTE, PLACING

TITLE = "lti_place_title"
SENT = "lti_scores_sent"  # (kind, message) of the last "send scores" click


def send_scores() -> None:
    """The class questions' scores of today, for each student launched into this course with a
    gradebook column: right answers / questions asked, to the column of the instructor's link."""
    mine = st.session_state.get(GRADED)
    teaching = st.session_state.get(TEACHER)
    if not isinstance(mine, tool.Launch) or not teaching or teaching[0] != st.session_state.get(JOINED):
        st.session_state[SENT] = ("error", "Open your course's class board from the course first.")
        return
    try:
        asked, right = classroom().scores(*teaching)
        if not asked:
            raise gradebook.GradebookError("No class question was asked today: there is nothing to send.")
        now = time.time()
        launches = ((gradebook.GRADEBOOK.get(key, now), n) for key, n in right.items())
        due = [
            (who, float(n), float(asked))
            for who, n in launches
            if isinstance(who, tool.Launch) and (who.issuer, who.lineitem) == (mine.issuer, mine.lineitem)
        ]
        sent = gradebook.post_scores(due, now)
    except (gradebook.GradebookError, BoardError) as e:
        st.session_state[SENT] = ("error", str(e))
        return
    st.session_state[SENT] = (
        "success",
        f"Sent {sent} student(s)' scores ({asked} question(s) today) to the gradebook.",
    )


def render() -> None:
    """Draw the course line (inside `with st.sidebar`); nothing for a session not launched."""
    note = st.session_state.pop(NOTE, None)
    if note:
        (st.error if note[0] == "error" else st.info)(md_escape(note[1]))
    who = students.identity()
    if who.via != students.LAUNCHED_FROM_COURSE:
        return
    shown = "" if st.session_state.get(links.PROJECTOR) else who.name
    role = " (teacher)" if who.teacher else ""
    st.caption(f"From your course{' as ' + md_escape(shown) if shown else ''}{role}.")
    if who.teacher and isinstance(st.session_state.get(GRADED), tool.Launch):
        st.button(
            "Send today's class-question scores to the gradebook",
            key="lti_send_scores",
            icon=":material/grading:",
            on_click=send_scores,
            help="Each student launched from this course gets their right answers out of the questions asked today.",
        )
        sent = st.session_state.pop(SENT, None)
        if sent:
            (st.error if sent[0] == "error" else st.success)(md_escape(sent[1]))
    token = st.session_state.get(PLACING)
    if token and who.teacher:
        st.markdown("**Place a view in your course**")
        st.caption("Open the view your class should see (page, model, sentences), then place its link.")
        title = st.text_input("Its title in the course", key=TITLE, max_chars=100) or "BERT Explorer"
        here = urlsplit(links.current_url())
        path = here.path + (f"?{here.query}" if here.query else "")
        query = urlencode({"token": token, "path": path, "title": title})
        st.link_button("Place this view in the course", f"/lti/deep-link?{query}", icon=":material/add_link:")
