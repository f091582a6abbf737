"""What the trainers report while they run: one dataclass per kind of event.

`bert.train.pretrain.pretrain` and `bert.train.finetune.finetune` yield these. `to_dict()` is the JSON line
the command line prints (`{"event": "train", "step": 10, ...}`: the class's `event` name and its
fields, optional ones left out while they are None); `from_dict(d, trainer)` reads one back (a
saved run's curves). Both trainers name their events alike ("start", "train", "eval", "done"),
with different fields, so reading one back needs to know which trainer wrote it.

    for e in pretrain(args):
        if isinstance(e, PretrainStep):
            print(e.step, e.mlm_loss)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, TypeVar, dataclass_transform

PRETRAIN, FINETUNE = "pretrain", "finetune"  # the trainers, as `from_dict` names them
TASK_HEAD = "head"  # the per-token heads' trainer (a tagger, a reader: bert/train/task_head_train.py)


def _optional(default: Any = None) -> Any:
    """A field `to_dict` leaves out while it is None (the key was absent from the dict before)."""
    return field(default=default, metadata={"optional": True})


def _in_memory() -> Any:
    """A field that never leaves the process: not in `to_dict`, not compared (the trained model)."""
    return field(default=None, compare=False, repr=False, metadata={"in_memory": True})


@dataclass_transform(kw_only_default=True, field_specifiers=(field,))
@dataclass(kw_only=True)
class Event:
    """Any event; `event` is the name its dict carries under "event". A subclass is a keyword-only
    dataclass without a decorator and names its kind among its bases, `class Eval(Event,
    event="eval")`; one that does not (`PretrainEval(Eval)`) keeps its base's."""

    event: ClassVar[str] = ""

    def __init_subclass__(cls, event: str | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if event is not None:
            cls.event = event
        dataclass(kw_only=True)(cls)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"event": self.event}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.metadata.get("in_memory") or (value is None and f.metadata.get("optional")):
                continue
            d[f.name] = value
        return d

    @classmethod
    def _from_fields(cls, d: dict[str, Any]):
        known = {f.name for f in fields(cls) if not f.metadata.get("in_memory")}
        return cls(**{k: v for k, v in d.items() if k in known})


# ---- both trainers -------------------------------------------------------------------------------


class Start(Event, event="start"):
    """The model, data and optimizer are ready; training begins."""

    precision: str | None = _optional()  # the arithmetic it trains in: "fp32" or "bf16" (bert/train/precision.py)


class TrainStep(Event, event="train"):
    """Training metrics, every `log_every` optimizer steps."""

    step: int
    epoch: int


class Eval(Event, event="eval"):
    """A score on the held-out data."""

    step: int


class Done(Event, event="done"):
    """The last event: the run ended (finished, stopped, or after an `Error`). `bundle` is the
    model in memory where the trainer hands it over (never written)."""

    stopped: bool
    bundle: Any = _in_memory()


class Error(Event, event="error"):
    """Training failed (the loss stopped being finite); a `Done` with the last good model follows
    where there is one."""

    message: str
    step: int | None = _optional()


# ---- pre-training --------------------------------------------------------------------------------


class Resumed(Event, event="resumed"):
    """Pre-training picked up its checkpoint at `step`."""

    step: int


class PretrainStart(Start):
    step: int  # the first step (> 0 when resumed)
    train_documents: int
    valid_documents: int
    train_tokens: int
    parameters: int
    world_size: int
    baseline_token: str  # the most frequent training token: the plateau's guess
    objective: str | None = _optional()  # "next-word", or absent for BERT's two games (PretrainArgs.objective)


class PretrainStep(TrainStep):
    """Averages over the steps since the last one. mlm_*: the word head's (under the next-word
    objective, its next-word loss and top-1 at every position); nsp_*: None under next-word."""

    lr: float
    mlm_loss: float
    mlm_acc: float
    nsp_loss: float | None = _optional()
    nsp_acc: float | None = _optional()
    grad_norm: float
    tokens_per_s: float
    seconds: float  # since the last one


class PretrainEval(Eval):
    """Masked LM and next sentence on the fixed validation batches (bert.train.pretrain_eval.evaluate),
    and the probe sentence's guesses. Under the next-word objective (bert.train.next_word.evaluate)
    mlm_* score the next word at every position, masked_tokens counts those positions, nsp_* are
    None and the probe holds the next words after each of the probe's last prefixes."""

    mlm_loss: float
    mlm_top1: float
    mlm_top5: float
    masked_tokens: int
    sequences: int
    nsp_loss: float | None = _optional()
    nsp_acc: float | None = _optional()
    baseline_top1: float | None = _optional()  # always the most frequent training token
    probe: list[list[tuple[str, float]]] = field(default_factory=list)  # per [MASK] or prefix: top (word, p)

    def __post_init__(self) -> None:
        self.probe = [[(str(t), float(p)) for t, p in guesses] for guesses in self.probe]


class PretrainDone(Done):
    """`path`: the final model's folder (bert.train.pretrain); the app loads it into `bundle` instead.
    The scores are missing when it stopped in a hurry; `step` and the scores when the app kept
    the last checkpoint after an error (`from_checkpoint`)."""

    step: int | None = _optional()
    path: str | None = _optional()
    from_checkpoint: bool | None = _optional()
    mlm_loss: float | None = _optional()
    mlm_top1: float | None = _optional()
    mlm_top5: float | None = _optional()
    nsp_loss: float | None = _optional()
    nsp_acc: float | None = _optional()
    masked_tokens: int | None = _optional()
    sequences: int | None = _optional()
    baseline_top1: float | None = _optional()


# ---- fine-tuning ---------------------------------------------------------------------------------


class FinetuneStart(Start):
    steps: int
    steps_per_epoch: int
    train_examples: int
    valid_examples: int
    classes: list[str]
    parameters: int
    trainable: int  # parameters that train
    truncated: int  # training texts cut at max_length
    prep_seconds: float


class FinetuneStep(TrainStep):
    loss: float  # this step's
    loss_smooth: float  # its moving average
    lr: float
    grad_norm: float
    examples_per_s: float
    progress: float  # fraction of the steps done
    eta_s: float  # seconds left, evaluations included


class FinetuneEval(Eval):
    epoch: int
    val_loss: float
    accuracy: float
    best_accuracy: float
    eval_seconds: float
    texts: int | None = _optional()  # how many validation texts it scored (None: all of them)


class FinetuneDone(Done):
    """The best model (`bundle`) and how the run went; the command line adds where it saved it."""

    step: int
    steps: int
    best_step: int
    error: str | None  # the Error event's message
    accuracy: float  # the best model's (nan: never scored)
    val_loss: float
    seconds: float
    train_seconds: float
    examples_per_s: float
    train_examples: int
    valid_examples: int
    classes: list[str]
    out: str | None = _optional()
    labels: list[str] | None = _optional()
    notes: list[str] | None = _optional()
    valid_logits: Any = _in_memory()  # the kept model's (N, K) on every validation text, when known


# ---- the per-token heads: a tagger, a reader -----------------------------------------------------
# Scores are dicts named by the task ("accuracy", "f1" for a tagger; "exact_match", "f1" for a reader),
# so one set of events and one set of curves serves both.


class TaskHeadStart(Start):
    head: str  # bert/task_heads.py's key: "tagger" or "reader"
    steps: int
    train_examples: int  # sentences or questions
    train_inputs: int  # model inputs made of them (a reader's long passages make several windows)
    valid_examples: int
    labels: list[str]  # a tagger's tags ([] for a reader)
    parameters: int
    trainable: int
    prep_seconds: float


class TaskHeadStep(TrainStep):
    loss: float
    loss_smooth: float
    lr: float
    progress: float
    eta_s: float
    examples_per_s: float


class TaskHeadEval(Eval):
    epoch: int
    val_loss: float
    scores: dict[str, float | None]
    best: float  # the best so far of the score that picks the kept model
    eval_seconds: float


class TaskHeadDone(Done):
    step: int
    steps: int
    best_step: int
    error: str | None
    scores: dict[str, float | None]  # the kept model's on every validation example ({}: never scored)
    seconds: float
    train_seconds: float
    report: dict[str, Any] = field(default_factory=dict)  # what the results view shows (JSON only)


# ---- reading back ------------------------------------------------------------------------------

_KINDS: dict[str, dict[str, type[Event]]] = {
    PRETRAIN: {c.event: c for c in (Resumed, PretrainStart, PretrainStep, PretrainEval, PretrainDone, Error)},
    FINETUNE: {c.event: c for c in (FinetuneStart, FinetuneStep, FinetuneEval, FinetuneDone, Error)},
    TASK_HEAD: {c.event: c for c in (TaskHeadStart, TaskHeadStep, TaskHeadEval, TaskHeadDone, Error)},
}


def from_dict(d: dict[str, Any], trainer: str) -> Event:
    """The event `d` (a `to_dict()`, e.g. from a saved run or a log line) of `trainer` (PRETRAIN,
    FINETUNE or TASK_HEAD). Keys it does not know are ignored; ValueError for an unknown event or missing fields."""
    return from_dict_of(_KINDS[trainer], d, trainer)


def from_dict_of(kinds: dict[str, type[Event]], d: dict[str, Any], trainer: str) -> Event:
    """The event `d` as the class `kinds` names by its "event" (another trainer's own events:
    `trainer` names it in the messages); ValueError for an unknown event or missing fields."""
    cls = kinds.get(d.get("event"))
    if cls is None:
        raise ValueError(f"not a {trainer} event: {d.get('event')!r}")
    try:
        return cls._from_fields(d)
    except TypeError as e:  # a required field is missing
        raise ValueError(f"a {trainer} {cls.event!r} event without {e}") from None


E = TypeVar("E", bound=Event)


def of_type(events: Iterable[Any], cls: type[E]) -> list[E]:
    """The events of `cls` in order."""
    return [e for e in events if isinstance(e, cls)]


def last(events: Iterable[Any], cls: type[E]) -> E | None:
    """The latest event of `cls`, or None."""
    found = None
    for e in events:
        if isinstance(e, cls):
            found = e
    return found
