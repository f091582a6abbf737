"""The job functions: the training generators of bert/finetune.py and bert/pretrain.py wrapped to
run in a job's thread (they call no `st.*`), and each run saved under its run code.

Run codes. Each job gets a 6-character code when it is queued (shown while it trains and on its
results). When it ends, for any reason (done, Stop, time cap, tab closed), `keep_run` saves the
model, card, curves and report under that code (app/runs_store.py, a day), so a refresh, a
closed tab or a server restart loses nothing: "Reopen a run" on the page loads it back.

Torch threads. A job trains with BERT_EXPLORER_JOB_THREADS torch threads (default 1: on a 2-core
server one core trains, the other serves every session's inference). `torch.set_num_threads`
in the job thread also becomes the default of threads started afterwards, and Streamlit starts
a thread per script run: so while a job trains, page inference runs on one thread too. The job
restores the previous value when it ends.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import threading
import time
from dataclasses import asdict, fields, is_dataclass, replace
from pathlib import Path
from typing import Any

import torch

import bert
from bert import DataError, TrainingError
from bert import events as ev
from bert.attention_snapshots import AttentionSnapshots
from bert.finetune import FinetuneArgs, evaluate_classifier, finetune
from bert.labelled import LabelledData
from bert.pretrain import PretrainArgs, pretrain

from .. import runs_store
from ..jobs import SESSION
from ..memory import release_memory
from .downloads import pretrain_card
from .jobs import current_jobs_dir, job_threads
from .progress import last_event

log = logging.getLogger("bert_explorer")


# ---- the job's own events, after the trainer's (bert/events.py) -----------------------------------


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
    """A run.json's record with its events (bert.events.from_dict) and settings read back; an event
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


def keep_run(fn, kind: str, code: str, info: dict):
    """A JobFn: `fn`, then what it made saved under run `code` (app/runs_store.py), whatever
    ended it, so a refresh, a closed tab or a server restart loses nothing. Then Saved (or
    SaveFailed with a message: the model is still in the session, to download)."""

    def run(stop: threading.Event):
        events, bundle = [], None
        for m in fn(stop):
            if isinstance(m, ev.Done) and m.bundle is not None:
                bundle = m.bundle
                events.append(replace(m, bundle=None))
            else:
                events.append(m)
            yield m
        if bundle is None:
            return
        error = last_event(events, ev.Error)
        reason = getattr(stop, "reason", None) if stop.is_set() else None
        record = run_record(
            kind,
            events,
            info,
            "error" if error else "stopped" if reason else "done",
            error and error.message,
            reason,
        )
        try:
            runs_store.save_run(code, bundle, {**stored_record(record), "name": info.get("title") or bundle.name})
            yield Saved(code=code)
        except Exception as e:  # noqa: BLE001 - a full disk must not lose the model in memory
            log.exception("saving run %s", code)
            yield SaveFailed(
                message=f"The model could not be saved on the server ({type(e).__name__}): download it to keep it."
            )

    return run


def finetune_job(
    base: bert.Bundle,
    train: LabelledData,
    valid: LabelledData,
    args: FinetuneArgs,
    mistakes: int = 12,
    recorder: AttentionSnapshots | None = None,
):
    """A JobFn: the bert.finetune generator, then a Report (evaluate_classifier on the
    validation data: per-class scores, confusion matrix, confident mistakes). `base` may be a
    shared cached model: bert.finetune copies its weights and never changes it. A `recorder`
    (app.snapshots) gets the probe sentence's attention every few steps."""
    if recorder is not None and not recorder.bound:
        recorder.bind(base.tokenizer)

    def fn(stop: threading.Event):
        before = torch.get_num_threads()
        threads = args.threads or job_threads()
        torch.set_num_threads(threads)
        try:
            model = logits = None
            for m in finetune(base, train, valid, args, stop, on_step=recorder):
                if isinstance(m, ev.FinetuneDone):
                    model, logits = m.bundle, m.valid_logits
                yield m
            if model is not None and getattr(stop, "reason", None) != SESSION:  # nobody to read it
                torch.set_num_threads(threads)  # finetune restored its own setting
                t = time.perf_counter()
                report = evaluate_classifier(
                    model, valid, max_length=args.max_length, mistakes=mistakes, logits=logits
                )  # the run's own last scores of the kept model, when it has them
                yield Report(seconds=time.perf_counter() - t, report=report)
        finally:
            torch.set_num_threads(before)
            release_memory()

    return fn


def _job_folder(holder: dict, wait_s: float = 5.0) -> Path:
    """bert_cache_dir()/jobs/job-<id>-<random>: named after the job once submit() has told us
    its id (it returns right after starting the thread), unique in any case."""
    end = time.monotonic() + wait_s
    while "job_id" not in holder and time.monotonic() < end:
        time.sleep(0.01)
    root = current_jobs_dir()
    root.mkdir(parents=True, exist_ok=True)
    prefix = f"job-{holder['job_id']}-" if "job_id" in holder else "job-"
    return Path(tempfile.mkdtemp(dir=root, prefix=prefix))


def _pretrained(path, name: str, run: PretrainArgs, corpus_label: str, done: ev.PretrainDone) -> bert.Bundle:
    bundle = bert.load(path)
    bundle.name = name
    bundle.card = pretrain_card(name, run, corpus_label, done)
    return bundle


def pretrain_job(
    args: PretrainArgs,
    corpus,
    name: str,
    corpus_label: str,
    holder: dict | None = None,
    recorder: AttentionSnapshots | None = None,
):
    """A JobFn: bert.pretrain in a fresh folder under bert_cache_dir()/jobs (never in the repo);
    the PretrainDone's model is loaded into memory (its `bundle`, instead of its `path`) and the
    folder removed (with any tokenized text in it: set args.cache_tokens False for an upload). If
    training fails (the loss became NaN), an Error is sent and the last saved checkpoint is kept.
    `holder["job_id"]`, set by start_pretrain, names the folder."""
    holder = {} if holder is None else holder

    def fn(stop: threading.Event):
        folder = _job_folder(holder)
        run = PretrainArgs(**{**asdict(args), "out": str(folder)})
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

    return fn
