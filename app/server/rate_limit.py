"""Per-session rate limits on costly actions a student can repeat (a new text to rank on Head
ablation costs seconds of processor). Kept in the session's state: times of the last minute,
and the few items done lately, which are free to show again."""

from __future__ import annotations

import math
import time

import streamlit as st

WINDOW_S = 60.0
REMEMBERED = 20  # items a session may return to without counting again


def wait_seconds(kind: str, item, per_minute: int, now: float | None = None) -> float:
    """0.0 when this session may do `item` now (counted, unless it was done lately), else the
    seconds until the oldest of its last `per_minute` new items is a minute old."""
    now = time.monotonic() if now is None else now
    ss = st.session_state
    times = [t for t in ss.get(f"rate_{kind}_times", []) if now - t < WINDOW_S]
    done = ss.get(f"rate_{kind}_items", [])
    if item in done:
        return 0.0
    if len(times) >= per_minute:
        ss[f"rate_{kind}_times"] = times
        return max(0.1, WINDOW_S - (now - times[-per_minute]))
    ss[f"rate_{kind}_times"] = times + [now]
    ss[f"rate_{kind}_items"] = (done + [item])[-REMEMBERED:]
    return 0.0


def within_rate(kind: str, item, per_minute: int, what: str, why: str, retry: str, key: str) -> bool:
    """`wait_seconds` on a page: True when `item` may run now; else a warning ("You asked for
    {per_minute} {what} in the last minute ... {why} ... Try again in N s") and a `retry` button."""
    wait = wait_seconds(kind, item, per_minute)
    if wait:
        st.warning(
            f"You asked for {per_minute} {what} in the last minute, the most this server allows one student: "
            f"{why}, and the server is shared. Try again in {math.ceil(wait)} s (press {retry}).",
            icon=":material/hourglass_top:",
        )
        st.button(retry, key=key, icon=":material/refresh:")
    return not wait
