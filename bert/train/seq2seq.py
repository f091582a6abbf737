"""Training an encoder-decoder on pairs, as a generator of events (as bert/train/finetune.py).

    for e in train_seq2seq(Seq2SeqArgs(task="reverse")):
        print(e)   # Seq2SeqStart, Seq2SeqStep ..., Seq2SeqEval(exact_match=...), ..., Seq2SeqDone(bundle=...)

The encoder is `args.encoder`: "tiny", a fresh small BERT whose vocabulary is the pairs' words
(the default: a reversal is learned in about a minute on one core), or a model handed in as
`base` (a built-in, a family member, a session's), copied and never changed. The decoder has
`decoder_layers` layers, started from the encoder's where `from_encoder` (bert/seq2seq/model.py).

Teacher forcing: the decoder reads [CLS] + target and must predict target + [SEP]; cross-entropy
over the target tokens, AdamW, linear warm-up and decay, gradient clipping. Every `eval_every`
steps the held-out sources are decoded greedily; exact match is the share whose output equals the
target token for token. The best model by exact match is kept and handed over in Seq2SeqDone; a
run stops early at `target_exact` (the benchmark's 0.9) or when `stop` is set.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import torch

from ..bundle import Bundle
from ..config import BertConfig
from ..errors import DataError, InputError, TrainingError
from ..model import BertForPreTraining, init_weights
from ..seq2seq.bundle import Seq2SeqBundle
from ..seq2seq.generate import greedy
from ..seq2seq.model import IGNORE, build_encoder_decoder
from ..seq2seq.tasks import Pairs
from ..tokenizer import Tokenizer
from .events import Done, Error, Eval, Event, Start, TrainStep, from_dict_of
from .optim import adamw
from .precision import PRECISIONS, nonfinite_advice, resolve_precision
from .trainer import Step, TrainingKind, linear_trainer

TINY = "tiny"
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
MAX_TINY_VOCAB = 5000
EXAMPLES = 5  # held-out pairs each evaluation shows


@dataclass
class Seq2SeqArgs:
    task: str = "reverse"  # a built-in task (bert/seq2seq/tasks.py) or "upload"
    encoder: str = TINY  # TINY, or the source name of the base model handed in
    decoder_layers: int = 2
    from_encoder: bool = True  # start the decoder from the encoder's embeddings, layers and head
    freeze_encoder: bool = False
    hidden: int = 64  # the tiny encoder's width, layers and heads
    layers: int = 2
    heads: int = 4
    dropout: float = 0.0  # the tiny encoder-decoder's (a toy task has nothing to over-fit)
    train_pairs: int = 4000  # a built-in task's
    valid_pairs: int = 200
    batch_size: int = 32
    lr: float = 2e-3
    warmup: float = 0.05  # share of the steps
    steps: int = 1500
    eval_every: int = 50
    log_every: int = 10
    seed: int = 0
    threads: int = 0  # torch threads while training (0: as they are)
    target_exact: float | None = None  # stop once held-out exact match reaches this
    precision: str = field(default="fp32", metadata={"choices": PRECISIONS})  # on the CPU (bert/train/precision.py)


class Seq2SeqStart(Start):
    steps: int
    train_pairs: int
    valid_pairs: int
    parameters: int
    trainable: int
    vocab: int
    made: list[str] = field(default_factory=list)  # what was copied and what is fresh


class Seq2SeqStep(TrainStep):
    loss: float  # mean over the steps since the last one
    token_acc: float  # teacher-forced: share of target tokens predicted right
    lr: float
    seconds: float  # training time so far (evaluations not counted)


class Seq2SeqEval(Eval):
    exact_match: float  # held-out outputs equal to their target
    token_acc: float  # held-out target tokens right at their place
    best: float
    seconds: float  # training time so far
    examples: list[list[str]] = field(default_factory=list)  # [source, target, output]


class Seq2SeqDone(Done):
    step: int
    best_step: int
    exact_match: float  # the kept model's (nan: never scored)
    train_seconds: float


EVENTS = {c.event: c for c in (Seq2SeqStart, Seq2SeqStep, Seq2SeqEval, Seq2SeqDone, Error)}  # by their dicts' names


def event_from_dict(d: dict) -> Event:
    """This trainer's event back from its `to_dict()` (a saved run, a worker's poll), as
    bert.train.events.from_dict reads the other trainers'; ValueError for another event or one
    missing fields."""
    return from_dict_of(EVENTS, d, "seq2seq")


def held_out_source(metrics) -> str | None:
    """The first held-out source of a run's latest evaluation (the pair it was scored on last,
    so one its vocabulary knows), or None when it was never scored."""
    ev = None
    for e in metrics:
        if isinstance(e, Seq2SeqEval):
            ev = e
    return ev.examples[0][0] if ev is not None and ev.examples else None


def tiny_vocabulary(pairs: list[Pairs]) -> tuple[Tokenizer, int]:
    """The tiny encoder's tokenizer (the MAX_TINY_VOCAB most frequent words of `pairs`; others
    become [UNK]) and the longest side in words."""
    basic = Tokenizer(SPECIALS)
    counts: dict[str, int] = {}
    longest = 0
    for p in pairs:
        for text in (*p.sources, *p.targets):
            words = basic.basic_tokenize(text)
            longest = max(longest, len(words))
            for w in words:
                counts[w] = counts.get(w, 0) + 1
    words = sorted(counts, key=lambda w: (-counts[w], w))[:MAX_TINY_VOCAB]
    return Tokenizer(SPECIALS + sorted(words)), longest


def tiny_config(vocab: int, longest: int, args: Seq2SeqArgs) -> BertConfig:
    """The tiny encoder's config: args.hidden/layers/heads, `vocab` words, positions for `longest`."""
    if args.hidden % args.heads:
        raise InputError(f"the tiny encoder's width {args.hidden} is not divisible by its {args.heads} heads")
    return BertConfig(
        vocab_size=vocab,
        hidden_size=args.hidden,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        intermediate_size=4 * args.hidden,
        max_position_embeddings=max(16, longest + 4),
        hidden_dropout_prob=args.dropout,
        attention_probs_dropout_prob=args.dropout,
    )


def tiny_encoder(pairs: list[Pairs], args: Seq2SeqArgs) -> Bundle:
    """A fresh small BERT (tiny_config) on the words of `pairs` (tiny_vocabulary)."""
    tokenizer, longest = tiny_vocabulary(pairs)
    config = tiny_config(len(tokenizer), longest, args)
    with torch.random.fork_rng():
        torch.manual_seed(args.seed)
        model = BertForPreTraining(config)
        init_weights(model)
    return Bundle(model=model.eval(), tokenizer=tokenizer, name="tiny BERT", mlm_head_trained=False)


def encode_pairs(pairs: Pairs, tokenizer, max_source: int, max_target: int) -> list[tuple[list[int], list[int]]]:
    """(source ids with [CLS]/[SEP], target ids without) of each pair; DataError naming the
    first pair too long for the model."""
    out = []
    for n, (s, t) in enumerate(zip(pairs.sources, pairs.targets), start=1):
        src = tokenizer.encode(s).ids
        tgt = tokenizer.encode(t).ids[1:-1]
        if len(src) > max_source:
            raise DataError(f"pair {n}'s source is {len(src)} tokens: this encoder reads at most {max_source}")
        if len(tgt) + 1 > max_target:
            raise DataError(f"pair {n}'s target is {len(tgt)} tokens: this decoder writes at most {max_target - 1}")
        if not tgt:
            raise DataError(f"pair {n}'s target has no tokens: every pair needs a target")
        out.append((src, tgt))
    return out


def batch_tensors(items: list[tuple[list[int], list[int]]], pad: int, eos: int) -> dict[str, torch.Tensor]:
    """input_ids / attention_mask (B, S) and labels (B, T): target + [SEP], IGNORE as padding."""
    S = max(len(s) for s, _ in items)
    T = max(len(t) for _, t in items) + 1
    ids = torch.full((len(items), S), pad, dtype=torch.long)
    mask = torch.zeros((len(items), S), dtype=torch.long)
    labels = torch.full((len(items), T), IGNORE, dtype=torch.long)
    for i, (s, t) in enumerate(items):
        ids[i, : len(s)] = torch.tensor(s)
        mask[i, : len(s)] = 1
        labels[i, : len(t) + 1] = torch.tensor([*t, eos])
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def exact_match(model, items, pad: int, batch: int = 100, stop=None) -> tuple[float, float, list[list[int]]] | None:
    """(exact match, token accuracy, outputs) of greedy decoding on `items`, `batch` at a time;
    None once `stop` is set (checked between batches)."""
    outs: list[list[int]] = []
    for i in range(0, len(items), batch):
        if stop is not None and stop.is_set():
            return None
        chunk = items[i : i + batch]
        b = batch_tensors(chunk, pad, model.eos_id)
        longest = max(len(t) for _, t in chunk)
        outs += greedy(model, b["input_ids"], b["attention_mask"], longest + 2)
    exact = sum(o == t for o, (_, t) in zip(outs, items)) / max(len(items), 1)
    right = sum(sum(a == b for a, b in zip(o, t)) for o, (_, t) in zip(outs, items))
    total = sum(len(t) for _, t in items)
    return exact, right / max(total, 1), outs


def train_seq2seq(
    args: Seq2SeqArgs,
    train: Pairs,
    valid: Pairs,
    base: Bundle | None = None,
    stop: threading.Event | None = None,
) -> Iterator[Event]:
    """Train, yielding events: Seq2SeqStart, Seq2SeqStep, Seq2SeqEval, maybe Error, Seq2SeqDone."""
    before = torch.get_num_threads()
    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        yield from _run(args, train, valid, base, stop or threading.Event())
    finally:
        if args.threads:
            torch.set_num_threads(before)


def _run(args: Seq2SeqArgs, train: Pairs, valid: Pairs, base: Bundle | None, stop) -> Iterator[Event]:
    if not len(train) or not len(valid):
        raise DataError("training needs pairs to train on and held-out pairs to score")
    if args.steps < 1 or args.batch_size < 1 or args.eval_every < 1:
        raise InputError("steps, batch size and evaluation interval must be at least 1")
    if args.encoder == TINY or base is None:
        base = tiny_encoder([train, valid], args)
    run = _Seq2SeqRun(args, train, valid, base, stop)
    yield run.setup()
    warmup = int(args.warmup * args.steps)
    trainer = linear_trainer(run, args.lr, warmup, args.steps, clip=1.0, log_every=args.log_every, stop=stop)
    yield from trainer.run(run)
    yield from run.finish()


class _Seq2SeqRun(TrainingKind):
    """One run of `train_seq2seq`: `setup` (Seq2SeqStart), the Trainer's steps, `finish` (Seq2SeqDone)."""

    def __init__(self, args: Seq2SeqArgs, train: Pairs, valid: Pairs, base: Bundle, stop):
        self.args, self.train, self.valid, self.base, self.stop = args, train, valid, base, stop
        self.best, self.best_step, self.best_state = float("nan"), 0, None
        self.step, self.epoch, self.clock = 0, 0, 0.0
        self._new_window()

    def setup(self) -> Seq2SeqStart:
        """The encoder-decoder (from `base`), the encoded pairs, AdamW: the Seq2SeqStart."""
        args, tok = self.args, self.base.tokenizer
        self.device = torch.device("cpu")
        self.precision = resolve_precision(args.precision, self.device)
        self.model, made = build_encoder_decoder(
            self.base.model, tok.cls_id, tok.sep_id, tok.pad_id, args.decoder_layers, args.from_encoder, args.seed
        )
        limits = self.model.config.max_tokens, self.model.decoder_config.max_tokens
        self.tr, self.va = encode_pairs(self.train, tok, *limits), encode_pairs(self.valid, tok, *limits)
        if args.freeze_encoder:
            self.model.encoder.requires_grad_(False)
        self.opt = adamw(self.model, args.lr)
        params = {id(p): p for p in self.model.parameters()}.values()
        return Seq2SeqStart(
            steps=args.steps,
            train_pairs=len(self.tr),
            valid_pairs=len(self.va),
            parameters=sum(p.numel() for p in params),
            trainable=sum(p.numel() for p in params if p.requires_grad),
            vocab=len(tok),
            made=made,
            precision=self.precision,
        )

    def _new_window(self) -> None:
        """Start the sums behind the next Seq2SeqStep."""
        self.loss_sum = self.right = self.counted = self.n_logged = 0.0

    # ---- the Trainer's kind

    def batches(self) -> Iterator[list[int]]:
        """Batches of pair indices from shuffles of the pairs, one after another (an epoch each)."""
        gen = torch.Generator().manual_seed(self.args.seed)
        order: list[int] = []
        while True:
            if len(order) < self.args.batch_size:
                order += torch.randperm(len(self.tr), generator=gen).tolist()
                self.epoch += 1
            ix, order = order[: self.args.batch_size], order[self.args.batch_size :]
            yield ix

    def loss(self, batch: list[int]):
        self.model.train()
        b = batch_tensors([self.tr[i] for i in batch], self.base.tokenizer.pad_id, self.model.eos_id)
        out = self.model(b["input_ids"], b["attention_mask"], labels=b["labels"])
        return out.loss, (out.logits, b["labels"])

    def diverged(self, what: str, value: float, step: int) -> str:
        return f"the loss became {value} at step {step}: try a lower learning rate." + nonfinite_advice(self.precision)

    def stepped(self, s: Step) -> None:
        self.step, self.clock = s.step, s.train_seconds
        logits, labels = s.out
        with torch.no_grad():
            keep = labels != IGNORE
            self.right += float((logits.argmax(-1) == labels)[keep].sum())
            self.counted += float(keep.sum())
            self.loss_sum += s.loss.item()
            self.n_logged += 1

    def step_event(self, s: Step) -> Seq2SeqStep:
        event = Seq2SeqStep(
            step=s.step,
            epoch=self.epoch,
            loss=self.loss_sum / self.n_logged,
            token_acc=self.right / max(self.counted, 1),
            lr=s.lr,
            seconds=self.clock,
        )
        self._new_window()
        return event

    def eval_due(self, step: int) -> bool:
        return step % self.args.eval_every == 0 or step == self.args.steps

    def evaluate(self, s: Step) -> Seq2SeqEval | None:
        """The held-out pairs decoded; the model kept when it is the best so far (or the first)."""
        ev = _evaluate(
            self.model,
            self.va,
            self.valid,
            self.base.tokenizer,
            s.step,
            self.clock,
            self.best,
            self.args.batch_size,
            self.stop,
        )
        if ev is not None:
            if not ev.exact_match <= self.best:  # better, or the first
                self.best, self.best_step = ev.exact_match, s.step
                self.best_state = copy.deepcopy(self.model.state_dict())
            ev.best = self.best
        return ev

    def after_step(self, s: Step) -> bool:
        """Ends the run once the best held-out exact match reaches `target_exact`."""
        return self.args.target_exact is not None and self.best >= self.args.target_exact

    # ---- the end

    def finish(self) -> Iterator[Event]:
        """The kept model (scored once if it never was, unless Stop came) in a Seq2SeqDone."""
        args, model, stop, tok = self.args, self.model, self.stop, self.base.tokenizer
        if self.best_state is None and not stop.is_set() and self.step > 0:  # never scored: once, unless Stop comes
            ev = _evaluate(model, self.va, self.valid, tok, self.step, self.clock, self.best, args.batch_size, stop)
            if ev is not None:  # (batches of the training's)
                self.best, self.best_step = ev.exact_match, self.step
                yield ev
        elif self.best_state is not None:
            model.load_state_dict(self.best_state)
        model.eval()
        if self.step == 0:
            raise TrainingError("stopped before the first step: nothing was trained")
        name = f"{self.base.name} + {args.decoder_layers}-layer decoder"
        best = self.best
        bundle = Seq2SeqBundle(
            model=model,
            tokenizer=tok,
            name=name,
            card=f"# {name}\n\nTrained on {self.train.label or 'pairs'} in {self.precision}; "
            + f"kept: step {self.best_step}, exact match "
            + (f"{best:.0%}.\n" if best == best else "not measured (stopped).\n"),
            source="trained in BERT Explorer",
            mlm_head_trained=False,
            nsp_head_trained=False,
        )
        yield Seq2SeqDone(
            stopped=stop.is_set(),
            step=self.step,
            best_step=self.best_step,
            exact_match=best,
            train_seconds=self.clock,
            bundle=bundle,
        )


def _evaluate(
    model, items, pairs: Pairs, tok, step: int, clock: float, best: float, batch: int, stop=None
) -> Seq2SeqEval | None:
    """The held-out pairs decoded `batch` at a time (the training batch: no larger a peak); None
    once `stop` is set."""
    scored = exact_match(model, items, tok.pad_id, batch, stop)
    if scored is None:
        return None
    exact, tacc, outs = scored
    shown = [
        [pairs.sources[i], pairs.targets[i], tok.decode(outs[i], skip_special_tokens=True)]
        for i in range(min(EXAMPLES, len(items)))
    ]
    return Seq2SeqEval(
        step=step,
        exact_match=exact,
        token_acc=tacc,
        best=max(best, exact) if best == best else exact,
        seconds=clock,
        examples=shown,
    )
