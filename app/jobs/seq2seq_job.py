"""The sequence-to-sequence job: an encoder-decoder trained on a built-in toy task or uploaded
pairs (bert/train/seq2seq.py), as `run_job` runs it for a JobSpec of kind SEQ2SEQ, here or on a
worker. The spec carries the settings (Seq2SeqArgs as a dict), the encoder's source name and an
upload's pairs; a built-in task's pairs are made where the job runs. Kept under its run code as
the other jobs' runs (app/jobs/saved_runs.py): the Decoder page reopens it by that code."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import asdict
from typing import Any

import bert
from bert.seq2seq.tasks import Pairs, split_pairs, task_pairs
from bert.train.events import Event
from bert.train.seq2seq import TINY, Seq2SeqArgs, train_seq2seq

from ..server.memory import release_memory
from .spec import SEQ2SEQ, JobSpec, known_fields

VALID_FRACTION = 0.1  # of an upload, held out to score it


def seq2seq_spec(
    code: str,
    args: Seq2SeqArgs,
    pairs: Pairs | None,
    student: str = "",
    title: str = "",
    info: dict[str, Any] | None = None,
) -> JobSpec:
    """A job of kind SEQ2SEQ kept under run `code` ("": not kept): `pairs` an upload (None: the
    built-in task args.task)."""
    return JobSpec(
        kind=SEQ2SEQ,
        code=code,
        student=student,
        title=title,
        args=asdict(args),
        base="" if args.encoder == TINY else args.encoder,
        pairs=asdict(pairs) if pairs is not None else None,
        info=dict(info or {}),
    )


def seq2seq_events(
    spec: JobSpec,
    stop: threading.Event,
    base: bert.Bundle | None,
    resolve: Callable[[str], bert.Bundle],
    threads: int,
) -> Iterator[Event]:
    """The trainer's events. `base` the page's own encoder where it has it; else `resolve` finds it
    by its source name (app.jobs.worker.base_model). `threads`: torch threads unless the args say."""
    args = known_fields(Seq2SeqArgs, spec.args)
    if spec.pairs:
        train, valid = split_pairs(Pairs(**spec.pairs), VALID_FRACTION, args.seed)
    else:
        train, valid = task_pairs(args.task, args.train_pairs, args.valid_pairs, args.seed)
    if args.encoder != TINY and base is None:
        base = resolve(spec.base)
    args.threads = args.threads or threads
    try:
        yield from train_seq2seq(args, train, valid, base if args.encoder != TINY else None, stop)
    finally:
        release_memory()
