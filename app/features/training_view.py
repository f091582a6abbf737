"""The Features page's training: a dictionary of features (bert/analysis/dictionary_training.py) trained on
one layer of the loaded model, and the same recipe on a model of the same shape with random
weights beside it, their quality side by side.

Training is a job on the one job life cycle (app/jobs/dictionary_job.py, kind DICTIONARY): it
waits for one of the server's job slots instead of holding a place for analyses, runs in the
background (local) or on a Ray worker, stops after the step Stop comes in, and its curves are drawn
live by the page's fragment. Its memory estimate is checked against the job cap before Start,
under the server's caps on sentences, tokens, features and steps (BERT_EXPLORER_DICT_*). Whatever
ends it, the dictionaries are saved under a run code; the page opens them from there (also after
a refresh: "Reopen a run"), reading their held-out vectors again for the cards in a place for
analyses (app/server/analysis_gate.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import streamlit as st

import bert
from app.current_model import CurrentModel
from app.features.start import start_dictionary
from app.figures.features import purity_bars, training_curves
from app.formatting import md_escape
from app.jobs import budget
from app.jobs.backend import job_backend, take_ended
from app.jobs.dictionary_events import (
    CONTROL,
    PHASES,
    SCRATCH,
    TRAINED,
    DictionaryQuality,
    DictionaryStart,
    DictionaryStep,
)
from app.jobs.dictionary_job import (
    SCRATCH_MODEL,
    DictionaryArgs,
    SavedDictionaries,
    check_dictionary,
    open_dictionaries,
)
from app.jobs.records import Saved, SaveFailed
from app.jobs.saved_runs import parse_code
from app.jobs.spec import DICTIONARY
from app.jobs.worker import stop_message
from app.model_sources import load_model
from app.run_session import controls
from app.run_session import session as ts
from app.run_session.corpora import not_on_server
from app.run_session.dictionaries import RUN
from app.run_session.finished import run_code_line
from app.run_session.follow import POLL_S, current_job, live_job, notice_errors
from app.server.analysis_gate import ANALYSES, busy_notice
from app.ui import show_figure
from bert.analysis.dictionary import Dictionary, caps
from bert.analysis.dictionary_features import Codes, encode_all
from bert.analysis.dictionary_quality import Quality
from bert.analysis.dictionary_training import random_control
from bert.analysis.dictionary_vectors import CORPORA, Activations, corpus_texts, gather_activations
from bert.data.corpus.base import CorpusError
from bert.train.events import last as last_event

REOPEN = "ft_reopen_code"  # widget key: a run code typed to reopen
HELD_OUT = 300  # held-out sentences the quality and the cards read
FEATURES = [256, 512, 1024, 2048, 4096]
SPARSITY = [8, 16, 32, 64]
DEFAULTS = dict(features=1024, sparsity=32, steps=200, sentences=1500)
PAGE = controls.TrainPage(kind=DICTIONARY, prefix="dc", slug="dictionary", hf_class="")


@dataclass
class Trained:
    """One dictionary with what its cards and quality read."""

    bundle: bert.Bundle
    dictionary: Dictionary
    quality: Quality
    held_out: Activations
    codes: Codes
    purity: dict | None = None  # bert.analysis.dictionary_purity.Purity.summary(), when measured


@dataclass
class FeaturesRun:
    model_key: str
    layer: int
    held_out_texts: list[str]
    sentences_asked: int
    dictionaries: dict[str, Trained]  # TRAINED, and CONTROL when asked
    seconds: float
    code: str = ""  # the run code it is saved under
    finished: float | None = None
    note: str | None = None  # why it ended early
    builtin: bool = False  # the model's built-in dictionary (bert/analysis/dictionary_builtin.py)


@st.cache_resource(max_entries=2, show_spinner=False)
def control_model(model_key: str, _bundle: bert.Bundle) -> bert.Bundle:
    """The control of a model: its shape with random weights, one per model for every session
    (the job makes the same one: bert.analysis.dictionary_training.random_control, seed 0)."""
    return random_control(_bundle, seed=0)


def _nearest(options: list[int], value: int) -> int:
    return min(range(len(options)), key=lambda i: abs(options[i] - value))


@st.cache_resource(max_entries=4, show_spinner="Reading the corpora…")
def _sentences(n_train: int, n_held_out: int) -> tuple[list[str], list[str]]:
    return corpus_texts(n_train, n_held_out)


def corpus_sentences(n_train: int, n_held_out: int) -> tuple[list[str], list[str]]:
    """The held-in and held-out sentences (bert.analysis.dictionary_vectors.corpus_texts), read once for
    every session; corpora this server has not fetched get one plain message."""
    try:
        return _sentences(n_train, n_held_out)
    except CorpusError:
        raise CorpusError(not_on_server("+".join(CORPORA))) from None


def base_source(model: CurrentModel) -> str:
    """The model's source name as the pickers name it (what a Ray worker loads it by)."""
    return model.key.removeprefix("builtin:")


def settings_form(model: CurrentModel) -> DictionaryArgs:
    """The dictionary's settings, as the job's DictionaryArgs."""
    cap = caps()
    L = model.bundle.config.num_hidden_layers
    c1, c2, c3, c4, c5 = st.columns(5)
    c1.number_input("Layer", 1, L, value=max(1, L // 2), key="ft_layer", help="the state leaving this layer")
    feats = [f for f in FEATURES if f <= cap["features"]] or [cap["features"]]
    c2.selectbox("Features", feats, index=_nearest(feats, DEFAULTS["features"]), key="ft_features")
    c3.selectbox(
        "Active a token (k)",
        SPARSITY,
        index=SPARSITY.index(DEFAULTS["sparsity"]),
        key="ft_k",
        help="TopK: exactly k features a token",
    )
    c4.number_input("Steps", 1, cap["steps"], min(DEFAULTS["steps"], cap["steps"]), 50, key="ft_steps")
    c5.number_input(
        "Sentences",
        1,
        cap["texts"],
        min(DEFAULTS["sentences"], cap["texts"]),
        250,
        key="ft_sentences",
        help="held-in text",
    )
    st.checkbox(f"Train the same dictionary on a {CONTROL} beside it", value=True, key="ft_control")
    if model.bundle.name != SCRATCH_MODEL:
        st.checkbox(
            f"… and on {SCRATCH_MODEL} (this project's small BERT pre-trained from random weights)",
            value=False,
            key="ft_scratch",
            help="at the same depth of its 4 layers as the layer chosen here",
        )
    st.caption(
        f"Training reads sentences of the pre-training corpora (wiki, Brown, BBC) from the documents "
        f"pre-training trained on, at most {cap['tokens']:,} word pieces; the quality and the feature "
        f"cards read {HELD_OUT} sentences of the documents it held out. 1,024 word pieces a step."
    )
    return current_args()


def current_args() -> DictionaryArgs:
    """The settings' widgets' values as DictionaryArgs (read when Start is pressed, so a value
    changed just before counts)."""
    ss = st.session_state
    steps = int(ss["ft_steps"])
    return DictionaryArgs(
        layer=int(ss["ft_layer"]),
        n_features=int(ss["ft_features"]),
        sparsity=int(ss["ft_k"]),
        steps=steps,
        sentences=int(ss["ft_sentences"]),
        held_out=HELD_OUT,
        control=bool(ss["ft_control"]),
        scratch=bool(ss.get("ft_scratch", False)),
        log_every=max(10, steps // 20),
    )


def _fits(model: CurrentModel, args: DictionaryArgs) -> bool:
    """The memory line under the settings, or what is over a cap: False then."""
    try:
        mb = check_dictionary(model.bundle.config, args)
    except bert.BertExplorerError as e:
        st.error(md_escape(str(e)), icon=controls.ICON_ERR)
        return False
    st.caption(
        f"This job needs about {mb:,} MB of memory (this server allows {budget.max_job_mb():,} per job) "
        f"and stops itself after {budget.max_job_seconds() / 60:g} minutes, keeping what it trained."
    )
    return True


def _on_start(model: CurrentModel) -> None:
    """Start button callback."""
    with notice_errors(ts.DC_NOTICE, "starting the dictionary"):
        args = current_args()
        texts = corpus_sentences(args.sentences, args.held_out)
        start_dictionary(model.bundle, base_source(model), args, texts)
        st.session_state[ts.DC_NOTICE] = None


def train_panel(model: CurrentModel, args: DictionaryArgs) -> None:
    """Start (or the job's live panel: progress, curves, Stop), the finished job's dictionaries
    opened, and the box that reopens a run by its code."""
    collect(model)
    fits = _fits(model, args)
    job = controls.start_section(PAGE, job_backend(), DICTIONARY, "Train the dictionary", _on_start, (model,), not fits)
    if job is not None and job.active:
        st.fragment(run_every=POLL_S)(_live_panel)()
    with st.expander("Reopen a run (after a refresh, or from another day's code)"):
        c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
        c1.text_input("Run code", key=REOPEN, max_chars=12, placeholder="e.g. K7QX2M")
        c2.button("Reopen", key="ft_reopen", on_click=_reopen, args=(model,))


def _live_panel() -> None:
    job = live_job(DICTIONARY)
    if job is None:
        return
    phases: dict[str, list[DictionaryStep]] = {}
    for m in job.metrics:
        if isinstance(m, DictionaryStart):
            phases[m.phase] = []
        elif isinstance(m, DictionaryStep):
            phases.setdefault(m.phase, []).append(m)
    controls.live_progress(job, job_backend(), *progress(job.metrics, job.info["args"]))
    if any(phases.values()):
        show_figure.show(training_curves(list(phases.items())), "dictionary-live-curves", key="dc_live")
    controls.stop_button(PAGE, job, "Stop (keeps what it trained)", "Stopping… (what it trained is kept)")


def progress(metrics: list, args: DictionaryArgs) -> tuple[float, str]:
    """(fraction done, the line) of a dictionary job from its events."""
    phases = [p for p, asked in zip(PHASES, (True, args.control, args.scratch), strict=True) if asked]
    n = len(phases)
    start, step = last_event(metrics, DictionaryStart), last_event(metrics, DictionaryStep)
    if start is None:
        return 0.0, "Waiting to start…"
    i = phases.index(start.phase) if start.phase in phases else 0
    if step is None or step.phase != start.phase:
        return i / n, f"{start.phase}: reading the sentences through its layers…"
    scored = last_event(metrics, DictionaryQuality)
    if scored is not None and scored.phase == start.phase:
        return (i + 1) / n, f"{start.phase}: scored on held-out text; saving…"
    if step.step == step.steps:
        return (i + 1) / n, f"{start.phase}: its quality on held-out text…"
    return (i + step.step / step.steps) / n, (
        f"{start.phase}: step {step.step} of {step.steps}, variance explained {step.variance_explained:.2f}, "
        f"{step.dead:.0%} of the features dead"
    )


def collect(model: CurrentModel) -> None:
    """This session's finished dictionary job: its dictionaries opened from their run code and
    shown (or why there are none)."""
    ts.init_training()
    jm = job_backend()
    job = current_job(DICTIONARY, jm)
    if job is None or not take_ended(jm, job):
        return
    st.session_state[ts.DC_JOB] = None
    saved, failed = last_event(job.metrics, Saved), last_event(job.metrics, SaveFailed)
    if saved is None:
        why = job.error or (failed and failed.message) or "Stopped before it started: nothing was trained."
        st.session_state[ts.DC_NOTICE] = ("error" if job.error or failed else "info", why)
        return
    note = stop_message(job.stop_reason) if job.status == "stopped" else None
    with notice_errors(ts.DC_NOTICE, "opening the dictionaries"):
        st.session_state[RUN] = from_saved(model, open_dictionaries(saved.code), note)


def _reopen(model: CurrentModel) -> None:
    """The Reopen button's callback."""
    reopen_code(model, st.session_state.get(REOPEN, ""))


def reopen_code(model: CurrentModel, typed: str) -> None:
    """Run `typed`'s dictionaries opened on `model` (a box, a link), or the notice says why not."""
    with notice_errors(ts.DC_NOTICE, "reopening the run"):
        code = parse_code(typed)
        st.session_state[RUN] = from_saved(model, open_dictionaries(code))
        st.session_state[ts.DC_NOTICE] = ("info", f"Run {code} is open.")


def from_saved(model: CurrentModel, saved: SavedDictionaries, note: str | None = None) -> FeaturesRun:
    """A saved run's dictionaries on `model` (DataError when they were trained on another): their
    held-out vectors read again for the cards, in a place for analyses."""
    info = saved.record.get("info") or {}
    (first, _), *_ = saved.dictionaries.values()
    if info.get("base_name") != model.bundle.name or first.sae.W_dec.shape[0] != model.bundle.config.hidden_size:
        raise bert.DataError(
            f"Run {saved.code} is a dictionary of {info.get('base_name', 'another model')}: pick that model in the "
            "sidebar to open it."
        )
    out = {}
    with busy_notice() as notice, ANALYSES.place(notice):
        for phase, (d, quality) in saved.dictionaries.items():
            bundle = phase_model(model, phase)
            acts = gather_activations(bundle, d.layer, saved.held_out)
            out[phase] = Trained(bundle, d, quality, acts, encode_all(d, acts), saved.purity(phase))
    return FeaturesRun(
        model.key,
        first.layer,
        saved.held_out,
        saved.args.sentences,
        out,
        sum(d.seconds for d, _ in saved.dictionaries.values()),
        code=saved.code,
        finished=saved.record.get("saved"),
        note=note,
    )


def phase_model(model: CurrentModel, phase: str) -> bert.Bundle:
    """The model a phase's dictionary reads: the loaded one, its control, or mini-scratch."""
    if phase == TRAINED:
        return model.bundle
    if phase == SCRATCH:
        return load_model(SCRATCH_MODEL)
    return control_model(model.key, model.bundle)


def purity_rows(purity: dict | None) -> dict[str, str]:
    """The quality table's part-of-speech purity rows of one dictionary."""
    if not purity:
        return {"part-of-speech purity (top-50 contexts)": "not measured", "… of 50 words at random": ""}
    return {
        "part-of-speech purity (top-50 contexts)": f"{purity['mean']:.3f} ({purity['counted']:,} features judged)",
        "… of 50 words at random": f"{purity['chance']:.3f}",
    }


def quality_table(run: FeaturesRun) -> pd.DataFrame:
    rows = {}
    for name, t in run.dictionaries.items():
        q, d, s = t.quality, t.dictionary, t.quality.splice
        rows[name] = {
            "layer": f"{d.layer} of {t.bundle.config.num_hidden_layers}",
            **purity_rows(t.purity),
            "variance explained (held out)": f"{q.variance_explained:.3f}",
            "L0: features active a token": f"{q.l0:.1f}",
            "dead features (active on no held-out token)": f"{q.dead} of {q.n_features} ({q.dead_share:.1%})",
            "masked-word top-1: model → spliced": f"{s.top1:.3f} → {s.spliced_top1:.3f}",
            "masked-word top-5: model → spliced": f"{s.top5:.3f} → {s.spliced_top5:.3f}",
            "spliced first guess = the model's": f"{s.agreement:.1%}",
            "everyday cloze top-1: model → spliced": f"{q.cloze.top1:.3f} → {q.cloze.spliced_top1:.3f}",
            "everyday cloze top-5: model → spliced": f"{q.cloze.top5:.3f} → {q.cloze.spliced_top5:.3f}",
            "trained on": f"{d.tokens:,} word pieces of {d.texts:,} sentences, {d.steps} steps",
            "seconds": f"{d.seconds:.0f}",
        }
    return pd.DataFrame(rows)


def show_run(run: FeaturesRun) -> None:
    trained = run.dictionaries[TRAINED]
    d = trained.dictionary
    st.header(f"Layer {run.layer}: {d.n_features:,} features, {d.k} active a token")
    if run.note:
        st.info(run.note, icon=":material/pause_circle:")
    line = run_code_line({"saved": True, "code": run.code, "finished": run.finished})
    if line:
        st.caption(line)
    if d.capped:
        st.info(
            f"This server trains a dictionary on at most {caps()['tokens']:,} word pieces "
            f"(BERT_EXPLORER_DICT_MAX_TOKENS): it read the first {d.texts:,} of the {run.sentences_asked:,} "
            "sentences asked for.",
            icon=":material/info:",
        )
    st.table(quality_table(run))
    n_masked = trained.quality.splice.masked
    st.caption(
        f"Held out: {trained.quality.tokens:,} word pieces of {trained.held_out.texts_read} sentences; the splice "
        f"cost masks {n_masked:,} of them and replaces layer {run.layer}'s output at every word piece by its "
        "reconstruction. The control is the same recipe on a model of this shape with random weights: "
        "what a dictionary finds there comes from the text and the architecture, not from training."
    )
    named = [(name, t.purity["mean"], t.purity["chance"]) for name, t in run.dictionaries.items() if t.purity]
    if named:
        show_figure.show(purity_bars(named), "dictionary_purity", key="ft_purity")
        st.caption(
            "Part-of-speech purity: each feature judged by its 50 strongest words on the Brown Corpus files "
            "pre-training held out, the share with its commonest part of speech, averaged over the features "
            "active on at least 50 of them; the tick: the same share for 50 words drawn at random."
        )
    show_figure.show(
        training_curves([(name, t.dictionary.curve) for name, t in run.dictionaries.items()]),
        "dictionary_training",
        key="ft_curves",
    )
