"""A corpus: documents made of sentences, from a package or from a user's text."""

from __future__ import annotations

import datetime as _dt
import random
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from ...errors import DataError
from ..decode import decode_bytes
from .sentences import split_sentences

__all__ = ["Corpus", "CorpusError", "corpus_from_text", "merge_corpora"]


class CorpusError(DataError):
    """A corpus that cannot be fetched, parsed or read (the message says what to do)."""


@dataclass
class Corpus:
    """Documents made of sentences. ``documents[d][s]`` is one sentence (a str)."""

    name: str
    documents: list[list[str]]
    meta: dict = field(default_factory=dict)
    titles: list[str] = field(default_factory=list)  # one per document ("" when unknown)

    def __post_init__(self) -> None:
        if len(self.titles) != len(self.documents):
            self.titles = [""] * len(self.documents)

    def __len__(self) -> int:
        return len(self.documents)

    @property
    def num_documents(self) -> int:
        return len(self.documents)

    @property
    def num_sentences(self) -> int:
        return sum(len(d) for d in self.documents)

    @property
    def num_words(self) -> int:
        return sum(len(s.split()) for d in self.documents for s in d)

    def counts(self) -> dict:
        return {"documents": self.num_documents, "sentences": self.num_sentences, "words": self.num_words}

    def split(self, valid_fraction: float = 0.05, seed: int = 0) -> tuple[Corpus, Corpus]:
        """(train, valid) at document level: no document is in both. Deterministic in ``seed``.

        Each part keeps the original document order. With at least 2 documents, valid gets at least one.
        """
        if not 0.0 <= valid_fraction < 1.0:
            raise CorpusError(f"valid_fraction must be in [0, 1), got {valid_fraction}")
        n = len(self.documents)
        n_valid = int(round(n * valid_fraction))
        if valid_fraction > 0 and n >= 2:
            n_valid = min(max(n_valid, 1), n - 1)
        order = list(range(n))
        random.Random(f"{seed}:{self.name}:{n}").shuffle(order)
        valid_idx = set(order[:n_valid])
        parts = []
        for part, keep in (("train", lambda i: i not in valid_idx), ("valid", lambda i: i in valid_idx)):
            idx = [i for i in range(n) if keep(i)]
            meta = dict(self.meta)
            meta["split"] = {"part": part, "valid_fraction": valid_fraction, "seed": seed, "of": self.name}
            parts.append(
                Corpus(
                    name=f"{self.name}:{part}",
                    documents=[self.documents[i] for i in idx],
                    meta=meta,
                    titles=[self.titles[i] for i in idx],
                )
            )
        return parts[0], parts[1]


def merge_corpora(corpora: Iterable[Corpus], name: str | None = None) -> Corpus:
    """Concatenate corpora (documents stay whole); meta records each part's meta."""
    corpora = list(corpora)
    name = name or "+".join(c.name for c in corpora)
    docs, titles = [], []
    for c in corpora:
        docs.extend(c.documents)
        titles.extend(c.titles)
    out = Corpus(name=name, documents=docs, titles=titles, meta={"parts": [c.meta for c in corpora]})
    out.meta["counts"] = out.counts()
    return out


def _upload_text(data: bytes) -> str:
    """The text of an uploaded file, or a CorpusError saying why it is not text."""
    if not data.strip():
        raise CorpusError("The file is empty.")
    try:
        text, _encoding = decode_bytes(data, kinds="plain text")
    except DataError as e:
        raise CorpusError(str(e)) from None
    return text


def corpus_from_text(text: str | bytes, name: str = "upload", sentences_per_doc: int = 20) -> Corpus:
    """A user's text as a corpus. Blank lines separate documents; a text without blank lines is cut
    into documents of about ``sentences_per_doc`` sentences. Raises CorpusError if there is no text."""
    if isinstance(text, (bytes, bytearray)):
        text = _upload_text(bytes(text))
    text = text.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")
    if not text.strip():
        raise CorpusError("The text is empty: give at least a few sentences.")
    blocks = [b for b in re.split(r"\n[ \t]*\n", text) if b.strip()]
    docs: list[list[str]] = []
    if len(blocks) > 1:
        docs = [s for s in (split_sentences(b) for b in blocks) if s]
    else:
        sents = split_sentences(text)
        docs = [sents[i : i + sentences_per_doc] for i in range(0, len(sents), sentences_per_doc)]
    if not docs:
        raise CorpusError("No sentences found in the text.")
    corpus = Corpus(name=name, documents=docs)
    corpus.meta = {
        "name": name,
        "description": "text given by the user",
        "source": {"transport": "upload"},
        "licence": "the user's own",
        "counts": corpus.counts(),
        "fetched": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }
    return corpus
