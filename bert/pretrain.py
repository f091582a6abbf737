"""Pre-training with masked-LM + next-sentence prediction, as a generator of metrics.

    for m in pretrain(PretrainArgs(out="runs/x", init="scratch", steps=200)):
        print(m)      # {"event": "train", "step": 10, "mlm_loss": ..., "tokens_per_s": ...}

The loop knows nothing of the UI: the command line prints each dict as a JSON line, the
app's background job pushes them to a queue. Checkpoints are written atomically every
`save_every` steps into `<out>/checkpoint` and a run resumes from there after a kill.
Under `torchrun --nproc_per_node=N` it trains with DistributedDataParallel (gloo on CPU).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
import torch.distributed as dist

from .checkpoint import Bundle, load, load_folder, save
from .config import BertConfig
from .corpus import Corpus, load_corpus, merge_corpora, split_corpora
from .data import MLMMasker, PretrainingDataset, collate, token_counts, tokenize_corpus
from .errors import TrainingError
from .fileio import atomic_write_text, replace_dir
from .model import BertForPreTraining
from .optim import adamw, lr_at, set_lr
from .tokenizer import Tokenizer

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


@dataclass
class PretrainArgs:
    out: str  # run folder: checkpoint/, metrics.jsonl, final/
    init: str = "minilm-l6"  # a loadable model to continue from, or "scratch"
    corpora: list[str] = field(default_factory=lambda: ["wiki", "brown", "bbc"])
    text_file: str | None = None  # a .txt of the user's instead of the corpora
    vocab: str = "default"  # scratch only: "default" or "train:<size>"
    layers: int = 4
    hidden: int = 256
    heads: int = 4
    max_seq_length: int = 128
    batch_size: int = 16
    steps: int = 1000
    lr: float = 1e-4
    head_lr_scale: float = 1.0  # LR multiplier for the MLM/NSP heads
    freeze_word_embeddings: bool = False  # keep the word embeddings (= MLM decoder) as loaded
    warmup_steps: int = 100
    weight_decay: float = 0.01
    clip: float = 1.0
    mlm_probability: float = 0.15
    whole_word: bool = False
    log_every: int = 10
    eval_every: int = 200
    eval_sequences: int = 256
    save_every: int = 200
    snapshot_every: int = 0  # also keep the model every N steps in snapshots/ (to average)
    valid_fraction: float = 0.05
    seed: int = 0
    threads: int | None = None
    probe: str = "the capital of france is [MASK] ."
    cache_tokens: bool = True  # keep the tokenized text in <cache>/tokenized (False: a
    # user's upload, tokenized in memory and never written)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


# ---- set-up ------------------------------------------------------------------------------------


def train_vocab(corpus: Corpus, size: int) -> list[str]:
    """A WordPiece vocabulary trained on the corpus with the `tokenizers` library."""
    from tokenizers import BertWordPieceTokenizer

    wp = BertWordPieceTokenizer(lowercase=True, strip_accents=True, clean_text=True)
    sentences = (s for doc in corpus.documents for s in doc)
    wp.train_from_iterator(
        sentences,
        vocab_size=size,
        min_frequency=2,
        special_tokens=SPECIALS,
        limit_alphabet=1000,
        wordpieces_prefix="##",
    )
    vocab = wp.get_vocab()
    return sorted(vocab, key=vocab.get)


def load_training_corpus(args: PretrainArgs) -> Corpus:
    if args.text_file:
        from .corpus import corpus_from_text

        return corpus_from_text(Path(args.text_file).read_bytes(), name=Path(args.text_file).stem)
    return merge_corpora([load_corpus(c) for c in args.corpora], name="+".join(args.corpora))


def training_split(args: PretrainArgs, corpus: Corpus | None = None) -> tuple[Corpus, Corpus]:
    """(train, held-out) by document: a given corpus or text file split as one; the named corpora
    through ``split_corpora`` (the first built-ins' held-out documents stay held out)."""
    if corpus is not None or args.text_file:
        corpus = corpus or load_training_corpus(args)
        return corpus.split(args.valid_fraction, seed=args.seed)
    return split_corpora(list(args.corpora), args.valid_fraction, seed=args.seed)


def initial_bundle(args: PretrainArgs, corpus: Corpus) -> Bundle:
    if args.init != "scratch":
        bundle = load(args.init)
        if not bundle.has_mlm:
            raise TrainingError(f"{args.init} is a classifier; pre-train from an encoder instead")
        return bundle
    if args.vocab == "default":
        from .checkpoint import minilm_package_dir

        tokenizer = Tokenizer.from_file(minilm_package_dir() / "vocab.txt")
    elif args.vocab.startswith("train:"):
        tokenizer = Tokenizer(train_vocab(corpus, int(args.vocab.split(":", 1)[1])))
    else:
        tokenizer = Tokenizer.from_file(args.vocab)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=args.hidden,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        intermediate_size=4 * args.hidden,
        max_position_embeddings=max(128, args.max_seq_length),
    )
    torch.manual_seed(args.seed)
    return Bundle(model=BertForPreTraining(config), tokenizer=tokenizer, name="scratch")


# ---- evaluation -------------------------------------------------------------------------------


def fixed_eval_batches(
    dataset: PretrainingDataset, masker: MLMMasker, n_sequences: int, batch_size: int
) -> list[dict[str, torch.Tensor]]:
    """Validation batches with a fixed 15 % of word pieces all replaced by [MASK]."""
    full = MLMMasker(
        vocab_size=masker.vocab_size,
        mask_id=masker.mask_id,
        pad_id=masker.pad_id,
        special_ids=masker.special_ids,
        mlm_probability=masker.mlm_probability,
    )
    examples = dataset.examples(epoch=0)[:n_sequences]
    g = torch.Generator().manual_seed(1234)
    out = []
    for i in range(0, len(examples), batch_size):
        b = collate(examples[i : i + batch_size], masker.pad_id)
        special = full.special_mask(b["input_ids"], b["attention_mask"])
        chosen = (torch.rand(b["input_ids"].shape, generator=g) < masker.mlm_probability) & ~special
        b["mlm_labels"] = torch.where(chosen, b["input_ids"], torch.full_like(b["input_ids"], -100))
        b["input_ids"] = b["input_ids"].masked_fill(chosen, masker.mask_id)
        out.append(b)
    return out


@torch.inference_mode()
def evaluate(
    model: BertForPreTraining, batches: list[dict[str, torch.Tensor]], baseline_id: int | None = None
) -> dict[str, float]:
    """MLM loss, top-1/top-5 accuracy at masked positions, NSP loss and accuracy."""
    was_training = model.training
    model.eval()
    n = top1 = top5 = base = nsp_right = nsp_n = 0
    mlm_loss = nsp_loss = 0.0
    for b in batches:
        out = model(
            b["input_ids"],
            b["token_type_ids"],
            b["attention_mask"],
            mlm_labels=b["mlm_labels"],
            nsp_labels=b["nsp_labels"],
        )
        targets = b["mlm_labels"][b["mlm_labels"] != -100]
        k = targets.numel()
        if k:
            mlm_loss += out.mlm_loss.item() * k
            best = out.mlm_logits.topk(5, dim=-1).indices  # (N, 5)
            top1 += (best[:, 0] == targets).sum().item()
            top5 += (best == targets[:, None]).any(-1).sum().item()
            if baseline_id is not None:
                base += (targets == baseline_id).sum().item()
            n += k
        nsp_loss += out.nsp_loss.item() * len(b["nsp_labels"])
        nsp_right += (out.nsp_logits.argmax(-1) == b["nsp_labels"]).sum().item()
        nsp_n += len(b["nsp_labels"])
    model.train(was_training)
    res = {
        "mlm_loss": mlm_loss / max(n, 1),
        "mlm_top1": top1 / max(n, 1),
        "mlm_top5": top5 / max(n, 1),
        "nsp_loss": nsp_loss / max(nsp_n, 1),
        "nsp_acc": nsp_right / max(nsp_n, 1),
        "masked_tokens": n,
        "sequences": nsp_n,
    }
    if baseline_id is not None:
        res["baseline_top1"] = base / max(n, 1)
    return res


@torch.inference_mode()
def probe_predictions(bundle: Bundle, text: str, k: int = 5) -> list[list[tuple[str, float]]]:
    """Top-k words for each [MASK] in `text` (what the page shows while a model learns)."""
    model = bundle.model
    was_training = model.training
    model.eval()
    enc = bundle.tokenizer.encode(text, max_length=model.config.max_position_embeddings)
    ids = torch.tensor([enc.ids])
    where = ids == bundle.tokenizer.mask_id
    res = []
    if where.any():
        logits = model(ids, mlm_positions=where).mlm_logits  # (N, V)
        probs = logits.softmax(-1).topk(k, dim=-1)
        for p, i in zip(probs.values, probs.indices):
            res.append(
                [(bundle.tokenizer.ids_to_tokens[j], round(float(q), 4)) for q, j in zip(p.tolist(), i.tolist())]
            )
    model.train(was_training)
    return res


# ---- checkpoints -----------------------------------------------------------------------------


def save_checkpoint(folder: Path, bundle: Bundle, opt, state: dict) -> None:
    """model + optimizer + loop state, written to a temporary folder and renamed into place."""
    folder = Path(folder)
    tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}.tmp"))  # a killed save's
    # leftover is removed by the next save (bert.fileio.replace_dir)
    try:
        save(bundle, tmp / "model")
        torch.save(opt.state_dict(), tmp / "optimizer.pt")
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
) -> Iterator[dict]:
    """Train, yielding metrics dicts; the last one has event "done" and the final bundle path.

    on_start(bundle) is called once the model and its tokenizer exist (a vocabulary trained on
    the corpus is only known then); on_step(step, model) before the first step of this call and
    after each optimizer step (e.g. bert.attention_snapshots.AttentionSnapshots). Both only on
    rank 0."""
    if args.threads:
        torch.set_num_threads(args.threads)
    rank, world = _dist_info()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    ckpt = out / "checkpoint"
    train_c, valid_c = training_split(args, corpus)
    opt_state, state = None, {"step": 0, "epoch": 0, "batch": 0, "best": None}
    if resume and (ckpt / "state.json").is_file():
        bundle, opt_state, state = load_checkpoint(ckpt)
        yield {"event": "resumed", "step": state["step"]}
    elif bundle is None:
        bundle = initial_bundle(args, train_c)
    tok = bundle.tokenizer
    model = bundle.model
    if args.max_seq_length > model.config.max_position_embeddings:
        raise TrainingError(
            f"max_seq_length {args.max_seq_length} exceeds the model's {model.config.max_position_embeddings} positions"
        )
    kw = dict(cls_id=tok.cls_id, sep_id=tok.sep_id, max_seq_length=args.max_seq_length, seed=args.seed)
    train_ds = PretrainingDataset(tokenize_corpus(train_c, tok, cache=args.cache_tokens), **kw)
    valid_ds = PretrainingDataset(tokenize_corpus(valid_c, tok, cache=args.cache_tokens), **kw)
    masker = MLMMasker.from_tokenizer(tok, args.mlm_probability, args.whole_word)
    eval_batches = fixed_eval_batches(valid_ds, masker, args.eval_sequences, 32)
    baseline_id = int(token_counts(train_ds.documents, len(tok)).argmax())
    model.train()
    model.bert.embeddings.word_embeddings.weight.requires_grad_(not args.freeze_word_embeddings)
    net = model
    if world > 1:
        net = torch.nn.parallel.DistributedDataParallel(model)
    opt = adamw(model, args.lr, args.weight_decay, {"mlm.": args.head_lr_scale, "nsp.": args.head_lr_scale})
    if opt_state is not None:
        opt.load_state_dict(opt_state)
    if rank == 0:
        yield {
            "event": "start",
            "step": state["step"],
            "train_documents": train_c.num_documents,
            "valid_documents": valid_c.num_documents,
            "train_tokens": train_ds.num_tokens,
            "parameters": sum(p.numel() for p in model.parameters()),
            "world_size": world,
            "baseline_token": tok.ids_to_tokens[baseline_id],
        }
    step, epoch, start = state["step"], state["epoch"], state["batch"]
    if rank == 0 and on_start is not None:
        on_start(bundle)
    if rank == 0 and on_step is not None:
        on_step(step, model)
    t0, tokens, acc = (
        time.perf_counter(),
        0,
        {"mlm_loss": 0.0, "mlm_right": 0, "mlm_n": 0, "nsp_loss": 0.0, "nsp_right": 0, "nsp_n": 0, "k": 0},
    )
    while step < args.steps:
        k = start
        for batch in train_ds.batches(epoch, args.batch_size, masker, rank=rank, world_size=world, start=start):
            if step >= args.steps or (stop is not None and stop.is_set()):
                break
            lr = lr_at(step, args.lr, args.warmup_steps, args.steps)
            set_lr(opt, lr)
            torch.manual_seed(args.seed * 7919 + step * world + rank)  # dropout, reproducible
            res = net(
                batch["input_ids"],
                batch["token_type_ids"],
                batch["attention_mask"],
                mlm_labels=batch["mlm_labels"],
                nsp_labels=batch["nsp_labels"],
            )
            if not torch.isfinite(res.loss):
                raise TrainingError(
                    f"the loss became {res.loss.item()} at step {step}: the learning "
                    f"rate {args.lr:g} is too high. The last good checkpoint is kept."
                )
            opt.zero_grad(set_to_none=True)
            res.loss.backward()
            gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
            opt.step()
            step += 1
            k += 1
            if on_step is not None and rank == 0:
                on_step(step, model)
            tokens += int(batch["attention_mask"].sum()) * world
            targets = batch["mlm_labels"][batch["mlm_labels"] != -100]
            acc["mlm_loss"] += res.mlm_loss.item()
            acc["mlm_right"] += (res.mlm_logits.argmax(-1) == targets).sum().item()
            acc["mlm_n"] += targets.numel()
            acc["nsp_loss"] += res.nsp_loss.item()
            acc["nsp_right"] += (res.nsp_logits.argmax(-1) == batch["nsp_labels"]).sum().item()
            acc["nsp_n"] += len(batch["nsp_labels"])
            acc["k"] += 1
            if rank == 0 and (step % args.log_every == 0 or step == args.steps):
                dt = time.perf_counter() - t0
                yield {
                    "event": "train",
                    "step": step,
                    "epoch": epoch,
                    "lr": lr,
                    "mlm_loss": acc["mlm_loss"] / acc["k"],
                    "mlm_acc": acc["mlm_right"] / max(acc["mlm_n"], 1),
                    "nsp_loss": acc["nsp_loss"] / acc["k"],
                    "nsp_acc": acc["nsp_right"] / max(acc["nsp_n"], 1),
                    "grad_norm": float(gnorm),
                    "tokens_per_s": tokens / dt,
                    "seconds": dt,
                }
                t0, tokens = time.perf_counter(), 0
                acc = {key: 0 if isinstance(v, int) else 0.0 for key, v in acc.items()}
            if rank == 0 and (step % args.eval_every == 0 or step == args.steps):
                m = evaluate(model, eval_batches, baseline_id)
                yield {"event": "eval", "step": step, **m, "probe": probe_predictions(bundle, args.probe)}
            if rank == 0 and args.snapshot_every and step % args.snapshot_every == 0:
                save(bundle, out / "snapshots" / f"step-{step:06d}")
            if rank == 0 and step % args.save_every == 0:
                save_checkpoint(ckpt, bundle, opt, {"step": step, "epoch": epoch, "batch": k, "args": asdict(args)})
        else:
            epoch, start = epoch + 1, 0
            continue
        break
    stopped = step < args.steps
    # a stop event with `hurry` (the app: its user's tab was closed) ends at once: the final model
    # is saved, but not the checkpoint to resume from (with its optimizer) nor a last scoring
    hurry = stopped and stop is not None and getattr(stop, "hurry", False)
    if rank == 0:
        if not hurry:
            save_checkpoint(ckpt, bundle, opt, {"step": step, "epoch": epoch, "batch": k, "args": asdict(args)})
        final = out / "final"
        save(bundle, final)
        m = {} if hurry else evaluate(model, eval_batches, baseline_id)
        yield {"event": "done", "step": step, "stopped": stopped, "path": str(final), **m}
    if world > 1:
        dist.barrier()
    model.eval()
