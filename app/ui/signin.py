"""The sidebar's sign-in line when sign-in through the school is on (app/students.py): a Sign in
button, or who is signed in and a Sign out button. The name is shown on this session's own screen
only, and not in projector mode (the class sees the projector). A misconfigured `[auth]` section or
a provider that does not answer is said in words naming the setting, never a traceback."""

from __future__ import annotations

import streamlit as st

from .. import students
from ..formatting import md_escape
from . import links

PROBLEM = "signin_problem"  # session key: why the last Sign in click could not go to the provider


def _sign_in() -> None:
    auth = students.auth_section()
    problem = students.auth_problem(auth) or students.provider_problem(students.auth_value(auth, "server_metadata_url"))
    if problem:
        st.session_state[PROBLEM] = problem
        return
    st.login()


def render() -> None:
    """Draw the sign-in line (inside `with st.sidebar`); nothing when sign-in is off."""
    who = students.identity()
    if not students.signin_on() or who.via == students.LAUNCHED_FROM_COURSE:
        return
    if who.via == students.SIGNED_IN:
        shown = "" if st.session_state.get(links.PROJECTOR) else (who.name or who.email)
        role = " (teacher)" if who.teacher else ""
        st.caption(f"Signed in{' as ' + md_escape(shown) if shown else ''}{role}.")
        st.button("Sign out", key="signin_out", icon=":material/logout:", on_click=st.logout)
        return
    if who.expired:
        st.warning("Your sign-in has expired: sign in again. Your runs keep their codes.", icon=":material/schedule:")
    problem = st.session_state.pop(PROBLEM, None) or students.auth_problem(students.auth_section())
    if problem:
        st.error(md_escape(problem), icon=":material/error:")
    st.button("Sign in through the school", key="signin_in", icon=":material/login:", on_click=_sign_in)
