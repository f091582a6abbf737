"""Tagged words for a tagger: an uploaded CoNLL/BIO file or JSON Lines, read and checked.

    data = read_tagged(raw_bytes, "names.conll")
    data.sentences[0], data.tags[0]      # words, and tag indices into data.tag_names

CoNLL/BIO: one word and its tag per line (the word first, the tag LAST: CoNLL-2003's four
columns give the named-entity tag), a blank line between sentences, "-DOCSTART-" lines skipped.
JSON Lines: one object a line with "tokens" (or "words") and "tags" (or "ner_tags"), two lists of
strings of equal length. Encodings as for every upload (bert/data/decode.py).

What a user can get wrong raises `DataError` with a message for them: too big, empty, binary,
no tags, too many tags, a tag with spaces. What can be skipped is skipped and said in `notes`:
malformed lines, overlong sentences (cut), a tag seen only once, an I- tag after O (read as an
entity's start, as seqeval does).
"""

from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import dataclass, field

from ..errors import DataError
from .decode import decode_bytes, human_bytes, json_value

MAX_BYTES = 20 * 1024**2
MAX_SENTENCES = 20_000  # kept at most (a random sample beyond, said in the notes)
MAX_WORDS = 200  # per sentence: longer ones are cut
MAX_TAGS = 100
MAX_TAG_CHARS = 40
KINDS = "CoNLL/BIO text (a word and its tag per line) or JSON Lines of tokens and tags"


@dataclass
class TaggedData:
    sentences: list[list[str]]  # words
    tags: list[list[int]]  # indices into tag_names, one per word
    tag_names: list[str]
    notes: list[str] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)  # reason -> lines or sentences dropped
    source: str = ""
    format: str = ""  # "conll" or "jsonl"
    encoding: str = ""

    def __len__(self) -> int:
        return len(self.sentences)

    @property
    def tag_counts(self) -> dict[str, int]:
        counts = Counter(t for s in self.tags for t in s)
        return {name: counts[k] for k, name in enumerate(self.tag_names)}

    def subset(self, indices) -> TaggedData:
        idx = list(indices)
        return TaggedData(
            [self.sentences[i] for i in idx],
            [self.tags[i] for i in idx],
            self.tag_names,
            list(self.notes),
            dict(self.dropped),
            self.source,
            self.format,
            self.encoding,
        )

    def summary(self) -> str:
        words = sum(map(len, self.sentences))
        return f"{len(self):,} sentences, {words:,} words, {len(self.tag_names)} tags"


def read_tagged(data: bytes, name: str = "upload.conll", max_bytes: int = MAX_BYTES, seed: int = 0) -> TaggedData:
    """Read and check a tagged file's bytes (see the module's rules)."""
    if len(data) > max_bytes:
        raise DataError(f"{name} is {human_bytes(len(data))}; the limit is {human_bytes(max_bytes)}.")
    if not data.strip(b" \t\r\n\x00\xef\xbb\xbf\xff\xfe"):
        raise DataError(f"{name} is empty.")
    text, encoding = decode_bytes(data, KINDS)
    text = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    dropped: dict[str, int] = {}
    first = text.lstrip()[:1]
    if first == "{" or name.lower().endswith((".jsonl", ".json")):
        pairs, kind = _read_jsonl(text, dropped), "jsonl"
    else:
        pairs, kind = _read_conll(text, dropped), "conll"
    if not pairs:
        raise DataError(
            f"{name} holds no tagged sentence: expected {KINDS}" + (f" ({_said(dropped)})" if dropped else "")
        )
    return _checked(pairs, dropped, name, kind, encoding, seed)


def _read_conll(text: str, dropped: dict[str, int]) -> list[tuple[list[str], list[str]]]:
    out, words, tags = [], [], []
    for line in text.split("\n"):
        parts = line.split()
        if not parts:
            if words:
                out.append((words, tags))
            words, tags = [], []
            continue
        if parts[0] == "-DOCSTART-":
            continue
        if len(parts) < 2:
            dropped["lines with a word but no tag"] = dropped.get("lines with a word but no tag", 0) + 1
            continue
        words.append(parts[0])
        tags.append(parts[-1])
    if words:
        out.append((words, tags))
    return out


def _read_jsonl(text: str, dropped: dict[str, int]) -> list[tuple[list[str], list[str]]]:
    out = []
    for n, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            obj = json_value(line, f"Line {n:,}")
        except json.JSONDecodeError:
            dropped["lines that are not JSON"] = dropped.get("lines that are not JSON", 0) + 1
            continue
        if not isinstance(obj, dict):
            dropped["lines that are not JSON objects"] = dropped.get("lines that are not JSON objects", 0) + 1
            continue
        words = obj.get("tokens", obj.get("words"))
        tags = obj.get("tags", obj.get("ner_tags"))
        ok = (
            isinstance(words, list)
            and isinstance(tags, list)
            and len(words) == len(tags) > 0
            and all(isinstance(x, str) and x.strip() for x in words + tags)
        )
        if not ok:
            why = "objects without equal, non-empty lists of string tokens and tags"
            dropped[why] = dropped.get(why, 0) + 1
            continue
        out.append(([w.strip() for w in words], [t.strip() for t in tags]))
    return out


def _said(dropped: dict[str, int]) -> str:
    return "; ".join(f"{n:,} {why} skipped" for why, n in dropped.items())


def _checked(pairs, dropped, name, kind, encoding, seed) -> TaggedData:
    notes = []
    odd = sorted({t for _, tags in pairs for t in tags if any(c.isspace() for c in t) or len(t) > MAX_TAG_CHARS})
    if odd:
        raise DataError(f"{name}: tags must be short names without spaces; {odd[0][:60]!r} is not one.")
    counts = Counter(t for _, tags in pairs for t in tags)
    if len(counts) > MAX_TAGS:
        raise DataError(
            f"{name} has {len(counts):,} different tags; at most {MAX_TAGS} are allowed. Is the tag the last "
            f"column of each line?"
        )
    if len(counts) < 2:
        raise DataError(f"{name} has one tag only ({next(iter(counts))!r}): there is nothing to learn.")
    long = sum(len(w) > MAX_WORDS for w, _ in pairs)
    if long:
        pairs = [(w[:MAX_WORDS], t[:MAX_WORDS]) for w, t in pairs]
        notes.append(f"{long:,} sentences longer than {MAX_WORDS} words were cut to their first {MAX_WORDS}.")
    if len(pairs) > MAX_SENTENCES:
        keep = sorted(random.Random(seed).sample(range(len(pairs)), MAX_SENTENCES))
        notes.append(f"{len(pairs):,} sentences: a random {MAX_SENTENCES:,} of them are used.")
        pairs = [pairs[i] for i in keep]
    once = sorted(t for t, n in counts.items() if n == 1)
    if once:
        notes.append(
            f"{len(once)} tags appear only once ({', '.join(once[:5])}{'…' if len(once) > 5 else ''}): "
            "the model can hardly learn them."
        )
    stray = sum(
        1 for _, tags in pairs for prev, tag in zip(["O", *tags], tags) if tag.startswith("I-") and prev[2:] != tag[2:]
    )
    if stray:
        notes.append(
            f"{stray:,} I- tags follow no B- or I- of their type: each is read as the start of an entity, "
            "as seqeval does."
        )
    if dropped:
        notes.append(_said(dropped) + ".")
    names = sorted(counts, key=lambda t: (t != "O", t[2:] if t[:2] in ("B-", "I-") else t, t))
    index = {t: k for k, t in enumerate(names)}
    return TaggedData(
        [w for w, _ in pairs],
        [[index[t] for t in tags] for _, tags in pairs],
        names,
        notes,
        dropped,
        name,
        kind,
        encoding,
    )


def split_tagged(data: TaggedData, valid_fraction: float = 0.2, seed: int = 0) -> tuple[TaggedData, TaggedData]:
    """A random split of the sentences into training and validation (at least one of each)."""
    if len(data) < 2:
        raise DataError("at least two tagged sentences are needed (one to train on, one to check)")
    order = list(range(len(data)))
    random.Random(seed).shuffle(order)
    n_valid = min(len(data) - 1, max(1, round(len(data) * valid_fraction)))
    return data.subset(sorted(order[n_valid:])), data.subset(sorted(order[:n_valid]))
