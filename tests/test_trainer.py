"""The one training loop (bert/train/trainer.py) on a toy kind: a line fitted by SGD."""

from __future__ import annotations

import threading

import pytest
import torch

from bert.train.events import Error, Event
from bert.train.trainer import Step, Trainer, TrainingKind, linear_schedule


class Line(TrainingKind):
    """y = 3x fitted by one weight; the step event is the loss, the evaluation the weight."""

    def __init__(self, n: int = 8, bad_at: int | None = None, stop_at: int | None = None, stop=None):
        self.w = torch.nn.Parameter(torch.zeros(1))
        self.n, self.bad_at, self.stop_at, self.stop = n, bad_at, stop_at, stop
        self.seen: list[Step] = []

    def batches(self):
        for i in range(self.n):
            yield torch.full((4,), float(i + 1))

    def loss(self, x):
        y = x * self.w
        loss = ((y - 3 * x) ** 2).mean()
        if self.bad_at is not None and len(self.seen) + 1 == self.bad_at:
            loss = loss * float("nan")
        return loss, y

    def diverged(self, what, value, step):
        return f"{what} {value} at {step}"

    def stepped(self, s):
        self.seen.append(s)

    def step_event(self, s):
        return Event() if s.step % 2 == 0 else None

    def eval_due(self, step):
        return step == self.stop_at or step % 4 == 0

    def evaluate(self, s):
        if s.step == self.stop_at:
            self.stop.set()
            return None  # Stop came while it scored
        return Error(message=f"w={float(self.w.detach()):.3f}", step=s.step)


def _trainer(kind, **kw):
    opt = torch.optim.SGD([kind.w], lr=0.01)
    return Trainer(opt, [kind.w], **kw)


def test_each_step_runs_the_schedule_clips_and_reports_what_is_due():
    kind = Line()
    t = _trainer(kind, clip=0.5, schedule=linear_schedule(0.01, warmup=2, total=8), max_steps=8, log_every=2)
    events = list(t.run(kind))
    assert [s.step for s in kind.seen] == list(range(1, 9)) and t.step == 8 and not t.stopped
    assert [s.lr for s in kind.seen[:3]] == [0.005, 0.01, 0.01]  # warm-up, then decay from step 2
    assert all(float(s.grad_norm) > 0.5 for s in kind.seen[:2])  # norms before clipping
    # every step was clipped to 0.5: w moved by lr * 0.5 each time
    assert float(kind.w.detach()) == pytest.approx(sum(s.lr * 0.5 for s in kind.seen))
    names = [e.message.split("=")[0] if isinstance(e, Error) else "step" for e in events]
    assert names == ["step", "step", "w", "step", "step", "w"]


def test_a_loss_that_is_not_finite_ends_the_run_with_the_kinds_message_and_no_update():
    kind = Line(bad_at=3)
    t = _trainer(kind, max_steps=8)
    events = list(t.run(kind))
    assert t.step == 2 and t.error == "loss nan at 3"
    assert isinstance(events[-1], Error) and events[-1].step == 2 and events[-1].message == t.error


def test_stop_before_a_batch_or_during_an_evaluation_ends_the_run():
    stop = threading.Event()
    stop.set()
    kind = Line()
    t = _trainer(kind, stop=stop)
    assert list(t.run(kind)) == [] and t.stopped and t.step == 0
    stop = threading.Event()
    kind = Line(stop_at=3, stop=stop)
    t = _trainer(kind, stop=stop)
    list(t.run(kind))
    assert t.stopped and t.step == 3


def test_the_kind_edits_the_gradients_and_may_end_the_run():
    class Frozen(Line):
        def edit_grads(self):
            self.w.grad.zero_()

        def after_step(self, s):
            return s.step == 5

    kind = Frozen()
    t = _trainer(kind)
    list(t.run(kind))
    assert float(kind.w.detach()) == 0.0 and t.step == 5 and t.ended and not t.stopped
