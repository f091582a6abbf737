"""The tokenizer files of BERT's byte-level BPE and Unigram relatives, as the Hugging Face Hub ships them
(vocab.json + merges.txt, or one tokenizer.json): each sized against its ceiling before it is opened and read
into a ``tokenizers.Tokenizer`` (the tokenizers write them back with bert/data/atomic_files.py). A missing
file is a CheckpointError; one over its ceiling, not UTF-8, not the JSON or the lines it should be, or one
the library refuses, a TokenizerError with a one-line message (never the library's own exception).
"""

from __future__ import annotations

import json
from pathlib import Path

from tokenizers import Tokenizer as LibraryTokenizer
from tokenizers import models

from ..errors import CheckpointError, TokenizerError

# Ceilings, checked with stat() before a byte is read: each well above the largest published file of
# its kind among the family's members (docs/PERFORMANCE.md lists them).
MAX_VOCAB_BYTES = 16 << 20  # vocab.txt: 250,000 tokens
MAX_VOCAB_JSON_BYTES = 16 << 20
MAX_MERGES_BYTES = 16 << 20
MAX_TOKENIZER_JSON_BYTES = 32 << 20

VOCAB_JSON, MERGES_TXT, TOKENIZER_JSON = "vocab.json", "merges.txt", "tokenizer.json"
CEILINGS = {VOCAB_JSON: MAX_VOCAB_JSON_BYTES, MERGES_TXT: MAX_MERGES_BYTES, TOKENIZER_JSON: MAX_TOKENIZER_JSON_BYTES}


def read_text(path: Path, ceiling: int) -> str:
    """The UTF-8 text of ``path``, refused by its size before it is opened when over ``ceiling`` bytes."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"tokenizer file not found: {str(path)!r}")
    size = path.stat().st_size
    if size > ceiling:
        raise TokenizerError(
            f"{path.name} is {size / 2**20:,.1f} MB, over the {ceiling >> 20} MB a tokenizer file may have"
        )
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise TokenizerError(f"{path.name} is not UTF-8 ({e.reason} at byte {e.start})") from None
    except OSError as e:
        raise CheckpointError(f"{path.name} cannot be read: {e.strerror or e}") from None


def read_json(path: Path, ceiling: int):
    """The JSON value in ``path`` (see read_text for the ceiling)."""
    text = read_text(path, ceiling)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise TokenizerError(f"{Path(path).name} is not valid JSON (line {e.lineno}: {e.msg})") from None


def read_bpe_vocab(path: Path) -> dict[str, int]:
    """vocab.json: a JSON object token -> id."""
    vocab = read_json(path, MAX_VOCAB_JSON_BYTES)
    if not isinstance(vocab, dict) or not vocab:
        raise TokenizerError(f"{Path(path).name} must be a non-empty JSON object of token -> id")
    if not all(isinstance(i, int) and not isinstance(i, bool) for i in vocab.values()):
        raise TokenizerError(f"{Path(path).name} has an id that is not an integer")
    if sorted(vocab.values()) != list(range(len(vocab))):
        raise TokenizerError(f"{Path(path).name}: the ids must be the integers 0..{len(vocab) - 1}, each once")
    return vocab


def read_merges(path: Path) -> list[tuple[str, str]]:
    """merges.txt: an optional "#version" line, then one merge "left right" a line, highest priority first."""
    out = []
    for n, line in enumerate(read_text(path, MAX_MERGES_BYTES).splitlines(), 1):
        if (n == 1 and line.startswith("#version")) or not line.strip():
            continue
        parts = line.split(" ")
        if len(parts) != 2 or not all(parts):
            raise TokenizerError(f"{Path(path).name} line {n} is not a merge of two tokens: {line[:60]!r}")
        out.append((parts[0], parts[1]))
    return out


def bpe_model(vocab: dict[str, int], merges: list[tuple[str, str]]) -> models.BPE:
    """The library's BPE model of RoBERTa's files (no subword prefix or suffix, no unknown-token fusing)."""
    for pair in merges:
        merged = pair[0] + pair[1]
        if pair[0] not in vocab or pair[1] not in vocab or merged not in vocab:
            raise TokenizerError(f"merges.txt merges {pair[0]!r} + {pair[1]!r}, which vocab.json does not hold")
    try:
        return models.BPE(vocab=vocab, merges=merges, continuing_subword_prefix="", end_of_word_suffix="")
    except Exception as e:  # the library's own error types: ours instead
        raise TokenizerError(f"vocab.json and merges.txt do not make a BPE model: {one_line(e)}") from None


def read_tokenizer_json(path: Path) -> tuple[LibraryTokenizer, dict]:
    """tokenizer.json: the library's tokenizer and the parsed JSON (what it holds, for our own reading)."""
    text = read_text(path, MAX_TOKENIZER_JSON_BYTES)
    try:
        spec = json.loads(text)
    except json.JSONDecodeError as e:
        raise TokenizerError(f"{Path(path).name} is not valid JSON (line {e.lineno}: {e.msg})") from None
    if not isinstance(spec, dict) or not isinstance(spec.get("model"), dict):
        raise TokenizerError(f"{Path(path).name} has no tokenizer model")
    try:
        return LibraryTokenizer.from_str(text), spec
    except Exception as e:  # the library's own error types: ours instead
        raise TokenizerError(
            f"{Path(path).name} is not a tokenizer the tokenizers library can read: {one_line(e)}"
        ) from None


def one_line(e: BaseException) -> str:
    """An exception's message on one line, at most 200 characters."""
    s = " ".join(str(e).split())
    return s if len(s) <= 200 else s[:197] + "..."
