"""Pre-training, as a generator of events (bert/train/events.py): BERT's two games (masked LM +
next-sentence prediction, objective "mlm+nsp") or the next word (a causal LM, objective
"next-word": bert/train/next_word.py; the same model and head, read left to right, no NSP).

    for e in pretrain(PretrainArgs(out="runs/x", init="scratch", steps=200)):
        print(e.to_dict())  # {"event": "train", "step": 10, "mlm_loss": ..., "tokens_per_s": ...}

The loop knows nothing of the UI: the command line prints each event as a JSON line, the
app's background job pushes them to a queue. Checkpoints are written atomically every
`save_every` steps into `<out>/checkpoint` and a run resumes from there after a kill.
Under `torchrun --nproc_per_node=N` it trains with DistributedDataParallel (gloo on CPU).
`args.device` picks cpu, cuda or mps (bert/train/device.py), `args.precision` fp32 or bf16 autocast with
fp32 weights (bert/train/precision.py); files are always written from CPU tensors. The run's settings are
bert/train/pretrain_args.py's PretrainArgs; what it starts from (text, split, vocabulary, model),
bert/train/pretrain_setup.py's.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, fields
from pathlib import Path
from types import SimpleNamespace

import torch
import torch.distributed as dist

from ..atomic_files import atomic_write_text, replace_dir
from ..attention_masks import BIDIRECTIONAL, CAUSAL, set_trained_mask_kind
from ..bundle import Bundle
from ..checkpoint.load import load_folder, save
from ..data.corpus.base import Corpus
from ..dropout import thread_generator
from ..errors import TrainingError
from ..model import BertForPreTraining
from . import next_word
from .device import cpu_bundle, resolve_device, to_cpu, to_device
from .events import Event, PretrainDone, PretrainEval, PretrainStart, PretrainStep, Resumed
from .examples import PretrainingDataset, token_counts, tokenize_corpus
from .masking import MLMMasker
from .next_word import NEXT_WORD, OBJECTIVES, NextWordDataset, next_word_batch, next_word_forward
from .optim import adamw
from .precision import nonfinite_advice, resolve_precision
from .pretrain_args import PretrainArgs
from .pretrain_eval import evaluate, fixed_eval_batches, mlm_nsp_forward, probe_predictions
from .pretrain_setup import initial_bundle, training_split
from .trainer import Step, TrainingKind, linear_trainer

# ---- checkpoints -----------------------------------------------------------------------------


def save_checkpoint(folder: Path, bundle: Bundle, opt, state: dict) -> None:
    """model + optimizer + loop state, written (from CPU copies) to a temporary folder and renamed
    into place."""
    folder = Path(folder)
    tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}.tmp"))  # a killed save's
    # leftover is removed by the next save (bert.atomic_files.replace_dir)
    try:
        save(cpu_bundle(bundle), tmp / "model")
        torch.save(to_cpu(opt.state_dict()), tmp / "optimizer.pt")
        atomic_write_text(tmp / "state.json", json.dumps(state, indent=2))
        replace_dir(tmp, folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def load_checkpoint(folder: Path):
    bundle = load_folder(folder / "model")
    opt_state = torch.load(folder / "optimizer.pt", map_location="cpu", weights_only=True)
    state = json.loads((folder / "state.json").read_text())
    return bundle, opt_state, state


# ---- the loop -------------------------------------------------------------------------------


def _dist_info() -> tuple[int, int]:
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1 and not dist.is_initialized():
        dist.init_process_group("gloo")
    return (dist.get_rank(), world) if world > 1 else (0, 1)


def pretrain(
    args: PretrainArgs,
    stop: threading.Event | None = None,
    bundle: Bundle | None = None,
    corpus: Corpus | None = None,
    resume: bool = True,
    on_step: Callable[[int, BertForPreTraining], None] | None = None,
    on_start: Callable[[Bundle], None] | None = None,
) -> Iterator[Event]:
    """Train, yielding events; the last one is a PretrainDone with the final model's folder.

    on_start(bundle) is called once the model and its tokenizer exist (a vocabulary trained on
    the corpus is only known then); on_step(step, model) before the first step of this call and
    after each optimizer step (e.g. bert.train.attention_snapshots.AttentionSnapshots). Both only on
    rank 0."""
    yield from _PretrainRun(args, stop, on_step, on_start).events(bundle, corpus, resume)


def torchrun_command(args: PretrainArgs, processes: int, port: int, python: str = "python") -> list[str]:
    """`python -m torch.distributed.run --nproc_per_node=N -m bert pretrain ...` for `args`: every
    field as its command-line flag (bert/__main__.py makes the flags), a fresh run (--no-resume)."""
    flags = []
    for f in fields(args):
        value, name = getattr(args, f.name), "--" + f.name.replace("_", "-")
        if value is None:
            continue
        if isinstance(value, bool):
            flags.append(name if value else "--no-" + name[2:])
        elif isinstance(value, list):
            flags += [name, *map(str, value)]
        else:
            flags.append(f"{name}={value}")  # one argument, spaces and all (the probe sentence)
    run = [python, "-m", "torch.distributed.run", f"--nproc_per_node={processes}", f"--master_port={port}"]
    return [*run, "-m", "bert", "pretrain", *flags, "--no-resume"]


class _PretrainRun(TrainingKind):
    """One call of `pretrain`, in named steps: `setup` (data, the model on its device, AdamW:
    Resumed, PretrainStart), bert/train/trainer.py's loop on its `batches` (after each step, what is
    due: a PretrainStep, a PretrainEval, a snapshot, a checkpoint), `finish` (checkpoint, final/,
    PretrainDone)."""

    def __init__(self, args: PretrainArgs, stop: threading.Event | None, on_step, on_start):
        self.args, self.stop, self.on_step, self.on_start = args, stop, on_step, on_start

    def events(self, bundle: Bundle | None, corpus: Corpus | None, resume: bool) -> Iterator[Event]:
        yield from self.setup(bundle, corpus, resume)
        a = self.args
        asked = SimpleNamespace(is_set=self._stop_asked)  # under torchrun: every rank's answer
        trainer = linear_trainer(
            self, a.lr, a.warmup_steps, a.steps, clip=a.clip, log_every=a.log_every, stop=asked, step=self.step
        )
        with thread_generator(a.seed) as self.dropout_generator:  # on the CPU: this run's own draws
            yield from trainer.run(self)
        yield from self.finish()

    # ---- setup

    def setup(self, bundle: Bundle | None, corpus: Corpus | None, resume: bool) -> Iterator[Event]:
        """The device (TrainingError before any work if it is missing), the corpus split, the model
        (from the checkpoint, the given bundle or `initial_bundle`), data and optimizer: yields
        Resumed (when resuming) and PretrainStart (rank 0), then calls on_start and on_step."""
        a = self.args
        if a.objective not in OBJECTIVES:
            raise TrainingError(f"objective must be one of {', '.join(OBJECTIVES)}, got {a.objective!r}")
        self.next_word = a.objective == NEXT_WORD
        if a.threads:
            torch.set_num_threads(a.threads)
        self.rank, self.world = _dist_info()
        self.device = resolve_device(a.device)
        if self.world > 1 and self.device.type == "cuda":
            self.device = torch.device("cuda", self.rank % torch.cuda.device_count())  # one GPU per process
        self.precision = resolve_precision(a.precision, self.device)
        self.out = Path(a.out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.ckpt = self.out / "checkpoint"
        train_c, valid_c = training_split(a, corpus)
        opt_state, state = None, {"step": 0, "epoch": 0, "batch": 0, "best": None}
        if resume and (self.ckpt / "state.json").is_file():
            bundle, opt_state, state = load_checkpoint(self.ckpt)
            yield Resumed(step=state["step"])
        elif bundle is None:
            bundle = initial_bundle(a, train_c)
        # A run from random weights, fresh or resumed, first learns logit differences finer than
        # bf16 keeps: its vocabulary's logits stay fp32. A trained model's logits lie far apart, and
        # on a large vocabulary that projection in fp32 would slow every bf16 step.
        bundle.model.mlm.fp32_logits = a.init == "scratch"
        set_trained_mask_kind(bundle.config, CAUSAL if self.next_word else BIDIRECTIONAL)  # saved with it
        self.bundle, self.model = bundle, bundle.model
        self._data(train_c, valid_c)
        self._optimizer(opt_state)
        if self.rank == 0:
            yield PretrainStart(
                step=state["step"],
                train_documents=train_c.num_documents,
                valid_documents=valid_c.num_documents,
                train_tokens=self.train_ds.num_tokens,
                parameters=sum(p.numel() for p in self.model.parameters()),
                world_size=self.world,
                baseline_token=bundle.tokenizer.ids_to_tokens[self.baseline_id],
                objective=a.objective if self.next_word else None,  # absent: BERT's two games
                precision=self.precision,
            )
        self.step, self.epoch, self.start = state["step"], state["epoch"], state["batch"]
        self.k = self.start  # batches of this epoch done (saved with the checkpoint)
        if self.rank == 0 and self.on_start is not None:
            self.on_start(bundle)
        if self.rank == 0 and self.on_step is not None:
            self.on_step(self.step, self.model)
        self._new_window()

    def _data(self, train_c: Corpus, valid_c: Corpus) -> None:
        """The tokenized datasets, the masker, the fixed validation batches (on the device), and
        the baseline: the most frequent training token."""
        a, tok, model = self.args, self.bundle.tokenizer, self.model
        if a.max_seq_length > model.config.max_position_embeddings:
            raise TrainingError(
                f"max_seq_length {a.max_seq_length} exceeds the model's "
                f"{model.config.max_position_embeddings} positions"
            )
        kw = dict(cls_id=tok.cls_id, sep_id=tok.sep_id, max_seq_length=a.max_seq_length, seed=a.seed)
        dataset = NextWordDataset if self.next_word else PretrainingDataset
        self.train_ds = dataset(tokenize_corpus(train_c, tok, cache=a.cache_tokens), **kw)
        valid_ds = dataset(tokenize_corpus(valid_c, tok, cache=a.cache_tokens), **kw)
        if self.next_word:  # no masking: every position predicts the next token
            self.masker, self.pad_id = None, tok.pad_id
            # the training batch at most: every position's logits over the vocabulary are built
            eval_batches = next_word.fixed_eval_batches(valid_ds, tok.pad_id, a.eval_sequences, min(32, a.batch_size))
        else:
            self.masker = MLMMasker.from_tokenizer(tok, a.mlm_probability, a.whole_word)
            self.pad_id = self.masker.pad_id
            eval_batches = fixed_eval_batches(valid_ds, self.masker, a.eval_sequences, 32)
        self.eval_batches = [to_device(b, self.device) for b in eval_batches]
        counts = token_counts(self.train_ds.documents, len(tok))
        if self.next_word:  # its targets include the [SEP] that ends each document
            counts[tok.sep_id] += len(self.train_ds.documents)
        self.baseline_id = int(counts.argmax())

    def _optimizer(self, opt_state: dict | None) -> None:
        """The model on its device in training mode (wrapped for DDP), and AdamW (resumed)."""
        a, model = self.args, self.model
        model.to(self.device)
        model.train()
        model.bert.embeddings.word_embeddings.weight.requires_grad_(not a.freeze_word_embeddings)
        self.net = model
        if self.world > 1:
            ids = [self.device.index] if self.device.type == "cuda" else None
            self.net = torch.nn.parallel.DistributedDataParallel(model, device_ids=ids)
        scales = {"mlm.": a.head_lr_scale, "nsp.": a.head_lr_scale}
        # fused in fp32 too: on a tiny model (the page's default) the per-parameter loop is a large share of a step
        self.opt = adamw(model, a.lr, a.weight_decay, scales, fused=True)
        if opt_state is not None:
            self.opt.load_state_dict(opt_state)

    # ---- the Trainer's kind

    def batches(self) -> Iterator[dict[str, torch.Tensor]]:
        """Epochs of batches until args.steps; a resumed run starts at its saved batch."""
        a = self.args
        while self.step < a.steps:
            self.k = self.start
            yield from self.train_ds.batches(
                self.epoch,
                a.batch_size,
                self.masker,
                pad_id=self.pad_id,
                rank=self.rank,
                world_size=self.world,
                start=self.start,
            )
            self.epoch, self.start = self.epoch + 1, 0

    def _stop_asked(self) -> bool:
        """The stop event, or the stop file; under torchrun every rank takes the same decision (any
        rank's), so all stop after the same step."""
        asked = (self.stop is not None and self.stop.is_set()) or bool(
            self.args.stop_file and Path(self.args.stop_file).exists()
        )
        if self.world > 1:
            flag = torch.tensor([int(asked)])
            dist.all_reduce(flag, op=dist.ReduceOp.MAX)
            asked = bool(flag.item())
        return asked

    def loss(self, batch: dict[str, torch.Tensor]):
        """This objective's loss on `batch` (on the device); dropout seeded by the step and rank."""
        batch = to_device(next_word_batch(batch) if self.next_word else batch, self.device)
        # dropout, reproducible: reseeded by the step (the CPU's draws from this run's own generator,
        # the same numbers as torch's default one seeded alike; another device's from its own)
        seed = self.args.seed * 7919 + self.step * self.world + self.rank
        if self.device.type == "cpu":
            self.dropout_generator.manual_seed(seed)
        else:
            torch.manual_seed(seed)
        if self.next_word:
            res = next_word_forward(self.net, batch)
        else:
            res = mlm_nsp_forward(self.net, batch)
        return res.loss, (res, batch)

    def diverged(self, what: str, value: float, step: int) -> str:
        raise TrainingError(
            f"the loss became {value} at step {step - 1}: the learning rate {self.args.lr:g} is too high. The "
            "last good checkpoint is kept." + nonfinite_advice(self.precision)
        )

    def stepped(self, s: Step) -> None:
        self.step, self.k = s.step, self.k + 1
        if self.on_step is not None and self.rank == 0:
            self.on_step(self.step, self.model)
        res, batch = s.out
        self._count(batch, res)

    def step_event(self, s: Step) -> PretrainStep | None:
        """Rank 0's PretrainStep (the sums since the last one)."""
        if self.rank != 0:
            return None
        event = self._train_event(s.lr, s.grad_norm)
        self._new_window()
        return event

    def eval_due(self, step: int) -> bool:
        return self.rank == 0 and (step % self.args.eval_every == 0 or step == self.args.steps)

    def evaluate(self, s: Step) -> PretrainEval | None:
        """The held-out scores and the probe (None: Stop came while scoring)."""
        scores = self._evaluate()
        return None if scores is None else PretrainEval(step=s.step, **scores, probe=self._probe())

    def after_step(self, s: Step) -> bool:
        """Rank 0: a snapshot and a checkpoint, when due."""
        a, step = self.args, s.step
        if self.rank == 0 and a.snapshot_every and step % a.snapshot_every == 0:
            save(cpu_bundle(self.bundle), self.out / "snapshots" / f"step-{step:06d}")
        if self.rank == 0 and step % a.save_every == 0:
            self._save_checkpoint()
        return False

    def _new_window(self) -> None:
        """Start the sums behind the next PretrainStep."""
        self.t0, self.tokens = time.perf_counter(), 0
        self.acc = {"mlm_loss": 0.0, "mlm_right": 0, "mlm_n": 0, "nsp_loss": 0.0, "nsp_right": 0, "nsp_n": 0, "k": 0}

    def _count(self, batch: dict[str, torch.Tensor], res) -> None:
        acc = self.acc
        self.tokens += int(batch["attention_mask"].sum()) * self.world
        targets = batch["mlm_labels"][batch["mlm_labels"] != -100]
        acc["mlm_loss"] += res.mlm_loss.item()
        acc["mlm_right"] += (res.mlm_logits.argmax(-1) == targets).sum().item()
        acc["mlm_n"] += targets.numel()
        if res.nsp_loss is not None:  # none under next-word
            acc["nsp_loss"] += res.nsp_loss.item()
            acc["nsp_right"] += (res.nsp_logits.argmax(-1) == batch["nsp_labels"]).sum().item()
            acc["nsp_n"] += len(batch["nsp_labels"])
        acc["k"] += 1

    def _evaluate(self) -> dict | None:
        """The held-out scores of this run's objective; None once the stop event is set."""
        score = next_word.evaluate if self.next_word else evaluate
        return score(self.model, self.eval_batches, self.baseline_id, precision=self.precision, stop=self.stop)

    def _probe(self) -> list[list[tuple[str, float]]]:
        """The probe's top guesses: at each [MASK], or (next-word) after each of its last prefixes."""
        if self.next_word:
            return next_word.probe_predictions(self.bundle, next_word.next_word_probe(self.args.probe))
        return probe_predictions(self.bundle, self.args.probe)

    def _train_event(self, lr: float, gnorm: torch.Tensor) -> PretrainStep:
        acc, dt = self.acc, time.perf_counter() - self.t0
        return PretrainStep(
            step=self.step,
            epoch=self.epoch,
            lr=lr,
            mlm_loss=acc["mlm_loss"] / acc["k"],
            mlm_acc=acc["mlm_right"] / max(acc["mlm_n"], 1),
            nsp_loss=None if self.next_word else acc["nsp_loss"] / acc["k"],
            nsp_acc=None if self.next_word else acc["nsp_right"] / max(acc["nsp_n"], 1),
            grad_norm=float(gnorm),
            tokens_per_s=self.tokens / dt,
            seconds=dt,
        )

    # ---- the end

    def _save_checkpoint(self) -> None:
        state = {"step": self.step, "epoch": self.epoch, "batch": self.k, "args": asdict(self.args)}
        save_checkpoint(self.ckpt, self.bundle, self.opt, state)

    def finish(self) -> Iterator[Event]:
        """The checkpoint to resume from, the final model in <out>/final, a last evaluation and
        PretrainDone (rank 0); the model is left in eval mode on the CPU."""
        stopped = self.step < self.args.steps
        # a stop event with `hurry` (the app: its user's tab was closed) ends at once: the final model
        # is saved, but not the checkpoint to resume from (with its optimizer) nor a last scoring
        hurry = stopped and self.stop is not None and getattr(self.stop, "hurry", False)
        if self.rank == 0:
            if not hurry:
                self._save_checkpoint()
            final = self.out / "final"
            save(cpu_bundle(self.bundle), final)
            m = ({} if hurry else self._evaluate()) or {}  # a Stop before or during it: no last scoring
            yield PretrainDone(step=self.step, stopped=stopped, path=str(final), **m)
        if self.world > 1:
            dist.barrier()
        self.model.eval()
        self.model.to("cpu")
