"""One training loop for every kind of training (after minGPT's trainer): it knows nothing of the model.

    trainer = Trainer(opt, model.parameters(), device=device, precision="bf16", clip=1.0,
                      schedule=linear_schedule(1e-3, warmup=10, total=100), max_steps=100, stop=stop)
    yield from trainer.run(kind)    # the kind's events, in order; then trainer.step / .stopped / .error

The loop, for each of the kind's batches: Stop (asked before each batch; none after `max_steps`),
the learning rate of this step (`schedule`), the kind's forward and loss under the job's precision
(bert/train/precision.py: autocast, the parameters stay fp32 master weights), a loss that is not
finite (or above `diverged`) ends the run with an Error event, backward, the kind's edit of the
gradients, clipping to `clip` (a gradient norm that is not finite ends the run too), the
optimizer's step; then the kind's record of the step, its step event every `log_every` steps and at
the last, its evaluation when `eval_due` (None from it: Stop came while it scored, the run ends at
the next batch), and `after_step` (True: the kind ends the run).

A kind (`TrainingKind`) supplies its batches, its loss and its evaluation; the optimizer (e.g.
bert.train.optim.adamw, fused under bf16) and the model are the kind's.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from .events import Error, Event
from .optim import lr_at, set_lr
from .precision import autocast


@dataclass
class Step:
    """One optimizer step, as the kind's hooks see it."""

    step: int  # optimizer steps done, this one included
    batch: Any
    loss: Tensor  # this step's loss (its graph freed)
    out: Any  # what the kind's forward returned beside the loss
    lr: float | None  # the learning rate of this step (None: no schedule)
    grad_norm: Tensor | None  # before clipping (None: no clipping)
    train_seconds: float  # training time so far, this step included (hooks and evaluations not counted)


class TrainingKind:
    """What one kind of training gives the Trainer; every hook but `batches` and `loss` is optional."""

    def batches(self) -> Iterable[Any]:
        raise NotImplementedError

    def loss(self, batch: Any) -> tuple[Tensor, Any]:
        """The forward (run under the trainer's autocast): (the loss to minimise, the output)."""
        raise NotImplementedError

    def diverged(self, what: str, value: float, step: int) -> str:
        """The Error's message when the `what` ("loss" or "gradients") became `value` at step `step`
        (1-based); raise instead to end the run with an exception."""
        return f"the {what} became {value:.4g} at step {step}: training stopped"

    def edit_grads(self) -> None:
        """Between backward and clipping: change the gradients (e.g. a constraint's projection)."""

    def stepped(self, s: Step) -> None:
        """After each update: what the kind keeps of the step (sums, callbacks)."""

    def step_event(self, s: Step) -> Event | None:
        """The step event, every `log_every` steps and at the last."""
        return None

    def eval_due(self, step: int) -> bool:
        return False

    def evaluate(self, s: Step) -> Event | None:
        """The evaluation's event; None when Stop came while it scored."""
        return None

    def after_step(self, s: Step) -> bool:
        """Last after each step (e.g. checkpoints); True ends the run."""
        return False


def linear_schedule(base_lr: float, warmup: int, total: int):
    """Linear warm-up to `base_lr`, then linear decay to 0 at `total` steps: step -> learning rate."""
    return functools.partial(lr_at, base_lr=base_lr, warmup=warmup, total=total)


def linear_trainer(kind: TrainingKind, lr: float, warmup: int, total: int, **settings) -> Trainer:
    """The usual Trainer of a kind that holds `opt`, `model`, `device` and `precision`: its optimizer
    on its model's parameters, linear warm-up and decay (`linear_schedule`) over `total` steps, the
    run's last; `settings` are the Trainer's others (clip, log_every, stop...)."""
    return Trainer(
        kind.opt,
        kind.model.parameters(),
        device=kind.device,
        precision=kind.precision,
        schedule=linear_schedule(lr, warmup, total),
        max_steps=total,
        **settings,
    )


class Trainer:
    """The loop (see the module). `params` are what `clip` clips; `diverged` the loss above which a
    step has diverged (None: no check, and no wait for the loss's value); `finite_grads`: a gradient
    norm that is not finite ends the run too; `step` the steps already done (a resumed run); `stop`
    anything with `is_set()`. After `run`: `step`, `train_seconds`, `stopped` (Stop asked, or it
    came during an evaluation), `error` (the Error's message) and `ended` (the kind ended it)."""

    def __init__(
        self,
        optimizer: torch.optim.Optimizer,
        params: Iterable[Tensor],
        *,
        device: torch.device | None = None,
        precision: str = "fp32",
        clip: float | None = None,
        schedule=None,
        max_steps: int | None = None,
        log_every: int = 1,
        stop=None,
        diverged: float | None = math.inf,
        finite_grads: bool = False,
        step: int = 0,
    ):
        self.opt, self.params = optimizer, list(params)
        self.device, self.precision = device or torch.device("cpu"), precision
        self.clip, self.schedule, self.max_steps, self.log_every = clip, schedule, max_steps, log_every
        self.stop, self.diverged, self.finite_grads = stop, diverged, finite_grads
        self.step, self.train_seconds = step, 0.0
        self.stopped, self.ended, self.error = False, False, None

    def run(self, kind: TrainingKind) -> Iterator[Event]:
        """Train on `kind`'s batches until they end, `max_steps`, Stop, an Error or the kind says."""
        for batch in kind.batches():
            if self.max_steps is not None and self.step >= self.max_steps:
                return
            if self.stop is not None and self.stop.is_set():
                self.stopped = True
                return
            s = self.update(kind, batch)
            if s is None:
                yield Error(message=self.error, step=self.step)
                return
            yield from self._after(kind, s)
            if self.ended:
                return

    def update(self, kind: TrainingKind, batch: Any) -> Step | None:
        """One optimizer step on `batch`; None (and `error` set) when the loss or the gradients are
        not finite: then nothing is updated."""
        t = time.perf_counter()
        lr = None if self.schedule is None else self.schedule(self.step)
        if lr is not None:
            set_lr(self.opt, lr)
        with torch.enable_grad():
            with autocast(self.device, self.precision):
                loss, out = kind.loss(batch)
            if self.diverged is not None and not self._finite(kind, "loss", loss.item(), self.diverged):
                return None
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
        kind.edit_grads()
        gnorm = None if self.clip is None else torch.nn.utils.clip_grad_norm_(self.params, self.clip)
        if self.finite_grads and gnorm is not None and not self._finite(kind, "gradients", gnorm.item(), math.inf):
            return None
        self.opt.step()
        self.step += 1
        self.train_seconds += time.perf_counter() - t
        return Step(self.step, batch, loss, out, lr, gnorm, self.train_seconds)

    def _finite(self, kind: TrainingKind, what: str, value: float, limit: float) -> bool:
        if math.isfinite(value) and value <= limit:
            return True
        self.error = kind.diverged(what, value, self.step + 1)
        return False

    def _after(self, kind: TrainingKind, s: Step) -> Iterator[Event]:
        """The kind's record of step `s`, its step event and evaluation when due, its `after_step`."""
        kind.stepped(s)
        if s.step % self.log_every == 0 or s.step == self.max_steps:
            if (event := kind.step_event(s)) is not None:
                yield event
        if kind.eval_due(s.step):
            event = kind.evaluate(s)
            if event is None:
                self.stopped = True  # Stop came meanwhile: the next batch's check ends the run
            else:
                yield event
        self.ended = kind.after_step(s)
