"""The teacher of a server: a signed-in user the settings list (app/students.py: by email or group
claim), a user launched from a course as its Instructor (app/lti/), or whoever types its teacher
key (BERT_EXPLORER_TEACHER_KEY, set by the person running it). The key is typed once per session;
the session keeps only its hash, compared with hmac.compare_digest. With no such user and the key
unset (or shorter than MIN_CHARS), nobody is the teacher: the pages that need one (starting a class
board, the Server status page) say how to set it.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable

import streamlit as st

from bert import settings

from .. import students

SETTING = "BERT_EXPLORER_TEACHER_KEY"
MIN_CHARS = 12  # a shorter key could be guessed by a class trying keys
PROVEN = "teacher_key_hash"  # session-state key: the hash of the right key, once typed
TYPED = "teacher_key_typed"


def _digest(key: str) -> str:
    return hashlib.sha256(b"bert-explorer-teacher:" + key.encode()).hexdigest()


def server_key() -> str:
    """The server's teacher key, '' when unset or too short to count."""
    key = settings.text(SETTING)
    return key if len(key) >= MIN_CHARS else ""


def key_matches(typed: str | None) -> bool:
    key = server_key()
    return bool(key) and hmac.compare_digest(_digest((typed or "").strip()), _digest(key))


def is_teacher() -> bool:
    """This session's user is a listed teacher or a course's instructor, or it typed the server's
    (current) key."""
    if students.identity().teacher:
        return True
    key = server_key()
    proven = st.session_state.get(PROVEN)
    return bool(key) and isinstance(proven, str) and hmac.compare_digest(proven, _digest(key))


WRONG = "That is not this server's teacher key."


def _unlock(misplaced: Callable[[str], str | None] | None = None) -> None:
    typed = st.session_state.get(TYPED, "")
    st.session_state[TYPED] = ""  # the box empties: the key is not kept
    if key_matches(typed):
        st.session_state[PROVEN] = _digest(server_key())
    else:
        st.session_state[PROVEN] = None
        st.session_state[TYPED + "_wrong"] = (misplaced(typed) if misplaced else None) or WRONG


def gate(what: str, misplaced: Callable[[str], str | None] | None = None) -> bool:
    """True for the teacher; else one line saying `what` is for the teacher (to a signed-in user:
    that the settings do not list them) and, when the server has a teacher key, a box to type it
    (once per session). `misplaced(typed)`: the message for something typed in the key's box that
    belongs in another box (a class code), or None."""
    if is_teacher():
        return True
    via = students.identity().via
    if via == students.LAUNCHED_FROM_COURSE:
        st.info(
            f"{what} is for the course's instructors" + (": the teacher key opens it too." if server_key() else "."),
            icon=":material/lock:",
        )
    elif via == students.SIGNED_IN:
        st.info(
            f"{what} is for the teacher, and this server's settings do not list you as one "
            "(BERT_EXPLORER_TEACHER_EMAILS or BERT_EXPLORER_TEACHER_GROUPS)"
            + (": the teacher key opens it too." if server_key() else "."),
            icon=":material/lock:",
        )
    elif not server_key():
        st.info(
            f"{what} is for the teacher. The person running this server turns it on by setting "
            f"{SETTING} (at least {MIN_CHARS} characters, README) and telling the teacher the key.",
            icon=":material/lock:",
        )
    else:
        st.info(f"{what} is for the teacher: type the server's teacher key.", icon=":material/lock:")
    if not server_key():
        return False
    if wrong := st.session_state.pop(TYPED + "_wrong", None):
        st.error(wrong if isinstance(wrong, str) else WRONG, icon=":material/error:")
    st.text_input("Teacher key", key=TYPED, type="password", max_chars=200)
    st.button("Unlock", key="teacher_unlock", on_click=_unlock, args=(misplaced,))
    return False
