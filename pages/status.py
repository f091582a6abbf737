"""Server status, for the teacher: jobs, the queue, the sessions and analyses, memory (and what
holds it) and disk against the server's caps.

Counts and sizes only: nothing here names a student, a job's data or a run code. Shown only to a
session that typed the server's teacher key (app/server/teacher.py): to a student it is one line.
"""

import time

import streamlit as st

import app
from app.analysis_cache import budget_cache
from app.jobs import budget, saved_runs
from app.jobs.backend import job_backend
from app.run_session.progress import fmt_seconds
from app.server import holders, teacher
from app.server.memory import server_memory
from bert.train.precision import server_precision

app.run_through_entry()  # before anything else: see app/__init__.py

MB = 2**20

st.title("Server status")


def metric_row(metrics: dict[str, str]) -> None:
    """One row of st.metric, label: value."""
    for col, (label, value) in zip(st.columns(len(metrics)), metrics.items()):
        col.metric(label, value)


def mb(n: float) -> str:
    """Bytes as whole megabytes: '1,234 MB'."""
    return f"{n / MB:,.0f} MB"


@st.fragment(run_every=10)
def panel() -> None:
    jm = job_backend()
    n = jm.counts()
    metric_row(
        {
            "Jobs training": f"{n['running']} of {n['max_running']}",
            "Jobs waiting": f"{n['queued']} of {n['max_queue']}",
            "Time per job": f"{n['max_minutes']:g} min",
            "Tokens per step": f"{budget.max_step_tokens():,}",
            "Training precision": server_precision(),
        }
    )

    snap = holders.snapshot(budget_cache())
    sessions, an, cache = snap["sessions"], snap["analyses"], snap["cache"]
    metric_row(
        {
            "Sessions open": "?" if sessions is None else f"{len(sessions):,}",
            "Analyses running": f"{an['running']} of {an['places']}",
            "Analyses waiting": f"{an['waiting']:,}",
            "Analysis cache": f"{cache['bytes'] / MB:,.0f} of {mb(cache['budget'])}",
        }
    )
    rows = holders.holders_table(snap)
    if rows:
        st.caption("What holds the most memory now (measured: arrays, models, texts and uploads):")
        st.dataframe(
            [{"holder": r["holder"], "count": r["count"], "MB": round(r["bytes"] / MB, 1)} for r in rows],
            hide_index=True,
            width="stretch",
        )

    mem = server_memory()
    use = saved_runs.disk_usage()
    metric_row(
        {
            "Server memory now (RSS)": mb(mem["rss"]),
            "Server memory peak": mb(mem["peak"]),
            "Saved runs + jobs + tokenized": f"{use['capped'] / MB:,.0f} of {budget.max_disk_mb():,} MB",
            "Whole cache (with corpora)": mb(use["cache"]),
        }
    )
    st.caption(
        f"Saved runs {use['runs'] / MB:,.1f} MB · job folders {use['jobs'] / MB:,.1f} MB · tokenized "
        f"texts {use['tokenized'] / MB:,.1f} MB. Each job may take about {budget.max_job_mb():,} MB "
        f"of memory at most."
    )
    last = jm.last_cleanup
    if last:
        ago = fmt_seconds(time.time() - last["at"])
        st.caption(
            f"Last cleanup {ago} ago (every {saved_runs.CLEANUP_EVERY_S / 60:g} min): removed {last['expired']} "
            f"expired run(s), {last['for_space']} run(s) for space, {last['jobs']} job folder(s), "
            f"{last['tokenized']} tokenized upload(s), {last['leftovers']} half-saved folder(s); "
            f"{last['freed'] / MB:,.1f} MB freed."
        )


if teacher.gate("This page"):
    st.caption(
        "For whoever runs the class: how busy this server is, against the caps set in its "
        "environment (BERT_EXPLORER_*, README). Refreshes every 10 s."
    )
    panel()
