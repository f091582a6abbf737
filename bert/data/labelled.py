"""Labelled text for fine-tuning: read an uploaded file, find its columns, split it.

    data = read_labelled(raw_bytes, "reviews.csv")          # or read_labelled_file(path)
    data.texts, data.labels, data.classes                    # labels are indices into classes
    train, valid = stratified_split(data, valid_fraction=0.2, seed=0)

Accepted: CSV (comma or semicolon), TSV, JSON Lines (or a JSON array of objects), and plain
text with one `label<TAB>text` per line (read by bert/data/tables.py). Encodings: UTF-8 (with
or without BOM), UTF-16, else Windows-1252/Latin-1 (bert/data/decode.py). The bytes given are never
modified.

Everything a user can get wrong raises `DataError` with a message meant for them; rows that
cannot be used (empty text, missing label, duplicates, malformed) are dropped and counted.
"""

from __future__ import annotations

import csv
import os
import random
import unicodedata
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..errors import DataError
from .decode import decode_bytes, human_bytes
from .tables import MAX_CLASSES, MAX_COLUMNS, MISSING, detect_columns, label_sort_key, norm_label, read_table

__all__ = [
    "LabelledData",
    "decode_bytes",
    "read_labelled",
    "read_labelled_file",
    "file_columns",
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
# A file is read row by row, never held as a list of all its rows: at most MAX_READ_ROWS rows are
# kept while reading (a uniform random sample, in file order, once there are more) and reading
# stops after MAX_SCAN_ROWS rows; both are said in the notes. So a file of millions of tiny rows
# costs bounded time and memory, and a file of up to MAX_READ_ROWS rows is read whole.
MAX_READ_ROWS = 200_000
MAX_SCAN_ROWS = 1_000_000
PREVIEW_ROWS = 20


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


# ---- the reader ------------------------------------------------------------------------------


def _decoded_text(data: bytes, name: str, max_bytes: int | None) -> tuple[str, str]:
    """(text with Unix line ends, encoding) of a file's bytes; refuses one too big or empty."""
    if max_bytes is not None and len(data) > max_bytes:
        raise DataError(
            f"{name} is {human_bytes(len(data))}; the limit is {human_bytes(max_bytes)}. "
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
    return text, encoding


def _usable_rows(rows: list[list[str]], ti: int, li: int, dropped: dict[str, int]) -> tuple[list[str], list[str]]:
    """(texts, labels) of the rows with a text and a label, each text once; the others counted in
    ``dropped``."""
    texts, raw_labels = [], []
    empty = missing = dup = 0
    seen: set[str] = set()
    for r in rows:
        t, y = r[ti], norm_label(r[li])
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
    return texts, raw_labels


def _class_names(
    raw_labels: list[str], classes: list[str] | None, name: str, label_col: str, min_per_class: int
) -> list[str]:
    """The classes in order: the given ones (every label must be among them), else the labels
    found, sorted, if there are 2 to MAX_CLASSES of them with ``min_per_class`` examples each."""
    counts: dict[str, int] = {}
    for y in raw_labels:
        counts[y] = counts.get(y, 0) + 1
    if classes is not None:
        classes = [str(c) for c in classes]
        unknown = sorted(set(counts) - set(classes), key=label_sort_key)
        if unknown:
            raise DataError(
                f"{name} has labels that the training data does not: "
                f"{', '.join(map(repr, unknown[:10]))} (training classes: "
                f"{', '.join(classes)})."
            )
        return classes
    if len(counts) > MAX_CLASSES:
        raise DataError(
            f"The label column {label_col!r} has {len(counts):,} different values; "
            f"at most {MAX_CLASSES} classes are supported. Is it really the label?"
        )
    if len(counts) < 2:
        only = next(iter(counts))
        raise DataError(
            f"All {len(raw_labels):,} usable rows have the label {only!r}: a classifier needs at least two classes."
        )
    classes = sorted(counts, key=label_sort_key)
    few = [c for c in classes if counts[c] < min_per_class]
    if few:
        which = ", ".join(f"{c!r} ({counts[c]})" for c in few)
        raise DataError(
            f"Class {which} has fewer than {min_per_class} examples: a stratified "
            f"validation split needs at least {min_per_class} per class. Add examples "
            f"of it or remove it."
        )
    return classes


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
    text, encoding = _decoded_text(data, name, max_bytes)
    dropped: dict[str, int] = {}
    notes: list[str] = []
    if encoding not in ("utf-8", "utf-8 (with BOM)"):
        notes.append(f"read as {encoding} (not UTF-8)")
    columns, table, fmt = read_table(text, name, dropped)
    if len(columns) < 2:
        raise DataError(f"{name} has only one column ({columns[0]!r}); it needs a text column and a label column.")
    rows, scanned = _sampled_rows(table, columns, name, max_rows, seed, notes)
    del text, table
    ti, li = detect_columns(columns, rows, text_col, label_col)
    texts, raw_labels = _usable_rows(rows, ti, li, dropped)
    if not texts:
        raise DataError(
            f"No usable rows in {name}: all {len(rows):,} rows have an empty text "
            f"({columns[ti]!r}) or a missing label ({columns[li]!r})."
        )
    classes = _class_names(raw_labels, classes, name, columns[li], min_per_class)
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
        rows_read=scanned or len(rows),
        format=fmt,
        encoding=encoding,
    )
    if sum(dropped.values()):
        notes.append("dropped " + ", ".join(f"{n:,} {k}" for k, n in dropped.items()))
    return _capped(out, max_rows, seed)


def _sampled_rows(table, columns: list[str], name: str, max_rows: int | None, seed: int, notes: list[str]):
    """(rows, rows read or None) of the table: all of them without `max_rows`, else a random sample
    of at most the larger of MAX_READ_ROWS and `max_rows` (a note in `notes` says so)."""
    if max_rows is None:
        rows, scanned, stopped = list(table), None, False
    else:
        keep = max(MAX_READ_ROWS, max_rows)
        rows, scanned, stopped = _read_rows(table, keep, max(MAX_SCAN_ROWS, keep), seed)
    if not rows:
        raise DataError(f"The file has a header ({', '.join(columns)}) but no data rows.")
    if stopped:
        notes.append(
            f"{name} has more than {scanned:,} rows: only its first {scanned:,} were read, "
            f"and {len(rows):,} of them drawn at random are used"
        )
    elif scanned is not None and scanned > len(rows):
        notes.append(f"{name} has {scanned:,} rows: {len(rows):,} of them drawn at random are used")
    return rows, scanned


def _read_rows(table, keep: int, scan: int, seed: int) -> tuple[list[list[str]], int, bool]:
    """(rows, rows read, stopped early) from an iterator of rows: all of them when there are at most
    `keep`, else a uniform random sample of `keep` (reservoir sampling, kept in file order), of
    at most the first `scan` rows."""
    rows: list[list[str]] = []
    where: list[int] = []  # each kept row's place in the file
    rng = random.Random(seed)
    i = -1
    for i, row in enumerate(table):
        if i < keep:
            rows.append(row)
            where.append(i)
        elif i >= scan:
            return _in_file_order(rows, where), scan, True
        else:
            j = int(rng.random() * (i + 1))
            if j < keep:
                rows[j], where[j] = row, i
    return _in_file_order(rows, where), i + 1, False


def _in_file_order(rows: list[list[str]], where: list[int]) -> list[list[str]]:
    return [rows[k] for k in sorted(range(len(rows)), key=where.__getitem__)]


def file_columns(data: bytes, filename: str = "upload.csv") -> list[str]:
    """The column names of a labelled file (its header, or the keys of its first JSON objects),
    read without its rows, so the user can choose the text and label columns when they cannot
    be guessed. DataError when the file cannot be read."""
    name = os.path.basename(str(filename)) or "upload"
    text, _ = _decoded_text(bytes(data), name, None)
    return list(read_table(text, name, {})[0])


def _capped(data: LabelledData, max_rows: int | None, seed: int) -> LabelledData:
    """``data`` with its preview, or a stratified sample of ``max_rows`` rows when it has more
    (said in its notes)."""
    n = len(data.texts)
    if max_rows is None or n <= max_rows:
        data.preview = _preview(data.texts, data.labels, data.classes)
        return data
    out = data.subset(stratified_sample(data.labels, max_rows, seed=seed))
    out.notes.append(f"{n:,} usable rows: a stratified sample of {max_rows:,} is used (the limit is {max_rows:,} rows)")
    return out


def read_labelled_file(path: str | os.PathLike, **kwargs) -> LabelledData:
    """`read_labelled` on a file on disk (opened read-only)."""
    p = Path(path)
    if not p.is_file():
        raise DataError(f"{p} is not a file")
    limit = kwargs.get("max_bytes", DEFAULT_MAX_BYTES)
    size = p.stat().st_size
    if limit is not None and size > limit:
        raise DataError(f"{p.name} is {human_bytes(size)}; the limit is {human_bytes(limit)}.")
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
    # the first character as NFKC folds it: a spreadsheet reads a full-width ＝ ＋ － ＠ as the
    # ASCII one and runs the cell; the small forms (﹦) fold the same way and are prefixed too
    if isinstance(v, str) and unicodedata.normalize("NFKC", v[:1]).startswith(_FORMULA_START):
        return "'" + v
    return v


def to_safe_csv(df) -> str:
    """CSV text of a DataFrame in which no cell can run as a spreadsheet formula: text cells (and
    column names) starting with = + - @ tab or CR, or a form of them NFKC folds to one (＝), get
    a leading ' (OWASP's advice on CSV injection). Numbers stay numbers."""
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
