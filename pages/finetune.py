"""Fine-tuning: teach BERT a classification task on your own labelled texts, and watch it learn."""

import streamlit as st

import app
from app import state
from app.figures import training as training_figures
from app.formatting import md_escape
from app.jobs.backend import job_backend
from app.jobs.spec import FINETUNE
from app.run_session import controls, snapshots
from app.run_session import session as ts
from app.run_session.finished import results
from app.run_session.follow import POLL_S, live_job
from app.run_session.progress import finetune_progress, finetune_start_line
from app.run_session.reports import base_bundle
from app.run_session.run_size import DEFAULT_SIZE, EVALS_HELP, MIN_STEPS, PAGE_EVALS, RUN_SIZES
from app.training import board_buttons
from app.training import page as view
from app.training.data import builtin_data
from app.training.finetune_view import PAGE, data_summary, show_result, uploaded_data, validation
from app.training.start import (
    check_finetune_settings,
    default_finetune_base,
    few_steps_message,
    finetune_time_line,
    on_start_finetune,
)
from app.training.task_head_view import CLASSIFY, task_head_page, task_shape
from app.ui import show_figure
from app.ui.errors import show_errors
from bert.checkpoint.builtins import available_builtins
from bert.config import POOLINGS
from bert.data.datasets import available_datasets
from bert.family import member
from bert.train.events import FinetuneStart
from bert.train.events import last as last_event
from bert.train.finetune_args import FinetuneArgs

app.run_through_entry()  # before anything else: see app/__init__.py

ts.init_training()
ss = st.session_state
D = FinetuneArgs(data="")  # the backend's defaults, chosen by measurement
SOURCES = [*available_datasets(), ts.UPLOAD]
ICON_ERR = view.ICON_ERR

st.title("Fine-tuning")
st.markdown(
    "A pre-trained BERT knows a lot about language but nothing about *your* task. Fine-tuning puts a "
    "small new layer on top (one score per class, read from the texts' vectors) and trains the whole "
    "network a little more on labelled examples. Pick some data, press **Start**, and watch the loss "
    "fall and the accuracy rise; the result becomes a model you can explore on the other pages."
)
board_buttons.push_ended()
view.collect_and_reopen(PAGE)
if (shape := task_shape()) != CLASSIFY:  # label every word, or find the answer
    task_head_page(shape)
    st.stop()

setup, train = st.columns([1, 1], gap="large")  # Start and its live curves beside the data and settings
with setup:
    # --- 1. data -------------------------------------------------------------------------------------
    st.header("1. Data")
    ts.seed("ft_source", SOURCES[0], SOURCES)
    source = st.radio(
        "Data",
        SOURCES,
        key="ft_source",
        horizontal=True,
        label_visibility="collapsed",
        format_func=lambda s: "Upload a file" if s == ts.UPLOAD else available_datasets()[s],
    )
    data = None
    with show_errors("the data"):
        data = uploaded_data() if source == ts.UPLOAD else builtin_data(source)

    if data is not None:
        data_summary(data)

    # --- 2. validation -------------------------------------------------------------------------------
    mode, valid_fraction, valid_file = "split", 0.2, None
    if data is not None:
        st.header("2. Validation data")
        mode, valid_fraction, valid_file = validation(data)

    # --- 3. settings ---------------------------------------------------------------------------------
    sources = list(available_builtins()) + [state.session_key(n) for n in state.user_models()]
    picked = st.session_state.get(state.MODEL_SOURCE, state.DEFAULT_MODEL)
    if picked not in sources:
        sources.append(picked)  # a folder loaded in the sidebar
    defaults = {
        "ft_base": default_finetune_base(),
        "ft_pooling": D.pooling,
        "ft_freeze_emb": D.freeze_embeddings,
        "ft_freeze_layers": RUN_SIZES[DEFAULT_SIZE].freeze_layers,
        "ft_max_length": D.max_length,
        "ft_batch": D.batch_size,
        "ft_lr": D.lr,
        "ft_epochs": D.epochs,
        "ft_warmup": D.warmup_ratio,
        "ft_seed": D.seed,
        "ft_max_train": RUN_SIZES[DEFAULT_SIZE].max_train,
        "ft_max_valid": RUN_SIZES[DEFAULT_SIZE].max_valid,
        "ft_evals": PAGE_EVALS,
        "ft_size": DEFAULT_SIZE,
        "ft_step_floor": True,
    }
    choices = {"ft_base": sources, "ft_pooling": POOLINGS, "ft_size": list(RUN_SIZES)}
    for k, v in defaults.items():
        ts.seed(k, v, choices.get(k))
    base = None
    if data is not None:
        st.header("3. Settings")
        view.run_size_picker()
        with st.expander("Model and training settings"):
            c1, c2, c3 = st.columns(3)
            base_src = c1.selectbox(
                "Start from",
                sources,
                key="ft_base",
                format_func=lambda s: (
                    f"{name} (your model)" if (name := state.session_model_name(s)) is not None else s
                ),
            )
            with show_errors("the base model"):
                base = base_bundle(base_src)
                if base is None:
                    st.error("That model is no longer in this session.", icon=ICON_ERR)
            n_layers = base.config.num_hidden_layers if base else 12
            max_pos = base.config.max_tokens if base else 512
            ss["ft_freeze_layers"] = min(ss["ft_freeze_layers"], n_layers)  # fit the chosen model
            ss["ft_max_length"] = min(ss["ft_max_length"], max_pos)
            c2.selectbox(
                "Pooling",
                POOLINGS,
                key="ft_pooling",
                help="How the texts' token vectors become one: the [CLS] vector, or the mean or maximum "
                "over all tokens.",
            )
            c3.number_input(
                "Max tokens per text",
                8,
                max_pos,
                key="ft_max_length",
                step=16,
                help="Longer texts are cut; shorter is faster.",
            )
            c1.number_input(
                "Learning rate",
                min_value=1e-7,
                max_value=100.0,
                key="ft_lr",
                step=1e-5,
                format="%.1e",
                help="Peak learning rate of the encoder; the new head learns "
                f"{D.head_lr_scale:g}x faster. Too high and the loss explodes.",
            )
            c2.number_input("Batch size", 1, 256, key="ft_batch")
            c3.number_input("Epochs", 1, 20, key="ft_epochs")
            c1.number_input("Warm-up (share of steps)", 0.0, 0.9, key="ft_warmup", step=0.05)
            c2.number_input("Evaluations per epoch", 1, 20, key="ft_evals", help=EVALS_HELP)
            c3.number_input("Seed", 0, 1_000_000, key="ft_seed")
            c1.number_input(
                "Use at most this many training texts",
                10,
                200_000,
                key="ft_max_train",
                step=500,
                help="A stratified sample; more texts learn better but take longer.",
            )
            c2.number_input("…and validation texts", 10, 100_000, key="ft_max_valid", step=500)
            c3.number_input("Freeze the lowest N layers", 0, n_layers, key="ft_freeze_layers")
            if base is not None and member(base.config).shared_layers and 0 < ss["ft_freeze_layers"] < n_layers:
                c3.caption(
                    f"{member(base.config).name}'s layers share one set of weights: they stay as they are only when "
                    "all are frozen."
                )
            c1.checkbox("Freeze the embeddings", key="ft_freeze_emb")
        ts.remember(*defaults)
        if base is not None:
            est = check_finetune_settings(
                base,
                int(ss.ft_batch),
                int(ss.ft_max_length),
                bool(ss.ft_freeze_emb),
                int(ss.ft_freeze_layers),
                len(data.classes),
            )
            if est["ok"]:
                st.caption(est["line"])
            else:
                st.error(md_escape(est["line"]), icon=ICON_ERR)
                base = None  # Start stays off until the settings fit
            n_train = len(data) if valid_file is not None else int(len(data) * (1 - valid_fraction))
            few = (n_train, int(ss.ft_max_train), int(ss.ft_batch), int(ss.ft_epochs))
            if hint := few_steps_message(*few, floor=bool(ss.ft_step_floor)):
                st.info(hint, icon=":material/lightbulb:")
                st.checkbox(f"At least {MIN_STEPS} training steps (more epochs for a small file)", key="ft_step_floor")
            st.caption(finetune_time_line(n_train))
        snapshots.settings("ft", snapshots.FT_PROBE, default_every=5)


def live_panel():
    job = live_job(FINETUNE)
    if job is None:
        return
    board_buttons.push_live(job)  # a run shown live on the class board (its end: push_ended)
    controls.live_progress(job, jm, *finetune_progress(job.metrics))
    start_ev = last_event(job.metrics, FinetuneStart)
    if start_ev:
        st.caption(finetune_start_line(start_ev))
    show_figure.show(
        training_figures.finetune_curves(job.metrics, start_ev.steps if start_ev else None),
        "finetune-live-curves",
        key="ft_live_curves",
    )
    controls.stop_button(PAGE, job, "Stop (keeps the best model so far)", "Stopping… (the best model so far is kept)")
    board_buttons.live_share(job)


with train:
    # --- 4. train --------------------------------------------------------------------------------------
    st.header("4. Train")
    jm = job_backend()
    job = controls.start_section(
        PAGE,
        jm,
        FINETUNE,
        "Start fine-tuning",
        on_start_finetune,
        (jm, data, valid_file, valid_fraction, base, mode),
        data is None or base is None,
        help="One job per session at a time; others on this server may be queued before you.",
    )

    if job is not None and job.active:
        st.fragment(run_every=POLL_S)(live_panel)()
    elif not results(FINETUNE):
        st.caption("Nothing trained yet in this session.")
    if snapshots.recorded("fine-tuning"):
        snapshots.replay_button("ft_replay")


# --- 5. results ----------------------------------------------------------------------------------
view.results_section(PAGE, "5. Results", show_result)
