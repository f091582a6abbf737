"""Attention over training, the training pages' side: a recorder per run, kept in the session.

A training page makes an AttentionSnapshots recorder for its probe sentence, hands it to the job
(bert.train.finetune / bert.train.pretrain call it as on_step) and registers it here under the run's name;
the Compare page ("Attention over training") replays whatever this session has registered,
while the run goes on and after it. The recorder is thread-safe for one writer (the job's
thread) and the page's readers.

Memory: a snapshot is L x H x T x T float16; the probe is cut at MAX_TOKENS and a recorder thins
itself past MAX_SNAPSHOTS, so a run's cost is bounded, and a session keeps the last MAX_RUNS runs.
"""

from __future__ import annotations

import streamlit as st

from bert.train.attention_snapshots import AttentionSnapshots

from ..run_session import session as ts

# st.session_state[SNAPSHOTS]: dict run name -> bert.train.attention_snapshots.AttentionSnapshots, filled
# by a training page that records its probe sentence's attention (the Compare page replays them)
SNAPSHOTS = "attention_snapshots"

MAX_TOKENS = 32
MAX_SNAPSHOTS = 100
MAX_RUNS = 4
GO_COMPARE = "snap_go_compare"
VIEW_REQUEST = "cmp_view_request"  # the Compare page opens on this view once (then forgets it)
FT_PROBE = "The film was not good, but the actors were wonderful."
PT_PROBE = "The cat sat on the mat because it was tired."


def settings(prefix: str, default_probe: str, default_every: int, unit: str = "steps") -> None:
    """The "Attention over training" settings of a training page (widget keys start with
    `prefix`; kept across page switches like the page's other settings)."""
    keys = {f"{prefix}_snap_on": True, f"{prefix}_snap_probe": default_probe, f"{prefix}_snap_every": default_every}
    for key, value in keys.items():
        ts.seed(key, value)
    with st.expander("Attention over training"):
        st.caption(
            "Every few steps the job runs one probe sentence through the model and keeps its "
            "attention (it costs a few milliseconds). Replay it on the Compare page, while the "
            "model trains and after."
        )
        c1, c2 = st.columns([3, 1])
        on = c1.checkbox("Record the attention of a probe sentence", key=f"{prefix}_snap_on")
        c2.number_input(f"Every N {unit}", 1, 10_000, key=f"{prefix}_snap_every", disabled=not on)
        st.text_input(
            "Probe sentence",
            key=f"{prefix}_snap_probe",
            disabled=not on,
            max_chars=300,
            help=f"Cut at {MAX_TOKENS} tokens.",
        )
    ts.remember(*keys)


def recorder(prefix: str, default_probe: str) -> AttentionSnapshots | None:
    """A new recorder from the page's settings (call in the Start callback), or None if off."""
    ss = st.session_state
    if not ss.get(f"{prefix}_snap_on", True):
        return None
    probe = (ss.get(f"{prefix}_snap_probe") or "").strip() or default_probe
    every = int(ss.get(f"{prefix}_snap_every") or 1)
    return AttentionSnapshots.pending(probe, every=every, max_snapshots=MAX_SNAPSHOTS, max_length=MAX_TOKENS)


def register(label: str, rec: AttentionSnapshots) -> None:
    """Keep `rec` in this session under `label` (the newest MAX_RUNS runs)."""
    runs = st.session_state.setdefault(SNAPSHOTS, {})
    runs.pop(label, None)
    runs[label] = rec
    while len(runs) > MAX_RUNS:
        runs.pop(next(iter(runs)))


def replay_button(key: str) -> None:
    """A button that opens the Compare page on "Attention over training". The click is taken in
    a callback (it survives a rerun the page may do first) and acted on in the next run."""

    def clicked():
        st.session_state[VIEW_REQUEST] = "Attention over training"  # a plain key: survives the switch
        st.session_state[GO_COMPARE] = True

    if st.session_state.pop(GO_COMPARE, False):
        st.switch_page("pages/compare.py")
    st.button(
        "Replay the attention snapshots",
        key=key,
        icon=":material/slideshow:",
        on_click=clicked,
        help="Compare page → Attention over training",
    )


def recorded(kind: str) -> bool:
    """Whether this session has a recording of a `kind` run ("fine-tuning" / "pre-training")
    with at least one snapshot."""
    return any(f"({kind}," in label and len(rec) for label, rec in st.session_state.get(SNAPSHOTS, {}).items())
