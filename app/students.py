"""Who a student is, for every feature that counts or remembers students (one job each, a class
question's answers, a post on the board): this browser, all its tabs, told by Streamlit's XSRF
cookie (hashed: the token itself is never kept), else this session, by the owner id it keeps in
its state (jobs are looked up with it, so a session only ever reaches its own)."""

from __future__ import annotations

import hashlib
import uuid

import streamlit as st

OWNER = "train_owner"  # str: this session's owner id for app.jobs (never shown)


def owner() -> str:
    """This session's owner id: jobs are looked up with it, so a session only sees its own."""
    ss = st.session_state
    if OWNER not in ss:
        ss[OWNER] = uuid.uuid4().hex
    return ss[OWNER]


def browser_id(xsrf_cookie: str | None) -> str | None:
    """A stable id of one browser from Streamlit's `_streamlit_xsrf` cookie, or None. The cookie
    ("2|mask|masked token|time") is set once per browser and sent by all its tabs; its token,
    unmasked, is the same in each. Hashed: the token itself is never kept."""
    parts = (xsrf_cookie or "").strip("\"'").split("|")
    try:
        if len(parts) == 4 and parts[0] == "2":
            mask, masked = bytes.fromhex(parts[1]), bytes.fromhex(parts[2])
            token = bytes(b ^ mask[i % 4] for i, b in enumerate(masked))
        elif len(parts) == 1 and len(parts[0]) >= 16:
            token = parts[0].encode()
        else:
            return None
    except ValueError:
        return None
    return hashlib.sha256(b"bert-explorer:" + token).hexdigest()[:20] if token else None


def student_key() -> str:
    """Who the one-job-per-student cap counts: this browser (all its tabs) when Streamlit's XSRF
    cookie is there (server.enableXsrfProtection, on by default), else this session. Another
    browser or a private window is another student: the queue cap still bounds them all."""
    try:
        cookie = st.context.cookies.get("_streamlit_xsrf")
    except Exception:  # noqa: BLE001 - no context (tests)
        cookie = None
    bid = browser_id(cookie)
    return f"browser:{bid}" if bid else f"session:{owner()}"
