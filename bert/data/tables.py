"""Reading a labelled file's table: its format (CSV, TSV, JSON Lines, `label<TAB>text` lines),
header, columns, and which column holds the text and which the label.

Everything a user can get wrong raises `DataError` with a message meant for them; rows that
cannot be used are dropped and counted in the ``dropped`` dict the parsers are given.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
import random
import re
from collections.abc import Iterator
from pathlib import Path

from ..errors import DataError
from .decode import json_raw_decode, json_value

__all__ = ["LABEL_NAMES", "MAX_CLASSES", "MAX_COLUMNS", "MISSING", "TEXT_NAMES", "detect_columns", "read_table"]

MAX_COLUMNS = 200  # a "CSV bomb" of 1,000 columns is refused
MAX_CLASSES = 100  # more distinct labels than this is not a label column

TEXT_NAMES = (
    "text",
    "sentence",
    "review",
    "tweet",
    "content",
    "comment",
    "body",
    "document",
    "message",
    "snippet",
    "utterance",
    "question",
    "quote",
    "title",
)
LABEL_NAMES = (
    "label",
    "labels",
    "sentiment",
    "class",
    "category",
    "target",
    "y",
    "polarity",
    "stars",
    "rating",
    "score",
    "emotion",
    "tag",
    "intent",
    "topic",
    "airline_sentiment",
)
MISSING = {"", "nan", "NaN", "NAN", "null", "NULL", "Null", "None", "none", "NA", "N/A", "n/a", "#N/A", "<NA>", "NaT"}

csv.field_size_limit(64 * 1024 * 1024)  # very long texts are fine (truncated at tokenization)


def _looks_numeric(s: str) -> bool:
    try:
        float(s)
        return True
    except ValueError:
        return False


def _sample_rows(text: str, delim: str, n: int = 60, quoting: int = csv.QUOTE_MINIMAL) -> list[list[str]]:
    """The first n non-blank rows (a sample grown until it holds a few whole rows)."""
    size = 65536
    while True:
        sample = text[:size]
        cut = len(sample) < len(text)
        rows = []
        try:
            for row in csv.reader(io.StringIO(sample), delimiter=delim, quoting=quoting):
                if row and any(c.strip() for c in row):
                    rows.append(row)
                if len(rows) >= n + 1:
                    break
        except csv.Error:
            pass
        if cut and rows:
            rows = rows[:-1]  # the last sampled row may be cut in the middle
        if not cut or len(rows) >= 3:
            return rows[:n]
        size *= 8


def _choose_delimiter(text: str, filename: str) -> str:
    """The delimiter whose rows most consistently have the same number (> 1) of fields."""
    ext = Path(filename).suffix.lower()
    prefer = {".tsv": "\t", ".tab": "\t", ".txt": "\t"}.get(ext, ",")
    best, best_score = None, (0.0, 0, 0)
    for d in (",", ";", "\t", "|"):
        rows = _sample_rows(text, d)
        if not rows:
            continue
        counts = [len(r) for r in rows]
        mode = max(set(counts), key=counts.count)
        if mode < 2:
            continue
        consistency = counts.count(mode) / len(counts)
        score = (round(consistency, 1), d == prefer, min(mode, 50))
        if score > best_score:
            best, best_score = d, score
    if best is None:
        raise DataError(
            "Could not find two columns (a text and a label) in this file: no comma, "
            "semicolon or tab separates its lines into fields. For plain text, write one "
            "`label<TAB>text` per line."
        )
    return best


def _has_header(rows: list[list[str]]) -> bool:
    first, rest = rows[0], rows[1:]
    cells = [c.strip() for c in first]
    if any(c.lower() in TEXT_NAMES + LABEL_NAMES for c in cells):
        return True
    if not rest:
        return all(c and not _looks_numeric(c) for c in cells)
    if any(_looks_numeric(c) for c in cells if c):
        return False
    if len(set(cells)) < len(cells):
        return False
    for j in range(len(cells)):
        col = [r[j].strip() for r in rest if j < len(r) and r[j].strip()]
        if col and all(_looks_numeric(v) for v in col):
            return True  # a word above a column of numbers
    lens_first = [len(c) for c in cells]
    for j in range(len(cells)):
        col = [len(r[j]) for r in rest if j < len(r)]
        if col and sorted(col)[len(col) // 2] > 3 * max(lens_first[j], 1) and sorted(col)[len(col) // 2] > 25:
            return True  # a short name above long texts
    return False


def _names(header: list[str], n: int) -> list[str]:
    names, seen = [], set()
    for j in range(n):
        name = header[j].strip() if j < len(header) else ""
        name = name or f"column {j + 1}"
        base, k = name, 2
        while name in seen:
            name, k = f"{base}.{k}", k + 1
        seen.add(name)
        names.append(name)
    return names


def _lines(text: str, chunk: int = 1 << 20):
    """The text's lines, each with its "\\n", as iterating a StringIO of it gives them, but a
    chunk at a time: a StringIO of the whole text would hold a second, wider copy of it."""
    pos, n = 0, len(text)
    while pos < n:
        end = text.find("\n", pos + chunk)
        end = n if end < 0 else end + 1
        yield from io.StringIO(text[pos:end])
        pos = end


def _read_delimited(text: str, filename: str, dropped: dict[str, int]):
    delim = _choose_delimiter(text, filename)
    # plain text (`label<TAB>text` lines in a .txt): a quote is just a character
    quoting = csv.QUOTE_NONE if (delim == "\t" and Path(filename).suffix.lower() == ".txt") else csv.QUOTE_MINIMAL
    rows_sample = _sample_rows(text, delim, quoting=quoting)
    width = max(len(r) for r in rows_sample)
    if width > MAX_COLUMNS:
        raise DataError(
            f"This file has {width:,} columns; at most {MAX_COLUMNS} are accepted. "
            f"A labelled file needs just a text column and a label column."
        )
    header = _has_header(rows_sample)
    reader = csv.reader(_lines(text), delimiter=delim, quoting=quoting)
    try:
        first = next(r for r in reader if r and any(c.strip() for c in r))
    except StopIteration:
        raise DataError("The file is empty.") from None
    except csv.Error as e:
        raise DataError(f"The file cannot be read as {_DELIM_NAMES[delim]}-separated values: {e}") from None
    if len(first) > MAX_COLUMNS:
        raise DataError(
            f"This file has {len(first):,} columns; at most {MAX_COLUMNS} are accepted. "
            f"A labelled file needs just a text column and a label column."
        )
    width = len(first)
    plain = delim == "\t" and width == 2  # label<TAB>text: a tab inside the text stays in the text
    if header:
        columns = _names(first, width)
    else:
        columns = ["label", "text"] if (plain and _short_first_column(rows_sample)) else _names([], width)
    fmt = {",": "csv", ";": "csv (semicolon)", "\t": "tsv", "|": "csv (|)"}[delim]

    def rows():
        if not header:
            yield first
        try:
            for r in reader:
                if len(r) == width:
                    if any(map(str.strip, r)):
                        yield r
                    continue
                if not r or not any(map(str.strip, r)):
                    continue
                if plain and len(r) > width:
                    yield [r[0], delim.join(r[1:])]
                elif len(r) < width:
                    yield r + [""] * (width - len(r))
                else:
                    dropped["malformed (too many fields)"] = dropped.get("malformed (too many fields)", 0) + 1
        except csv.Error as e:
            raise DataError(
                f"The file cannot be read as {_DELIM_NAMES[delim]}-separated values (line {reader.line_num:,}): {e}"
            ) from None

    return columns, rows(), fmt


_DELIM_NAMES = {",": "comma", ";": "semicolon", "\t": "tab", "|": "bar"}


def _short_first_column(rows: list[list[str]]) -> bool:
    firsts = [r[0].strip() for r in rows if r]
    seconds = [r[1].strip() for r in rows if len(r) > 1]
    return sum(map(len, firsts)) <= sum(map(len, seconds)) and len(set(firsts)) <= max(2, len(firsts) // 2)


def _json_cell(v) -> str:
    """A JSON value as the text a CSV cell would hold."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    if isinstance(v, (dict, list)):
        return json.dumps(v, ensure_ascii=False)
    return str(v)


_SPACE = re.compile(r"\s*")


def _json_array(text: str, start: int):
    """The items of the JSON array that begins at text[start], decoded one at a time."""
    decoder, space = json.JSONDecoder(), _SPACE
    i = space.match(text, start + 1).end()
    if text.startswith("]", i):
        return
    while True:
        item, i = json_raw_decode(decoder, text, i, "The JSON array")
        yield item
        i = space.match(text, i).end()
        if text.startswith(",", i):
            i = space.match(text, i + 1).end()
        elif text.startswith("]", i) and not text[i + 1 :].strip():
            return
        else:
            raise json.JSONDecodeError("Expecting ',' delimiter or the end of the array", text, i)


def _json_lines(text: str, dropped: dict[str, int]):
    """The JSON values of the lines; lines that are not JSON are counted (an error if none is)."""
    good = bad = 0
    for n, line in enumerate(_lines(text), 1):
        if not line.strip():
            continue
        try:
            value = json_value(line, f"Line {n:,}")
        except json.JSONDecodeError:
            bad += 1
            dropped["malformed (not JSON)"] = bad
            continue
        good += 1
        yield value
    if bad and not good:
        raise DataError("The file looks like JSON Lines, but none of its lines is a JSON object.")


def _json_records(records):
    try:
        yield from records
    except json.JSONDecodeError as e:
        raise DataError(f"The file looks like a JSON array but is not valid JSON: {e}") from None


def _read_jsonl(text: str, dropped: dict[str, int]):
    start = _SPACE.match(text).end()
    records = _json_records(_json_array(text, start) if text.startswith("[", start) else _json_lines(text, dropped))

    def objects():
        for r in records:
            if isinstance(r, dict):
                yield r
            else:
                dropped["malformed (not a JSON object)"] = dropped.get("malformed (not a JSON object)", 0) + 1

    objs = objects()
    head = list(itertools.islice(objs, 1000))  # the columns are the keys of the first objects
    if not head:
        raise DataError('The JSON file holds no objects: write one {"text": ..., "label": ...} per line.')
    columns: list[str] = []
    seen = set()
    for o in head:
        for k in o:
            if k not in seen:
                seen.add(k)
                columns.append(str(k))
                if len(columns) > MAX_COLUMNS:
                    raise DataError(
                        f"These JSON objects have more than {MAX_COLUMNS} different keys; "
                        f"a labelled file needs just a text and a label."
                    )
    rows = ([_json_cell(o.get(c)) for c in columns] for o in itertools.chain(head, objs))
    return columns, rows, "jsonl"


def _is_json(text: str, filename: str) -> bool:
    ext = Path(filename).suffix.lower()
    if ext in (".jsonl", ".ndjson", ".json"):
        return True
    start = _SPACE.match(text).end()
    s = text[start : start + 4096]
    return s.startswith("{") or (s.startswith("[") and s[1:].lstrip().startswith("{"))


def read_table(text: str, filename: str, dropped: dict[str, int]) -> tuple[list[str], Iterator[list[str]], str]:
    """(column names, rows of cells, format name) of a decoded file, JSON or delimited. The rows
    are read as they are iterated (a file of millions of rows is never held as a list of them);
    rows that cannot be used are counted in ``dropped`` as they are met."""
    if _is_json(text, filename):
        return _read_jsonl(text, dropped)
    return _read_delimited(text, filename, dropped)


# ---- columns ----------------------------------------------------------------------------------


def _column_stats(columns: list[str], rows: list[list[str]]) -> list[dict]:
    sample = rows if len(rows) <= 5000 else random.Random(0).sample(rows, 5000)
    stats = []
    for j, name in enumerate(columns):
        vals = [r[j].strip() for r in sample]
        present = [v for v in vals if v not in MISSING]
        distinct = len({norm_label(v) for v in present})
        avg = sum(map(len, present)) / max(len(present), 1)
        numeric = sum(1 for v in present[:500] if _looks_numeric(v)) / max(min(len(present), 500), 1)
        stats.append(
            {
                "name": name,
                "index": j,
                "present": len(present),
                "distinct": distinct,
                "avg_len": avg,
                "numeric": numeric,
                "n": len(vals),
            }
        )
    return stats


def _resolve(name: str, columns: list[str], what: str) -> int:
    if name in columns:
        return columns.index(name)
    lowered = [c.lower().strip() for c in columns]
    if name.lower().strip() in lowered:
        return lowered.index(name.lower().strip())
    raise DataError(f"The {what} column {name!r} is not in the file; its columns are: {', '.join(columns)}.")


def _guess_text_column(stats: list[dict], li: int | None, columns: list[str]) -> int:
    """The column with the longest non-numeric values, preferring one named like a text column."""
    cands = [s for s in stats if s["index"] != li and s["numeric"] < 0.5 and s["present"]]
    unnamed = [s for s in cands if s["name"].lower().strip() not in LABEL_NAMES]
    cands = unnamed or cands
    if not cands:
        raise DataError(f"Could not find a text column among {', '.join(columns)}: choose one.")
    longest = max(s["avg_len"] for s in cands)
    named = [s for s in cands if s["name"].lower().strip() in TEXT_NAMES and s["avg_len"] >= 0.5 * longest]
    return (named[0] if named else max(cands, key=lambda s: s["avg_len"]))["index"]


def _guess_label_column(stats: list[dict], ti: int, n_rows: int, columns: list[str]) -> int:
    """A column named like a label; else the one with the fewest distinct values (2 or more, and
    few for the number of rows); else one with a single value (refused later, with a message)."""
    n = max(n_rows, 1)
    named = [
        s
        for s in stats
        if s["index"] != ti and s["name"].lower().strip() in LABEL_NAMES and 1 <= s["distinct"] <= MAX_CLASSES
    ]
    cands = [
        s
        for s in stats
        if s["index"] != ti and 2 <= s["distinct"] <= MAX_CLASSES and s["distinct"] <= max(2, 0.5 * min(n, 5000))
    ]
    ones = [s for s in stats if s["index"] != ti and s["distinct"] == 1]
    if named:
        return named[0]["index"]
    if cands:
        return min(cands, key=lambda s: (s["distinct"], s["index"]))["index"]
    if ones:
        return ones[0]["index"]  # one class only: said clearly later
    raise DataError(
        f"Could not find a label column (one with a few distinct values) among {', '.join(columns)}: choose one."
    )


def detect_columns(
    columns: list[str], rows: list[list[str]], text_col: str | None, label_col: str | None
) -> tuple[int, int]:
    """(text column, label column) indices: the named ones, else guessed from names and contents."""
    stats = _column_stats(columns, rows)
    ti = _resolve(text_col, columns, "text") if text_col else None
    li = _resolve(label_col, columns, "label") if label_col else None
    if ti is None:
        ti = _guess_text_column(stats, li, columns)
    if li is None:
        li = _guess_label_column(stats, ti, len(rows), columns)
    if ti == li:
        raise DataError(f"The text and the label must be different columns (both are {columns[ti]!r}).")
    return ti, li


def label_sort_key(label: str):
    """Numbers first, in numeric order, then the other labels alphabetically."""
    try:
        return (0, float(label), label)
    except ValueError:
        return (1, 0.0, label)


def norm_label(v: str) -> str:
    """A label as a class name: stripped, and '1.0' and '1' the same class."""
    v = v.strip()
    if _looks_numeric(v):
        f = float(v)
        if math.isfinite(f) and f.is_integer() and "e" not in v.lower():
            return str(int(f))  # "1.0" and "1" are one class
    return v
