"""The class board's widgets on the Fine-tuning page (app/class_store/store.py is the store): post a finished
run (a classifier's or a per-token head's), or show a run live on the board while it trains, so a
class can watch one run instead of queueing thirty. Only when the board is on
(BERT_EXPLORER_BOARD=1) and this session has joined a board on the Class board page."""

from __future__ import annotations

import time

import streamlit as st

from ..class_store.checks import NICK_CHARS
from ..class_store.errors import BoardError, BoardUnavailable
from ..class_store.service import JOINED, board_store, enabled
from ..class_store.summary import summary_of
from ..formatting import md_escape
from ..jobs.records import run_record
from ..jobs.spec import FINETUNE, TASK_HEAD
from ..run_session.follow import current_job
from ..run_session.progress import finetune_progress, task_head_progress
from ..students import identity, real_name, student_key

ICON_ERR = ":material/error:"
POST_NICK = "ft_board_nick"
LIVE_NICK = "ft_board_live_nick"
LIVE = "ft_board_live"  # {"job": job id, "code": class code, "id": live row, "at": last write}
NOTE = "ft_board_note"
WRITE_EVERY_S = 2.0  # a live run is written to the board at most this often


def joined() -> str | None:
    code = st.session_state.get(JOINED)
    return code if code and enabled() else None


def _show_note() -> None:
    note = st.session_state.pop(NOTE, None)
    if note and note[0] == "error":
        st.error(md_escape(note[1]), icon=ICON_ERR)
    elif note:
        st.success(md_escape(note[1]), icon=":material/check_circle:")


def _nickname_and_button(nick_key: str, nick_help: str, label: str, key: str, on_click) -> None:
    """A nickname box (offered the signed-in user's nickname claim, app/students.py) and the
    button that acts with it, then the outcome of the last click."""
    offered = identity().nickname
    if offered and nick_key not in st.session_state:
        st.session_state[nick_key] = offered[:NICK_CHARS]
    c1, c2 = st.columns([2, 1], vertical_alignment="bottom")
    c1.text_input("Your nickname on the board", key=nick_key, max_chars=NICK_CHARS, help=nick_help)
    c2.button(label, key=key, on_click=on_click)
    _show_note()


def _post(code: str, res: dict) -> None:
    """The post button's callback: the outcome is left for the page as (kind, message)."""
    try:
        board_store().post(
            code,
            st.session_state.get(POST_NICK, ""),
            summary_of(res),
            run_code=res.get("code"),
            student=student_key(),
            owner=res.get("student"),  # the browser that trained it: a reopened run records it
            **real_name(),
        )
    except BoardError as e:
        st.session_state[NOTE] = ("error", str(e))
    else:
        st.session_state[NOTE] = ("success", f"Posted to board {code}: see it on the Class board page.")


def board_post(res: dict) -> None:
    """A finished run's nickname box and post button."""
    code = joined()
    if not code:
        return
    st.subheader(f"Class board {code}")
    _nickname_and_button(
        POST_NICK,
        "Shown to the class with this run's settings, scores and curves (never your data).",
        "Post this run to the class board",
        f"ft_board_post_{res['job_id']}",
        lambda: _post(code, res),
    )


def push_live(job, force: bool = False) -> None:
    """Write a job shown live to its board: every WRITE_EVERY_S while it trains, and once when
    it has ended (state, accuracy, curves). Nothing when this job is not shown live."""
    share = st.session_state.get(LIVE)
    if not share or share["job"] != job.id or "args" not in job.info:
        return
    now = time.time()
    if job.active and not force and now - share["at"] < WRITE_EVERY_S:
        return
    res = run_record(job.kind, job.metrics, job.info, job.status, job.error, job.stop_reason)
    frac, line = (task_head_progress if job.kind == TASK_HEAD else finetune_progress)(job.metrics)
    try:
        kept = board_store().update_live(
            share["code"],
            share["id"],
            job.status,
            frac if job.active else 1.0,
            line,
            summary_of(res),
            now=now,
        )
    except BoardUnavailable:  # the database is down for now: the next write tries again
        kept = True
    except BoardError:
        kept = False
    share["at"] = now
    if not kept:  # the teacher cleared the board, or it expired
        st.session_state.pop(LIVE, None)


def push_ended() -> None:
    """Before the page collects a finished job: its last state on the board, if shown live (the
    live panel may not have polled since it ended). A per-token head's job only when one is shown live."""
    for kind in (FINETUNE, TASK_HEAD) if st.session_state.get(LIVE) else (FINETUNE,):
        job = current_job(kind)
        if job is not None and not job.active:
            job.drain()
            push_live(job, force=True)


def _go_live(code: str, job) -> None:
    try:
        live_id = board_store().go_live(code, st.session_state.get(LIVE_NICK, ""), student=student_key(), **real_name())
    except BoardError as e:
        st.session_state[NOTE] = ("error", str(e))
        return
    st.session_state[LIVE] = {"job": job.id, "code": code, "id": live_id, "at": 0.0}
    push_live(job, force=True)
    st.session_state[NOTE] = (
        "success",
        f"Your run is live on board {code}: the class sees it on the Class board page.",
    )


def live_share(job) -> None:
    """In the live panel: the button that shows this run live on the joined board, or a line
    saying it is shown."""
    code = joined()
    if not code:
        return
    share = st.session_state.get(LIVE)
    if share and share["job"] == job.id:
        st.caption(f"Shown live on class board {share['code']}.")
    else:
        _nickname_and_button(
            LIVE_NICK,
            "The class sees this run's settings and curves while it trains (never your data).",
            f"Show this run live on board {code}",
            "ft_board_go_live",
            lambda: _go_live(code, job),
        )
    _show_note()
