"""Pre-training text shipped in Debian packages (fetched with ``apt-get download``, read by us).

  name     package (version)              file read inside the .deb                 licence
  wordnet  wordnet-base (1:3.0-37)        usr/share/wordnet/data.{noun,verb,adj,adv} WordNet 3.0 licence (permissive)
  gcide    dict-gcide (0.48.5+nmu2)       usr/share/dictd/gcide.dict.dz              GPL-2+

A .deb is an ``ar`` archive holding ``data.tar.{xz,gz,zst}``; we read it in Python (no dpkg, no
root).
"""

from __future__ import annotations

import gzip
import io
import re
import tarfile
from collections.abc import Iterator
from pathlib import Path

from .base import CorpusError
from .sentences import split_sentences

__all__ = ["GCIDE_FILE", "WORDNET_FILES", "gcide_entries", "parse_gcide", "parse_wordnet", "read_deb_member"]


def read_deb_member(deb: Path, member: str) -> bytes:
    """One file of a .deb's data archive, by its path (``usr/share/...``, with or without ``./``)."""
    data = Path(deb).read_bytes()
    if not data.startswith(b"!<arch>\n"):
        raise CorpusError(f"{Path(deb).name} is not a Debian package (no ar header)")
    pos = 8
    while pos + 60 <= len(data):
        header = data[pos : pos + 60]
        name = header[:16].decode("ascii", "replace").strip().rstrip("/")
        size = int(header[48:58].decode("ascii").strip())
        body = data[pos + 60 : pos + 60 + size]
        pos += 60 + size + (size % 2)
        if not name.startswith("data.tar"):
            continue
        if name.endswith(".zst"):
            raise CorpusError(f"{Path(deb).name}: zstd-compressed data is not supported")
        with tarfile.open(fileobj=io.BytesIO(body), mode="r:*") as tar:
            for m in tar.getmembers():
                if m.isfile() and m.name.lstrip("./") == member.lstrip("./"):
                    return tar.extractfile(m).read()
        raise CorpusError(f"{Path(deb).name} has no file {member}")
    raise CorpusError(f"{Path(deb).name} has no data archive")


# --------------------------------------------------------------------------------------------
# WordNet: glosses and example sentences
# --------------------------------------------------------------------------------------------

WORDNET_FILES = [f"usr/share/wordnet/data.{pos}" for pos in ("noun", "verb", "adj", "adv")]
_SYNSETS_PER_DOC = 40


def wordnet_synsets(data: str) -> Iterator[tuple[str, str, list[str]]]:
    """(lexicographer file, head word, [definition sentence, example sentences...]) per synset.

    A data line is ``offset lex_filenum ss_type w_cnt word lex_id ... | gloss``; the gloss is
    definitions separated by ';' then examples in double quotes.
    """
    for line in data.splitlines():
        if line.startswith("  ") or "|" not in line:
            continue  # the licence header lines start with two spaces
        head, gloss = line.split("|", 1)
        fields = head.split()
        if len(fields) < 5:
            continue
        lexfile, word = fields[1], fields[4].replace("_", " ")
        word = re.sub(r"\([a-z]+\)$", "", word)  # adjective markers: "galore(ip)"
        examples = [e.strip() for e in re.findall(r'"([^"]+)"', gloss)]
        definition = re.sub(r'"[^"]*"', "", gloss)
        definition = "; ".join(p.strip() for p in definition.split(";") if p.strip())
        sentences = []
        if definition:
            sentences.append(f"{word}: {definition}.")
        for ex in examples:
            ex = re.sub(r"\s+", " ", ex).strip(" ;")
            if len(ex.split()) >= 3:
                sentences.append(ex if ex[-1:] in ".!?" else ex + ".")
        if sentences:
            yield lexfile, word, sentences


def parse_wordnet(deb: Path, _member: str) -> Iterator[tuple[str, str, list[str]]]:
    """Documents of 40 consecutive synsets of one part of speech (the data files' order)."""
    for path in WORDNET_FILES:
        pos = path.rsplit(".", 1)[1]
        text = read_deb_member(deb, path).decode("latin-1")
        chunk: list[str] = []
        first = ""
        n_doc = 0
        for _lexfile, word, sentences in wordnet_synsets(text):
            first = first or word
            chunk.extend(sentences)
            if len(chunk) >= _SYNSETS_PER_DOC * 2:
                yield f"{pos}/{n_doc:05d}", f"WordNet {pos}s from '{first}'", chunk
                chunk, first, n_doc = [], "", n_doc + 1
        if chunk:
            yield f"{pos}/{n_doc:05d}", f"WordNet {pos}s from '{first}'", chunk


# --------------------------------------------------------------------------------------------
# GCIDE: definitions and usage quotations of the Collaborative International Dictionary
# --------------------------------------------------------------------------------------------

GCIDE_FILE = "usr/share/dictd/gcide.dict.dz"
_ENTRIES_PER_DOC = 60
_HEADWORD = re.compile(r"^(\S[^\\\n]*?) \\[^\\]*\\")  # "Abdomen \Ab*do"men\, n. ..."
_SOURCE_TAG = re.compile(
    r"\[(?:1913 Webster|PJC|WordNet 1\.5|Century Dict\.|Webster 1828|"
    r"[A-Z][A-Za-z.]{0,12}|[a-z]+\.?)\]"
)  # [1913 Webster], [R.], [Obs.], [PJC]
_CITATION = re.compile(r"--\s*[A-Z][\w.' &]{0,40}?(?:\.|$)")  # "--Bailey." "--Shak."
_LABEL = re.compile(r"\((?:[A-Z][a-z]*\.?\s*){1,3}\)")  # (Anat.) (Zool.) (Math.)
_ETYM = re.compile(r"\[(?:[^\[\]]|\[[^\]]*\])*\]")  # remaining [...] (etymologies)
_NUMBERING = re.compile(r"(?:^|\s)(?:\d+\.|\([a-z]\))\s")
_ACCENTS = re.compile(r"\[(?:[a-z]{1,5})\]")  # [aum], [oe]: character codes


def gcide_entries(text: str) -> Iterator[tuple[str, str]]:
    """(headword, cleaned body) for each dictionary entry (blank-line separated, headword first)."""
    for block in re.split(r"\n\s*\n", text):
        lines = block.strip("\n").split("\n")
        m = _HEADWORD.match(lines[0]) if lines else None
        if not m:
            continue
        rest = lines[0][m.end() :]
        rest = re.sub(r"^,?\s*(?:[a-z]+\.\s*)+", "", rest)  # "n.", "v. t.", "a."
        body = " ".join([rest] + [ln.strip() for ln in lines[1:]])
        body = _ACCENTS.sub("", body.replace("[ae]", "ae").replace("[oe]", "oe"))
        body = _SOURCE_TAG.sub(" ", body)
        body = _ETYM.sub(" ", body)
        body = _CITATION.sub(" ", body)
        body = _LABEL.sub(" ", body)
        body = _NUMBERING.sub(" ", body)
        body = re.sub(r"\s+", " ", body).strip(" ,;")
        if body:
            yield m.group(1).strip(), body


def parse_gcide(deb: Path, _member: str) -> Iterator[tuple[str, str, list[str]]]:
    """Documents of 60 consecutive entries; sentences of 4+ words with letters, no leftover markup."""
    raw = read_deb_member(deb, GCIDE_FILE)
    text = gzip.decompress(raw).decode("utf-8", "replace")
    start = text.find("\n\n", text.find("00-database-utf8")) if "00-database-utf8" in text else 0
    chunk: list[str] = []
    first, n_doc, n_entries = "", 0, 0
    for word, body in gcide_entries(text[start:]):
        if word.startswith("00-") or word.startswith("00database"):
            continue
        for s in split_sentences(body):
            if len(s.split()) >= 4 and re.search(r"[A-Za-z]{3}", s) and not re.search(r"[\\{}<>*]", s):
                chunk.append(s[0].upper() + s[1:] if s[0].islower() else s)
        first = first or word
        n_entries += 1
        if n_entries >= _ENTRIES_PER_DOC and chunk:
            yield f"{n_doc:05d}", f"GCIDE from '{first}'", chunk
            chunk, first, n_doc, n_entries = [], "", n_doc + 1, 0
    if chunk:
        yield f"{n_doc:05d}", f"GCIDE from '{first}'", chunk
