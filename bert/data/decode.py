"""Bytes a user gave us -> text, and byte counts for messages.

One decoder serves every upload (a labelled CSV for fine-tuning, a plain-text corpus for
pre-training) and the text files inside fetched packages, so that a file is accepted or refused
for the same reason, with the same message, wherever it is read.
"""

from __future__ import annotations

import json

from ..errors import DataError

__all__ = ["decode_bytes", "human_bytes", "json_raw_decode", "json_value"]

# The first bytes of common binary formats, with what to tell the user about each.
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

# Above this share of control characters (C0 other than whitespace, and C1) in the first
# _SAMPLE_CHARS characters, the bytes are not text. Real text has next to none; binary data read
# as Latin-1 has about one in four. Corpora and labelled files use the same bound: neither kind
# of text has a reason to hold control characters.
MAX_CONTROL_SHARE = 0.02
_SAMPLE_CHARS = 20_000

LABELLED_KINDS = "CSV, TSV, JSON Lines or plain text"


def human_bytes(n: int) -> str:
    """'1.5 MB', '12 kB' or '100 bytes', in powers of 1024 (as the limits are set)."""
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


def _refuse_known_binary(data: bytes, kinds: str) -> None:
    for magic, what in _BINARY_MAGIC.items():
        if data.startswith(magic):
            raise DataError(f"This is not a text file: it looks like {what}. Upload {kinds}.")


def _decode_with_bom(data: bytes) -> tuple[str, str] | None:
    """(text, encoding) when the bytes start with a UTF-8 or UTF-16 byte-order mark, else None."""
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
    return None


def _decode_without_bom(data: bytes, kinds: str) -> tuple[str, str]:
    """BOM-less UTF-16 when NULs say so; else UTF-8, else Windows-1252, else Latin-1 (never fails)."""
    if b"\x00" in data[:8192]:
        order = _utf16_without_bom(data)
        if order:
            try:
                return data.decode(f"utf-16-{order}"), f"utf-16-{order}"
            except UnicodeDecodeError:
                pass
        raise DataError(f"This looks like a binary file (it contains NUL bytes), not text. Upload {kinds}.")
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        try:
            return data.decode("cp1252"), "windows-1252"
        except UnicodeDecodeError:
            return data.decode("latin-1"), "latin-1"


def decode_bytes(data: bytes, kinds: str = LABELLED_KINDS) -> tuple[str, str]:
    """(text, encoding name) of a text file's bytes; the bytes are not modified.

    UTF-8 (with or without BOM), UTF-16 (with a BOM, or without one when every other byte is
    NUL), else Windows-1252, else Latin-1. Raises DataError, with a message for the user, for
    known binary formats, NUL bytes, a byte-order mark the bytes do not follow, or too many
    control characters (``MAX_CONTROL_SHARE``). ``kinds`` names what the user should upload
    instead, in those messages.
    """
    _refuse_known_binary(data, kinds)
    decoded = _decode_with_bom(data) or _decode_without_bom(data, kinds)
    text = decoded[0]
    sample = text[:_SAMPLE_CHARS]
    bad = sum(1 for ch in sample if (ord(ch) < 32 and ch not in "\n\r\t\f\v") or 0x7F <= ord(ch) < 0xA0)
    if sample and bad / len(sample) > MAX_CONTROL_SHARE:
        raise DataError(
            "This looks like a binary file (many control characters), not text, or "
            "its encoding cannot be recognised. Save it as UTF-8 text."
        )
    return decoded


# JSON nested deeper than Python's decoder can follow (about a thousand lists or objects inside
# each other: no real data set comes near) is refused as data, never a RecursionError.
_TOO_DEEP = "nests lists or objects inside each other too deeply (hundreds of levels) to be a data set"


def json_value(text: str, where: str):
    """``json.loads(text)``; deep nesting raises DataError naming ``where``; invalid JSON raises
    json.JSONDecodeError as json.loads does."""
    try:
        return json.loads(text)
    except RecursionError:
        raise DataError(f"{where} {_TOO_DEEP}.") from None


def json_raw_decode(decoder: json.JSONDecoder, text: str, start: int, where: str):
    """``decoder.raw_decode(text, start)`` with deep nesting a DataError, as in json_value."""
    try:
        return decoder.raw_decode(text, start)
    except RecursionError:
        raise DataError(f"{where} {_TOO_DEEP}.") from None
