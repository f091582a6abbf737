"""The everyday cloze set: sentences a teacher would type, one [MASK] each, with accepted answers.

    items = load_cloze()                      # assets/eval/everyday_cloze.tsv
    report = evaluate_cloze(bundle, items)    # report.top1, report.top5, report.misses
    evaluate_cloze(bundle, items, mask_kind="causal")   # the same weights reading left only

An item counts at top-k when any accepted answer is among the model's k most probable word
pieces at the [MASK] (punctuation and special tokens are skipped: a person would not accept them).

Each item may say where its clue stands (a fourth column): "left" when the words before the gap
are enough to fill it, "right" when the answer needs words after it. A model that reads left
only (bert/attention_masks.py "causal") cannot see a right clue, so the report splits by side.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..attention_masks import BIDIRECTIONAL, MaskKind
from ..checkpoint.builtins import ASSETS
from ..errors import DataError
from ..tokenizer.vocab import SPECIAL_TOKENS

CLOZE_PATH = ASSETS / "eval" / "everyday_cloze.tsv"


@dataclass(frozen=True)
class ClozeItem:
    kind: str  # "fact", "grammar" or "sense"
    sentence: str  # with exactly one [MASK]
    answers: tuple[str, ...]  # lower-case words a person would accept
    clue: str | None = None  # "left" or "right": where the words that decide the answer stand


@dataclass
class ClozeReport:
    n: int
    top1: float
    top5: float
    by_kind: dict[str, tuple[float, float, int]]  # kind -> (top-1, top-5, n)
    by_side: dict[str, tuple[float, float, int]] = field(default_factory=dict)  # clue side -> (top-1, top-5, n)
    mask_kind: MaskKind = BIDIRECTIONAL
    predictions: list[list[str]] = field(default_factory=list)  # top-5 words per item
    misses: list[tuple[ClozeItem, list[str]]] = field(default_factory=list)  # not in top-5


CLUE_SIDES = ("left", "right")
FORMAT = "kind<TAB>sentence with one [MASK]<TAB>answers separated by |[<TAB>clue: left or right]"


def load_cloze(path: str | Path = CLOZE_PATH) -> list[ClozeItem]:
    """The items of a cloze file: three columns (kind, sentence, answers) or four (and the
    clue's side); a line of any other shape, or a side other than left/right, is a DataError
    naming its line. Lines starting with # are comments."""
    items = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) not in (3, 4) or parts[1].count("[MASK]") != 1:
            raise DataError(f"{Path(path).name} line {n}: expected {FORMAT}")
        clue = parts[3].strip().lower() if len(parts) == 4 else None
        if clue is not None and clue not in CLUE_SIDES:
            raise DataError(f"{Path(path).name} line {n}: the clue column must be left or right, not {parts[3]!r}")
        answers = tuple(a.strip().lower() for a in parts[2].split("|") if a.strip())
        items.append(ClozeItem(parts[0].strip(), parts[1].strip(), answers, clue))
    return items


def words_only(tokens: list[str], specials: set[str]) -> list[int]:
    return [
        i for i, t in enumerate(tokens) if t not in specials and not t.startswith("##") and any(c.isalnum() for c in t)
    ]


def _rates(counts: dict[str, list[int]]) -> dict[str, tuple[float, float, int]]:
    """group -> [top-1 hits, top-k hits, n]  ->  group -> (top-1, top-k, n)."""
    return {g: (v[0] / v[2], v[1] / v[2], v[2]) for g, v in counts.items()}


def evaluate_cloze(
    bundle, items: list[ClozeItem] | None = None, k: int = 5, mask_kind: MaskKind = BIDIRECTIONAL
) -> ClozeReport:
    """Top-1 / top-k of a model with an MLM head on the cloze items (one forward pass each),
    each read under `mask_kind` (bert/attention_masks.py), split by kind and by clue side
    (items without a side are left out of by_side)."""
    import torch

    from .mlm import mlm_topk

    items = load_cloze() if items is None else items
    specials = set(getattr(bundle.tokenizer, "special_tokens", SPECIAL_TOKENS))
    hit1 = hit5 = 0
    kinds: dict[str, list[int]] = {}
    sides: dict[str, list[int]] = {}
    preds, misses = [], []
    with torch.inference_mode():
        for it in items:
            p = mlm_topk(bundle, it.sentence, k=k + 20, mask_kind=mask_kind)
            toks = p.top_tokens[0]
            words = [toks[i] for i in words_only(toks, specials)][:k]
            preds.append(words)
            h1 = bool(words) and words[0] in it.answers
            h5 = any(w in it.answers for w in words)
            hit1 += h1
            hit5 += h5
            groups = [kinds.setdefault(it.kind, [0, 0, 0])]
            if it.clue is not None:
                groups.append(sides.setdefault(it.clue, [0, 0, 0]))
            for g in groups:
                g[0] += h1
                g[1] += h5
                g[2] += 1
            if not h5:
                misses.append((it, words))
    n = max(1, len(items))
    return ClozeReport(
        n=len(items),
        top1=hit1 / n,
        top5=hit5 / n,
        by_kind=_rates(kinds),
        by_side=_rates(sides),
        mask_kind=mask_kind,
        predictions=preds,
        misses=misses,
    )


def _mask_kind_arg(text: str) -> MaskKind:
    """--pattern: a name, or a number (a prefix length)."""
    return int(text) if text.strip().isdigit() else text.strip()


def main(argv: list[str] | None = None) -> int:
    import argparse

    from ..checkpoint.load import load

    ap = argparse.ArgumentParser(
        prog="python -m bert.analysis.cloze", description="Everyday cloze top-1/top-5 of a model."
    )
    ap.add_argument("model", nargs="?", default="minilm-l6")
    ap.add_argument("--misses", action="store_true", help="list the items not in the top 5")
    ap.add_argument(
        "--pattern",
        type=_mask_kind_arg,
        action="append",
        help="attention mask: bidirectional (default), causal, or a prefix length k; give it twice to compare",
    )
    args = ap.parse_args(argv)
    bundle = load(args.model)
    for mask_kind in args.pattern or [BIDIRECTIONAL]:
        r = evaluate_cloze(bundle, mask_kind=mask_kind)
        print(f"{args.model} ({mask_kind}): everyday cloze top-1 {r.top1:.3f}, top-5 {r.top5:.3f} on {r.n} sentences")
        for kd, (t1, t5, n) in sorted(r.by_kind.items()):
            print(f"  {kd:8} top-1 {t1:.3f}  top-5 {t5:.3f}  ({n})")
        for side, (t1, t5, n) in sorted(r.by_side.items()):
            print(f"  clue {side:5} top-1 {t1:.3f}  top-5 {t5:.3f}  ({n})")
        if args.misses:
            for it, words in r.misses:
                print(f"  miss: {it.sentence} -> {', '.join(words)}  (accepts {'|'.join(it.answers)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
