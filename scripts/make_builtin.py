"""Turn a pre-training run into a built-in checkpoint in assets/<name> with its model card.

    python scripts/make_builtin.py runs/minilm-l6 minilm-l6 [--eval-sequences 1000]

Evaluates the run's last checkpoint on validation documents never trained on (15 % of word
pieces replaced by [MASK]), records the exact command, data, steps, wall time and the curves'
last values from the run's log, and writes fp16 weights (loading upcasts to fp32).

It imports `bert` as an installed package: `make setup-dev` installs this repository in editable
mode (`pip install -e .`), or run it as `PYTHONPATH=. python scripts/make_builtin.py ...`.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from bert.train.examples import PretrainingDataset, token_counts, tokenize_corpus
from bert.train.masking import MLMMasker
from bert.train.pretrain_args import PretrainArgs
from bert.train.pretrain_eval import evaluate, fixed_eval_batches, probe_predictions
from bert.train.pretrain_setup import training_split

ROOT = Path(__file__).resolve().parent.parent

PROBES = [
    "the capital of france is [MASK] .",
    "i went to the [MASK] to buy some milk .",
    "she wrote a [MASK] to her friend .",
    "the [MASK] was shining and the sky was blue .",
    "he drove his [MASK] to work every day .",
    "the government announced a new [MASK] on tuesday .",
    "they have [MASK] working here for years .",
    "there [MASK] many people in the room .",
]


# how the card's "What it read:" line names each corpus (python -m bert.data.corpus has the details)
READ_TITLES = {
    "wiki": "a Wikipedia sample",
    "brown": "the Brown Corpus",
    "bbc": "BBC News",
    "wordnet": "WordNet glosses",
    "gcide": "the GCIDE dictionary",
    "sotu": "State of the Union addresses",
}
BERT_BASE_WORDS = 3.3e9  # BooksCorpus + English Wikipedia (Devlin et al. 2019)


def read_line(corpora: list[str], words: int, init: str, note: str = "") -> str:
    """The card's one line on what the model read, next to BERT-base's 3.3 B words."""
    names = ", ".join(READ_TITLES.get(c, c) for c in corpora)
    start = "from random weights" if init == "scratch" else f"starting from `{init}`{note}"
    ratio = float(f"{BERT_BASE_WORDS / max(words, 1):.2g}")  # two significant figures
    return (
        f"What it read: {words / 1e6:.1f} M words of English ({names}), {start}; "
        f"BERT-base read 3.3 B words, about {ratio:,.0f} times more."
    )


def command_line(args: dict) -> str:
    defaults = PretrainArgs(out=args["out"]).__dict__
    parts = ["python -m bert pretrain"]
    for k, v in args.items():
        if k != "out" and v == defaults.get(k):
            continue
        flag = "--" + k.replace("_", "-")
        if isinstance(v, bool):
            parts.append(flag if v else "--no-" + k.replace("_", "-"))
        elif isinstance(v, list):
            parts.append(flag + " " + " ".join(shlex.quote(str(x)) for x in v))
        elif v is not None:
            parts.append(f"{flag} {shlex.quote(str(v))}")
    return " ".join(parts)


def average_weights(bundle, others) -> None:
    """Replace the bundle's weights by the mean of its own and the others' (in place)."""
    import torch

    states = [o.model.state_dict() for o in others]
    seen = set()  # tied tensors (MLM decoder = word embeddings) once
    with torch.no_grad():
        for k, v in bundle.model.state_dict().items():
            if v.is_floating_point() and v.data_ptr() not in seen:
                seen.add(v.data_ptr())
                v.copy_(torch.stack([v] + [st[k].to(v.dtype) for st in states]).mean(0))


def trim_positions(bundle, n: int) -> None:
    """Rows n.. of the position table never saw a sequence that long: drop them, so that the app
    truncates longer inputs (with a notice) instead of running them through untrained rows."""
    import torch

    emb = bundle.model.bert.embeddings
    old = emb.position_embeddings
    new = torch.nn.Embedding(n, old.embedding_dim)
    with torch.no_grad():
        new.weight.copy_(old.weight[:n])
    emb.position_embeddings = new
    bundle.config.max_position_embeddings = n


def main() -> int:
    import bert.checkpoint.builtins

    ap = argparse.ArgumentParser()
    ap.add_argument("run")
    ap.add_argument("name")
    ap.add_argument("--eval-sequences", type=int, default=1000)
    ap.add_argument("--log", default=None)
    ap.add_argument("--note", default="")
    ap.add_argument("--start-note", default="", help="said of the start after its name in the 'What it read' line")
    ap.add_argument(
        "--average",
        nargs="*",
        default=[],
        metavar="MODEL",
        help="average the run's weights with these models' (same architecture): "
        "a soup of, say, the ends of two learning-rate schedules",
    )
    ap.add_argument(
        "--trim-positions",
        action="store_true",
        help="keep only the position embeddings the run trained (its max sequence length)",
    )
    a = ap.parse_args()
    run = Path(a.run)
    state = json.loads((run / "checkpoint" / "state.json").read_text())
    args = PretrainArgs(**state["args"])
    bundle = bert.load(run / "checkpoint" / "model")
    if a.average:
        average_weights(bundle, [bert.load(m) for m in a.average])
    trimmed = a.trim_positions and args.max_seq_length < bundle.config.max_position_embeddings
    if trimmed:
        trim_positions(bundle, args.max_seq_length)
    train_c, valid_c = training_split(args)
    tok = bundle.tokenizer
    kw = dict(cls_id=tok.cls_id, sep_id=tok.sep_id, max_seq_length=args.max_seq_length, seed=args.seed)
    valid = PretrainingDataset(tokenize_corpus(valid_c, tok), **kw)
    baseline_id = int(token_counts(tokenize_corpus(train_c, tok), len(tok)).argmax())
    masker = MLMMasker.from_tokenizer(tok, args.mlm_probability)
    m = evaluate(bundle.model, fixed_eval_batches(valid, masker, a.eval_sequences, 32), baseline_id)
    log_path = Path(a.log) if a.log else run.with_suffix(".log")
    events = (
        [json.loads(x) for x in log_path.read_text().splitlines() if x.startswith("{")] if log_path.is_file() else []
    )
    train = [e for e in events if e.get("event") == "train"]
    evals = [e for e in events if e.get("event") == "eval"]
    wall = sum(e["seconds"] for e in train)
    probes = {p: probe_predictions(bundle, p) for p in PROBES}
    lines = [
        f"# {a.name}",
        "",
        f"{bert.checkpoint.builtins.BUILTINS.get(a.name, '')}.",
        "",
        read_line(args.corpora, train_c.num_words, args.init, a.start_note),
        "",
        "## How it was made",
        "",
        f"Made by this project's own pre-training code, {state['step']} steps "
        f"(batch {args.batch_size} × up to {args.max_seq_length} tokens, "
        f"{state['step'] * args.batch_size:,} sequences), about {wall / 3600:.1f} h of training "
        "on a shared 2-core CPU:",
        "",
        "```",
        command_line(state["args"]),
        "```",
        "",
        f"- Start: `{args.init}`"
        + (" (random weights; vocabulary " + args.vocab + ")" if args.init == "scratch" else ""),
        f"- Data: {', '.join(args.corpora)} (see `python -m bert.data.corpus`; Wikipedia sample "
        "CC BY-SA, Brown corpus redistribution permitted, BBC News research use), split by "
        f"document: {train_c.num_documents} documents for training, {valid_c.num_documents} "
        "held out.",
        f"- Config: {bundle.config.num_hidden_layers} layers, hidden {bundle.config.hidden_size}, "
        f"{bundle.config.num_attention_heads} heads, vocabulary {bundle.config.vocab_size:,}, "
        f"{bundle.num_parameters:,} parameters; weights stored in fp16."
        + (
            f" Only the {args.max_seq_length} positions it was trained on are kept "
            f"(`--trim-positions`): longer inputs are cut, with a notice."
            if trimmed
            else ""
        ),
        "",
    ]
    if train:
        t = train[-1]
        lines += [
            f"- Last training log (step {t['step']}): MLM loss {t['mlm_loss']:.3f}, "
            f"MLM accuracy {t['mlm_acc']:.3f}, NSP accuracy {t['nsp_acc']:.3f}, "
            f"learning rate {t['lr']:.2e}, {t['tokens_per_s']:.0f} tokens/s."
        ]
    if evals:
        lines += [
            "- Validation curve (step: top-1 / top-5 / NSP): "
            + "; ".join(f"{e['step']}: {e['mlm_top1']:.3f} / {e['mlm_top5']:.3f} / {e['nsp_acc']:.3f}" for e in evals)
        ]
    lines += [
        "",
        "## Evaluation on held-out documents",
        "",
        f"{m['sequences']} validation sequences, {m['masked_tokens']} masked word pieces "
        "(15 %, all replaced by [MASK]):",
        "",
        "| MLM top-1 | MLM top-5 | MLM loss | NSP accuracy | most-frequent-token baseline |",
        "|---|---|---|---|---|",
        f"| {m['mlm_top1']:.4f} | {m['mlm_top5']:.4f} | {m['mlm_loss']:.3f} | {m['nsp_acc']:.3f} | "
        f'{m["baseline_top1"]:.3f} (always "{tok.ids_to_tokens[baseline_id]}") |',
        "",
        "## Predictions on a few sentences",
        "",
    ]
    for p, preds in probes.items():
        words = ", ".join(f"{w} ({q:.2f})" for w, q in preds[0]) if preds else "-"
        lines.append(f"- `{p}` → {words}")
    if a.note:
        lines += ["", a.note]
    lines += [
        "",
        "Licence: the weights are ours (Apache-2.0 where they derive from all-MiniLM-L6-v2); "
        "see the data licences above.",
        "",
    ]
    card = "\n".join(lines)
    bundle.name = a.name
    bert.save(bundle, ROOT / "assets" / a.name, card=card, half=True)
    print(json.dumps({"name": a.name, "step": state["step"], **m}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
