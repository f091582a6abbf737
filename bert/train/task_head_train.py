"""Fine-tuning a per-token head (a tagger or a reader) as a generator of events (bert/train/events.py:
TaskHeadStart, TaskHeadStep, TaskHeadEval, Error, TaskHeadDone with the kept model as a Bundle).

    for e in train_task_head(bert.load("minilm-l6"), TaggerTask(train, valid, args), args):
        print(e)

The encoder's weights are copied into a new model of the head's class (bert/task_models.py; the base
bundle is never changed); the head learns `head_lr_scale` times faster. AdamW with linear warm-up and
decay, gradient clipping; batches of inputs of similar length. The task (bert/train/tagger_task.py,
bert/train/reader_task.py) makes the inputs and scores the model; `args.evals` evaluations an epoch,
the best model by the task's `primary` score kept and returned, also on Stop or when the loss stops
being finite (then an Error comes first).
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
from .events import Error, Event, TaskHeadDone, TaskHeadEval, TaskHeadStart, TaskHeadStep
from .optim import adamw, lr_at, set_lr
from .precision import autocast, nonfinite_advice, resolve_precision
from .task_head_args import TaskHeadArgs

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
    t0 = time.perf_counter()
    args.check(base.config.max_tokens)
    device = resolve_device(args.device)
    precision = resolve_precision(args.precision, device)
    model = new_task_head_model(base, args.head, task.labels, args.seed).to(device)
    if args.freeze_embeddings:
        for p in model.bert.embeddings.parameters():
            p.requires_grad_(False)
    tok = base.tokenizer
    items = task.inputs(tok)
    scales = {TASK_HEADS[args.head].weights + ".": args.head_lr_scale}
    opt = adamw(model, args.lr, args.weight_decay, scales, fused=precision == "bf16")
    per_epoch = math.ceil(len(items) / args.batch_size)
    total = per_epoch * args.epochs
    warmup = int(round(args.warmup_ratio * total))
    eval_at = {min(per_epoch, math.ceil(per_epoch * (k + 1) / args.evals)) for k in range(args.evals)}
    yield TaskHeadStart(
        head=args.head,
        steps=total,
        train_examples=task.train_examples,
        train_inputs=len(items),
        valid_examples=task.valid_examples,
        labels=list(task.labels),
        parameters=sum(p.numel() for p in model.parameters()),
        trainable=sum(p.numel() for p in model.parameters() if p.requires_grad),
        prep_seconds=time.perf_counter() - t0,
        precision=precision,
    )
    view = Bundle(model=model, tokenizer=tok, name=args.name or f"{base.name}-{args.head}")
    best = {"score": -1.0, "step": 0, "state": None, "scores": {}, "report": {}}
    step, seen, train_time, smooth, error, stopped, last_eval = 0, 0, 0.0, None, None, False, -1
    for epoch in range(args.epochs):
        for batch in bucket_batches([len(x["input_ids"]) for x in items], args.batch_size, args.seed * 1000 + epoch):
            if stop.is_set():
                stopped = True
                break
            t = time.perf_counter()
            model.train()
            lr = lr_at(step, args.lr, warmup, total)
            set_lr(opt, lr)
            inputs = {k: v.to(device) for k, v in task.batch([items[i] for i in batch], tok.pad_id).items()}
            with autocast(device, precision):
                loss = model(**inputs).loss
            if not torch.isfinite(loss) or loss.item() > DIVERGED_LOSS:
                error = f"the loss became {loss.item():.4g} at step {step + 1}: the learning rate is too high"
                break
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
            opt.step()
            step, seen = step + 1, seen + len(batch)
            train_time += time.perf_counter() - t
            smooth = loss.item() if smooth is None else 0.9 * smooth + 0.1 * loss.item()
            per_step = train_time / step
            yield TaskHeadStep(
                step=step,
                epoch=epoch,
                loss=loss.item(),
                loss_smooth=smooth,
                lr=lr,
                progress=step / total,
                eta_s=(total - step) * per_step,
                examples_per_s=seen / max(train_time, 1e-9),
            )
            if step - epoch * per_epoch in eval_at:
                event = _evaluate(task, view, stop, step, epoch, best, precision)
                if event is None:
                    stopped = True
                    break
                last_eval = step
                yield event
        if stopped or error:
            break
    if error:
        yield Error(message=error + "; the best model so far is kept." + nonfinite_advice(precision), step=step)
        if best["state"] is None:  # nothing scored before it diverged: back to the model it started from
            model.load_state_dict(new_task_head_model(base, args.head, task.labels, args.seed).state_dict())
    if (best["state"] is None and not stopped) or (step != last_eval and not stopped and not error):
        # never scored, or trained past its last scoring: score it now, unless Stop comes meanwhile
        # (stopped, a run keeps its best model, or the current one unscored: Stop ends it at once)
        event = _evaluate(task, view, stop, step, args.epochs - 1, best, precision)
        if event is None:
            stopped = True
        else:
            yield event
    if best["state"] is not None:
        model.load_state_dict(best["state"], strict=False)
    model.eval()
    model.to("cpu")
    opt.zero_grad(set_to_none=True)
    seconds = time.perf_counter() - t0
    done = TaskHeadDone(
        stopped=stopped,
        step=step,
        steps=total,
        best_step=best["step"],
        error=error,
        scores=best["scores"],
        seconds=seconds,
        train_seconds=train_time,
        report=best["report"],
    )
    view.card = _card(view.name, base, task, args, done, precision)
    view.source = f"fine-tuned from {base.name}"
    done.bundle = view
    yield done


def _evaluate(task: Task, view: Bundle, stop, step: int, epoch: int, best: dict, precision: str) -> TaskHeadEval | None:
    """Score the model in `precision`; keep its trainable weights when it is the best so far. None: Stop
    came meanwhile."""
    t = time.perf_counter()
    scored = task.evaluate(view, stop, precision)
    if scored is None:
        return None
    scores, val_loss, report = scored
    value = scores.get(task.primary) or 0.0
    if value > best["score"] or best["state"] is None:
        state = {k: v.detach().clone() for k, v in view.model.named_parameters() if v.requires_grad}
        best.update(score=value, step=step, state=state, scores=scores, report=report)
    return TaskHeadEval(
        step=step,
        epoch=epoch,
        val_loss=val_loss,
        scores=scores,
        best=best["score"],
        eval_seconds=time.perf_counter() - t,
    )


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
