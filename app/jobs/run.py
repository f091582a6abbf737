"""What a job runs, here or on a Ray worker: `run_job(spec, stop)` — the trainer of bert/train/finetune.py
or bert/train/pretrain.py (no `st.*`), fine-tuning's report, then the run saved under its run code.

Run codes. Each job gets a 6-character code when it is queued (shown while it trains and on its
results). When it ends, for any reason (done, Stop, time cap, tab closed), `run_job` saves the
model, card, curves and report under that code (app/jobs/runs_store.py, a day), so a refresh, a
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
from collections.abc import Iterator
from dataclasses import asdict, fields, is_dataclass, replace
from pathlib import Path
from typing import Any

import torch

import bert
from bert import DataError, TrainingError, settings
from bert.data.corpus.fetch import bert_cache_dir
from bert.train import events as ev
from bert.train.attention_snapshots import AttentionSnapshots
from bert.train.events import last as last_event
from bert.train.finetune import finetune
from bert.train.finetune_args import FinetuneArgs
from bert.train.finetune_eval import evaluate_classifier
from bert.train.pretrain import PretrainArgs, pretrain, torchrun_command

from ..server.memory import release_memory
from ..training.downloads import pretrain_card
from . import runs_store
from .budget import LimitError
from .seq2seq_job import seq2seq_events
from .spec import FINETUNE, SEQ2SEQ, SESSION, JobSpec

log = logging.getLogger("bert_explorer")


def job_threads() -> int:
    return settings.whole("BERT_EXPLORER_JOB_THREADS")


def jobs_dir() -> Path:
    """Per-job scratch folders (pre-training checkpoints) live here, never in the repository."""
    return bert_cache_dir() / "jobs"


# ---- the job's own events, after the trainer's (bert/train/events.py) -----------------------------------


class Report(ev.Event, event="report"):
    """evaluate_classifier's report on the validation texts, after fine-tuning."""

    seconds: float
    report: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"event": self.event, "seconds": self.seconds, **self.report}


class Saved(ev.Event, event="saved"):
    """The run is saved under its run code."""

    code: str


class SaveFailed(ev.Event, event="save_failed"):
    """The run could not be saved (the model is still in the session)."""

    message: str


JOB_EVENTS = (Report, Saved, SaveFailed)


def run_record(
    kind: str, events: list[ev.Event], info: dict, status: str, error: str | None, stop_reason: str | None
) -> dict:
    """What a finished job's results view shows (kept in the session; `stored_record` is what is
    saved with the run): "metrics" the trainer's events, "done" its Done event, "report" the
    Report's dict (fine-tuning)."""
    report = last_event(events, Report)
    return {
        "kind": kind,
        "status": status,
        "error": error,
        "stop_reason": stop_reason,
        "metrics": [m for m in events if not isinstance(m, JOB_EVENTS)],
        "report": report.to_dict() if report else None,
        "done": last_event(events, ev.Done),
        "info": info,
    }


def stored_record(record: dict) -> dict:
    """`record` with its events (`to_dict`) and its settings (info["args"]) as dicts: what run.json holds."""
    done, info = record.get("done"), record.get("info") or {}
    if is_dataclass(info.get("args")):
        info = {**info, "args": asdict(info["args"])}
    return {
        **record,
        "metrics": [m.to_dict() for m in record["metrics"]],
        "done": done and done.to_dict(),
        "info": info,
    }


def _settings(kind: str, d: dict) -> FinetuneArgs | PretrainArgs:
    """A run's FinetuneArgs / PretrainArgs from run.json (settings it does not know are left out)."""
    cls = PretrainArgs if kind == "pretrain" else FinetuneArgs
    names = {f.name for f in fields(cls)}
    required = {"out": ""} if cls is PretrainArgs else {"data": ""}
    return cls(**{**required, **{k: v for k, v in d.items() if k in names}})


def loaded_record(record: dict) -> dict:
    """A run.json's record with its events (bert.train.events.from_dict) and settings read back; an event
    it cannot read (a run written by another version) is left out. DataError without a readable Done."""
    trainer = ev.PRETRAIN if record.get("kind") == "pretrain" else ev.FINETUNE

    def read(d):
        try:
            return ev.from_dict(d, trainer)
        except (ValueError, AttributeError):
            return None

    metrics = [m for m in map(read, record.get("metrics") or []) if m is not None]
    done = read(record["done"]) if isinstance(record.get("done"), dict) else None
    if not isinstance(done, ev.Done):
        raise DataError(f"Run {record.get('code', '')} was saved in a form this version cannot read.")
    info = record.get("info") or {}
    info = {**info, "args": _settings(record.get("kind"), info.get("args") or {})}
    return {**record, "metrics": metrics, "done": done, "info": info}


def run_job(
    spec: JobSpec,
    stop: threading.Event,
    base: bert.Bundle | None = None,
    corpus=None,
    recorder: AttentionSnapshots | None = None,
) -> Iterator[ev.Event]:
    """The events of one job: the trainer's, fine-tuning's Report, then — whatever ended it (done,
    Stop, the time cap, the tab closed) — the run saved under `spec.code` so a refresh, a closed tab
    or a server restart loses nothing: Saved, or SaveFailed with a message (the model is still in
    memory, to download). `base`, `corpus` and `recorder` are this process's own objects where it
    has them (the local backend: the page's model, the shared corpus, the attention snapshots); a
    worker resolves the base model by its source name and reads the corpus from the spec."""
    events, bundle = [], None
    if spec.kind == FINETUNE:
        trained = _finetune_events(spec, stop, base, recorder)
    elif spec.kind == SEQ2SEQ:
        trained = seq2seq_events(spec, stop, base, base_model, job_threads())
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
        runs_store.save_run(spec.code, bundle, stored, student=spec.student or None)
        return Saved(code=spec.code)
    except LimitError as e:  # the disk full of young runs: said as it is
        return SaveFailed(message=str(e))
    except Exception as e:  # noqa: BLE001 - a full disk must not lose the model in memory
        log.exception("saving run %s", spec.code)
        return SaveFailed(
            message=f"The model could not be saved on the server ({type(e).__name__}): download it to keep it."
        )


def base_model(source: str) -> bert.Bundle:
    """A job's base model by its source name, as the pickers name it: a built-in, a models-folder
    model or (opted in) a hub id (app.models.load_model, loaded once per process), or
    "run:CODE", a saved run."""
    if source.startswith("run:"):
        return runs_store.open_run(source[len("run:") :])[0].loaded()
    from ..models import load_model  # the pickers' one safe loader (it imports streamlit)

    return load_model(source)


def _finetune_events(
    spec: JobSpec,
    stop: threading.Event,
    base: bert.Bundle | None,
    recorder: AttentionSnapshots | None,
    mistakes: int = 12,
) -> Iterator[ev.Event]:
    """bert.train.finetune, then a Report (evaluate_classifier on the validation texts: per-class scores,
    confusion matrix, confident mistakes) unless nobody is left to read it. `base` may be a shared
    cached model: bert.train.finetune copies its weights and never changes it. A `recorder`
    (app.training.snapshots) gets the probe sentence's attention every few steps."""
    args = spec.finetune_args()
    train, valid = spec.data()
    base = base if base is not None else base_model(spec.base)
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
    The folder is named by the job's number (`stop.job_id`, app/jobs/spec.py)."""
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
