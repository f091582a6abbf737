"""Fine-tuning a per-token head (a tagger or a reader) as a generator of events (bert/train/events.py:
TaskHeadStart, TaskHeadStep, TaskHeadEval, Error, TaskHeadDone with the kept model as a Bundle).

    for e in train_task_head(bert.load("minilm-l6"), TaggerTask(train, valid, args), args):
        print(e)

The encoder's weights are copied into a new model of the head's class (bert/task_models.py; the base
bundle is never changed); the head learns `head_lr_scale` times faster. AdamW with linear warm-up and
decay, gradient clipping (bert/train/trainer.py's loop); batches of inputs of similar length. The task
(bert/train/tagger_task.py, bert/train/reader_task.py) makes the inputs and scores the model;
`args.evals` evaluations an epoch, the best model by the task's `primary` score kept and returned,
also on Stop or when the loss stops being finite (then an Error comes first).
"""

from __future__ import annotations

import copy
import math
import threading
import time
from collections.abc import Iterator
from typing import Protocol

import torch

from ..bundle import Bundle
from ..dropout import thread_generator
from ..task_heads import TASK_HEADS
from ..task_models import MODEL_CLASSES
from .batching import bucket_batches
from .device import resolve_device
from .events import Event, TaskHeadDone, TaskHeadEval, TaskHeadStart, TaskHeadStep
from .optim import adamw
from .precision import nonfinite_advice, resolve_precision
from .task_head_args import TaskHeadArgs
from .trainer import Step, TrainingKind, linear_trainer

DIVERGED_LOSS = 100.0
_INIT_LOCK = threading.Lock()  # new heads are initialised one at a time (torch's global seed)


class Task(Protocol):
    """What a head's task gives the loop."""

    head: str
    labels: list[str]  # a tagger's tags; [] for a reader
    primary: str  # the score that picks the kept model
    train_examples: int
    valid_examples: int

    def inputs(self, tokenizer) -> list[dict[str, list[int] | int]]: ...  # training inputs: ids, types, targets

    def batch(self, items: list[dict], pad_id: int) -> dict[str, torch.Tensor]: ...

    def evaluate(
        self, bundle: Bundle, stop, precision: str = "fp32"
    ) -> tuple[dict[str, float | None], float, dict] | None: ...  # scored in `precision`

    def card(self) -> list[str]: ...  # lines on the data, for the model card


def new_task_head_model(base: Bundle, head: str, labels: list[str], seed: int = 0):
    """A model of `head` whose encoder is a copy of `base`'s (labels: a tagger's tags)."""
    config = copy.deepcopy(base.model.config)
    config.id2label = {i: str(t) for i, t in enumerate(labels)}
    config.extra = {
        k: v for k, v in config.extra.items() if k not in ("architecture", "architectures", "label2id", "num_labels")
    }
    with _INIT_LOCK, torch.random.fork_rng():
        torch.manual_seed(seed)
        model = MODEL_CLASSES[head](config)
    model.bert.load_state_dict({k: v.detach().clone() for k, v in base.model.bert.state_dict().items()})
    return model


def train_task_head(
    base: Bundle, task: Task, args: TaskHeadArgs, stop: threading.Event | None = None
) -> Iterator[Event]:
    """The run's events (see the module); torch threads set to args.threads meanwhile."""
    before = torch.get_num_threads()
    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        with thread_generator(args.seed):
            yield from _run(base, task, args, stop or threading.Event())
    finally:
        if args.threads:
            torch.set_num_threads(before)


def _run(base: Bundle, task: Task, args: TaskHeadArgs, stop: threading.Event) -> Iterator[Event]:
    run = _HeadRun(base, task, args, stop)
    yield run.setup()
    trainer = linear_trainer(run, args.lr, run.warmup, run.total, clip=args.clip, stop=stop, diverged=DIVERGED_LOSS)
    yield from trainer.run(run)
    yield from run.finish(trainer.stopped)


class _HeadRun(TrainingKind):
    """One run of `train_task_head`: `setup` (TaskHeadStart), the Trainer's steps, `finish` (TaskHeadDone)."""

    def __init__(self, base: Bundle, task: Task, args: TaskHeadArgs, stop: threading.Event):
        self.t0 = time.perf_counter()
        self.base, self.task, self.args, self.stop = base, task, args, stop
        self.best = {"score": -1.0, "step": 0, "state": None, "scores": {}, "report": {}}
        self.step, self.epoch, self.seen, self.train_time, self.smooth = 0, 0, 0, 0.0, None
        self.error, self.last_eval = None, -1

    def setup(self) -> TaskHeadStart:
        """Check the settings; the model on its device, the inputs, AdamW: the TaskHeadStart."""
        args, task, base = self.args, self.task, self.base
        args.check(base.config.max_tokens)
        self.device = resolve_device(args.device)
        self.precision = resolve_precision(args.precision, self.device)
        self.model = model = new_task_head_model(base, args.head, task.labels, args.seed).to(self.device)
        if args.freeze_embeddings:
            for p in model.bert.embeddings.parameters():
                p.requires_grad_(False)
        self.items = task.inputs(base.tokenizer)
        scales = {TASK_HEADS[args.head].weights + ".": args.head_lr_scale}
        self.opt = adamw(model, args.lr, args.weight_decay, scales, fused=self.precision == "bf16")
        self.per_epoch = math.ceil(len(self.items) / args.batch_size)
        self.total = self.per_epoch * args.epochs
        self.warmup = int(round(args.warmup_ratio * self.total))
        self.eval_at = {
            min(self.per_epoch, math.ceil(self.per_epoch * (k + 1) / args.evals)) for k in range(args.evals)
        }
        self.view = Bundle(model=model, tokenizer=base.tokenizer, name=args.name or f"{base.name}-{args.head}")
        return TaskHeadStart(
            head=args.head,
            steps=self.total,
            train_examples=task.train_examples,
            train_inputs=len(self.items),
            valid_examples=task.valid_examples,
            labels=list(task.labels),
            parameters=sum(p.numel() for p in model.parameters()),
            trainable=sum(p.numel() for p in model.parameters() if p.requires_grad),
            prep_seconds=time.perf_counter() - self.t0,
            precision=self.precision,
        )

    # ---- the Trainer's kind

    def batches(self) -> Iterator[list[int]]:
        """Each epoch's batches of input indices (inputs of similar length together)."""
        lengths = [len(x["input_ids"]) for x in self.items]
        for epoch in range(self.args.epochs):
            self.epoch = epoch
            yield from bucket_batches(lengths, self.args.batch_size, self.args.seed * 1000 + epoch)

    def loss(self, batch: list[int]):
        self.model.train()
        pad_id = self.base.tokenizer.pad_id
        inputs = {k: v.to(self.device) for k, v in self.task.batch([self.items[i] for i in batch], pad_id).items()}
        out = self.model(**inputs)
        return out.loss, out

    def diverged(self, what: str, value: float, step: int) -> str:
        self.error = f"the loss became {value:.4g} at step {step}: the learning rate is too high"
        return self.error + "; the best model so far is kept." + nonfinite_advice(self.precision)

    def stepped(self, s: Step) -> None:
        self.step, self.seen, self.train_time = s.step, self.seen + len(s.batch), s.train_seconds
        value = s.loss.item()
        self.smooth = value if self.smooth is None else 0.9 * self.smooth + 0.1 * value

    def step_event(self, s: Step) -> TaskHeadStep:
        return TaskHeadStep(
            step=s.step,
            epoch=self.epoch,
            loss=s.loss.item(),
            loss_smooth=self.smooth,
            lr=s.lr,
            progress=s.step / self.total,
            eta_s=(self.total - s.step) * self.train_time / s.step,
            examples_per_s=self.seen / max(self.train_time, 1e-9),
        )

    def eval_due(self, step: int) -> bool:
        return step - self.epoch * self.per_epoch in self.eval_at

    def evaluate(self, s: Step) -> TaskHeadEval | None:
        event = self.score(self.epoch)
        if event is not None:
            self.last_eval = s.step
        return event

    # ---- scoring and the end

    def score(self, epoch: int) -> TaskHeadEval | None:
        """Score the model in the run's precision; keep its trainable weights when it is the best so
        far. None: Stop came meanwhile."""
        t, task, best = time.perf_counter(), self.task, self.best
        scored = task.evaluate(self.view, self.stop, self.precision)
        if scored is None:
            return None
        scores, val_loss, report = scored
        value = scores.get(task.primary) or 0.0
        if value > best["score"] or best["state"] is None:
            state = {k: v.detach().clone() for k, v in self.model.named_parameters() if v.requires_grad}
            best.update(score=value, step=self.step, state=state, scores=scores, report=report)
        return TaskHeadEval(
            step=self.step,
            epoch=epoch,
            val_loss=val_loss,
            scores=scores,
            best=best["score"],
            eval_seconds=time.perf_counter() - t,
        )

    def finish(self, stopped: bool) -> Iterator[Event]:
        """A last score where one is due, the best model kept (on the CPU, in eval mode): TaskHeadDone."""
        args, best, model = self.args, self.best, self.model
        if self.error and best["state"] is None:  # nothing scored before it diverged: the model it started from
            model.load_state_dict(new_task_head_model(self.base, args.head, self.task.labels, args.seed).state_dict())
        if (best["state"] is None and not stopped) or (self.step != self.last_eval and not stopped and not self.error):
            # never scored, or trained past its last scoring: score it now, unless Stop comes meanwhile
            # (stopped, a run keeps its best model, or the current one unscored: Stop ends it at once)
            event = self.score(args.epochs - 1)
            if event is None:
                stopped = True
            else:
                yield event
        if best["state"] is not None:
            model.load_state_dict(best["state"], strict=False)
        model.eval()
        model.to("cpu")
        self.opt.zero_grad(set_to_none=True)
        done = TaskHeadDone(
            stopped=stopped,
            step=self.step,
            steps=self.total,
            best_step=best["step"],
            error=self.error,
            scores=best["scores"],
            seconds=time.perf_counter() - self.t0,
            train_seconds=self.train_time,
            report=best["report"],
        )
        self.view.card = _card(self.view.name, self.base, self.task, args, done, self.precision)
        self.view.source = f"fine-tuned from {self.base.name}"
        done.bundle = self.view
        yield done


def _card(name: str, base: Bundle, task: Task, args: TaskHeadArgs, done: TaskHeadDone, precision: str) -> str:
    scores = ", ".join(f"{k.replace('_', ' ')} {v:.3f}" for k, v in done.scores.items() if v is not None)
    return "\n".join(
        [
            f"# {name}",
            "",
            f"A BERT that learned to **{TASK_HEADS[args.head].task}** ({TASK_HEADS[args.head].shape}), fine-tuned by "
            f"BERT Explorer from **{base.name}**.",
            "",
            *[f"- {line}" for line in task.card()],
            f"- Validation: {scores or 'not measured'} (best at step {done.best_step} of {done.steps})"
            + (" (stopped early)" if done.stopped else "")
            + ".",
            f"- Training: {done.train_seconds:.0f} s in {precision}; settings: max_length {args.max_length}, batch "
            f"{args.batch_size}, learning rate {args.lr:g}, epochs {args.epochs}, seed {args.seed}.",
            "",
            "Licence: that of the base model and of the data.",
            "",
        ]
    )
