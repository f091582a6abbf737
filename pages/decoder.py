"""Decoder on top: BERT's encoder plus decoder layers, trained live on a toy sequence-to-sequence task."""

import streamlit as st

import app
from app import state, trained_decoder
from app.formatting import md_escape
from app.jobs.backend import job_backend
from app.run_session import session as ts
from app.run_session.follow import POLL_S
from app.seq2seq import session as s2s
from app.seq2seq import view
from app.ui.errors import show_errors
from bert.checkpoint.builtins import available_builtins
from bert.seq2seq.model import decoder_refusal
from bert.seq2seq.tasks import DEFAULT_TASK, TASKS, task_pairs
from bert.train.seq2seq import TINY

app.run_through_entry()  # before anything else: see app/__init__.py

s2s.init()
ss = st.session_state
CHOICES = [*TASKS, view.UPLOAD_CHOICE]

st.title("Decoder on top")
st.markdown(
    "BERT only *reads*. To *write* a sequence, put decoder layers on top: each one looks back at what "
    "it has written so far (masked self-attention), then at the encoder's vectors of the source "
    "(cross-attention), then thinks (feed-forward). Train one on a toy task, watch the held-out "
    "exact match rise, then watch it decode a sentence of yours step by step."
)
s2s.collect()
note = ss.get(s2s.NOTICE)
if note:
    (st.error if note[0] == "error" else st.info)(md_escape(note[1]))

# --- 1. task -------------------------------------------------------------------------------------
st.header("1. Task")
ts.seed("s2s_task", DEFAULT_TASK, CHOICES)
task = st.radio("Task", CHOICES, key="s2s_task", format_func=view.task_label, horizontal=True)
ts.remember("s2s_task")
pairs = None
ready = task != view.UPLOAD_CHOICE
if task == view.UPLOAD_CHOICE:
    with show_errors("the pairs"):
        pairs = view.uploaded_pairs()
        ready = pairs is not None
    if pairs is not None:
        st.caption(f"{len(pairs):,} pairs in {md_escape(pairs.label)}; a tenth is held out to score the model.")
        view.pairs_table(pairs.head(5))
else:
    st.markdown(f"Target: {TASKS[task].rule}. Once learned, {TASKS[task].watch}.")
    view.pairs_table(task_pairs(task, 5, 0, seed=1)[0].head(5))

# --- 2. model ------------------------------------------------------------------------------------
st.header("2. Encoder and decoder")
sources = [TINY, *available_builtins(), *(state.session_key(n) for n in state.user_models())]
with st.expander("Model and training settings (the defaults learn the reversal in about a minute)"):
    args = view.settings(sources)
args.task = task if task != view.UPLOAD_CHOICE else "upload"
if args.encoder != TINY:
    with show_errors("the encoder"):
        base = s2s.encoder_for(args.encoder)
        why = decoder_refusal(base.config) if args.from_encoder else ""
        if why:
            st.error(md_escape(why), icon=":material/error:")
            ready = False
        else:
            st.caption(
                f"{md_escape(base.name)}: {base.config.num_hidden_layers} layers, {base.config.hidden_size} wide."
            )

# --- 3. train ------------------------------------------------------------------------------------
st.header("3. Train")
if ready:
    ready = False  # until the budget is known and within the server's caps
    with show_errors("the settings"):
        cost = s2s.budget(args, pairs, s2s.encoder_for(args.encoder))
        if why := cost.refusal():
            st.error(md_escape(why), icon=":material/error:")
        else:
            st.caption(cost.line())
            ready = True
jm = job_backend()
job = s2s.current_job(jm)
st.button(
    "Start training",
    type="primary",
    key="s2s_start",
    on_click=s2s.on_start,
    args=(args, pairs),
    disabled=not ready or (job is not None and job.active),
    help="Runs in the background on one processor thread; one job per student at a time.",
)
job = s2s.current_job(jm)


def live_panel():
    job = s2s.current_job()
    if job is None:
        return
    job.heartbeat()
    jm.reap()
    job.drain()
    if not job.active:
        st.rerun()
    view.live(job)


if job is not None and job.active:
    st.fragment(run_every=POLL_S)(live_panel)()

# --- 4. result -----------------------------------------------------------------------------------
st.header("4. Result")
view.reopen_box()
res = ss.get(trained_decoder.RESULT)
if res is None:
    st.caption("Nothing trained yet in this session.")
else:
    view.result(res)
