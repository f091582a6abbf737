"""Starting a training job: its settings checked against the caps, then queued for this session.

Caps (app/budget.py) are checked before a job is queued: tokens per step and the memory estimate
(`check_finetune` / `check_pretrain`), one active job per student (`student_key`: the browser, so
two tabs count once), the queue length, and the time a job trains.
"""

from __future__ import annotations

import streamlit as st

import bert
from bert import settings
from bert.attention_snapshots import AttentionSnapshots
from bert.finetune import FinetuneArgs
from bert.labelled import LabelledData
from bert.pretrain import PretrainArgs

from .. import budget, runs_store, snapshots
from .. import train_state as ts
from ..jobs import Job, LimitError
from .jobs import (
    FINETUNE,
    PRETRAIN,
    TrainingJobs,
    current_session_id,
    job_key,
    job_threads,
    manager,
    student_key,
)
from .runs import finetune_job, keep_run, pretrain_job


def default_finetune_base() -> str:
    """The Fine-tuning page's starting model: BERT_EXPLORER_FINETUNE_BASE if set (e.g. minilm-l6
    on a 1 GB host: the pages' model, so one model in memory instead of two), else the backend's
    default, the published sentence encoder (the better classifiers, README: Built-in models)."""
    return settings.text("BERT_EXPLORER_FINETUNE_BASE") or FinetuneArgs.checkpoint


def vocab_size(args: PretrainArgs) -> int:
    return int(args.vocab.split(":", 1)[1]) if args.vocab.startswith("train:") else 30522


def check_finetune(base: bert.Bundle, args: FinetuneArgs, classes: int = 2) -> int:
    """The memory estimate of this fine-tuning job (MB); LimitError if it is over a cap."""
    mb = budget.finetune_mb(
        base.config, args.batch_size, args.max_length, args.freeze_embeddings, args.freeze_layers, classes
    )
    budget.check_step(args.batch_size, args.max_length, mb, "text")
    return mb


def check_pretrain(args: PretrainArgs) -> int:
    """The memory estimate of this pre-training job (MB); LimitError if it is over a cap."""
    mb = budget.pretrain_mb(
        args.layers, args.hidden, args.heads, vocab_size(args), args.batch_size, args.max_seq_length
    )
    budget.check_step(args.batch_size, args.max_seq_length, mb, "sequence")
    return mb


def _budget_view(batch: int, seq_len: int, mb: int, what: str) -> dict:
    """{ok, line, mb} for the page: the budget line before Start, or what is over a cap."""
    try:
        budget.check_step(batch, seq_len, mb, what)
    except LimitError as e:
        return {"ok": False, "line": str(e), "mb": mb}
    return {"ok": True, "line": budget.budget_line(batch, seq_len, mb, what), "mb": mb}


def check_finetune_settings(
    base: bert.Bundle, batch: int, max_length: int, freeze_embeddings: bool, freeze_layers: int, classes: int
) -> dict:
    mb = budget.finetune_mb(base.config, batch, max_length, freeze_embeddings, freeze_layers, classes)
    return _budget_view(batch, max_length, mb, "text")


def check_pretrain_settings(layers: int, hidden: int, heads: int, vocab: int, batch: int, seq_len: int) -> dict:
    return _budget_view(batch, seq_len, budget.pretrain_mb(layers, hidden, heads, vocab, batch, seq_len), "sequence")


def start_finetune(
    base: bert.Bundle,
    base_source: str,
    train: LabelledData,
    valid: LabelledData,
    args: FinetuneArgs,
    jm: TrainingJobs | None = None,
    recorder: AttentionSnapshots | None = None,
) -> tuple[Job, bool]:
    """Submit (or return the already active) fine-tuning job of this session. LimitError (with
    the message to show) when a cap refuses it."""
    jm = jm or manager()
    existing = _active(jm, FINETUNE)
    if existing is not None:
        return existing, False
    if args.threads is None:
        args.threads = job_threads()
    check_finetune(base, args, len(train.classes))
    code = runs_store.new_code()
    info = {
        "base_source": base_source,
        "base_name": base.name,
        "args": args,  # FinetuneArgs (run.json: a dict, app/training/runs.py)
        "code": code,
        "title": args.name or "",
        "train": train.summary(),
        "valid": len(valid),
        "classes": list(train.classes),
        "train_notes": list(train.notes),
        "valid_notes": list(valid.notes),
    }
    job_fn = finetune_job(base, train, valid, args, recorder=recorder)
    return _submit(jm, FINETUNE, job_fn, info, args.name or "", args.name or "fine-tuning", recorder)


def start_pretrain(
    args: PretrainArgs,
    corpus,
    name: str,
    corpus_label: str,
    jm: TrainingJobs | None = None,
    recorder: AttentionSnapshots | None = None,
) -> tuple[Job, bool]:
    """Submit (or return the already active) pre-training job of this session; LimitError over a cap."""
    jm = jm or manager()
    existing = _active(jm, PRETRAIN)
    if existing is not None:
        return existing, False
    check_pretrain(args)
    holder: dict = {}
    code = runs_store.new_code()
    info = {"args": args, "corpus": corpus_label, "code": code, "title": name}  # args: PretrainArgs
    job_fn = pretrain_job(args, corpus, name, corpus_label, holder, recorder)
    return _submit(jm, PRETRAIN, job_fn, info, name, name, recorder, holder)


# what the attention snapshots of a kind of job are called
_SNAPSHOT_NAMES = {FINETUNE: "fine-tuning", PRETRAIN: "pre-training"}


def _active(jm: TrainingJobs, kind: str) -> Job | None:
    """This session's active job of `kind` (then the job its page follows), or None."""
    ts.init()
    existing = jm.active_of(ts.owner(), kind)
    if existing is not None:
        st.session_state[job_key(kind)] = existing.id
    return existing


def _submit(
    jm: TrainingJobs,
    kind: str,
    job_fn,
    info: dict,
    title: str,
    label: str,
    recorder: AttentionSnapshots | None,
    holder: dict | None = None,
) -> tuple[Job, bool]:
    """Submit `job_fn`, kept as the run info["code"], as this session's job of `kind` (or get the
    one already active), and make it the job its page follows. A new job gets `info`, its
    attention snapshots are registered under `label`, and `holder["job_id"]` names it."""
    fn = keep_run(job_fn, kind, info["code"], info)
    job, new = jm.submit_for(ts.owner(), kind, fn, title=title, session_id=current_session_id(), student=student_key())
    if holder is not None:
        holder["job_id"] = job.id
    if new and recorder is not None:
        snapshots.register(f"{label} ({_SNAPSHOT_NAMES[kind]}, job {job.id})", recorder)
    if new:
        job.info = info
    st.session_state[job_key(kind)] = job.id
    return job, new


FEW_STEPS = 30  # fewer training steps than this: the Fine-tuning page suggests more epochs


def few_steps_message(n_train: int, max_train: int, batch: int, epochs: int) -> str | None:
    """A hint when the settings make only a handful of training steps (a 40-row upload: two), with
    the number of epochs that would give about FEW_STEPS; None when there are enough."""
    n_train = max(1, min(max_train, n_train))
    per_epoch = -(-n_train // max(1, batch))
    steps = epochs * per_epoch
    if steps >= FEW_STEPS:
        return None
    better = min(20, -(-FEW_STEPS // per_epoch))
    return (
        f"Only about {steps} training step(s): {n_train:,} training texts in batches of {batch}, {epochs} epoch(s). "
        "Too few for the model to learn much or for the curves to show it: with a small file, try "
        f"{better} epochs (about {better * per_epoch} steps) or a smaller batch."
    )
