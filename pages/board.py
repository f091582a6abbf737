"""Class board (opt-in, BERT_EXPLORER_BOARD=1): start or join a board by its class code, see the
runs posted to it (app/board.py) and what the best ones share. Runs are posted from the
Fine-tuning page's results."""

import time

import pandas as pd
import streamlit as st

import app
from app import board, board_plots, figures
from app.errors import show_errors
from app.helpers import md_escape

app.run_through_entry()  # before anything else: see app/__init__.py

CREATED = "board_created"  # (code, teacher key) of a board just started, shown once
CLEAR_KEY = "board_clear_key"
JOIN_KEY = "board_join_code"
NOTE = "board_note"

st.title("Class board")


def start() -> None:
    try:
        code, key = board.new_board()
    except board.BoardError as e:
        st.session_state[NOTE] = ("error", str(e))
        return
    st.session_state[CREATED] = (code, key)
    st.session_state[board.JOINED] = code
    st.session_state[CLEAR_KEY] = key


def join() -> None:
    typed = st.session_state.get(JOIN_KEY, "")
    try:
        code = board.normal_code(typed)
        if not board.exists(code):
            raise board.BoardError(f"There is no board {code} on this server (boards last a day).")
    except board.BoardError as e:
        st.session_state[NOTE] = ("error", str(e))
        return
    st.session_state[board.JOINED] = code


def leave() -> None:
    st.session_state.pop(board.JOINED, None)


def clear(code: str) -> None:
    try:
        n = board.clear(code, st.session_state.get(CLEAR_KEY, ""))
    except board.BoardError as e:
        st.session_state[NOTE] = ("error", str(e))
        return
    st.session_state[NOTE] = ("info", f"Board {code} is cleared ({n} run(s) removed).")


def table(runs: list[dict]) -> pd.DataFrame:
    rows = [
        {
            "nickname": r["nickname"],
            "accuracy %": None if r["accuracy"] is None else round(100 * r["accuracy"], 1),
            **{label: board.fmt_setting(k, r.get(k)) for k, label in board.SETTING_LABELS.items()},
            "posted": time.strftime("%H:%M", time.localtime(r["posted"])),
        }
        for r in runs
    ]
    df = pd.DataFrame(rows)
    return df.sort_values("accuracy %", ascending=False, na_position="last") if len(df) else df


LIVE_STATES = {
    "queued": "waiting for a free slot",
    "running": "training",
    "done": "finished",
    "stopped": "stopped early",
    "error": "ended with an error",
    "lost": "not heard from for a minute (its tab was closed?)",
}


@st.fragment(run_every=2)
def live_now(code: str) -> None:
    """The runs shown live on this board, their curves redrawn every 2 s."""
    try:
        runs = board.live_runs(code)
    except board.BoardError:
        return  # the posted runs' section says why
    if not runs:
        st.caption(
            "No run is live. Anyone on this board can show a run live from the Fine-tuning page while it "
            "trains, so the class can watch it instead of each queueing their own."
        )
        return
    st.subheader("Live now")
    for r in runs:
        acc = "" if r["accuracy"] is None or r["state"] != "done" else f" · accuracy {100 * r['accuracy']:.1f} %"
        st.markdown(f"**{md_escape(r['nickname'])}** · {LIVE_STATES[r['state']]}{acc}")
        st.progress(r["progress"], text=md_escape(r["line"]) or None)
        figures.show(board_plots.live_curves(r), f"board-live-{r['id']}", key=f"board_live_{r['id']}")


@st.fragment(run_every=5)
def live(code: str) -> None:
    try:
        runs = board.entries(code)
    except board.BoardError as e:
        st.error(md_escape(str(e)), icon=":material/error:")
        return
    if not runs:
        st.info("No runs posted yet: fine-tune a model, then post it from the Fine-tuning page's results.")
        return
    st.subheader(f"{len(runs)} run(s) posted")
    st.dataframe(table(runs), hide_index=True, width="stretch")
    figures.show(board_plots.posted_curves(runs), f"board-{code}", key="board_curves")
    share = board.what_the_best_share(runs)
    if share:
        st.markdown("**What the best runs share**\n\n" + "\n".join(f"- {md_escape(s)}" for s in share))


if not board.enabled():
    st.info(
        "The class board is off on this server. Your teacher can turn it on (BERT_EXPLORER_BOARD=1, README) "
        "to let students post their fine-tuning runs and compare them.",
        icon=":material/info:",
    )
else:
    st.caption(
        "Post your fine-tuning runs under a class code and see whose settings worked best. Only the settings, "
        "the accuracy and the curves are posted, never your data; a board lasts a day."
    )
    note = st.session_state.pop(NOTE, None)
    if note:
        (st.error if note[0] == "error" else st.info)(md_escape(note[1]))
    created = st.session_state.pop(CREATED, None)
    if created:
        st.success(
            f"Board **{created[0]}** is started: hand out the class code **{created[0]}**. Keep the teacher "
            "key below: it is shown only this once, and clearing the board needs it.",
            icon=":material/check_circle:",
        )
        st.code(created[1], language=None)
    code = st.session_state.get(board.JOINED)
    with st.expander("Start or join a board", expanded=not code):
        c1, c2 = st.columns(2, vertical_alignment="bottom")
        c1.button("Start a board", key="board_start", on_click=start, help="For the teacher: a new class code.")
        c2.text_input("Class code", key=JOIN_KEY, max_chars=board.CODE_LEN, placeholder="e.g. K7QX2M")
        c2.button("Join a board", key="board_join", on_click=join)
    if code:
        st.header(f"Board {code}")
        st.button("Leave this board", key="board_leave", on_click=leave)
        with show_errors("the board"):
            live_now(code)
            live(code)
        with st.expander("Clear the board (teacher)"):
            st.text_input("Teacher key", key=CLEAR_KEY, type="password", max_chars=64)
            st.button("Clear the board", key="board_clear", on_click=clear, args=(code,))
