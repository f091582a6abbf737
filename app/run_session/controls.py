"""The controls every page that trains shares, whatever it trains: what the page is (TrainPage),
the notice a button callback left, the Start button with where the job will run, the live panel's
queue and progress lines, and the Stop button."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from ..formatting import md_escape
from ..jobs.backend import JobBackend, JobHandle
from ..jobs.worker import job_threads
from .finished import notice_key
from .follow import current_job

ICON_ERR = ":material/error:"


@dataclass(frozen=True)
class TrainPage:
    kind: str  # FINETUNE or PRETRAIN
    prefix: str  # of the widget keys: "ft", "pt"
    slug: str  # of the figures' download names: "finetune", "pretrain"
    hf_class: str  # the transformers class that opens the Hugging Face download
    ours_help: str | None = None  # the help of the BERT Explorer format download

    @property
    def notice_key(self) -> str:
        return notice_key(self.kind)

    @property
    def select_key(self) -> str:
        """The key of the results' model picker."""
        return f"{self.prefix}_result"


def notice(page: TrainPage) -> None:
    """The message a button callback left for the page (an error or a note)."""
    note = st.session_state.get(page.notice_key)
    if note:
        (st.error if note[0] == "error" else st.info)(
            md_escape(note[1]), icon=ICON_ERR if note[0] == "error" else ":material/info:"
        )


def background_caption(jm: JobBackend) -> None:
    st.caption(
        f"Training runs in the background on {job_threads()} processor thread(s), so the app stays "
        f"responsive for everyone; at most {jm.max_running} job(s) train at once on this server, others wait "
        f"in a queue (at most {jm.max_queue}), one job per student. You may visit other pages meanwhile; "
        "closing the tab stops the job within 10 s. Whatever ends it, the model is saved under the run "
        "code shown here, for a day."
    )


def start_button(page: TrainPage, jm: JobBackend, label: str, on_click, args: tuple, disabled: bool, **kw) -> None:
    """The primary button that starts the job, then where it will run (background_caption)."""
    st.button(label, type="primary", key=f"{page.prefix}_start", on_click=on_click, args=args, disabled=disabled, **kw)
    background_caption(jm)


def start_section(
    page: TrainPage, jm: JobBackend, kind: str, label: str, on_click, args: tuple, not_ready: bool, **kw
) -> JobHandle | None:
    """The page's notice and its Start button, disabled while the page is `not_ready` or this
    session's job of `kind` is active; that job (None: none)."""
    job = current_job(kind, jm)
    notice(page)
    start_button(page, jm, label, on_click, args, not_ready or (job is not None and job.active), **kw)
    return job


def live_progress(job: JobHandle, jm: JobBackend, frac: float, line: str) -> None:
    """The live panel's head: the place in the queue, the progress bar, the run code."""
    if job.status == "queued":
        st.info(
            f"Waiting for a free slot: you are number {jm.queue_position(job)} in the queue "
            f"({jm.max_running} job(s) train at once on this server).",
            icon=":material/hourglass_top:",
        )
    st.progress(frac, text=line)
    st.caption(
        f"Run code **{job.info.get('code', '?')}**: when training ends, the model is saved under this "
        "code for a day (type it under “Reopen a run” after a refresh)."
    )


def stop_button(page: TrainPage, job: JobHandle, label: str, stopping_label: str) -> None:
    stopping = job.stop_event.is_set()
    st.button(stopping_label if stopping else label, key=f"{page.prefix}_stop", on_click=job.stop, disabled=stopping)
