"""`TaskHeadArgs`: the settings of one per-token fine-tuning run (a tagger or a reader,
bert/train/task_head_train.py), checked against the base model before it starts."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import TypeVar

from ..errors import TrainingError
from ..task_heads import TASK_HEADS
from .device import DEVICES, resolve_device
from .precision import PRECISIONS, resolve_precision

D = TypeVar("D")  # a data set: TaggedData or QAData

PER_TOKEN_HEADS = ("tagger", "reader")  # bert/task_heads.py's per-token rows


# The tagger's defaults: the built-in part-of-speech run on MiniLM-L6 (benchmarks: quality and time on
# one core); a reader's run takes longer windows (`for_task_head`).
@dataclass
class TaskHeadArgs:
    head: str = "tagger"  # "tagger" (label every word) or "reader" (find the answer)
    data: str = "builtin:brown-pos"  # an uploaded file's name, or "builtin:brown-pos" / "builtin:qa-demo"
    checkpoint: str = "minilm-l6"
    name: str | None = None  # the result's display name
    max_length: int = 64  # tokens per input, special tokens included
    stride: int = 16  # a reader's passage tokens shared by two consecutive windows
    batch_size: int = 16
    lr: float = 1e-4  # the encoder's peak learning rate
    head_lr_scale: float = 10.0  # the new head learns this many times faster
    epochs: int = 1
    warmup_ratio: float = 0.1
    weight_decay: float = 0.01
    clip: float = 1.0
    freeze_embeddings: bool = True
    evals: int = 3  # evaluations per epoch (the curves' points)
    max_train: int | None = 1000  # sentences or questions used at most (a random sample)
    max_valid: int | None = 200
    valid_fraction: float = 0.2
    seed: int = 0
    threads: int | None = None
    device: str = field(default="auto", metadata={"choices": DEVICES})
    # fp32, or bf16 autocast (fp32 master weights); auto: bf16 where the processor has it (bert/train/precision.py)
    precision: str = field(default="fp32", metadata={"choices": PRECISIONS})

    def samples(self, train: D, valid: D) -> tuple[D, D]:
        """`train` and `valid` cut to max_train and max_valid (seeded random samples, kept in
        order); data of any kind with len() and subset(indices)."""

        def sample(data: D, n: int | None, seed: int) -> D:
            if n is None or len(data) <= n:
                return data
            return data.subset(sorted(random.Random(seed).sample(range(len(data)), n)))

        return sample(train, self.max_train, self.seed), sample(valid, self.max_valid, self.seed + 1)

    def check(self, max_positions: int | None = None) -> None:
        """TrainingError for settings that make no sense."""

        def bad(msg):
            raise TrainingError(msg)

        if self.head not in PER_TOKEN_HEADS:
            bad(f"the head must be one of {', '.join(PER_TOKEN_HEADS)}, not {self.head!r}")
        if self.batch_size < 1 or self.epochs < 1 or self.evals < 1:
            bad("batch size, epochs and evaluations must each be at least 1")
        if not (math.isfinite(self.lr) and self.lr > 0 and self.head_lr_scale > 0):
            bad(f"the learning rate must be a positive number, not {self.lr}")
        if not 0.0 <= self.warmup_ratio < 1.0:
            bad("the warm-up ratio must lie in [0, 1)")
        smallest = 48 if self.head == "reader" else 8
        if self.max_length < smallest:
            bad(f"max_length must be at least {smallest} tokens for {TASK_HEADS[self.head].task!r}")
        if max_positions is not None and self.max_length > max_positions:
            bad(f"max_length {self.max_length} is more than the model's {max_positions} positions")
        if self.head == "reader" and not 0 <= self.stride < self.max_length // 2:
            bad("the stride must lie between 0 and half the window")
        resolve_precision(self.precision, resolve_device(self.device))


def for_task_head(head: str, **changes) -> TaskHeadArgs:
    """The defaults of a head's run: a reader reads windows of 96 tokens (32 shared by two windows) over
    its built-in demo set; 16 of them a step fit a default server's caps (app/jobs/budget.py)."""
    if head == "reader":
        changes = {"data": "builtin:qa-demo", "max_length": 96, "stride": 32, "lr": 3e-4, **changes}
    return TaskHeadArgs(head=head, **changes)
