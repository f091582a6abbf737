"""Starting a training job: its settings checked against the caps, then queued for this session.

Caps (app/jobs/budget.py) are checked before a job is queued: tokens per step and the memory estimate
(`check_finetune` / `check_pretrain`), one active job per student (`app.students.student_key`: the browser, so
two tabs count once; a browser new to the server costs its address a token, app/server/new_students.py),
the queue length, and the time a job trains.
"""

from __future__ import annotations

import re

import streamlit as st

import bert
from bert import settings
from bert.attention_masks import CAUSAL
from bert.data.brown_pos import POS_TAGS
from bert.data.labelled import LabelledData
from bert.train.attention_snapshots import AttentionSnapshots
from bert.train.device import server_device
from bert.train.finetune_args import FinetuneArgs
from bert.train.next_word import MLM_NSP, NEXT_WORD
from bert.train.precision import server_precision
from bert.train.pretrain_args import PretrainArgs
from bert.train.reader_task import MAX_WINDOWS, count_windows, too_many_windows
from bert.train.task_head_args import TaskHeadArgs

from ..jobs import budget, saved_runs
from ..jobs.backend import JobBackend, JobHandle, job_backend
from ..jobs.budget import LimitError
from ..jobs.spec import FINETUNE, PRETRAIN, TASK_HEAD, finetune_spec, pretrain_spec
from ..jobs.task_head_job import task_head_spec
from ..jobs.worker import job_threads
from ..run_session import session as ts
from ..run_session import snapshots
from ..run_session.follow import active_job, notice_errors, submit
from ..run_session.names import safe_filename
from ..run_session.run_size import MIN_STEPS, floored_epochs, page_finetune_args, speed_key, training_time_line
from ..run_session.uploads import free_uploads, let_go_of_uploaders
from ..students import owner, student_key
from .data import split_data


def default_finetune_base() -> str:
    """The Fine-tuning page's starting model: BERT_EXPLORER_FINETUNE_BASE if set (e.g. minilm-l6
    on a host with little memory: the pages' model, so one model in memory instead of two), else the backend's
    default, the published sentence encoder (the better classifiers, docs/MODELS.md)."""
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
        args.layers,
        args.hidden,
        args.heads,
        vocab_size(args),
        args.batch_size,
        args.max_seq_length,
        next_word=args.objective == NEXT_WORD,
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


def check_pretrain_settings(
    layers: int, hidden: int, heads: int, vocab: int, batch: int, seq_len: int, next_word: bool = False
) -> dict:
    mb = budget.pretrain_mb(layers, hidden, heads, vocab, batch, seq_len, next_word)
    return _budget_view(batch, seq_len, mb, "sequence")


# ---- the Start buttons' callbacks (a callback survives the rerun a page may do first) -------------

# the pre-training page's fixed settings
LOG_EVERY = 5
SAVE_EVERY = 500  # a checkpoint to resume from; the model is saved when the run ends anyway
DROPOUT = 0.0  # small models trained for minutes learn faster without it (benchmarks/plateau.py)


def on_start_finetune(
    jm: JobBackend, data: LabelledData, valid_file: LabelledData | None, valid_fraction: float, base, mode: str
) -> None:
    """Start button callback (a callback survives the rerun a page may do first)."""
    ss = st.session_state
    with notice_errors(ts.FT_NOTICE, "starting the job"):
        if jm.active_of(owner(), FINETUNE) is not None:
            ss[ts.FT_NOTICE] = ("info", "Your fine-tuning job is already running.")
            return
        if mode == "upload" and valid_file is None:
            ss[ts.FT_NOTICE] = ("error", "Upload a validation file first, or keep some of the data aside.")
            return
        train, valid = split_data(
            data, valid_file, valid_fraction, int(ss.ft_seed), int(ss.ft_max_train), int(ss.ft_max_valid)
        )
        stem = safe_filename((data.source or "data").replace("builtin:", "").rsplit(".", 1)[0], "data")
        epochs = int(ss.ft_epochs)
        if ss.get("ft_step_floor", True):  # a small file trains enough steps (said on the page)
            epochs = floored_epochs(len(train), int(ss.ft_batch), epochs)
        args = page_finetune_args(
            base.name,
            len(train),
            data.source,
            stem,
            int(ss.ft_evals),
            job_threads(),
            checkpoint=ss.ft_base,
            pooling=ss.ft_pooling,
            freeze_embeddings=bool(ss.ft_freeze_emb),
            freeze_layers=int(ss.ft_freeze_layers),
            max_length=int(ss.ft_max_length),
            batch_size=int(ss.ft_batch),
            lr=float(ss.ft_lr),
            epochs=epochs,
            warmup_ratio=float(ss.ft_warmup),
            seed=int(ss.ft_seed),
            device=server_device(),
        )
        args.check(base.config.max_tokens, base.config.num_hidden_layers)
        try:
            _, new = start_finetune(
                base, ss.ft_base, train, valid, args, jm, recorder=snapshots.recorder("ft", snapshots.FT_PROBE)
            )
        except LimitError as e:
            ss[ts.FT_NOTICE] = ("error", str(e))
            return
        if new:
            ss[ts.FT_NOTICE] = None
            if ss.ft_source == ts.UPLOAD or mode == "upload":
                let_go_of_uploaders()  # the files stay in the session for another run, until removed


def _pretrain_args(ss) -> PretrainArgs:
    """The pre-training run's settings from the page's widgets (a probe without [MASK] replaced by
    the default one, unless the next word is the game)."""
    probe = re.sub(r"\[mask\]", "[MASK]", ss.pt_probe or "", flags=re.IGNORECASE)
    if "[MASK]" not in probe and ss.get("pt_objective") != NEXT_WORD:  # the next word needs no [MASK]
        probe = PretrainArgs(out="").probe
    vocab = f"train:{int(ss.pt_vocab_size)}" if ss.pt_vocab == "train" else "default"
    steps, every = int(ss.pt_steps), int(ss.pt_eval)
    return PretrainArgs(
        out="",
        init="scratch",
        corpora=[ss.pt_source],
        vocab=vocab,
        layers=int(ss.pt_layers),
        hidden=int(ss.pt_hidden),
        heads=int(ss.pt_heads),
        max_seq_length=int(ss.pt_seq),
        batch_size=int(ss.pt_batch),
        steps=steps,
        lr=float(ss.pt_lr),
        warmup_steps=min(int(ss.pt_warmup), steps - 1),
        log_every=LOG_EVERY,
        eval_every=every,
        save_every=max(every, SAVE_EVERY),
        dropout=DROPOUT,
        seed=int(ss.pt_seed),
        threads=job_threads(),
        probe=probe[:500],
        objective=ss.get("pt_objective", MLM_NSP),
        device=server_device(),
        precision=server_precision(),
        # an upload's tokens live in memory only; a built-in's are cached for all
        cache_tokens=ss.pt_source != ts.UPLOAD and vocab == "default",
    )


def on_start_pretrain(jm: JobBackend, corpus, corpus_label: str) -> None:
    """Start button callback (a callback survives the rerun a page may do first)."""
    ss = st.session_state
    with notice_errors(ts.PT_NOTICE, "starting the job"):
        if jm.active_of(owner(), PRETRAIN) is not None:
            ss[ts.PT_NOTICE] = ("info", "Your pre-training job is already running.")
            return
        args = _pretrain_args(ss)
        what = ss.pt_source
        if what == ts.UPLOAD and ss.get(ts.PT_UPLOAD):
            what = safe_filename(ss[ts.PT_UPLOAD]["name"].rsplit(".", 1)[0], "text")
        recorder = snapshots.recorder("pt", snapshots.PT_PROBE)
        if recorder is not None and args.objective == NEXT_WORD:
            recorder.pattern = CAUSAL  # the attention it learns to use
        game = "-next-word" if args.objective == NEXT_WORD else ""
        try:
            _, new = start_pretrain(
                args,
                corpus,
                f"pretrained{game}-{what}-{args.layers}x{args.hidden}",
                corpus_label,
                jm,
                recorder=recorder,
            )
        except LimitError as e:
            ss[ts.PT_NOTICE] = ("error", str(e))
            return
        if new:
            ss[ts.PT_NOTICE] = None
            if ss.pt_source == ts.UPLOAD:
                free_uploads(ts.PT_UPLOAD)


def start_finetune(
    base: bert.Bundle,
    base_source: str,
    train: LabelledData,
    valid: LabelledData,
    args: FinetuneArgs,
    jm: JobBackend | None = None,
    recorder: AttentionSnapshots | None = None,
) -> tuple[JobHandle, bool]:
    """Submit (or return the already active) fine-tuning job of this session. LimitError (with
    the message to show) when a cap refuses it (TooManyNewStudents: a new browser over its address's rate)."""
    jm = jm or job_backend()
    existing = active_job(jm, FINETUNE)
    if existing is not None:
        return existing, False
    if args.threads is None:
        args.threads = job_threads()
    check_finetune(base, args, len(train.classes))
    code = saved_runs.new_code()
    info = {
        "base_source": base_source,
        "base_name": base.name,
        "code": code,
        "title": args.name or "",
        "train": train.summary(),
        "valid": len(valid),
        "classes": list(train.classes),
        "train_notes": list(train.notes),
        "valid_notes": list(valid.notes),
    }
    spec = finetune_spec(code, base_source, train, valid, args, student_key(), args.name or "", info)
    return submit(jm, spec, args, args.name or "fine-tuning", recorder, base=base)


def start_pretrain(
    args: PretrainArgs,
    corpus,
    name: str,
    corpus_label: str,
    jm: JobBackend | None = None,
    recorder: AttentionSnapshots | None = None,
) -> tuple[JobHandle, bool]:
    """Submit (or return the already active) pre-training job of this session; LimitError over a cap."""
    jm = jm or job_backend()
    existing = active_job(jm, PRETRAIN)
    if existing is not None:
        return existing, False
    check_pretrain(args)
    code = saved_runs.new_code()
    info = {"corpus": corpus_label, "code": code, "title": name}
    spec = pretrain_spec(code, args, corpus, name, corpus_label, student_key(), info)
    return submit(jm, spec, args, name, recorder, corpus=corpus)


def task_head_scores(args: TaskHeadArgs, data) -> int:
    """Scores per token of the head `args` trains: a reader's 2, a tagger's one per tag of its data."""
    if args.head == "reader":
        return 2
    return len(data.tag_names) if data is not None else len(POS_TAGS)


def check_head(base: bert.Bundle, args: TaskHeadArgs, data) -> int:
    """The memory estimate of this per-token head's job (MB); LimitError if it is over a cap (a
    reader's upload: also the windows its questions make, as many as the run uses)."""
    mb = budget.head_mb(
        base.config, args.batch_size, args.max_length, task_head_scores(args, data), args.freeze_embeddings
    )
    budget.check_step(args.batch_size, args.max_length, mb, "input")
    if args.head == "reader" and data is not None:
        n = count_windows(base.tokenizer, data, args.max_length, args.stride)
        used = n if args.max_train is None else n * min(1.0, args.max_train / max(len(data), 1))
        if used > MAX_WINDOWS:
            raise budget.LimitError("Too big for this server: " + too_many_windows(int(used), args.max_length) + ".")
    return mb


def check_head_settings(base: bert.Bundle, args: TaskHeadArgs, data) -> dict:
    mb = budget.head_mb(
        base.config, args.batch_size, args.max_length, task_head_scores(args, data), args.freeze_embeddings
    )
    return _budget_view(args.batch_size, args.max_length, mb, "input")


def start_head(
    base: bert.Bundle, base_source: str, args: TaskHeadArgs, data, jm: JobBackend | None = None
) -> tuple[JobHandle, bool]:
    """Submit (or return the already active) per-token head's job of this session: `data` an upload's
    TaggedData / QAData, None for the built-in data args.data names. LimitError over a cap."""
    jm = jm or job_backend()
    existing = active_job(jm, TASK_HEAD)
    if existing is not None:
        return existing, False
    args.threads = args.threads or job_threads()
    args.check(base.config.max_tokens)
    check_head(base, args, data)
    code = saved_runs.new_code()
    title = args.name or f"{base.name}-{args.head}"
    info = {"base_source": base_source, "base_name": base.name, "code": code, "title": title, "head": args.head}
    spec = task_head_spec(code, base_source, args, data, student_key(), title, info)
    return submit(jm, spec, args, title, None, base=base)


def few_steps_message(n_train: int, max_train: int, batch: int, epochs: int, floor: bool) -> str | None:
    """What the page says when the settings make fewer than MIN_STEPS training steps (a 40-row
    upload: two): with the floor on, the epochs the run trains instead; off, the epochs that would
    give about MIN_STEPS. None when there are enough steps."""
    n_train = max(1, min(max_train, n_train))
    per_epoch = -(-n_train // max(1, batch))
    steps = epochs * per_epoch
    if steps >= MIN_STEPS:
        return None
    better = floored_epochs(n_train, batch, epochs)
    if floor and better > epochs:
        return (
            f"A small file: {n_train:,} training texts in batches of {batch} make {per_epoch} step(s) an epoch, "
            f"so this run trains {better} epochs (about {better * per_epoch} steps) instead of {epochs}: "
            "enough steps for the model to learn and for the curves to show it."
        )
    return (
        f"Only about {steps} training step(s): {n_train:,} training texts in batches of {batch}, {epochs} epoch(s). "
        "Too few for the model to learn much or for the curves to show it: with a small file, try "
        + (
            f"{better} epochs (about {better * per_epoch} steps) or a smaller batch."
            if better > epochs
            else "a smaller batch."
        )
    )


def finetune_time_line(n_train: int) -> str:
    """How long the fine-tuning page's settings will train (training_time_line), for the texts it
    trains on and the epochs it runs: more than set for a small file when the step floor is on."""
    ss = st.session_state
    n_used = min(n_train, int(ss.ft_max_train))
    epochs = int(ss.ft_epochs)
    if ss.ft_step_floor:
        epochs = floored_epochs(n_used, int(ss.ft_batch), epochs)
    key = speed_key(ss.ft_base, ss.ft_batch, ss.ft_max_length, ss.ft_freeze_layers, ss.ft_freeze_emb)
    return training_time_line(key, n_used, epochs)
