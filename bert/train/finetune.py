"""Fine-tuning a sequence classifier, as a generator of events (bert/train/events.py, like bert/train/pretrain.py).

    base = bert.load("all-minilm-l6-v2")             # never modified: it may be a shared, cached model
    train, valid = stratified_split(read_labelled_file("reviews.csv"))
    for e in finetune(base, train, valid, FinetuneArgs(data="reviews.csv")):
        print(e)    # FinetuneStart, FinetuneStep(step=1, loss=...), ..., FinetuneEval(...),
                    # FinetuneDone(bundle=...)

The encoder's weights are copied into a new BertForSequenceClassification
(bert/train/finetune_classifier.py: pooling cls/mean/max, a fresh linear head). Texts are tokenized
once; batches group texts of similar length and are padded to their longest member, rounded up
(bert/train/batching.py). AdamW with linear warm-up and decay, gradient clipping, a higher learning
rate for the new head (`lr_scales`). The best model by validation accuracy is kept: on Stop, at the
end, or when the loss stops being finite (then an Error event comes first) it is returned as a
`Bundle` in the FinetuneDone event.

One run (`FinetuneRun`, a kind of bert/train/trainer.py's Trainer), in named steps:

    setup       checks, the classifier on its device, the tokenized texts, AdamW: FinetuneStart
    batches     each epoch's batches, trained by the Trainer (FinetuneStep; Error if it diverged)
    score       validation loss and accuracy, keeping the best model: FinetuneEval
    finish      a last score where one is due, FinetuneDone with the Bundle

The settings are `FinetuneArgs` (bert/train/finetune_args.py); scoring is bert/train/finetune_eval.py;
`python -m bert finetune --data FILE ... --out DIR` is bert/train/finetune_cli.py.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path

import torch

from ..bundle import Bundle
from ..checkpoint.load import load
from ..data.labelled import LabelledData, stratified_sample
from ..dropout import thread_generator
from ..errors import TrainingError
from ..task_models import BertForSequenceClassification
from .batching import bucket_batches
from .device import resolve_device
from .events import Event, FinetuneDone, FinetuneEval, FinetuneStart, FinetuneStep
from .finetune_args import FinetuneArgs
from .finetune_classifier import INIT_LOCK, build_classifier, freeze, frozen_bottom, lr_scales, share_frozen
from .finetune_eval import FrozenStates, collate, predict, score_metrics, tokenize_texts
from .optim import adamw
from .precision import bf16_copies, call_with, nonfinite_advice, resolve_precision
from .trainer import Step, TrainingKind, linear_trainer

# ---- the entry: settings in, events out ----------------------------------------------------------


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
    step, outside the timed part (e.g. bert.train.attention_snapshots.AttentionSnapshots)."""
    threads_before = torch.get_num_threads()
    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        yield from FinetuneRun(base, train, valid, args, stop, on_step).events()
    finally:
        if args.threads:
            torch.set_num_threads(threads_before)


# ---- one run (`FinetuneRun`): the classifier it trains, then its steps -------------------------------

DIVERGED_LOSS = 100.0  # mean cross-entropy above this (p(true class) < e^-100): training diverged


def _batches(lengths: list[int], batch_size: int, seed: int) -> list[list[int]]:
    """Shuffled batches of texts of similar length (sorted within chunks of 50 batches)."""
    return bucket_batches(lengths, batch_size, seed=seed, chunk_batches=50, rng="python")


def _hurry(stop) -> bool:
    """A stop event may carry `hurry = True` (the app: nobody is left to read the score)."""
    return bool(stop is not None and getattr(stop, "hurry", False))


# ---- the run -------------------------------------------------------------------------------------


class FinetuneRun(TrainingKind):
    """The state of one run; `events()` yields its events in order."""

    def __init__(
        self,
        base: Bundle | str,
        train: LabelledData,
        valid: LabelledData,
        args: FinetuneArgs,
        stop: threading.Event | None,
        on_step: Callable[[int, BertForSequenceClassification], None] | None,
    ):
        self.t_start = time.perf_counter()
        self.base, self.train_data, self.valid_data, self.args = base, train, valid, args
        self.stop, self.on_step = stop, on_step
        # the best model by validation accuracy (on the sample, when mid-run evaluations use one);
        # "full": its (accuracy, val_loss) on every validation text, once known
        self.best = {"accuracy": -1.0, "val_loss": float("nan"), "step": 0, "state": None, "full": None}
        self.evals: list[float] = []  # seconds of each evaluation
        self.train_time, self.seen = 0.0, 0
        self.step, self.epoch, self.error, self.stopped = 0, 0, None, False
        self.loss_avg: float | None = None
        self.last_eval_step = -1

    def events(self) -> Iterator[Event]:
        yield self.setup()
        self.model.train()
        if self.on_step is not None:
            self.on_step(0, self.model)
        if self.device.type != "cpu":
            with INIT_LOCK:  # not while another run's classifier is being initialised
                torch.manual_seed(self.args.seed)  # dropout on a GPU
        a = self.args
        ends = {"stop": self.stop, "diverged": DIVERGED_LOSS, "finite_grads": True}  # what ends a run early
        trainer = linear_trainer(self, a.lr, self.warmup, self.total, clip=a.clip, log_every=a.log_every, **ends)
        with thread_generator(a.seed):  # on the CPU: this run's own, whatever runs beside it
            yield from trainer.run(self)
        self.error, self.stopped = trainer.error, trainer.stopped
        yield from self.finish()

    # ---- setup

    def setup(self) -> FinetuneStart:
        """Check the inputs; build the classifier on its device, tokenize the texts, make the
        optimizer. Returns the FinetuneStart event."""
        a = self.args
        if isinstance(self.base, (str, os.PathLike)):
            self.base = load(self.base)
        self._check()
        self.device = resolve_device(a.device)
        self.precision = resolve_precision(a.precision, self.device)
        self.model = self._new_model()
        freeze(self.model, a.freeze_embeddings, a.freeze_layers)
        share_frozen(self.model, self.base.model)
        tok = self.base.tokenizer
        self.pad_id = tok.pad_id
        self.train_seqs = tokenize_texts(tok, self.train_data.texts, a.max_length)
        self.valid_seqs = tokenize_texts(tok, self.valid_data.texts, a.max_length)
        self.train_y = torch.tensor(self.train_data.labels, dtype=torch.long)
        self.valid_y = torch.tensor(self.valid_data.labels, dtype=torch.long)
        n_valid = len(self.valid_seqs)
        self.sample = (  # the validation texts mid-run evaluations score (None: all)
            sorted(stratified_sample(self.valid_data.labels, a.eval_sample, seed=a.seed))
            if 0 < a.eval_sample < n_valid
            else None
        )
        bottom = frozen_bottom(self.model)  # the sample's states below the trained layers: kept, not rerun
        self.sample_states = FrozenStates(bottom) if self.sample is not None and bottom else None
        self.lengths = [len(s) for s in self.train_seqs]
        self.steps_per_epoch = math.ceil(len(self.train_seqs) / a.batch_size)
        self.total = self.steps_per_epoch * a.epochs
        self.warmup = int(round(a.warmup_ratio * self.total))
        bf16 = self.precision == "bf16"
        self.opt = adamw(self.model, a.lr, a.weight_decay, lr_scales(self.model, a), fused=bf16)
        self.frozen = bf16_copies(self.model, frozen_only=True) if bf16 else {}  # frozen layers, cast once
        trainable = sum(p.numel() for p in self.model.parameters() if p.requires_grad)
        return FinetuneStart(
            steps=self.total,
            steps_per_epoch=self.steps_per_epoch,
            train_examples=len(self.train_data),
            valid_examples=len(self.valid_data),
            classes=list(self.train_data.classes),
            parameters=sum(p.numel() for p in self.model.parameters()),
            trainable=trainable,
            truncated=sum(1 for n in self.lengths if n >= a.max_length),
            prep_seconds=time.perf_counter() - self.t_start,
            precision=self.precision,
        )

    def _check(self) -> None:
        train, valid, config = self.train_data, self.valid_data, self.base.config
        self.args.check(config.max_tokens, config.num_hidden_layers)
        if len(train) == 0 or len(valid) == 0:
            raise TrainingError("need at least one training and one validation text")
        if list(train.classes) != list(valid.classes):
            raise TrainingError(f"training classes {train.classes} and validation classes {valid.classes} differ")
        if len(set(train.labels)) < 2:
            raise TrainingError("the training data has only one class")

    def _new_model(self) -> BertForSequenceClassification:
        a = self.args
        model = build_classifier(self.base, self.train_data.classes, a.pooling, a.dropout, a.seed, a.encoder_dropout)
        return model.to(self.device)

    # ---- training

    def batches(self) -> Iterator[list[int]]:
        """Each epoch's batches of text indices (texts of similar length together)."""
        for epoch in range(self.args.epochs):
            self.epoch = epoch
            yield from _batches(self.lengths, self.args.batch_size, self.args.seed * 1000 + epoch)

    def loss(self, batch: list[int]):
        ids, mask = collate([self.train_seqs[i] for i in batch], self.pad_id, self.args.max_length)
        device = self.device
        out = call_with(
            self.model,
            self.frozen,
            ids.to(device),
            attention_mask=mask.to(device),
            labels=self.train_y[batch].to(device),
        )
        return out.loss, out

    def diverged(self, what: str, value: float, step: int) -> str:
        """The message of a loss or gradient norm that is not finite: the last good model is kept."""
        became = f"the {what} became {value:.4g} at step {step} (it diverged)"
        if what != "loss":
            became = f"the {what} became {value} at step {step}"
        return (
            f"{became}: the learning rate {self.args.lr:g} is too high. Training stopped; the last good "
            f"model is kept." + nonfinite_advice(self.precision)
        )

    def stepped(self, s: Step) -> None:
        self.step, self.train_time = s.step, s.train_seconds
        self.seen += len(s.batch)
        if self.on_step is not None:
            self.on_step(self.step, self.model)
        value = s.loss.item()
        self.loss_avg = value if self.loss_avg is None else 0.9 * self.loss_avg + 0.1 * value

    def step_event(self, s: Step) -> FinetuneStep:
        return self._train_event(s.loss.item(), s.lr, s.grad_norm)

    def eval_due(self, step: int) -> bool:
        """At each epoch's end, and every eval_every steps."""
        every = self.args.eval_every
        return step % self.steps_per_epoch == 0 or bool(every and step % every == 0)

    def evaluate(self, s: Step) -> FinetuneEval | None:
        """A scheduled evaluation (Stop may interrupt it: None); the last one scores every text."""
        return self.score(interruptible=True, full=s.step == self.total)

    def _train_event(self, value: float, lr: float, gnorm: torch.Tensor) -> FinetuneStep:
        a, step, total = self.args, self.step, self.total
        per_step = self.train_time / step
        evals_left = ((total - step) // a.eval_every if a.eval_every else 0) + (a.epochs - self.epoch)
        eta = (total - step) * per_step + evals_left * (
            self.evals[-1] if self.evals else per_step * len(self.valid_data) / (3 * a.batch_size)
        )
        return FinetuneStep(
            step=step,
            epoch=self.epoch,
            loss=value,
            loss_smooth=self.loss_avg,
            lr=lr,
            grad_norm=float(gnorm),
            examples_per_s=self.seen / max(self.train_time, 1e-9),
            progress=step / total,
            eta_s=eta,
        )

    # ---- evaluation

    def score(self, interruptible: bool, full: bool = True) -> FinetuneEval | None:
        """Score the model on the validation texts (only the sample, if there is one and not
        `full`) and keep its trainable weights if it is the best so far: the FinetuneEval, or None
        when `interruptible` and Stop came meanwhile."""
        t = time.perf_counter()
        part = None if full or self.sample is None else self.sample
        seqs = self.valid_seqs if part is None else [self.valid_seqs[i] for i in part]
        stop = self.stop if interruptible else None
        logits = predict(
            self.model,
            seqs,
            self.pad_id,
            stop=stop,
            precision=self.precision,
            max_length=self.args.max_length,
            frozen=None if part is None else self.sample_states,
        )
        if logits is None:
            return None
        m = score_metrics(logits, self.valid_y if part is None else self.valid_y[part])
        # the best is chosen on one measure: the sample's, when there is one
        pick = (
            m
            if self.sample is None or part is not None
            else score_metrics(logits[self.sample], self.valid_y[self.sample])
        )
        self.evals.append(time.perf_counter() - t)
        self.last_eval_step = self.step
        if pick["accuracy"] > self.best["accuracy"] and math.isfinite(pick["val_loss"]):
            self.best.update(
                accuracy=pick["accuracy"],
                val_loss=pick["val_loss"],
                step=self.step,
                full=(m["accuracy"], m["val_loss"], logits) if part is None else None,
                state={k: v.detach().clone() for k, v in self.model.named_parameters() if v.requires_grad},
            )  # frozen ones never change
        return FinetuneEval(
            step=self.step,
            epoch=self.epoch,
            **m,
            best_accuracy=self.best["accuracy"],
            eval_seconds=self.evals[-1],
            texts=None if part is None else len(part),
        )

    # ---- the end

    def finish(self) -> Iterator[Event]:
        """An Error if training diverged, a last FinetuneEval where one is due, and FinetuneDone
        with the best model (moved to the CPU) as a Bundle."""
        kept = self.best["state"] is not None
        self.sample_states = None  # no mid-run evaluation is left
        if self.error is not None:  # the trainer's Error came first
            if not kept:
                # Nothing evaluated before it diverged: the last good model is the one we started from.
                self.model = self._new_model()
                yield self.score(interruptible=False)
        elif self.step != self.last_eval_step and not (self.stopped and kept) and not _hurry(self.stop):
            # Failed since the last evaluation, or stopped before any: score the current model.
            # (Stopped after an evaluation: keep the best so far and end at once. Stopped in a hurry,
            # e.g. its user's tab was closed: keep the current model unscored, and end at once.)
            yield self.score(interruptible=False)
        if self.best["state"] is not None:
            self.model.load_state_dict(self.best["state"], strict=False)  # the trainable part of the best
            if self.best["full"] is None and not _hurry(self.stop):
                # chosen on the sample: its accuracy on every validation text, for the result
                logits = predict(
                    self.model, self.valid_seqs, self.pad_id, precision=self.precision, max_length=self.args.max_length
                )
                full = score_metrics(logits, self.valid_y)
                self.best["full"] = (full["accuracy"], full["val_loss"], logits)
        self.model.eval()
        self.opt.zero_grad(set_to_none=True)  # the kept model carries no gradients: they are as large as its weights
        yield self._done_event()

    def _best_full(self) -> tuple[float, float]:
        """(accuracy, val_loss) of the kept model on every validation text; on the sample when the
        run ended in a hurry before it could be scored in full; nan when never scored."""
        if self.best["state"] is None:
            return float("nan"), float("nan")
        full = self.best["full"]
        return (full[0], full[1]) if full else (self.best["accuracy"], self.best["val_loss"])

    def _done_event(self) -> FinetuneDone:
        a, train, valid, base = self.args, self.train_data, self.valid_data, self.base
        result = FinetuneDone(
            step=self.step,
            steps=self.total,
            best_step=self.best["step"],
            stopped=self.stopped,
            error=self.error,
            accuracy=self._best_full()[0],
            val_loss=self._best_full()[1],
            seconds=time.perf_counter() - self.t_start,
            train_seconds=self.train_time,
            examples_per_s=self.seen / max(self.train_time, 1e-9),
            train_examples=len(train),
            valid_examples=len(valid),
            classes=list(train.classes),
        )
        if self.best["state"] is not None and self.best["full"]:
            result.valid_logits = self.best["full"][2]
        data_name = Path(str(train.source or a.data)).stem.replace("builtin:", "") or "data"
        name = a.name or f"{base.name}-{data_name}"
        card = _card(base, train, valid, a, result, name, self.device, self.precision)
        result.bundle = Bundle(
            model=self.model.to("cpu"),
            tokenizer=base.tokenizer,
            name=name,
            card=card,
            source=f"fine-tuned from {base.name}",
            notes=[],
        )
        return result


def _card(
    base: Bundle,
    train: LabelledData,
    valid: LabelledData,
    args: FinetuneArgs,
    result: FinetuneDone,
    name: str,
    device: torch.device,
    precision: str,
) -> str:
    settings = {
        k: v
        for k, v in asdict(args).items()
        if k not in ("data", "val_data", "out", "name", "threads", "text_col", "label_col", "device", "precision")
    }
    counts = ", ".join(f"{c} {n:,}" for c, n in train.class_counts.items())
    where = f" on {device.type} in {precision}" + (" (autocast, fp32 weights)" if precision == "bf16" else "")
    lines = [
        f"# {name}",
        "",
        f"A {len(train.classes)}-class text classifier fine-tuned by BERT Explorer from "
        f"**{base.name}** ({base.source or 'built-in'}).",
        "",
        f"- Data: {train.source or args.data} (text column `{train.text_col}`, label column "
        f"`{train.label_col}`): {len(train):,} training texts ({counts}).",
        f"- Validation: {valid.source or args.val_data or 'split'}, {len(valid):,} texts"
        + (f" ({valid.notes[-1]})" if valid.notes else "")
        + ".",
        f"- Classes (output order): {', '.join(train.classes)}.",
        (
            f"- Validation accuracy: **{result.accuracy:.4f}** (loss {result.val_loss:.4f}) "
            f"at step {result.best_step} of {result.steps}"
            if math.isfinite(result.accuracy)
            else f"- Validation accuracy: not measured (stopped at step {result.step} of {result.steps}, "
            f"before its first evaluation)"
        )
        + (" (stopped early)" if result.stopped else "")
        + ".",
        f"- Training: {result.train_seconds:.0f} s, {result.examples_per_s:.1f} examples/s{where}.",
        "- Settings: " + ", ".join(f"{k}={v}" for k, v in settings.items()) + ".",
    ]
    if result.error:
        lines.append(f"- Stopped by an error: {result.error}")
    lines += ["", "Licence: that of the base model and of the data.", ""]
    return "\n".join(lines)
