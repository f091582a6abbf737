"""Class board (opt-in, BERT_EXPLORER_BOARD=1): the teacher starts a board (with the server's
teacher key, app/server/teacher.py), students join it by its class code and see the runs posted to it
(app/board/) and what the best ones share. Runs are posted from the Fine-tuning page's results.
The posted runs are redrawn only when they change (`watch` polls the board's version). The board's
database down, the page says so and redraws when it is back; the other pages never use it."""

import streamlit as st

import app
from app.board import charts as board_charts
from app.board import class_panel, pairs_panel
from app.class_store.checks import CODE_LEN, normal_code
from app.class_store.errors import BoardError, BoardUnavailable
from app.class_store.service import JOINED, TEACHER, board_store, enabled
from app.class_store.summary import TASK_SCORES, entry_name, runs_table, what_the_best_share
from app.formatting import md_escape
from app.server import teacher
from app.ui import show_figure
from app.ui.errors import show_errors
from bert.task_heads import TASK_HEADS

app.run_through_entry()  # before anything else: see app/__init__.py

CREATED = "board_created"  # (code, teacher key) of the board this session started, until "Done"
SHOW_KEY = "board_show_key"  # toggle: the board's key shown under the class code
CLEAR_KEY = "board_clear_key"
JOIN_KEY = "board_join_code"
REMOVE_PICK = "board_remove_pick"
NOTE = "board_note"
WATCH_EVERY_S = 5
DOWN = "down"  # what `watch` compares while the board's database cannot be reached

st.title("Class board")


def start() -> None:
    if not teacher.is_teacher():  # the button is drawn only for the teacher; a forged click lands here
        st.session_state[NOTE] = ("error", "Starting a board is for the teacher.")
        return
    try:
        code, key = board_store().new_board()
    except BoardError as e:
        st.session_state[NOTE] = ("error", str(e))
        return
    st.session_state[CREATED] = (code, key)
    st.session_state[SHOW_KEY] = False
    st.session_state[JOINED] = code
    st.session_state[CLEAR_KEY] = key
    st.session_state[TEACHER] = (code, key)  # this session teaches the class too


def join() -> None:
    typed = st.session_state.get(JOIN_KEY, "")
    try:
        code = normal_code(typed)
        if not board_store().exists(code):
            raise BoardError(f"There is no board {code} on this server (boards last a day).")
    except BoardError as e:
        st.session_state[NOTE] = ("error", str(e))
        return
    st.session_state[JOINED] = code


def class_code_typed(typed: str) -> str | None:
    """The message for a class code typed in the teacher key's box; None for anything else."""
    try:
        normal_code(typed)
    except BoardError:
        return None
    return "That looks like a class code, not the teacher key: type it in the Class code box instead."


def leave() -> None:
    st.session_state.pop(JOINED, None)


def done_with_code() -> None:
    st.session_state.pop(CREATED, None)


def started(code: str, key: str) -> None:
    """The class code of a board just started, big enough to copy from a projector, and its key
    only when the teacher reveals it: the key gives its holder the teacher's powers on the class
    (leading, questions and their answers, removing runs, clearing), so a projected page must not
    show it."""
    st.success(
        f"Board **{code}** is started: hand out the class code below. The board's key is hidden so that "
        "this page can be projected; show it only on your own screen and keep it: it is shown on this page "
        "until you click Done, and removing runs, clearing the board or teaching the class from another "
        "browser needs it.",
        icon=":material/check_circle:",
    )
    st.markdown(f"# Class code: {code}")  # CODE_CHARS only: nothing to escape
    if st.toggle("Show the board's key (not while projecting: it gives the teacher's powers)", key=SHOW_KEY):
        st.code(key, language=None)
    st.button("Done: hide the class code and the key", key="board_created_done", on_click=done_with_code)


def clear(code: str) -> None:
    try:
        n = board_store().clear(code, st.session_state.get(CLEAR_KEY, ""))
    except BoardError as e:
        st.session_state[NOTE] = ("error", str(e))
        return
    st.session_state[NOTE] = ("info", f"Board {code} is cleared ({n} run(s) removed).")


def remove(code: str, names: dict[int, str]) -> None:
    entry_id = st.session_state.get(REMOVE_PICK)
    try:
        gone = entry_id is not None and board_store().remove(code, st.session_state.get(CLEAR_KEY, ""), entry_id)
    except BoardError as e:
        st.session_state[NOTE] = ("error", str(e))
        return
    what = names.get(entry_id, "That run")
    st.session_state[NOTE] = ("info", f"{what} is removed." if gone else f"{what} was removed already.")


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
    """The runs shown live on this board, their curves redrawn every few seconds (on the teacher's own
    screen, each with its student's real name when signed in)."""
    try:
        runs = board_store().live_runs(code)
    except BoardError:
        return  # the posted runs' section says why
    if not runs:
        st.caption(
            "No run is live. Anyone on this board can show a run live from the Fine-tuning page while it "
            "trains, so the class can watch it instead of each queueing their own."
        )
        return
    st.subheader("Live now")
    name_of = class_panel.names_for_teacher(code)
    for r in runs:
        main = TASK_SCORES[r["task"]][0]
        acc = "" if r["accuracy"] is None or r["state"] != "done" else f" · {main} {100 * r['accuracy']:.1f} %"
        name = name_of(r["nickname"]) if name_of else ""
        who = f"**{md_escape(r['nickname'])}**" + (f" ({md_escape(name)})" if name else "")
        st.markdown(f"{who} · {LIVE_STATES[r['state']]}{acc}")
        st.progress(r["progress"], text=md_escape(r["line"]) or None)
        show_figure.show(board_charts.live_figure(r), f"board-live-{r['id']}", key=f"board_live_{r['id']}")


@st.fragment(run_every=WATCH_EVERY_S)
def watch(code: str, drawn: int | str | None) -> None:
    """One small query every few seconds; the page is redrawn only when the posted runs changed,
    or the database went away or came back."""
    try:
        now = board_store().version(code)
    except BoardUnavailable:
        now = DOWN
    if now != drawn:
        st.rerun()


def posted(code: str) -> list[dict]:
    """The posted runs: table (on the teacher's own screen, with the signed-in students' real
    names), curves, what the best share; the runs drawn."""
    try:
        drawn = board_store().version(code)
        runs = board_store().entries(code)
    except BoardError as e:
        st.error(md_escape(str(e)), icon=":material/error:")
        if isinstance(e, BoardUnavailable):
            watch(code, DOWN)  # redrawn when the database is back
        return []
    watch(code, drawn)
    if not runs:
        st.info("No runs posted yet: fine-tune a model, then post it from the Fine-tuning page's results.")
        return runs
    st.subheader(f"{len(runs)} run(s) posted")
    name_of = class_panel.names_for_teacher(code)
    groups = {t: [r for r in runs if r["task"] == t] for t in TASK_SCORES}
    for task, group in ((t, g) for t, g in groups.items() if g):
        if task != "classifier" or len(group) < len(runs):  # runs of several tasks: each its own table
            st.markdown(f"**{TASK_HEADS[task].task.capitalize()}**: {len(group)} run(s)")
        st.dataframe(runs_table(group, name_of), hide_index=True, width="stretch")
        tail = "" if task == "classifier" else f"_{task}"  # a classifier's chart keeps the names it had
        show_figure.show(
            board_charts.posted_figure(code, drawn, group), f"board-{code}{tail}", key=f"board_curves{tail}"
        )
        share = what_the_best_share(group)
        if share:
            st.markdown("**What the best runs share**\n\n" + "\n".join(f"- {md_escape(s)}" for s in share))
    return runs


if not enabled():
    st.info(
        "The class board is off on this server. Your teacher can turn it on (BERT_EXPLORER_BOARD=1, README) "
        "to let students post their fine-tuning runs and compare them.",
        icon=":material/info:",
    )
else:
    st.caption(
        "Post your fine-tuning runs under a class code and see whose settings worked best. Only the settings, "
        "the scores and the curves are posted, never your data; a board lasts a day."
    )
    note = st.session_state.pop(NOTE, None)
    if note:
        (st.error if note[0] == "error" else st.info)(md_escape(note[1]))
    code = st.session_state.get(JOINED)
    created = st.session_state.get(CREATED)
    if created and created[0] == code:
        started(*created)
    with st.expander("Start or join a board", expanded=not code):
        c1, c2 = st.columns(2)  # the students' box first: on a phone the columns stack
        c1.text_input("Class code", key=JOIN_KEY, max_chars=CODE_LEN, placeholder="e.g. K7QX2M")
        c1.button("Join a board", key="board_join", on_click=join)
        with c2:
            if teacher.gate("Starting a board", misplaced=class_code_typed):
                st.button("Start a board", key="board_start", on_click=start, help="A new class code.")
    if code:
        st.header(f"Board {code}")
        st.button("Leave this board", key="board_leave", on_click=leave)
        runs, pairs = [], []
        with show_errors("the board"):
            live_now(code)
            runs = posted(code)
            pairs = pairs_panel.render(code)
        with st.expander("Remove a run or a pair, or clear the board (teacher)"):
            st.text_input("The board's key", key=CLEAR_KEY, type="password", max_chars=64)
            if runs:
                names = {r["id"]: entry_name(r) for r in runs}
                st.selectbox("Run", list(names), key=REMOVE_PICK, format_func=names.get)
                st.button("Remove this run", key="board_remove", on_click=remove, args=(code, names))
            if pairs:
                pairs_panel.remove_control(code, pairs, CLEAR_KEY, NOTE)
            st.button("Clear the board", key="board_clear", on_click=clear, args=(code,))
