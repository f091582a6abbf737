"""The sequence-to-sequence job: an encoder-decoder trained on a built-in toy task or uploaded
pairs (bert/train/seq2seq.py), as `run_job` runs it for a JobSpec of kind SEQ2SEQ, here or on a
worker. The spec carries the settings (Seq2SeqArgs as a dict), the encoder's source name and an
upload's pairs; a built-in task's pairs are made where the job runs. Kept under its run code as
the other jobs' runs (app/jobs/saved_runs.py): the Decoder page reopens it by that code."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any

import bert
from bert.seq2seq.tasks import Pairs, split_pairs, task_pairs
from bert.train.events import Event
from bert.train.seq2seq import TINY, Seq2SeqArgs, tiny_config, tiny_vocabulary, train_seq2seq

from ..server.memory import release_memory
from .budget import LimitError, max_job_mb, max_step_tokens, seq2seq_mb
from .spec import SEQ2SEQ, BaseOf, JobSpec, known_fields, new_spec

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
    base = "" if args.encoder == TINY else args.encoder
    kept_pairs = asdict(pairs) if pairs is not None else None
    return new_spec(SEQ2SEQ, code, args, student, title, info, base=base, pairs=kept_pairs)


@dataclass(frozen=True)
class Seq2SeqBudget:
    """What a Decoder on top job of some settings and pairs costs: a step's tokens (batch x the
    longest source with [CLS]/[SEP] + the longest target with its start token) and its memory."""

    batch: int
    source: int
    target: int
    mb: int

    @property
    def step_tokens(self) -> int:
        return self.batch * (self.source + self.target)

    def refusal(self) -> str:
        """Why the server refuses the job ("" when it fits its caps)."""
        tokens, cap = self.step_tokens, max_step_tokens()
        if tokens > cap:
            return (
                f"Too big for this server: batch {self.batch} of pairs up to {self.source + self.target:,} tokens "
                f"(source and target) = {tokens:,} tokens per step, and the server allows {cap:,}. "
                "Lower the batch size, or upload shorter pairs."
            )
        if self.mb > max_job_mb():
            return (
                f"Too big for this server: this job would take about {self.mb:,} MB of memory (batch {self.batch} "
                f"of pairs up to {self.source + self.target:,} tokens, the model, its best copy and the pairs), "
                f"and the server allows {max_job_mb():,} MB per job. Lower the batch size or the decoder layers, "
                "freeze the encoder, pick a smaller encoder, or upload shorter or fewer pairs."
            )
        return ""

    def line(self) -> str:
        """The line the page shows under the settings, before Start."""
        return (
            f"Each step trains on {self.batch} pairs of up to {self.source + self.target:,} tokens = "
            f"{self.step_tokens:,} tokens (this server allows {max_step_tokens():,}); this job needs about "
            f"{self.mb:,} MB of memory (at most {max_job_mb():,})."
        )


def seq2seq_budget(args: Seq2SeqArgs, pairs: list[Pairs], base: bert.Bundle | None) -> Seq2SeqBudget:
    """The budget of training on `pairs` (all of them, held-out ones too), tokenized as the job
    will: `base`'s tokenizer, or the tiny encoder's words (one word, one token) when it is None."""
    if base is None:
        words, longest = tiny_vocabulary(pairs)
        config = tiny_config(len(words), longest, args)
        count = lambda text: len(words.basic_tokenize(text))  # noqa: E731 - one word, one token
    else:
        config = base.config
        count = lambda text: len(base.tokenizer.encode(text, add_special_tokens=False).ids)  # noqa: E731
    sources = [count(t) for p in pairs for t in p.sources]
    targets = [count(t) for p in pairs for t in p.targets]
    source, target = max(sources, default=0) + 2, max(targets, default=0) + 1
    tokens = sum(sources) + sum(targets) + 3 * len(sources)
    layers = args.decoder_layers
    mb = seq2seq_mb(config, layers, args.batch_size, source, target, args.freeze_encoder, tokens)
    return Seq2SeqBudget(args.batch_size, source, target, mb)


def check_seq2seq(args: Seq2SeqArgs, pairs: list[Pairs], base: bert.Bundle | None) -> Seq2SeqBudget:
    """The budget; LimitError with the reason when it is over the server's caps."""
    cost = seq2seq_budget(args, pairs, base)
    if why := cost.refusal():
        raise LimitError(why)
    return cost


def seq2seq_events(spec: JobSpec, stop: threading.Event, base_of: BaseOf, threads: int) -> Iterator[Event]:
    """The trainer's events; the encoder a fresh tiny one, else the model `base_of` gives.
    `threads`: torch threads unless the args say."""
    args = known_fields(Seq2SeqArgs, spec.args)
    if spec.pairs:
        train, valid = split_pairs(Pairs(**spec.pairs), VALID_FRACTION, args.seed)
    else:
        train, valid = task_pairs(args.task, args.train_pairs, args.valid_pairs, args.seed)
    base = base_of() if args.encoder != TINY else None
    args.threads = args.threads or threads
    check_seq2seq(args, [train, valid], base)  # before a model is built
    try:
        yield from train_seq2seq(args, train, valid, base, stop)
    finally:
        release_memory()
