"""The everyday cloze set: sentences a teacher would type, one [MASK] each, with accepted answers.

    items = load_cloze()                      # assets/eval/everyday_cloze.tsv
    report = evaluate_cloze(bundle, items)    # report.top1, report.top5, report.misses

An item counts at top-k when any accepted answer is among the model's k most probable word
pieces at the [MASK] (punctuation and special tokens are skipped: a person would not accept them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..errors import DataError
from ..tokenizer.vocab import SPECIAL_TOKENS

CLOZE_PATH = Path(__file__).resolve().parent.parent.parent / "assets" / "eval" / "everyday_cloze.tsv"


@dataclass(frozen=True)
class ClozeItem:
    kind: str  # "fact", "grammar" or "sense"
    sentence: str  # with exactly one [MASK]
    answers: tuple[str, ...]  # lower-case words a person would accept


@dataclass
class ClozeReport:
    n: int
    top1: float
    top5: float
    by_kind: dict[str, tuple[float, float, int]]  # kind -> (top-1, top-5, n)
    predictions: list[list[str]] = field(default_factory=list)  # top-5 words per item
    misses: list[tuple[ClozeItem, list[str]]] = field(default_factory=list)  # not in top-5


def load_cloze(path: str | Path = CLOZE_PATH) -> list[ClozeItem]:
    items = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) != 3 or parts[1].count("[MASK]") != 1:
            raise DataError(f"{Path(path).name} line {n}: expected kind<TAB>sentence with one [MASK]<TAB>answers")
        answers = tuple(a.strip().lower() for a in parts[2].split("|") if a.strip())
        items.append(ClozeItem(parts[0].strip(), parts[1].strip(), answers))
    return items


def _words_only(tokens: list[str], specials: set[str]) -> list[int]:
    return [
        i for i, t in enumerate(tokens) if t not in specials and not t.startswith("##") and any(c.isalnum() for c in t)
    ]


def evaluate_cloze(bundle, items: list[ClozeItem] | None = None, k: int = 5) -> ClozeReport:
    """Top-1 / top-k of a model with an MLM head on the cloze items (one forward pass each)."""
    import torch

    from .mlm import mlm_topk

    items = load_cloze() if items is None else items
    specials = set(getattr(bundle.tokenizer, "special_tokens", SPECIAL_TOKENS))
    hit1 = hit5 = 0
    kinds: dict[str, list[int]] = {}
    preds, misses = [], []
    with torch.inference_mode():
        for it in items:
            p = mlm_topk(bundle, it.sentence, k=k + 20)
            toks = p.top_tokens[0]
            words = [toks[i] for i in _words_only(toks, specials)][:k]
            preds.append(words)
            h1 = bool(words) and words[0] in it.answers
            h5 = any(w in it.answers for w in words)
            hit1 += h1
            hit5 += h5
            kinds.setdefault(it.kind, [0, 0, 0])
            kinds[it.kind][0] += h1
            kinds[it.kind][1] += h5
            kinds[it.kind][2] += 1
            if not h5:
                misses.append((it, words))
    n = max(1, len(items))
    by_kind = {kd: (v[0] / v[2], v[1] / v[2], v[2]) for kd, v in kinds.items()}
    return ClozeReport(n=len(items), top1=hit1 / n, top5=hit5 / n, by_kind=by_kind, predictions=preds, misses=misses)


def main(argv: list[str] | None = None) -> int:
    import argparse

    from ..checkpoint.load import load

    ap = argparse.ArgumentParser(
        prog="python -m bert.analysis.cloze", description="Everyday cloze top-1/top-5 of a model."
    )
    ap.add_argument("model", nargs="?", default="minilm-l6")
    ap.add_argument("--misses", action="store_true", help="list the items not in the top 5")
    args = ap.parse_args(argv)
    r = evaluate_cloze(load(args.model))
    print(f"{args.model}: everyday cloze top-1 {r.top1:.3f}, top-5 {r.top5:.3f} on {r.n} sentences")
    for kd, (t1, t5, n) in sorted(r.by_kind.items()):
        print(f"  {kd:8} top-1 {t1:.3f}  top-5 {t5:.3f}  ({n})")
    if args.misses:
        for it, words in r.misses:
            print(f"  miss: {it.sentence} -> {', '.join(words)}  (accepts {'|'.join(it.answers)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
