"""Labelled text for fine-tuning: read an uploaded file, find its columns, split it.

    data = read_labelled(raw_bytes, "reviews.csv")          # or read_labelled_file(path)
    data.texts, data.labels, data.classes                    # labels are indices into classes
    train, valid = stratified_split(data, valid_fraction=0.2, seed=0)

Accepted: CSV (comma or semicolon), TSV, JSON Lines (or a JSON array of objects), and plain
text with one `label<TAB>text` per line. Encodings: UTF-8 (with or without BOM), UTF-16 with a
BOM, else Windows-1252/Latin-1. The bytes given are never modified.

Everything a user can get wrong raises `DataError` with a message meant for them; rows that
cannot be used (empty text, missing label, duplicates, malformed) are dropped and counted.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import random
from dataclasses import dataclass, field, replace
from pathlib import Path

from .errors import DataError

__all__ = [
    "LabelledData",
    "read_labelled",
    "read_labelled_file",
    "stratified_split",
    "stratified_sample",
    "to_safe_csv",
    "DEFAULT_MAX_ROWS",
    "DEFAULT_MAX_BYTES",
    "MAX_COLUMNS",
    "MAX_CLASSES",
]

DEFAULT_MAX_ROWS = 50_000  # rows used for training at most (a stratified sample beyond)
DEFAULT_MAX_BYTES = 100 * 1024**2  # larger files are refused before reading
MAX_COLUMNS = 200  # a "CSV bomb" of 1,000 columns is refused
MAX_CLASSES = 100  # more distinct labels than this is not a label column
PREVIEW_ROWS = 20

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

_BINARY_MAGIC = {
    b"PK\x03\x04": "a zip archive (an Excel .xlsx or .docx file is one: save it as CSV instead)",
    b"\x1f\x8b": "a gzip archive (unpack it first)",
    b"BZh": "a bzip2 archive (unpack it first)",
    b"%PDF": "a PDF document",
    b"\x89PNG": "a PNG image",
    b"\xff\xd8\xff": "a JPEG image",
    b"GIF8": "a GIF image",
    b"\xd0\xcf\x11\xe0": "an old Office document (.xls/.doc: save it as CSV instead)",
    b"SQLite format 3": "an SQLite database",
    b"\x7fELF": "a program",
    b"7z\xbc\xaf": "a 7-Zip archive",
    b"Rar!": "a RAR archive",
}

csv.field_size_limit(64 * 1024 * 1024)  # very long texts are fine (truncated at tokenization)


@dataclass
class LabelledData:
    """Texts with integer labels (indices into `classes`), and what was done to get them."""

    texts: list[str]
    labels: list[int]
    classes: list[str]
    text_col: str = "text"
    label_col: str = "label"
    dropped: dict[str, int] = field(default_factory=dict)  # reason -> rows dropped
    notes: list[str] = field(default_factory=list)  # things the user should be told
    columns: list[str] = field(default_factory=list)  # all columns of the file
    preview: object = None  # pandas DataFrame of the first rows
    source: str = ""  # file name or built-in data set
    rows_read: int = 0  # data rows in the file
    format: str = ""  # "csv (;)", "jsonl", ...
    encoding: str = ""

    def __len__(self) -> int:
        return len(self.texts)

    @property
    def class_counts(self) -> dict[str, int]:
        counts = [0] * len(self.classes)
        for y in self.labels:
            counts[y] += 1
        return dict(zip(self.classes, counts))

    def subset(self, indices, notes: list[str] | None = None) -> LabelledData:
        idx = list(indices)
        return replace(
            self,
            texts=[self.texts[i] for i in idx],
            labels=[self.labels[i] for i in idx],
            notes=list(self.notes if notes is None else notes),
            dropped=dict(self.dropped),
            preview=_preview([self.texts[i] for i in idx], [self.labels[i] for i in idx], self.classes),
        )

    def summary(self) -> str:
        counts = ", ".join(f"{c}: {n:,}" for c, n in self.class_counts.items())
        return f"{len(self):,} texts in {len(self.classes)} classes ({counts})"


# ---- decoding --------------------------------------------------------------------------------


def _human_bytes(n: int) -> str:
    if n >= 1024**2:
        return f"{n / 1024**2:.1f} MB"
    if n >= 1024:
        return f"{n / 1024:.0f} kB"
    return f"{n} bytes"


def _utf16_without_bom(data: bytes) -> str | None:
    """'le'/'be' when the bytes look like BOM-less UTF-16 text (a NUL in every other byte)."""
    sample = data[:4096]
    if len(sample) < 4:
        return None
    even, odd = sample[0::2], sample[1::2]
    if odd.count(0) > 0.4 * len(odd) and even.count(0) < 0.05 * len(even):
        return "le"
    if even.count(0) > 0.4 * len(even) and odd.count(0) < 0.05 * len(odd):
        return "be"
    return None


def decode_bytes(data: bytes) -> tuple[str, str]:
    """(text, encoding name). Raises DataError for binary or undecodable data."""
    for magic, what in _BINARY_MAGIC.items():
        if data.startswith(magic):
            raise DataError(
                f"This is not a text file: it looks like {what}. Upload CSV, TSV, JSON Lines or plain text."
            )
    if data.startswith(b"\xef\xbb\xbf"):
        try:
            return data[3:].decode("utf-8"), "utf-8 (with BOM)"
        except UnicodeDecodeError as e:
            raise DataError(
                f"The file starts with a UTF-8 byte-order mark but is not valid UTF-8 "
                f"(byte {e.start + 3:,}). Save it again as UTF-8."
            ) from None
    for bom, codec in ((b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be")):
        if data.startswith(bom):
            try:
                return data[2:].decode(codec), "utf-16 (with BOM)"
            except UnicodeDecodeError:
                raise DataError(
                    "The file starts with a UTF-16 byte-order mark but its bytes are not "
                    "valid UTF-16 (truncated or mixed encodings?). Save it again as "
                    "UTF-8."
                ) from None
    if b"\x00" in data[:8192]:
        order = _utf16_without_bom(data)
        if order:
            try:
                return data.decode(f"utf-16-{order}"), f"utf-16-{order}"
            except UnicodeDecodeError:
                pass
        raise DataError(
            "This looks like a binary file (it contains NUL bytes), not text. "
            "Upload CSV, TSV, JSON Lines or plain text."
        )
    try:
        text, enc = data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        try:
            text, enc = data.decode("cp1252"), "windows-1252"
        except UnicodeDecodeError:
            text, enc = data.decode("latin-1"), "latin-1"
    sample = text[:20000]
    bad = sum(1 for ch in sample if (ord(ch) < 32 and ch not in "\n\r\t\f\v") or 0x7F <= ord(ch) < 0xA0)
    if sample and bad / len(sample) > 0.02:
        raise DataError(
            "This looks like a binary file (many control characters), not text, or "
            "its encoding cannot be recognised. Save it as UTF-8 CSV."
        )
    return text, enc


# ---- parsing -------------------------------------------------------------------------------


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


def _parse_delimited(text: str, filename: str, dropped: dict[str, int]):
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
    reader = csv.reader(io.StringIO(text), delimiter=delim, quoting=quoting)
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
        rows: list[list[str]] = []
    else:
        columns = ["label", "text"] if (plain and _short_first_column(rows_sample)) else _names([], width)
        rows = [first]
    malformed = 0
    try:
        for r in reader:
            if not r or not any(c.strip() for c in r):
                continue
            if len(r) != width:
                if plain and len(r) > width:
                    r = [r[0], delim.join(r[1:])]
                elif len(r) < width:
                    r = r + [""] * (width - len(r))
                else:
                    malformed += 1
                    continue
            rows.append(r)
    except csv.Error as e:
        raise DataError(
            f"The file cannot be read as {_DELIM_NAMES[delim]}-separated values (line {reader.line_num:,}): {e}"
        ) from None
    if malformed:
        dropped["malformed (too many fields)"] = malformed
    if not rows:
        raise DataError(f"The file has a header ({', '.join(columns)}) but no data rows.")
    fmt = {",": "csv", ";": "csv (semicolon)", "\t": "tsv", "|": "csv (|)"}[delim]
    return columns, rows, fmt


_DELIM_NAMES = {",": "comma", ";": "semicolon", "\t": "tab", "|": "bar"}


def _short_first_column(rows: list[list[str]]) -> bool:
    firsts = [r[0].strip() for r in rows if r]
    seconds = [r[1].strip() for r in rows if len(r) > 1]
    return sum(map(len, firsts)) <= sum(map(len, seconds)) and len(set(firsts)) <= max(2, len(firsts) // 2)


def _parse_jsonl(text: str, dropped: dict[str, int]):
    stripped = text.lstrip()
    records: list = []
    if stripped.startswith("["):
        try:
            obj = json.loads(stripped)
        except json.JSONDecodeError as e:
            raise DataError(f"The file looks like a JSON array but is not valid JSON: {e}") from None
        records = obj if isinstance(obj, list) else []
    else:
        bad = 0
        for line in text.splitlines():
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                bad += 1
        if bad and not records:
            raise DataError("The file looks like JSON Lines, but none of its lines is a JSON object.")
        if bad:
            dropped["malformed (not JSON)"] = bad
    objs = [r for r in records if isinstance(r, dict)]
    if len(objs) < len(records):
        dropped["malformed (not a JSON object)"] = len(records) - len(objs)
    if not objs:
        raise DataError('The JSON file holds no objects: write one {"text": ..., "label": ...} per line.')
    columns: list[str] = []
    seen = set()
    for o in objs[:1000]:
        for k in o:
            if k not in seen:
                seen.add(k)
                columns.append(str(k))
                if len(columns) > MAX_COLUMNS:
                    raise DataError(
                        f"These JSON objects have more than {MAX_COLUMNS} different keys; "
                        f"a labelled file needs just a text and a label."
                    )

    def cell(v):
        if v is None:
            return ""
        if isinstance(v, bool):
            return str(v).lower()
        if isinstance(v, float) and v.is_integer():
            return str(int(v))
        if isinstance(v, (dict, list)):
            return json.dumps(v, ensure_ascii=False)
        return str(v)

    rows = [[cell(o.get(c)) for c in columns] for o in objs]
    return columns, rows, "jsonl"


def _is_json(text: str, filename: str) -> bool:
    ext = Path(filename).suffix.lower()
    if ext in (".jsonl", ".ndjson", ".json"):
        return True
    s = text.lstrip()
    return s.startswith("{") or (s.startswith("[") and s[1:].lstrip().startswith("{"))


# ---- columns ----------------------------------------------------------------------------------


def _column_stats(columns: list[str], rows: list[list[str]]) -> list[dict]:
    sample = rows if len(rows) <= 5000 else random.Random(0).sample(rows, 5000)
    stats = []
    for j, name in enumerate(columns):
        vals = [r[j].strip() for r in sample]
        present = [v for v in vals if v not in MISSING]
        distinct = len({_norm_label(v) for v in present})
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


def _detect_columns(columns, rows, text_col, label_col) -> tuple[int, int]:
    stats = _column_stats(columns, rows)
    ti = _resolve(text_col, columns, "text") if text_col else None
    li = _resolve(label_col, columns, "label") if label_col else None
    if ti is None:
        cands = [s for s in stats if s["index"] != li and s["numeric"] < 0.5 and s["present"]]
        unnamed = [s for s in cands if s["name"].lower().strip() not in LABEL_NAMES]
        cands = unnamed or cands
        if not cands:
            raise DataError(f"Could not find a text column among {', '.join(columns)}: choose one.")
        longest = max(s["avg_len"] for s in cands)
        named = [s for s in cands if s["name"].lower().strip() in TEXT_NAMES and s["avg_len"] >= 0.5 * longest]
        ti = (named[0] if named else max(cands, key=lambda s: s["avg_len"]))["index"]
    if li is None:
        n = max(len(rows), 1)
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
            li = named[0]["index"]
        elif cands:
            li = min(cands, key=lambda s: (s["distinct"], s["index"]))["index"]
        elif ones:
            li = ones[0]["index"]  # one class only: said clearly below
        else:
            raise DataError(
                f"Could not find a label column (one with a few distinct values) "
                f"among {', '.join(columns)}: choose one."
            )
    if ti == li:
        raise DataError(f"The text and the label must be different columns (both are {columns[ti]!r}).")
    return ti, li


def _label_key(label: str):
    try:
        return (0, float(label), label)
    except ValueError:
        return (1, 0.0, label)


def _norm_label(v: str) -> str:
    v = v.strip()
    if _looks_numeric(v):
        f = float(v)
        if math.isfinite(f) and f.is_integer() and "e" not in v.lower():
            return str(int(f))  # "1.0" and "1" are one class
    return v


# ---- the reader ------------------------------------------------------------------------------


def read_labelled(
    data: bytes,
    filename: str = "upload.csv",
    text_col: str | None = None,
    label_col: str | None = None,
    max_rows: int | None = DEFAULT_MAX_ROWS,
    max_bytes: int | None = DEFAULT_MAX_BYTES,
    classes: list[str] | None = None,
    min_per_class: int = 2,
    seed: int = 0,
) -> LabelledData:
    """Parse a labelled file given as bytes; never modifies them.

    text_col/label_col override detection. `classes` (from the training data) makes a validation
    file use the same class order; its labels must all be among them. `min_per_class` is the
    fewest examples a class may have (2: a stratified split needs one on each side).
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise DataError("expected the file's bytes")
    data = bytes(data)
    name = os.path.basename(str(filename)) or "upload"
    if max_bytes is not None and len(data) > max_bytes:
        raise DataError(
            f"{name} is {_human_bytes(len(data))}; the limit is {_human_bytes(max_bytes)}. "
            f"Upload a smaller sample (a few thousand rows are plenty to fine-tune)."
        )
    if not data.strip(b" \t\r\n\x00\xef\xbb\xbf\xff\xfe"):
        raise DataError(f"{name} is empty.")
    text, encoding = decode_bytes(data)
    text = text.lstrip("\ufeff")
    if "\r" in text:  # Windows or old Mac line ends (also inside quoted fields) -> "\n"
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        raise DataError(f"{name} is empty.")
    dropped: dict[str, int] = {}
    notes: list[str] = []
    if encoding not in ("utf-8", "utf-8 (with BOM)"):
        notes.append(f"read as {encoding} (not UTF-8)")
    if _is_json(text, name):
        columns, rows, fmt = _parse_jsonl(text, dropped)
    else:
        columns, rows, fmt = _parse_delimited(text, name, dropped)
    if len(columns) < 2:
        raise DataError(f"{name} has only one column ({columns[0]!r}); it needs a text column and a label column.")
    ti, li = _detect_columns(columns, rows, text_col, label_col)
    rows_read = len(rows)

    texts, raw_labels = [], []
    empty = missing = dup = 0
    seen: set[str] = set()
    for r in rows:
        t, y = r[ti], _norm_label(r[li])
        if not t.strip() or t.strip() in MISSING:
            empty += 1
            continue
        if y in MISSING:
            missing += 1
            continue
        if t in seen:
            dup += 1
            continue
        seen.add(t)
        texts.append(t)
        raw_labels.append(y)
    for reason, n in (("empty text", empty), ("missing label", missing), ("duplicate text", dup)):
        if n:
            dropped[reason] = n
    if not texts:
        raise DataError(
            f"No usable rows in {name}: all {rows_read:,} rows have an empty text "
            f"({columns[ti]!r}) or a missing label ({columns[li]!r})."
        )

    counts: dict[str, int] = {}
    for y in raw_labels:
        counts[y] = counts.get(y, 0) + 1
    if classes is not None:
        classes = [str(c) for c in classes]
        unknown = sorted(set(counts) - set(classes), key=_label_key)
        if unknown:
            raise DataError(
                f"{name} has labels that the training data does not: "
                f"{', '.join(map(repr, unknown[:10]))} (training classes: "
                f"{', '.join(classes)})."
            )
    else:
        if len(counts) > MAX_CLASSES:
            raise DataError(
                f"The label column {columns[li]!r} has {len(counts):,} different values; "
                f"at most {MAX_CLASSES} classes are supported. Is it really the label?"
            )
        if len(counts) < 2:
            only = next(iter(counts))
            raise DataError(
                f"All {len(texts):,} usable rows have the label {only!r}: a classifier needs at least two classes."
            )
        classes = sorted(counts, key=_label_key)
        few = [c for c in classes if counts[c] < min_per_class]
        if few:
            which = ", ".join(f"{c!r} ({counts[c]})" for c in few)
            raise DataError(
                f"Class {which} has fewer than {min_per_class} examples: a stratified "
                f"validation split needs at least {min_per_class} per class. Add examples "
                f"of it or remove it."
            )
    index = {c: i for i, c in enumerate(classes)}
    labels = [index[y] for y in raw_labels]

    out = LabelledData(
        texts=texts,
        labels=labels,
        classes=classes,
        text_col=columns[ti],
        label_col=columns[li],
        dropped=dropped,
        notes=notes,
        columns=columns,
        source=name,
        rows_read=rows_read,
        format=fmt,
        encoding=encoding,
    )
    if sum(dropped.values()):
        notes.append("dropped " + ", ".join(f"{n:,} {k}" for k, n in dropped.items()))
    if max_rows is not None and len(texts) > max_rows:
        keep = stratified_sample(labels, max_rows, seed=seed)
        out = out.subset(keep)
        out.notes.append(
            f"{len(texts):,} usable rows: a stratified sample of {max_rows:,} is used (the limit is {max_rows:,} rows)"
        )
    else:
        out.preview = _preview(texts, labels, classes)
    return out


def read_labelled_file(path: str | os.PathLike, **kwargs) -> LabelledData:
    """`read_labelled` on a file on disk (opened read-only)."""
    p = Path(path)
    if not p.is_file():
        raise DataError(f"{p} is not a file")
    limit = kwargs.get("max_bytes", DEFAULT_MAX_BYTES)
    size = p.stat().st_size
    if limit is not None and size > limit:
        raise DataError(f"{p.name} is {_human_bytes(size)}; the limit is {_human_bytes(limit)}.")
    return read_labelled(p.read_bytes(), p.name, **kwargs)


def _preview(texts, labels, classes, n: int = PREVIEW_ROWS):
    import pandas as pd

    return pd.DataFrame({"text": texts[:n], "label": [classes[y] for y in labels[:n]]})


# ---- sampling and splitting ----------------------------------------------------------------------


def _by_class(labels: list[int]) -> dict[int, list[int]]:
    groups: dict[int, list[int]] = {}
    for i, y in enumerate(labels):
        groups.setdefault(y, []).append(i)
    return groups


def stratified_sample(labels: list[int], n: int, seed: int = 0, min_per_class: int = 2) -> list[int]:
    """Indices of about n rows keeping class proportions (each class at least min_per_class)."""
    if n >= len(labels):
        return list(range(len(labels)))
    rng = random.Random(seed)
    groups = _by_class(labels)
    total = len(labels)
    quota = {y: max(min(len(ix), min_per_class), int(n * len(ix) / total)) for y, ix in groups.items()}
    while sum(quota.values()) > n:  # the minimum for rare classes comes from the largest
        y = max(quota, key=quota.get)
        quota[y] -= 1
    # hand out what rounding left over to the largest remainders
    left = n - sum(quota.values())
    order = sorted(groups, key=lambda y: -(n * len(groups[y]) / total - int(n * len(groups[y]) / total)))
    for y in order:
        if left <= 0:
            break
        if quota[y] < len(groups[y]):
            quota[y] += 1
            left -= 1
    keep = []
    for y, ix in groups.items():
        keep += rng.sample(ix, min(quota[y], len(ix)))
    return sorted(keep)


def stratified_split(
    data: LabelledData, valid_fraction: float = 0.2, seed: int = 0
) -> tuple[LabelledData, LabelledData]:
    """(train, valid) with the same class proportions; each class has at least one on each side."""
    if not 0.0 < valid_fraction < 1.0:
        raise DataError(f"the validation fraction must lie between 0 and 1, not {valid_fraction}")
    groups = _by_class(data.labels)
    few = [data.classes[y] for y, ix in groups.items() if len(ix) < 2]
    if few:
        raise DataError(
            f"Class {', '.join(map(repr, few))} has only one example: it cannot be in "
            f"both the training and the validation split. Add examples or remove it."
        )
    if len(groups) < 2:
        raise DataError("A classifier needs at least two classes.")
    rng = random.Random(seed)
    train, valid = [], []
    for y in sorted(groups):
        ix = list(groups[y])
        rng.shuffle(ix)
        k = min(len(ix) - 1, max(1, round(len(ix) * valid_fraction)))
        valid += ix[:k]
        train += ix[k:]
    rng.shuffle(train)
    rng.shuffle(valid)
    tr = data.subset(train)
    va = data.subset(valid, notes=[f"stratified {valid_fraction:.0%} validation split (seed {seed})"])
    return tr, va


# ---- safe export ------------------------------------------------------------------------------

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _escape_cell(v):
    if isinstance(v, str) and v.startswith(_FORMULA_START):
        return "'" + v
    return v


def to_safe_csv(df) -> str:
    """CSV text of a DataFrame in which no cell can run as a spreadsheet formula: text cells (and
    column names) starting with = + - @ tab or CR get a leading ' (OWASP's advice on CSV injection).
    Numbers stay numbers."""
    import pandas as pd

    out = df.copy()
    out.columns = [_escape_cell(str(c)) for c in out.columns]
    for c in out.columns:
        if out[c].dtype == object or pd.api.types.is_string_dtype(out[c]):
            out[c] = out[c].map(_escape_cell)
    if out.index.dtype == object:
        out.index = out.index.map(_escape_cell)
        return out.to_csv(quoting=csv.QUOTE_NONNUMERIC)
    # every text cell quoted: a CR or tab inside one cannot split or shift a row
    return out.to_csv(index=False, quoting=csv.QUOTE_NONNUMERIC)
