"""The Fine-tuning page's run: its two sizes (a quick one for a class's turn, the full one), how
often the curve gets a point, the FinetuneArgs the page starts (benchmarks/class_queue.py starts
the same), and how fast this server last trained a run like the one set up (a time said before
Start comes from that measurement, never from another machine's). No streamlit here."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from bert.train.finetune_args import FinetuneArgs
from bert.train.precision import server_precision

from .progress import fmt_seconds

VALID_FRACTION = 0.2  # of a data set without a validation file
MIN_STEPS = 30  # a run trains at least this many steps unless the student turns the floor off
MAX_EPOCHS = 20  # the Epochs box's maximum
PAGE_EVALS = 10  # evaluations per epoch: points on the validation curve
EVAL_SAMPLE = 100  # the validation texts each mid-run point of the curve scores (the last one: all)
EVALS_HELP = (
    f"How often the validation curve gets a point. Each point while training scores the same {EVAL_SAMPLE} "
    "validation texts (a stratified sample, so the curve is cheap); the last one scores all of them, and the "
    "model kept is the best on the sample."
)


@dataclass(frozen=True)
class RunSize:
    label: str
    max_train: int  # training texts at most (a stratified sample)
    max_valid: int  # validation texts at most
    freeze_layers: int  # the lowest N encoder layers stay as they are
    note: str  # what it trains and for whom; figures measured elsewhere are not the server's, so none here


RUN_SIZES = {
    "quick": RunSize(
        "Quick",
        1000,
        500,
        2,
        "1,000 training texts, the lowest 2 layers frozen: fewer steps than the full run, each one cheaper. For a "
        "class taking turns: the server trains a few runs at once and the rest wait in a queue. The time it takes "
        "here is said from this server's last run like it.",
    ),
    "full": RunSize(
        "Full",
        2000,
        1000,
        0,
        "2,000 training texts, every layer trained: twice the Quick run's texts, and every layer's gradients. "
        "Best when few people are training at once.",
    ),
}
DEFAULT_SIZE = "quick"


def floored_epochs(n_train: int, batch: int, epochs: int) -> int:
    """The epochs a run of `n_train` texts in batches of `batch` trains for at least MIN_STEPS
    steps (a 40-row file, half held out: 2 steps an epoch, so 15 epochs), never fewer than
    `epochs` nor more than MAX_EPOCHS."""
    per_epoch = -(-max(1, n_train) // max(1, batch))
    return max(epochs, min(MAX_EPOCHS, -(-MIN_STEPS // per_epoch)))


def eval_every_for(steps_per_epoch: int, evals: int) -> int:
    """Steps between evaluations for at least `evals` points an epoch, its end included (0: only
    at the end of each epoch)."""
    return max(1, steps_per_epoch // evals) if evals > 1 else 0


def page_finetune_args(
    base_name: str, n_train: int, source: str | None, stem: str, evals: int, threads: int, **fields
) -> FinetuneArgs:
    """The FinetuneArgs of a run the page starts from the model `base_name`: `fields` are the
    settings the page shows (the backend's defaults for the rest; the server's precision, resolved)."""
    batch = fields.get("batch_size", FinetuneArgs.batch_size)
    fields.setdefault("precision", server_precision())
    fields.setdefault("checkpoint", base_name)
    return FinetuneArgs(
        data=source or "upload",
        eval_every=eval_every_for(-(-n_train // batch), evals),
        eval_sample=EVAL_SAMPLE,
        name=f"{base_name}-{stem}",
        threads=threads,
        **fields,
    )


MAX_MEASURED = 64  # kinds of run whose speed the server remembers (the oldest forgotten first)
_measured: OrderedDict[tuple, float] = OrderedDict()  # speed_key -> training examples a second
_measured_lock = threading.Lock()


def speed_key(checkpoint: str, batch: int, max_length: int, freeze_layers: int, freeze_embeddings: bool) -> tuple:
    """What a run's training speed depends on: the base model and the settings that set its work a step."""
    return (checkpoint, int(batch), int(max_length), int(freeze_layers), bool(freeze_embeddings))


def record_speed(key: tuple, examples_per_s: float) -> None:
    """A finished run's measured training speed, for the next run like it on this server."""
    if not examples_per_s > 0:
        return
    with _measured_lock:
        _measured[key] = float(examples_per_s)
        _measured.move_to_end(key)
        while len(_measured) > MAX_MEASURED:
            _measured.popitem(last=False)


def measured_speed(key: tuple) -> float | None:
    with _measured_lock:
        return _measured.get(key)


def training_time_line(key: tuple, n_train: int, epochs: int) -> str:
    """One line on how long these settings' training steps take, from the speed this server last
    measured on a run like it; before any such run, where the time will be shown instead."""
    speed = measured_speed(key)
    if speed is None:
        return (
            "No run like this one has finished on this server yet, so no time is promised: "
            "the progress bar shows the time left once it runs."
        )
    return (
        f"The last run like this one on this server trained {speed:.1f} texts a second: {n_train:,} texts × "
        f"{epochs} epoch{'s' if epochs != 1 else ''} is about {fmt_seconds(n_train * epochs / speed)} of "
        "training steps, plus the checks on the validation texts (more when other runs share the server)."
    )
