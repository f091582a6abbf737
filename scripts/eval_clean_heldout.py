"""Held-out MLM/NSP of built-in models on the documents that no run of minilm-l6's lineage trained
on: held out under split seed 0 (every run but one) and under split seed 1 (runs/minilm-more2,
before the split stopped following --seed). The figures in assets/minilm-l6/card.md.

    python scripts/eval_clean_heldout.py MODEL[,MODEL...] [SEQUENCES] [CORPORA]
"""

import json
import sys

import torch

import bert
from bert.data.corpus.base import Corpus
from bert.data.corpus.registry import split_corpora
from bert.train.examples import PretrainingDataset, token_counts, tokenize_corpus
from bert.train.masking import MLMMasker
from bert.train.pretrain_eval import evaluate, fixed_eval_batches


def clean_documents(corpora: list[str]) -> tuple[Corpus, Corpus]:
    """(seed-0 training part, the documents held out under both seeds)."""
    train0, valid0 = split_corpora(corpora, 0.05, seed=0)
    _, valid1 = split_corpora(corpora, 0.05, seed=1)
    both = {tuple(d) for d in valid1.documents}
    idx = [i for i, d in enumerate(valid0.documents) if tuple(d) in both]
    docs, titles = [valid0.documents[i] for i in idx], [valid0.titles[i] for i in idx]
    return train0, Corpus(name="clean-heldout", documents=docs, meta={}, titles=titles)


def main(models: list[str], n: int, corpora: list[str]) -> None:
    torch.set_num_threads(1)
    train, clean = clean_documents(corpora)
    words = sum(len(s.split()) for d in clean.documents for s in d)
    for path in models:
        b = bert.load(path)
        tok = b.tokenizer
        valid = PretrainingDataset(
            tokenize_corpus(clean, tok), cls_id=tok.cls_id, sep_id=tok.sep_id, max_seq_length=128
        )
        base = int(token_counts(tokenize_corpus(train, tok), len(tok)).argmax())
        m = evaluate(b.model, fixed_eval_batches(valid, MLMMasker.from_tokenizer(tok, 0.15), n, 32), base)
        row = {"model": path, "documents": len(clean.documents), "words": words}
        print(json.dumps({**row, **{k: round(v, 4) if isinstance(v, float) else v for k, v in m.items()}}), flush=True)


if __name__ == "__main__":
    main(
        sys.argv[1].split(","),
        int(sys.argv[2]) if len(sys.argv) > 2 else 1000,
        sys.argv[3].split(",") if len(sys.argv) > 3 else ["wiki", "brown", "bbc"],
    )
