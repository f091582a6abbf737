"""Scores of a tagger, per word: accuracy, per-tag precision and recall, the confusion matrix, and
entity-level F1 by seqeval's definition (its default mode, as conlleval counts).

Entities: a tag is PREFIX-TYPE (B-PER, I-LOC, E-ORG, S-MISC) or O; a tag of no such prefix
("NN") is one letter of prefix and no type, so entity F1 means nothing for part-of-speech tags
(`is_bio` says whether a tag set is of that kind). A chunk ENDS before a tag when the previous
tag was E or S, or was B or I and this one is B, S or O, or the type changes (after a non-O); one
STARTS at a tag that is B or S, or I or E after O, E or S, or whose type differs from the
previous one (a non-O tag). So an I- after O starts an entity, as in conlleval. Micro-averaged:
precision = exact (sentence, type, first, last) matches / predicted entities; recall / gold ones.
"""

from __future__ import annotations

from dataclasses import dataclass

_PREFIXES = ("B-", "I-", "E-", "S-")


def is_bio(tags) -> bool:
    """Whether a tag set is entities' (O and PREFIX-TYPE tags only, at least one of these)."""
    tags = set(tags)
    return bool(tags - {"O"}) and all(t == "O" or (t[:2] in _PREFIXES and len(t) > 2) for t in tags)


def _split(tag: str) -> tuple[str, str]:
    return tag[:1], (tag[1:].split("-", 1)[-1] or "_")


def _ends(prev: str, prev_type: str, cur: str, cur_type: str) -> bool:
    return (
        prev in ("E", "S")
        or (prev in ("B", "I") and cur in ("B", "S", "O"))
        or (prev not in ("O", ".") and prev_type != cur_type)
    )


def _starts(prev: str, prev_type: str, cur: str, cur_type: str) -> bool:
    return (
        cur in ("B", "S")
        or (cur in ("I", "E") and prev in ("O", "E", "S"))
        or (cur not in ("O", ".") and prev_type != cur_type)
    )


def entities(tags: list[str]) -> list[tuple[str, int, int]]:
    """(type, first, last) of every entity in one sentence's tags (word indices, both inclusive)."""
    out = []
    prev, prev_type, begin = "O", "", 0
    for i, tag in enumerate([*tags, "O"]):
        cur, cur_type = _split(tag)
        if _ends(prev, prev_type, cur, cur_type):
            out.append((prev_type, begin, i - 1))
        if _starts(prev, prev_type, cur, cur_type):
            begin = i
        prev, prev_type = cur, cur_type
    return out


def entity_scores(gold: list[list[str]], pred: list[list[str]]) -> dict[str, float]:
    """Micro precision, recall and F1 over the entities of every sentence (0 where undefined)."""
    g = {(k, *e) for k, tags in enumerate(gold) for e in entities(tags)}
    p = {(k, *e) for k, tags in enumerate(pred) for e in entities(tags)}
    hit = len(g & p)
    precision = hit / len(p) if p else 0.0
    recall = hit / len(g) if g else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


@dataclass
class TagReport:
    tags: list[str]
    confusion: list[list[int]]  # [gold][predicted] word counts
    accuracy: float  # words tagged right / words
    precision: dict[str, float]  # per tag, over words
    recall: dict[str, float]
    support: dict[str, int]  # gold words of each tag
    entity: dict[str, float] | None  # precision, recall, f1 of entities (None: not an entity tag set)


def tag_report(gold: list[list[int]], pred: list[list[int]], tags: list[str]) -> TagReport:
    """Every score of a tagger's words: gold and predicted tag indices per sentence."""
    K = len(tags)
    confusion = [[0] * K for _ in range(K)]
    for gs, ps in zip(gold, pred):
        for a, b in zip(gs, ps):
            confusion[a][b] += 1
    total = sum(map(sum, confusion))
    right = sum(confusion[k][k] for k in range(K))
    col = [sum(confusion[a][b] for a in range(K)) for b in range(K)]
    row = [sum(r) for r in confusion]
    precision = {t: confusion[k][k] / col[k] if col[k] else 0.0 for k, t in enumerate(tags)}
    recall = {t: confusion[k][k] / row[k] if row[k] else 0.0 for k, t in enumerate(tags)}
    entity = None
    if is_bio(tags):
        entity = entity_scores([[tags[i] for i in s] for s in gold], [[tags[i] for i in s] for s in pred])
    return TagReport(tags, confusion, right / total if total else 0.0, precision, recall, dict(zip(tags, row)), entity)
