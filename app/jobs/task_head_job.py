"""The per-token head's job: a tagger or a reader fine-tuned (bert/train/task_head_train.py), as `run_job`
runs it for a JobSpec of kind TASK_HEAD, here or on a Ray worker. The spec carries the settings (TaskHeadArgs
as a dict), the base model's source name and an upload's examples; the built-in data (Brown's parts
of speech, the demo questions) is made where the job runs. Kept under its run code like every
fine-tuning run."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import asdict
from typing import Any

import bert
from bert.data.brown_pos import brown_pos
from bert.data.qa_demo import qa_demo
from bert.data.squad import QAData, Question, split_questions
from bert.data.tagged import TaggedData, split_tagged
from bert.train.events import Event
from bert.train.reader_task import ReaderTask
from bert.train.tagger_task import TaggerTask
from bert.train.task_head_args import TaskHeadArgs
from bert.train.task_head_train import train_task_head

from ..server.memory import release_memory
from .spec import TASK_HEAD, JobSpec, known_fields

BUILTIN = {"builtin:brown-pos": "Brown Corpus parts of speech", "builtin:qa-demo": "demo questions (templates)"}


def task_head_spec(
    code: str,
    base: str,
    args: TaskHeadArgs,
    data: TaggedData | QAData | None,
    student: str = "",
    title: str = "",
    info: dict[str, Any] | None = None,
) -> JobSpec:
    """A job of kind TASK_HEAD: `data` an upload (None: the built-in data args.data names)."""
    return JobSpec(
        kind=TASK_HEAD,
        code=code,
        student=student,
        title=title,
        args=asdict(args),
        base=base,
        examples=asdict(data) if data is not None else None,
        info=dict(info or {}),
        gpu=args.device == "cuda",
    )


def _data(spec: JobSpec, args: TaskHeadArgs) -> TaggedData | QAData:
    if spec.examples is None:
        return brown_pos() if args.head == "tagger" else qa_demo(seed=args.seed)
    if args.head == "tagger":
        return TaggedData(**spec.examples)
    d = dict(spec.examples)
    d["questions"] = [Question(**{**q, "answers": tuple(map(tuple, q["answers"]))}) for q in d["questions"]]
    return QAData(**d)


def task_head_events(
    spec: JobSpec,
    stop: threading.Event,
    base: bert.Bundle | None,
    resolve: Callable[[str], bert.Bundle],
    threads: int,
) -> Iterator[Event]:
    """The trainer's events. `base` the page's own model where it has it; else `resolve` finds it by
    its source name (app.jobs.worker.base_model). `threads`: torch threads unless the args say."""
    args = known_fields(TaskHeadArgs, spec.args)
    args.threads = args.threads or threads
    data = _data(spec, args)
    if args.head == "tagger":
        train, valid = split_tagged(data, args.valid_fraction, args.seed)
        task = TaggerTask(train, valid, args)
    else:
        train, valid = split_questions(data, args.valid_fraction, args.seed)
        task = ReaderTask(train, valid, args)
    try:
        yield from train_task_head(base if base is not None else resolve(spec.base), task, args, stop)
    finally:
        release_memory()
