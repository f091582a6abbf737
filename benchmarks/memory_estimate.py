"""The training memory estimate (app/jobs/budget.py) against the peak a run settles at: for each
case a fresh subprocess builds a random model of that size on all-MiniLM-L6-v2's vocabulary,
trains it 7 steps of full-length batches on one thread (a classifier as bert/train/finetune.py
runs it, a tagger of 40 tags as bert/train/task_head_train.py does, embeddings frozen as the pages
default; an encoder-decoder of 2 decoder layers as bert/train/seq2seq.py does, then scores its
held-out pairs; next-word pre-training from scratch, then its evaluation) and prints its VmHWM
over what it held before the run. Run alone (about 20 minutes):

    python -m benchmarks.memory_estimate
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STEPS = 7  # the peak has settled by then: the allocator keeps more of the first steps' activations
TAGS = 40
# (kind, layers, hidden, heads, batch, tokens): all-minilm's size at the pages' settings, and a small model
CASES = [
    (kind, *size)
    for kind in ("classifier", "tagger")
    for size in ((6, 384, 12, 16, 64), (6, 384, 12, 16, 128), (6, 384, 12, 4, 512), (4, 256, 4, 16, 128))
]
# the Decoder on top (2 decoder layers on the encoder; tokens: a source's and a target's): the
# page's largest step (2,048 tokens) of short pairs and of long ones (200 tokens each way)
CASES += [("decoder", 6, 384, 12, 16, 128), ("decoder", 6, 384, 12, 4, 400)]
DECODER_LAYERS = 2
# next-word pre-training from scratch (minilm's vocabulary): the page's largest model at one 512-token
# sequence a step, and 16 x 128, each ending with an evaluation of 32 held-out sequences
CASES += [("next-word", 6, 384, 12, 1, 512), ("next-word", 6, 384, 12, 16, 128)]


def _hwm_mb() -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM")) / 1024


def _whole_words(tok, n: int) -> list[str]:
    """`n` vocabulary entries that are one piece each (so a sentence of T - 2 of them is T tokens)."""
    words = [w for w in tok.ids_to_tokens[2000:12000] if w.isalpha() and w.isascii()]
    return [w for w in words if tok.tokenize(w) == [w]][:n]


def one(kind: str, layers: int, hidden: int, heads: int, batch: int, tokens: int) -> dict:
    """One case in this process: {"peak_mb", "estimate_mb", "steps"}."""
    import gc

    import torch

    import bert
    from app.jobs import budget
    from bert.checkpoint.builtins import minilm_package_dir
    from bert.config import BertConfig
    from bert.model import BertForPreTraining

    tok = bert.Tokenizer.from_file(minilm_package_dir() / "vocab.txt")
    cfg = BertConfig(
        vocab_size=len(tok),
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=4 * hidden,
        max_position_embeddings=max(512, tokens),
    )
    torch.manual_seed(0)
    base = bert.Bundle(model=BertForPreTraining(cfg).eval(), tokenizer=tok, name="random")
    r = random.Random(0)
    words = _whole_words(tok, 2000)
    n = batch * STEPS * 4 // 3 + 1  # a quarter held out
    sentences = [[r.choice(words) for _ in range(tokens - 2)] for _ in range(n)]
    if kind == "next-word":
        import tempfile

        from bert.data.corpus.base import Corpus
        from bert.train.pretrain import pretrain
        from bert.train.pretrain_args import PretrainArgs

        docs = [[" ".join(r.choice(words) for _ in range(tokens))] for _ in range(200)]
        folder = tempfile.mkdtemp(prefix="memory-estimate-")
        size = dict(layers=layers, hidden=hidden, heads=heads, max_seq_length=tokens, batch_size=batch)
        schedule = dict(steps=STEPS, warmup_steps=1, eval_every=STEPS, eval_sequences=32, save_every=1000)
        split = dict(valid_fraction=0.2, cache_tokens=False)
        args = PretrainArgs(out=folder, init="scratch", objective="next-word", threads=1, **size, **schedule, **split)
        run = pretrain(args, bundle=base, corpus=Corpus(name="random", documents=docs))
        estimate = budget.pretrain_mb(layers, hidden, heads, len(tok), batch, tokens, next_word=True)
    elif kind == "decoder":
        from bert.seq2seq.tasks import Pairs
        from bert.train.seq2seq import Seq2SeqArgs, train_seq2seq

        texts = [" ".join(s[: tokens // 2 - 2]) for s in sentences]
        pairs = Pairs(sources=texts, targets=texts, label="random")
        held = Pairs(sources=texts[:batch], targets=texts[:batch], label="random")  # one scoring batch
        args = Seq2SeqArgs(
            encoder="random", decoder_layers=DECODER_LAYERS, batch_size=batch, steps=STEPS, eval_every=STEPS, threads=1
        )
        run = train_seq2seq(args, pairs, held, base)
        pair_tokens = (len(texts) + len(held)) * tokens
        estimate = budget.seq2seq_mb(cfg, DECODER_LAYERS, batch, tokens // 2, tokens // 2, pair_tokens=pair_tokens)
    elif kind == "tagger":
        from bert.data.tagged import TaggedData, split_tagged
        from bert.train.tagger_task import TaggerTask
        from bert.train.task_head_args import TaskHeadArgs
        from bert.train.task_head_train import train_task_head

        tags = [[r.randrange(TAGS) for _ in s] for s in sentences]
        data = TaggedData(sentences, tags, [f"T{k}" for k in range(TAGS)])
        args = TaskHeadArgs(threads=1, batch_size=batch, max_length=tokens, epochs=1, evals=1, max_valid=16)
        run = train_task_head(base, TaggerTask(*split_tagged(data, 0.25), args), args)
        estimate = budget.head_mb(cfg, batch, tokens, TAGS)
    else:
        from bert.data.labelled import LabelledData, stratified_split
        from bert.train.finetune import finetune
        from bert.train.finetune_args import FinetuneArgs

        data = LabelledData([" ".join(s) for s in sentences], [k % 2 for k in range(n)], ["a", "b"])
        args = FinetuneArgs(data="random", threads=1, batch_size=batch, max_length=tokens, epochs=1, max_valid=16)
        run = finetune(base, *stratified_split(data, 0.25), args)
        estimate = budget.finetune_mb(cfg, batch, tokens)
    gc.collect()
    before = _hwm_mb()
    done = list(run)[-1]
    return {"peak_mb": round(_hwm_mb() - before), "estimate_mb": estimate, "steps": getattr(done, "steps", None)}


def main() -> int:
    if sys.argv[1:2] == ["--one"]:
        kind, *sizes = sys.argv[2:]
        print(json.dumps(one(kind, *map(int, sizes))))
        return 0
    print(f"{'run':<11} {'model':<8} {'step':<7} {'measured':>9} {'estimate':>9} {'off':>6}")
    for kind, layers, hidden, heads, batch, tokens in CASES:
        cmd = [sys.executable, "-m", "benchmarks.memory_estimate", "--one", kind]
        cmd += [str(v) for v in (layers, hidden, heads, batch, tokens)]
        out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True)
        got = json.loads(out.stdout.strip().splitlines()[-1])
        off = got["estimate_mb"] / got["peak_mb"] - 1
        print(
            f"{kind:<11} {layers}x{hidden:<6} {batch}x{tokens:<4} {got['peak_mb']:>6} MB "
            f"{got['estimate_mb']:>6} MB {off:>+6.0%}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
