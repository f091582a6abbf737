"""Fine-tuning a sequence classifier, as a generator of events (bert/events.py, like bert/pretrain.py).

    base = bert.load("all-minilm-l6-v2")             # never modified: it may be a shared, cached model
    train, valid = stratified_split(read_labelled_file("reviews.csv"))
    for e in finetune(base, train, valid, FinetuneArgs(data="reviews.csv")):
        print(e)    # FinetuneStart, FinetuneStep(step=1, loss=...), ..., FinetuneEval(...),
                    # FinetuneDone(bundle=...)

The encoder's weights are copied into a new BertForSequenceClassification (pooling cls/mean/max,
a fresh linear head). Texts are tokenized once; batches group texts of similar length and are
padded to their longest member. AdamW with linear warm-up and decay, gradient clipping, a higher
learning rate for the new head. The best model by validation accuracy is kept: on Stop, at the
end, or when the loss stops being finite (then an Error event comes first) it is returned as a
`Bundle` in the FinetuneDone event.

The run itself, step by step, is bert/finetune_run.py; scoring is bert/finetune_eval.py.
`python -m bert finetune --data FILE ... --out DIR` runs `finetune_cli`.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import torch

from .checkpoint import Bundle, load, save
from .config import POOLINGS
from .device import DEVICES, resolve_device
from .errors import DataError, TrainingError
from .events import Error, Event, FinetuneDone, FinetuneEval
from .finetune_eval import evaluate_classifier
from .finetune_run import _FinetuneRun, build_classifier
from .labelled import DEFAULT_MAX_ROWS, LabelledData, read_labelled_file, stratified_sample, stratified_split
from .model import BertForSequenceClassification

__all__ = [
    "FinetuneArgs",
    "finetune",
    "finetune_cli",
    "evaluate_classifier",
    "build_classifier",
    "load_labelled",
    "prepare_data",
]


# The defaults are the best of the settings measured on Rotten Tomatoes (README: "Which one to
# fine-tune"); the other settings tried there were not better.
@dataclass
class FinetuneArgs:
    data: str  # a labelled file, or "builtin:rotten_tomatoes" / "builtin:tweets"
    val_data: str | None = None  # a validation file; else a stratified split of data
    text_col: str | None = None  # override the detected columns
    label_col: str | None = None
    checkpoint: str = "all-minilm-l6-v2"  # any loadable model (built-in name or folder)
    out: str | None = None  # folder for the fine-tuned model (command line)
    name: str | None = None  # display name of the result
    pooling: str = "mean"  # cls | mean | max
    freeze_embeddings: bool = True  # the word/position embeddings stay as they are (25 % faster)
    freeze_layers: int = 0  # freeze the lowest N encoder layers
    max_length: int = 64  # tokens per text, [CLS] and [SEP] included
    batch_size: int = 16
    lr: float = 2e-4  # encoder learning rate (peak)
    head_lr_scale: float = 10.0  # the new head learns this many times faster
    layer_decay: float = 1.0  # each lower layer's LR is this times the one above (LLRD)
    epochs: int = 1
    warmup_ratio: float = 0.1
    weight_decay: float = 0.01
    clip: float = 1.0  # gradient norm clipping
    dropout: float = 0.1  # before the classifier head
    encoder_dropout: float | None = None  # hidden/attention dropout in the encoder (None: the checkpoint's)
    seed: int = 0
    eval_every: int = 0  # steps between evaluations; 0: at the end of each epoch
    log_every: int = 1  # steps between "train" events
    valid_fraction: float = 0.2  # of data, when there is no val_data
    max_train: int | None = None  # use at most this many training texts (stratified)
    max_valid: int | None = None  # evaluate on at most this many texts (stratified)
    # Mid-run evaluations score a fixed stratified sample of this many validation texts (0: all),
    # so a curve can have many points cheaply; the run's last evaluation and the kept model's
    # accuracy use every validation text. The best model is chosen on the sample.
    eval_sample: int = 0
    max_rows: int = DEFAULT_MAX_ROWS  # rows read from a file at most (stratified sample)
    threads: int | None = None  # torch threads (None: torch's default)
    device: str = field(default="auto", metadata={"choices": DEVICES})  # auto: cuda, else mps, else cpu

    def check(self, max_positions: int | None = None, num_layers: int | None = None) -> None:
        """Raise TrainingError for settings that make no sense (not for ones that merely diverge)."""

        def bad(msg):
            raise TrainingError(msg)

        if self.pooling not in POOLINGS:
            bad(f"pooling must be one of {', '.join(POOLINGS)}, not {self.pooling!r}")
        if self.batch_size < 1:
            bad("the batch size must be at least 1")
        if self.epochs < 1:
            bad("train for at least one epoch")
        if not (math.isfinite(self.lr) and self.lr > 0):
            bad(f"the learning rate must be a positive number, not {self.lr}")
        if not (math.isfinite(self.head_lr_scale) and self.head_lr_scale > 0):
            bad("head_lr_scale must be positive")
        if not 0.0 < self.layer_decay <= 1.0:
            bad("layer_decay must lie in (0, 1]")
        if not 0.0 <= self.warmup_ratio < 1.0:
            bad("the warm-up ratio must lie in [0, 1)")
        if not 0.0 <= self.dropout < 1.0 or not 0.0 <= (self.encoder_dropout or 0.0) < 1.0:
            bad("dropout must lie in [0, 1)")
        if self.max_length < 3:
            bad("max_length must be at least 3 tokens ([CLS], a word, [SEP])")
        if max_positions is not None and self.max_length > max_positions:
            bad(f"max_length {self.max_length} is more than the model's {max_positions} positions")
        if self.freeze_layers < 0 or (num_layers is not None and self.freeze_layers > num_layers):
            bad(f"freeze_layers must lie between 0 and {num_layers}")
        if self.eval_every < 0 or self.log_every < 1 or self.eval_sample < 0:
            bad("eval_every and eval_sample must be >= 0 and log_every >= 1")
        resolve_device(self.device)  # an unknown name, or a device this machine lacks


# ---- training (the steps: bert/finetune_run.py) ------------------------------------------------


def finetune(
    base: Bundle | str,
    train: LabelledData,
    valid: LabelledData,
    args: FinetuneArgs,
    stop: threading.Event | None = None,
    on_step: Callable[[int, BertForSequenceClassification], None] | None = None,
) -> Iterator[Event]:
    """Fine-tune, yielding events: FinetuneStart, FinetuneStep (every log_every steps),
    FinetuneEval, maybe Error, and last FinetuneDone with the best model as a Bundle under
    `bundle`. Stopped before any evaluation, the model is scored once, unless the stop event says `hurry`.

    on_step(step, model) is called before the first update (step 0) and after each optimizer
    step, outside the timed part (e.g. bert.attention_snapshots.AttentionSnapshots)."""
    threads_before = torch.get_num_threads()
    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        yield from _FinetuneRun(base, train, valid, args, stop, on_step).events()
    finally:
        if args.threads:
            torch.set_num_threads(threads_before)


# ---- command line --------------------------------------------------------------------------------


def load_labelled(
    source: str, args: FinetuneArgs, classes: list[str] | None = None, min_per_class: int = 2
) -> LabelledData:
    """A file path or "builtin:<name>"."""
    if source.startswith("builtin:"):
        from .datasets import load_dataset

        data = load_dataset(source, max_rows=args.max_rows, seed=args.seed)
        if classes is not None and data.classes != classes:
            raise DataError(f"{source} has classes {data.classes}, the training data {classes}")
        return data
    return read_labelled_file(
        source,
        text_col=args.text_col,
        label_col=args.label_col,
        max_rows=args.max_rows,
        classes=classes,
        min_per_class=min_per_class,
        seed=args.seed,
    )


def prepare_data(args: FinetuneArgs) -> tuple[LabelledData, LabelledData]:
    """(train, valid) as the command line and the page use them."""
    data = load_labelled(args.data, args, min_per_class=1 if args.val_data else 2)
    if args.val_data:
        train = data
        valid = load_labelled(args.val_data, args, classes=data.classes, min_per_class=1)
    else:
        train, valid = stratified_split(data, args.valid_fraction, seed=args.seed)
    if args.max_train and len(train) > args.max_train:
        train = train.subset(
            stratified_sample(train.labels, args.max_train, seed=args.seed),
            notes=train.notes + [f"a stratified sample of {args.max_train:,} training texts is used"],
        )
    if args.max_valid and len(valid) > args.max_valid:
        valid = valid.subset(
            stratified_sample(valid.labels, args.max_valid, seed=args.seed + 1),
            notes=valid.notes + [f"a stratified sample of {args.max_valid:,} validation texts is used"],
        )
    return train, valid


def finetune_cli(args: FinetuneArgs) -> Iterator[Event]:
    """Read the data, fine-tune, save the best model to args.out; yield each FinetuneEval (and
    Error), and last the FinetuneDone, with where it was saved (its `bundle` dropped)."""
    t0 = time.perf_counter()
    resolve_device(args.device)  # before reading any data
    if args.threads:
        torch.set_num_threads(args.threads)
    out = Path(args.out or f"runs/finetune-{Path(args.checkpoint).name}")
    train, valid = prepare_data(args)
    base = load(args.checkpoint)
    done = None
    for e in finetune(base, train, valid, args):
        if isinstance(e, (FinetuneEval, Error)):
            yield e
        elif isinstance(e, FinetuneDone):
            done = e
    bundle = done.bundle
    save(bundle, out, card=bundle.card)
    yield replace(
        done, bundle=None, seconds=time.perf_counter() - t0, out=str(out), labels=bundle.labels, notes=train.notes
    )
