"""vocab.txt (one token per line, id = line number): reading, atomic writing, and the token <-> id tables."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence

from ..errors import TokenizerError

# The special tokens, spelled out here only; SPECIAL_TOKENS is in the order a new vocab writes them
# ([PAD] = id 0, as in BERT's own vocab).
PAD_TOKEN, UNK_TOKEN, CLS_TOKEN, SEP_TOKEN, MASK_TOKEN = "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"
SPECIAL_TOKENS = (PAD_TOKEN, UNK_TOKEN, CLS_TOKEN, SEP_TOKEN, MASK_TOKEN)


def vocab_file_path(path) -> str:
    """``path`` as a str; a directory means DIR/vocab.txt."""
    p = os.fspath(path)
    if os.path.isdir(p):
        p = os.path.join(p, "vocab.txt")
    return p


def read_vocab_file(path) -> list[str]:
    """The tokens of a vocab file, in id order; TokenizerError when missing, not UTF-8 or empty."""
    p = os.fspath(path)
    if not os.path.isfile(p):
        raise TokenizerError(f"vocab file not found: {p!r}")
    try:
        with open(p, encoding="utf-8") as f:
            lines = f.readlines()
    except UnicodeDecodeError as e:
        raise TokenizerError(f"vocab file {p!r} is not UTF-8: {e}") from None
    if not lines:
        raise TokenizerError(f"vocab file {p!r} is empty")
    return [line.rstrip("\n") for line in lines]


def write_vocab_file(tokens: Sequence[str], path: str) -> str:
    """Write ``tokens`` one a line to ``path`` through a temporary file, so a reader never sees half a vocab."""
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".vocab.", suffix=".tmp", dir=d)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write("".join(t + "\n" for t in tokens))
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def vocab_tables(vocab: dict[str, int] | Sequence[str]) -> tuple[list[str], dict[str, int]]:
    """(ids_to_tokens, token -> id) from a list of tokens or a dict token -> id with ids 0..n-1.

    With a list, on duplicates the last position wins for token -> id, as in transformers.
    """
    if isinstance(vocab, dict):
        ids = sorted(vocab.values())
        if not all(isinstance(i, int) for i in ids) or ids != list(range(len(ids))):
            raise TokenizerError("vocab dict ids must be the integers 0..n-1, each once")
        ids_to_tokens = [""] * len(ids)
        for t, i in vocab.items():
            ids_to_tokens[i] = t
        token_to_id = dict(vocab)
    elif isinstance(vocab, (list, tuple)):
        ids_to_tokens = [str(t) for t in vocab]
        token_to_id = {t: i for i, t in enumerate(ids_to_tokens)}
    else:
        raise TokenizerError(f"vocab must be a dict or a list of tokens, not {type(vocab).__name__}")
    if not ids_to_tokens:
        raise TokenizerError("vocab is empty")
    return ids_to_tokens, token_to_id
