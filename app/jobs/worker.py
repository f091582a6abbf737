"""What a job runs, here or on a Ray worker: `run_job(spec, stop)` — the trainer of bert/train/finetune.py
or bert/train/pretrain.py (no `st.*`), fine-tuning's report, then the run saved under its run code —
and its life cycle, the same in both backends: changing how a job stops is a change to this file.

Life cycle. Why a job stops (USER, TIME, SESSION) is told to it by its `StopEvent`; `stop_message`
is what the page then says. `drive` runs a job's events to their end, in the local backend's thread
(app/jobs/local.py) or in a Ray actor (app/jobs/ray_actors.py) alike: the time cap (the job stops
itself, TIME), Stop, and the end reported as a state (done, stopped, error) and a message.
`Reaper` is what the backends' watchdogs run every second over the jobs they follow: a job whose
browser session has been gone `session_grace_s` (a closed tab; a network blip reconnects within
it) is stopped (SESSION); so is one nobody polled for `heartbeat_timeout` (no Streamlit runtime:
tests, scripts) and, where the backend asks for it, one past the time cap between two slow steps.
Its `alive` is Streamlit's `Runtime.is_active_session` (`session_alive`).

Run codes. Each job gets a 6-character code when it is queued (shown while it trains and on its
results). When it ends, for any reason (done, Stop, time cap, tab closed), `run_job` saves the
model, card, curves and report under that code (app/jobs/saved_runs.py, a day), so a refresh, a
closed tab or a server restart loses nothing: "Reopen a run" on the page loads it back.

Torch threads. A job trains with BERT_EXPLORER_JOB_THREADS torch threads (default 1: on a 2-core
server one core trains, the other serves every session's inference). `torch.set_num_threads`
in the job thread also becomes the default of threads started afterwards, and Streamlit starts
a thread per script run: so while a job trains, page inference runs on one thread too. The job
restores the previous value when it ends.
"""

from __future__ import annotations

import json
import logging
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

import torch

import bert
from bert import BertExplorerError, TrainingError, settings
from bert.data.corpus.fetch import bert_cache_dir
from bert.train import events as ev
from bert.train.attention_snapshots import AttentionSnapshots
from bert.train.events import last as last_event
from bert.train.finetune import finetune
from bert.train.finetune_eval import evaluate_classifier
from bert.train.pretrain import pretrain, torchrun_command
from bert.train.pretrain_args import PretrainArgs

from ..server.memory import release_memory
from . import budget, saved_runs
from .budget import LimitError
from .dictionary_job import dictionary_events
from .records import Report, Saved, SaveFailed, pretrain_card, run_record, stored_record
from .seq2seq_job import seq2seq_events
from .spec import DICTIONARY, FINETUNE, SEQ2SEQ, TASK_HEAD, JobSpec
from .task_head_job import task_head_events

log = logging.getLogger("bert_explorer")


def job_threads() -> int:
    return settings.whole("BERT_EXPLORER_JOB_THREADS")


def jobs_dir() -> Path:
    """Per-job scratch folders (pre-training checkpoints) live here, never in the repository."""
    return bert_cache_dir() / "jobs"


# ---- the life cycle: how a job runs to its end and is stopped, in both backends ----------------------

USER, TIME, SESSION = "user", "time", "session"  # why a job stopped


def stop_message(reason: str | None, max_seconds: float | None = None) -> str:
    """What the page says about a job that stopped early."""
    if reason == TIME:
        minutes = f"{(max_seconds or budget.max_job_seconds()) / 60:g}"
        return f"Stopped at this server's limit of {minutes} minutes per job; the best model so far is kept."
    if reason == SESSION:
        return "Stopped because its browser tab was closed; the model trained so far is kept."
    return "Stopped early: the best model so far is kept."


class StopEvent(threading.Event):
    """A threading.Event that also says why it was set; `hurry` when nobody is left to see the
    end (the tab was closed): bert.train.finetune then skips its last scoring. `job_id` is the number
    of the job it stops, so the job's function knows it (pre-training names its folder by it)."""

    reason: str | None = None

    def __init__(self, job_id: int | None = None):
        super().__init__()
        self.job_id = job_id

    @property
    def hurry(self) -> bool:
        return self.reason == SESSION

    def stop(self, reason: str = USER) -> None:
        if not self.is_set():
            self.reason = reason
        self.set()


def over_time(started: float | None, max_seconds: float | None, now: float | None = None) -> bool:
    """Past the time cap: `max_seconds` since it started training."""
    return bool(max_seconds and started and (now or time.time()) - started > max_seconds)


class Driven(Protocol):
    """What `drive` reads and keeps up to date of a job while it runs."""

    stop_event: StopEvent
    started: float | None
    max_seconds: float | None
    error: str | None


def drive(
    job: Driven, run: Callable[[StopEvent], Iterable[ev.Event]], emit: Callable[[ev.Event], None], name: Any = ""
) -> str:
    """Run `run(job.stop_event)` to its end, handing each event to `emit`; returns the end state:
    "error" (then `job.error` says it: the message of an Error event, or what the job raised, never
    a traceback on the page), "stopped" (Stop, the time cap, the tab closed: the model so far is
    kept) or "done". Past `job.max_seconds` the job is stopped (TIME) and ends after its step."""
    try:
        for m in run(job.stop_event):
            if over_time(job.started, job.max_seconds) and not job.stop_event.is_set():
                job.stop_event.stop(TIME)
            if isinstance(m, ev.Error):
                job.error = m.message or "training stopped"
            emit(m)
        if job.error:
            return "error"
        return "stopped" if job.stop_event.is_set() else "done"
    except BertExplorerError as e:
        job.error = str(e)
        return "error"
    except Exception as e:  # noqa: BLE001 - never let a job die silently; the page shows the message
        log.exception("job %s failed", name)
        job.error = f"unexpected error: {type(e).__name__}: {e}"
        return "error"


# ---- the reaper: the jobs nobody follows any more, stopped ------------------------------------------


def session_alive(session_id: str | None) -> bool | None:
    """True/False when Streamlit's runtime knows; None without a runtime (tests, scripts)."""
    if not session_id:
        return None
    try:
        from streamlit import runtime

        if not runtime.exists():
            return None
        return bool(runtime.get_instance().is_active_session(session_id))
    except Exception:  # noqa: BLE001 - an internal API that may change: then rely on heartbeats
        return None


class Reaped(Protocol):
    """What the reaper reads of a job and may do to it (app/jobs/backend.py's JobHandle has it all)."""

    id: Any
    status: str
    started: float | None
    last_seen: float

    @property
    def active(self) -> bool: ...

    @property
    def stop_event(self) -> Any: ...

    def heartbeat(self) -> None: ...

    def stop(self, reason: str = USER) -> None: ...


@dataclass
class Sweep:
    """One round of the reaper: the jobs it stopped; the finished ones whose session is gone (the
    backend may forget them); the ones still followed (heartbeated: their session is connected, or
    it polled within `heartbeat_timeout`)."""

    stopped: list = field(default_factory=list)
    gone: list = field(default_factory=list)
    followed: list = field(default_factory=list)


class Reaper:
    """Stops the jobs nobody follows any more; one per backend (it remembers since when each
    job's session has been gone). `max_seconds`: also stop jobs past the time cap (the local
    backend, whose job thread sees the cap only between steps; a Ray actor keeps its own, by its
    own clock)."""

    def __init__(
        self,
        heartbeat_timeout: float,
        session_grace_s: float = 3.0,
        alive: Callable[[str | None], bool | None] = session_alive,
        max_seconds: float | None = None,
    ):
        self.heartbeat_timeout = heartbeat_timeout
        self.session_grace_s = session_grace_s
        self.alive = alive
        self.max_seconds = max_seconds
        self._gone_since: dict[Any, float] = {}

    def sweep(self, jobs: Iterable[tuple[Reaped, str | None]], now: float | None = None) -> Sweep:
        """One round over (job, its browser session id) pairs. A connected session heartbeats its
        job (it keeps training while its user is on another page; a finished one waits for them)."""
        now = now or time.time()
        out = Sweep()
        for job, session_id in jobs:
            alive = self.alive(session_id)
            if alive is False:
                since = self._gone_since.setdefault(job.id, now)
                if now - since >= self.session_grace_s:
                    if job.active and not job.stop_event.is_set():
                        job.stop(SESSION)
                        out.stopped.append(job)
                    elif not job.active:
                        out.gone.append(job)
            else:
                self._gone_since.pop(job.id, None)
                if alive:
                    job.heartbeat()
            if (
                job.status == "running"
                and over_time(job.started, self.max_seconds, now)
                and not job.stop_event.is_set()
            ):
                job.stop(TIME)
            if now - job.last_seen > self.heartbeat_timeout:
                if job.active:
                    job.stop(SESSION)
                    if job not in out.stopped:
                        out.stopped.append(job)
            elif alive is not False:
                out.followed.append(job)
        return out

    def forget(self, job_id: Any) -> None:
        self._gone_since.pop(job_id, None)


LoadBase = Callable[[str], bert.Bundle]  # a base model by its source name, as the pickers name it


def run_job(
    spec: JobSpec,
    stop: threading.Event,
    base: bert.Bundle | None = None,
    corpus=None,
    recorder: AttentionSnapshots | None = None,
    load_base: LoadBase | None = None,
) -> Iterator[ev.Event]:
    """The events of one job: the trainer's, fine-tuning's Report, then — whatever ended it (done,
    Stop, the time cap, the tab closed) — the run saved under `spec.code` so a refresh, a closed tab
    or a server restart loses nothing: Saved, or SaveFailed with a message (the model is still in
    memory, to download). `base`, `corpus` and `recorder` are this process's own objects where it
    has them (the local backend: the page's model, the shared corpus, the attention snapshots); a
    worker resolves the base model by its source name (`base_model`, with the page's `load_base`)
    and reads the corpus from the spec."""
    events, bundle = [], None

    def base_of() -> bert.Bundle:
        return base if base is not None else base_model(spec.base, load_base)

    if spec.kind == FINETUNE:
        trained = _finetune_events(spec, stop, base_of(), recorder)
    elif spec.kind == TASK_HEAD:
        trained = task_head_events(spec, stop, base_of, job_threads())
    elif spec.kind == SEQ2SEQ:
        trained = seq2seq_events(spec, stop, base_of, job_threads())
    elif spec.kind == DICTIONARY:  # saves its own result (dictionaries, not a model): its last event
        trained = dictionary_events(spec, stop, base_of, job_threads(), lambda source: base_model(source, load_base))
    elif spec.processes > 1:
        trained = _torchrun_events(spec, stop)
    else:
        trained = _pretrain_events(spec, stop, corpus, recorder)
    for m in trained:
        if isinstance(m, ev.Done) and m.bundle is not None:
            bundle = m.bundle
            events.append(replace(m, bundle=None))
        else:
            events.append(m)
        yield m
    if bundle is not None and spec.code:
        yield keep_result(spec, events, bundle, stop)


def keep_result(spec: JobSpec, events: list[ev.Event], bundle: bert.Bundle, stop: threading.Event) -> ev.Event:
    """The run saved under spec.code: Saved, or SaveFailed with the message to show."""
    error = last_event(events, ev.Error)
    reason = getattr(stop, "reason", None) if stop.is_set() else None
    status = "error" if error else "stopped" if reason else "done"
    record = run_record(spec.kind, events, {**spec.info, "args": spec.args}, status, error and error.message, reason)
    try:
        stored = {**stored_record(record), "name": spec.title or bundle.name}
        saved_runs.save_run(spec.code, bundle, stored, student=spec.student or None)
        return Saved(code=spec.code)
    except LimitError as e:  # the disk full of young runs: said as it is
        return SaveFailed(message=str(e))
    except BertExplorerError as e:  # a model this app cannot write (an encoder-decoder of a family member)
        return SaveFailed(message=f"This run could not be saved on the server: {e}.")
    except Exception as e:  # noqa: BLE001 - a full disk must not lose the model in memory
        log.exception("saving run %s", spec.code)
        return SaveFailed(
            message=f"The model could not be saved on the server ({type(e).__name__}): download it to keep it."
        )


def base_model(source: str, load_base: LoadBase | None) -> bert.Bundle:
    """A job's base model by its source name, as the pickers name it: "run:CODE", a saved run, or
    whatever `load_base` (the pickers' one safe loader, app.model_sources.load_model, given by the page)
    loads: a built-in, a models-folder model or (opted in) a hub id."""
    if source.startswith("run:"):
        return saved_runs.open_run(source[len("run:") :])[0].loaded()
    if load_base is None:
        raise bert.CheckpointError(f"No loader was given for the base model {source!r}.")
    return load_base(source)


def _finetune_events(
    spec: JobSpec,
    stop: threading.Event,
    base: bert.Bundle,
    recorder: AttentionSnapshots | None,
    mistakes: int = 12,
) -> Iterator[ev.Event]:
    """bert.train.finetune, then a Report (evaluate_classifier on the validation texts: per-class scores,
    confusion matrix, confident mistakes) unless nobody is left to read it. `base` may be a shared
    cached model: bert.train.finetune copies its weights and never changes it. A `recorder`
    (app.run_session.snapshots) gets the probe sentence's attention every few steps."""
    args = spec.finetune_args()
    train, valid = spec.data()
    if recorder is not None and not recorder.bound:
        recorder.bind(base.tokenizer)
    before = torch.get_num_threads()
    args.threads = args.threads or job_threads()  # bert.train.finetune sets and restores them
    try:
        model = logits = None
        for m in finetune(base, train, valid, args, stop, on_step=recorder):
            if isinstance(m, ev.FinetuneDone):
                model, logits = m.bundle, m.valid_logits
            yield m
        if model is not None and getattr(stop, "reason", None) != SESSION:  # nobody to read it
            torch.set_num_threads(args.threads)
            t = time.perf_counter()
            report = evaluate_classifier(
                model, valid, max_length=args.max_length, mistakes=mistakes, logits=logits
            )  # the run's own last scores of the kept model, when it has them
            yield Report(seconds=time.perf_counter() - t, report=report)
    finally:
        torch.set_num_threads(before)
        release_memory()


def job_folder(job_id: int | None) -> Path:
    """bert_cache_dir()/jobs/job-<id>-<random>: named after the job (its StopEvent's `job_id`),
    unique in any case."""
    root = jobs_dir()
    root.mkdir(parents=True, exist_ok=True)
    prefix = f"job-{job_id}-" if job_id is not None else "job-"
    return Path(tempfile.mkdtemp(dir=root, prefix=prefix))


def _pretrained(path, name: str, run: PretrainArgs, corpus_label: str, done: ev.PretrainDone) -> bert.Bundle:
    bundle = bert.load(path)
    bundle.name = name
    bundle.card = pretrain_card(name, run, corpus_label, done)
    return bundle


def _pretrain_events(
    spec: JobSpec, stop: threading.Event, corpus, recorder: AttentionSnapshots | None
) -> Iterator[ev.Event]:
    """bert.train.pretrain in a fresh folder under bert_cache_dir()/jobs (never in the repo); the
    PretrainDone's model is loaded into memory (its `bundle`, instead of its `path`) and the
    folder removed (with any tokenized text in it: args.cache_tokens is False for an upload). If
    training fails (the loss became NaN), an Error is sent and the last saved checkpoint is kept.
    The folder is named by the job's number (`stop.job_id`, its StopEvent)."""
    name, corpus_label = spec.title, spec.corpus_label
    corpus = corpus if corpus is not None else spec.uploaded_corpus()
    folder = job_folder(getattr(stop, "job_id", None))
    run = PretrainArgs(**{**spec.args, "out": str(folder)})
    before = torch.get_num_threads()
    if not run.threads:
        run.threads = job_threads()
    try:
        try:
            bind = (lambda b: recorder.bind(b.tokenizer)) if recorder is not None else None
            for m in pretrain(run, stop, corpus=corpus, resume=False, on_step=recorder, on_start=bind):
                if isinstance(m, ev.PretrainDone):
                    bundle = _pretrained(m.path, name, run, corpus_label, m)
                    bundle.source = "pre-trained in BERT Explorer"
                    m = replace(m, bundle=bundle, path=None)
                yield m
        except TrainingError as e:
            yield ev.Error(message=str(e))
            ckpt = folder / "checkpoint" / "model"
            if (ckpt / "config.json").is_file():
                done = ev.PretrainDone(stopped=True, from_checkpoint=True)
                yield replace(done, bundle=_pretrained(ckpt, name, run, corpus_label, done))
    finally:
        torch.set_num_threads(before)
        shutil.rmtree(folder, ignore_errors=True)
        release_memory()


def _torchrun_events(spec: JobSpec, stop: threading.Event) -> Iterator[ev.Event]:
    """Pre-training in `spec.processes` processes under torchrun (a GPU actor with as many GPUs:
    one process each; DistributedDataParallel), its rank 0's event lines read back as events; Stop
    writes the run's stop file, which every rank obeys after the same step. The model is loaded
    from the run's folder as in `_pretrain_events`. No attention snapshots in this mode."""
    folder = job_folder(getattr(stop, "job_id", None))
    run = PretrainArgs(**{**spec.args, "out": str(folder), "stop_file": str(folder / "stop")})
    run.threads = run.threads or job_threads()
    if spec.corpus:  # an upload travels in the spec: the processes read it from the run's folder
        corpus = spec.uploaded_corpus()
        (folder / "corpus.txt").write_text("\n\n".join(" ".join(doc) for doc in corpus.documents), encoding="utf-8")
        run.text_file = str(folder / "corpus.txt")
    command = torchrun_command(run, spec.processes, _free_port(), python=sys.executable)
    log_file = (folder / "torchrun.log").open("w")  # a file, not a pipe: what it logs never blocks it
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log_file, text=True, cwd=folder)
    watch = threading.Thread(target=_stop_file_when, args=(stop, folder / "stop", proc), daemon=True)
    watch.start()
    try:
        for line in proc.stdout:
            if not line.startswith("{"):
                continue
            m = ev.from_dict(json.loads(line), ev.PRETRAIN)
            if isinstance(m, ev.PretrainDone):
                m = replace(m, bundle=_pretrained(m.path, spec.title, run, spec.corpus_label, m), path=None)
                m.bundle.source = "pre-trained in BERT Explorer"
            yield m
        if proc.wait() != 0:
            log_file.flush()
            said = (folder / "torchrun.log").read_text(errors="replace").strip().splitlines()
            last = next((x for x in reversed(said) if "Error" in x), said[-1] if said else "no message")
            yield ev.Error(message=f"pre-training under torchrun ended with code {proc.returncode}: {last[:300]}")
    finally:
        if proc.poll() is None:
            proc.kill()
        log_file.close()
        shutil.rmtree(folder, ignore_errors=True)


def _free_port() -> int:
    """A free port on this machine for torchrun's rendezvous (its processes all run here)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop_file_when(stop: threading.Event, path: Path, proc: subprocess.Popen) -> None:
    while proc.poll() is None:
        if stop.wait(0.5):
            path.touch()
            return
