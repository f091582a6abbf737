"""Toy sequence-to-sequence tasks a class can watch a decoder learn, and uploaded pairs.

Built-in tasks (`TASKS`) make sentences of 3-8 words drawn from `WORDS` (twenty short English
words, each one token in BERT's vocabulary) and a target from each:

    reverse   the words in reverse order     "cat moon egg" -> "egg moon cat"
    sort      the words in alphabetical order "cat moon egg" -> "cat egg moon"
    cipher    each word replaced by its made-up code word "cat moon egg" -> "frum vash wib"

The held-out pairs' sources never occur among the training pairs, so exact match on them measures
the rule learned, not sentences remembered. An upload is a CSV of `source,target` rows
(`read_pairs_csv`), checked here: every row two non-empty sides of at most MAX_WORDS words, at
least MIN_PAIRS rows.
"""

from __future__ import annotations

import csv
import io
import random
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import DataError

WORDS = "apple bird cat dog egg fish goat hat ice jam kite lion moon nest owl pig queen rose sun tree".split()
CODE = dict(
    zip(WORDS, "zork blip frum gax wib tolk mip snaf drel yup kwo plin vash rulm jeb tof quib nish hap zel".split())
)
MIN_WORDS, MAX_TASK_WORDS = 3, 8
MAX_WORDS = 64  # a side of an uploaded pair
MIN_PAIRS = 10  # an upload: some to train on, some held out
MAX_PAIRS = 20_000
MAX_FILE_BYTES = 5 << 20


@dataclass(frozen=True)
class Task:
    title: str
    rule: str  # one line: what the target is
    target: Callable[[list[str]], list[str]]
    watch: str  # what its cross-attention should show once learned


TASKS = {
    "reverse": Task(
        "Reverse the words",
        "the same words in reverse order",
        lambda ws: ws[::-1],
        "the last source word is read first: the cross-attention is an anti-diagonal",
    ),
    "sort": Task(
        "Sort the words",
        "the same words in alphabetical order",
        sorted,
        "each step looks for the next word in the alphabet, wherever it stands in the source",
    ),
    "cipher": Task(
        "A made-up word cipher",
        "each word replaced by its code word (cat -> frum, moon -> vash, ...)",
        lambda ws: [CODE[w] for w in ws],
        "each step reads the source word at its own position: the cross-attention is a diagonal",
    ),
}
DEFAULT_TASK = "reverse"
SAMPLE_SOURCE = "cat moon egg apple"  # a source of the built-in tasks' words, to decode when no other is at hand


@dataclass
class Pairs:
    """Source and target texts, one pair per index."""

    sources: list[str]
    targets: list[str]
    label: str = ""  # where they came from, for the page

    def __len__(self) -> int:
        return len(self.sources)

    def head(self, n: int) -> list[tuple[str, str]]:
        return list(zip(self.sources[:n], self.targets[:n]))


def task_pairs(task: str, n_train: int, n_valid: int, seed: int = 0) -> tuple[Pairs, Pairs]:
    """(training pairs, held-out pairs) of a built-in task, all sources distinct; deterministic in seed."""
    if task not in TASKS:
        raise DataError(f"no built-in task {task!r} (the tasks: {', '.join(TASKS)})")
    rng = random.Random(f"{task}:{seed}")
    seen: set[str] = set()
    sources: list[str] = []
    want = n_train + n_valid
    for _ in range(want * 20):
        if len(sources) == want:
            break
        s = " ".join(rng.choice(WORDS) for _ in range(rng.randint(MIN_WORDS, MAX_TASK_WORDS)))
        if s not in seen:
            seen.add(s)
            sources.append(s)
    rule = TASKS[task].target
    targets = [" ".join(rule(s.split())) for s in sources]
    name = TASKS[task].title
    return (
        Pairs(sources[:n_train], targets[:n_train], name),
        Pairs(sources[n_train:], targets[n_train:], f"{name} (held out)"),
    )


def read_pairs_csv(data: bytes, name: str = "the file") -> Pairs:
    """An uploaded CSV of `source,target` rows (a header row of exactly those names is skipped).
    DataError, naming the row, for an empty side, a side over MAX_WORDS words, a row without two
    columns; and for fewer than MIN_PAIRS or more than MAX_PAIRS pairs."""
    if len(data) > MAX_FILE_BYTES:
        raise DataError(f"{name} is {len(data) / 2**20:.1f} MB: at most {MAX_FILE_BYTES >> 20} MB of pairs")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise DataError(f"{name} is not UTF-8 text: save it as a UTF-8 CSV") from None
    try:
        rows = [r for r in csv.reader(io.StringIO(text)) if any(c.strip() for c in r)]
    except csv.Error as e:
        raise DataError(f"{name} is not a readable CSV: {e}") from None
    if rows and [c.strip().lower() for c in rows[0]] == ["source", "target"]:
        rows = rows[1:]
    sources, targets = [], []
    for n, row in enumerate(rows, start=1):
        if len(row) != 2:
            raise DataError(f"row {n} of {name} has {len(row)} columns: each row is one source and one target")
        src, tgt = (c.strip() for c in row)
        for side, value in (("source", src), ("target", tgt)):
            if not value:
                raise DataError(f"row {n} of {name} has an empty {side}: every pair needs a source and a target")
            words = len(value.split())
            if words > MAX_WORDS:
                raise DataError(
                    f"row {n} of {name} has a {side} of {words:,} words: at most {MAX_WORDS} a side "
                    "(a toy task trains in minutes on short pairs)"
                )
        sources.append(src)
        targets.append(tgt)
        if len(sources) > MAX_PAIRS:
            raise DataError(f"{name} has more than {MAX_PAIRS:,} pairs: use at most that many")
    if len(sources) < MIN_PAIRS:
        raise DataError(
            f"{name} has {len(sources)} pair{'s' if len(sources) != 1 else ''}: at least {MIN_PAIRS} are needed "
            "(most to train on, some held out to score it)"
        )
    return Pairs(sources, targets, name)


def split_pairs(pairs: Pairs, valid_fraction: float = 0.1, seed: int = 0) -> tuple[Pairs, Pairs]:
    """(training, held-out) pairs: a pair whose source occurs twice goes wholly to one side; at
    least one held-out pair and one training pair."""
    groups: dict[str, list[int]] = {}
    for i, s in enumerate(pairs.sources):
        groups.setdefault(s, []).append(i)
    keys = list(groups)
    random.Random(seed).shuffle(keys)
    n_valid = min(max(1, round(len(keys) * valid_fraction)), len(keys) - 1)
    if n_valid < 1:
        raise DataError(f"{pairs.label or 'the pairs'} have one distinct source: nothing can be held out")
    valid = [i for k in keys[:n_valid] for i in groups[k]]
    train = [i for k in keys[n_valid:] for i in groups[k]]

    def pick(ix: list[int], label: str) -> Pairs:
        return Pairs([pairs.sources[i] for i in ix], [pairs.targets[i] for i in ix], label)

    return pick(train, pairs.label), pick(valid, f"{pairs.label} (held out)")
