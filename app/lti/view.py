"""The sidebar's course line for a session launched from the course (app/lti/arrive.py): who it
is (the name on this screen only, not in projector mode), the launch's note, and for an instructor
placing a link (deep linking) the button that places the view on screen in the course."""

from __future__ import annotations

from urllib.parse import urlencode, urlsplit

import streamlit as st

from .. import students
from ..ui import links
from ..ui.formatting import md_escape
from .arrive import NOTE, PLACING

TITLE = "lti_place_title"


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
    token = st.session_state.get(PLACING)
    if token and who.teacher:
        st.markdown("**Place a view in your course**")
        st.caption("Open the view your class should see (page, model, sentences), then place its link.")
        title = st.text_input("Its title in the course", key=TITLE, max_chars=100) or "BERT Explorer"
        here = urlsplit(links.current_url())
        path = here.path + (f"?{here.query}" if here.query else "")
        query = urlencode({"token": token, "path": path, "title": title})
        st.link_button("Place this view in the course", f"/lti/deep-link?{query}", icon=":material/add_link:")
