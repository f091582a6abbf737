"""Exact match and F1 of an answer, by the official SQuAD evaluation's definitions.

Both compare NORMALISED answers: lower case, punctuation removed (string.punctuation), the
articles a / an / the removed as words, whitespace collapsed. EM: the normalised texts are
equal. F1: over the normalised words, 2 P R / (P + R) with P = shared words / predicted words
and R = shared words / gold words (shared counted with multiplicity). Against several gold
answers the best is taken. SQuAD 2.0's rules for "no answer" (both v1.1 and v2.0 data): a gold
list of only empty answers means the gold answer is "", and F1 with an empty side is 1 when both
are empty, else 0.
"""

from __future__ import annotations

import re
import string
from collections import Counter

_PUNCT = set(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    text = "".join(ch for ch in text.lower() if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, gold: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(gold))


def f1(prediction: str, gold: str) -> float:
    p, g = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if not p or not g:
        return float(p == g)
    shared = sum((Counter(p) & Counter(g)).values())
    if not shared:
        return 0.0
    precision, recall = shared / len(p), shared / len(g)
    return 2 * precision * recall / (precision + recall)


def _golds(golds: list[str]) -> list[str]:
    kept = [a for a in golds if normalize_answer(a)]
    return kept or [""]


def best_scores(prediction: str, golds: list[str]) -> tuple[float, float]:
    """(EM, F1) of one prediction against its gold answers: the best over them."""
    golds = _golds(golds)
    return max(exact_match(prediction, g) for g in golds), max(f1(prediction, g) for g in golds)


def squad_scores(predictions: list[str], golds: list[list[str]]) -> dict[str, float]:
    """Mean EM and F1 over questions, in percent, as the official script reports them."""
    if not predictions:
        return {"exact_match": 0.0, "f1": 0.0}
    pairs = [best_scores(p, g) for p, g in zip(predictions, golds)]
    return {
        "exact_match": 100.0 * sum(e for e, _ in pairs) / len(pairs),
        "f1": 100.0 * sum(f for _, f in pairs) / len(pairs),
    }
