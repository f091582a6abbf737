"""`python -m bert finetune --data FILE ... --out DIR`: read the labelled data (a file or "builtin:<name>"),
fine-tune (bert/train/finetune.py), save the best model."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import torch

from ..checkpoint.load import load, save
from ..data.labelled import LabelledData, read_labelled_file, stratified_sample, stratified_split
from ..errors import DataError
from .device import resolve_device
from .events import Error, Event, FinetuneDone, FinetuneEval
from .finetune import finetune
from .finetune_args import FinetuneArgs


def load_labelled(
    source: str, args: FinetuneArgs, classes: list[str] | None = None, min_per_class: int = 2
) -> LabelledData:
    """A file path or "builtin:<name>"."""
    if source.startswith("builtin:"):
        from ..data.datasets import load_dataset

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
