"""Widgets the Fine-tuning and Pre-training pages share: reopening a run, the notice line, the
live panel's queue and progress lines, and a result's summary and "Keep it" block (with, on the
Fine-tuning page, the class board's post button when the board is on: app/training/board_buttons.py).

Each takes a `TrainPage` saying what differs between the two pages: the job kind, the prefix of
the widget keys ("ft" / "pt"), the stem of the figures' download names, and the help texts of
the downloads.
"""

from __future__ import annotations

from collections.abc import Callable

import plotly.graph_objects as go
import streamlit as st

from bert.family import member

from .. import state
from ..formatting import md_escape
from ..jobs.spec import FINETUNE, TASK_HEAD
from ..run_session import session as ts
from ..run_session.controls import ICON_ERR, TrainPage
from ..run_session.finished import (
    collect,
    reopen_callback,
    result_status,
    results,
    run_code_line,
    use_model,
)
from ..run_session.names import safe_filename
from ..run_session.run_size import RUN_SIZES
from ..ui import show_figure
from ..ui.errors import show_errors
from . import board_buttons
from .downloads import model_zip


def collect_and_reopen(page: TrainPage) -> None:
    """Move a finished job's result into the session (and show it), then the "Reopen a run" box."""
    new_result = collect(page.kind)
    if new_result is not None:
        st.session_state[page.select_key] = new_result["name"]  # show the newest run
    code_key = f"{page.prefix}_reopen_code"
    with st.expander("Reopen a run (after a refresh, or from another day's code)"):
        c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
        c1.text_input(
            "Run code",
            key=code_key,
            max_chars=12,
            placeholder="e.g. K7QX2M",
            help="Shown on every run's results and while it trains; runs are kept for a day.",
        )
        c2.button(
            "Reopen",
            key=f"{page.prefix}_reopen",
            on_click=reopen_callback,
            args=(page.kind, code_key, page.select_key),
        )


def upload_missing(upload_key: str, prompt: str) -> None:
    """The line where an upload has no file: it was freed for a job, or `prompt`."""
    freed = st.session_state[ts.FREED].get(upload_key)
    if freed:
        st.info(
            f"{md_escape(freed)} was handed to your job and freed from the server's "
            "memory. Upload it again to train on it again.",
            icon=":material/upload_file:",
        )
    else:
        st.info(prompt, icon=":material/upload_file:")


def result_summary(
    page: TrainPage, res: dict, metrics: list[tuple[str, str]], caption: str, curves: go.Figure, notebook=None
) -> None:
    """A result's head: why it ended early, its run code, a row of metrics, `caption`, its curves
    (with `notebook`, app/ui/show_figure.py's notebook builder for them)."""
    if res["error"]:
        st.error(md_escape(res["error"]), icon=ICON_ERR)
    elif result_status(res):
        st.info(result_status(res), icon=":material/pause_circle:")
    if run_code_line(res):
        st.caption(run_code_line(res))
    for col, (label, value) in zip(st.columns(len(metrics)), metrics):
        col.metric(label, value)
    st.caption(caption)
    jid = res["job_id"]
    show_figure.show(curves, f"{page.slug}-curves-{jid}", key=f"{page.prefix}_curves_{jid}", notebook=notebook)


def keep_it(page: TrainPage, res: dict) -> None:
    """The "Keep it" block: the two downloads (zipped only when clicked), the button that makes
    the model the other pages' one, and its card."""
    b, jid = res["bundle"], res["job_id"]
    st.subheader("Keep it")
    c1, c2, c3 = st.columns(3)
    fname = safe_filename(res["name"])
    c1.download_button(
        "Download (BERT Explorer format, .zip)",
        data=lambda: model_zip(b, res["name"]),
        file_name=f"{fname}.zip",
        mime="application/zip",
        on_click="ignore",
        key=f"{page.prefix}_dl_{jid}",
        help=page.ours_help,
    )
    c2.download_button(
        "Download (Hugging Face format, .zip)",
        data=lambda: model_zip(b, res["name"], "hf"),
        file_name=f"{fname}-hf.zip",
        mime="application/zip",
        on_click="ignore",
        key=f"{page.prefix}_dlhf_{jid}",
        help=f"transformers.{page.hf_class}.from_pretrained(folder)"
        if member(b.config).hf_export
        else "Written for BERT models only: this one comes from another member of BERT's family.",
        disabled=not member(b.config).hf_export,
    )
    c3.button(
        "Explore it on the other pages",
        key=f"{page.prefix}_use_{jid}",
        on_click=use_model,
        args=(res["key"],),
        disabled=st.session_state.get(state.MODEL_SOURCE) == res["key"],
    )
    with st.expander("Model card"):
        st.code(b.card, language=None, wrap_lines=True)
    if page.kind in (FINETUNE, TASK_HEAD):  # a text classifier or a per-token head: the class board takes either
        board_buttons.board_post(res)


def results_section(page: TrainPage, header: str, show: Callable[[dict], None]) -> None:
    """This session's results of the page's kind under `header`: a picker when there are
    several (the newest first), then `show` on the one picked."""
    done = results(page.kind)
    if not done:
        return
    st.header(header)
    names = [r["name"] for r in reversed(done)]
    ts.seed(page.select_key, names[0], names)
    if len(names) > 1:
        st.radio("Model", names, key=page.select_key, horizontal=True, format_func=md_escape)  # options are markdown
    res = next(r for r in done if r["name"] == st.session_state[page.select_key])
    with show_errors("the results"):
        show(res)


def _use_size() -> None:
    """The picked run size's training and validation texts and frozen layers into the settings."""
    ss = st.session_state
    size = RUN_SIZES[ss.ft_size]
    ss.ft_max_train, ss.ft_max_valid, ss.ft_freeze_layers = size.max_train, size.max_valid, size.freeze_layers


def run_size_picker() -> None:
    """The Fine-tuning page's run size (quick for a class, or full) and what it costs and gives."""
    sizes = RUN_SIZES
    st.radio(
        "Run size",
        list(sizes),
        key="ft_size",
        format_func=lambda k: sizes[k].label,
        horizontal=True,
        on_change=_use_size,
    )
    st.caption(sizes[st.session_state.ft_size].note)
