"""Encoding a text or a pair: lazy reading of long pastes, the per-segment fast paths from basic tokens to
WordPiece ids with offsets and word ids, longest-first truncation, and the ``Encoding`` result.

A truncating ``encode`` reads the text lazily and stops a fixed number of pieces past ``max_length``,
so a pasted megabyte costs milliseconds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import TokenizerError
from .basic import _ASCII_CTRL, _ASCII_TOKEN

if TYPE_CHECKING:
    from .tokenizer import Tokenizer

# Lazy encoding (``encode`` with truncation): the text is read in windows of about _WINDOW characters,
# each ending after an ASCII whitespace (a word boundary on every path, never inside a special token),
# and reading stops _COUNT_AHEAD pieces past what ``max_length`` keeps: enough to count what was cut
# exactly for any text up to that length, and constant time and memory for a longer paste.
_WINDOW = 4096
_COUNT_AHEAD = 10_000
_ASCII_WS = re.compile(r"[ \t\n\r]")

# ids, tokens, offsets, word ids of one text: four parallel lists, appended to in place.
Pieces = tuple[list[int], list[str], list[tuple[int, int]], list[int]]


@dataclass
class Encoding:
    """One encoded text or text pair. All lists have one entry per token.

    ids, tokens       vocab ids and strings
    type_ids          0 for [CLS] A [SEP], 1 for B [SEP]
    offsets           (start, end) into the original text of the token's segment (text_a or text_b, see
                      sequence_ids); (0, 0) for the special tokens added around the text
    sequence_ids      None for added special tokens, 0 for tokens of text_a, 1 for text_b
    word_ids          index of the basic token (word after punctuation splitting) within its segment that
                      the token came from, None for added special tokens; pieces of one word share it
    attention_mask    all 1 (no padding in a single encoding)
    special_tokens_mask 1 for added [CLS]/[SEP], else 0 (a "[MASK]" typed in the text counts as text)
    truncated, num_truncated  whether tokens were dropped to fit max_length, and how many (counted up to
                      10,000 past max_length; a lower bound for a longer text, see Tokenizer.encode)
    """

    ids: list[int] = field(default_factory=list)
    tokens: list[str] = field(default_factory=list)
    type_ids: list[int] = field(default_factory=list)
    offsets: list[tuple[int, int]] = field(default_factory=list)
    sequence_ids: list[int | None] = field(default_factory=list)
    word_ids: list[int | None] = field(default_factory=list)
    attention_mask: list[int] = field(default_factory=list)
    special_tokens_mask: list[int] = field(default_factory=list)
    truncated: bool = False
    num_truncated: int = 0

    def __len__(self) -> int:
        return len(self.ids)


def check_text(text, name: str) -> str:
    if not isinstance(text, str):
        raise TokenizerError(f"{name} must be a str, not {type(text).__name__}")
    return text


def _windows(text: str):
    """(start, chunk): ``text`` in pieces of about _WINDOW characters, each ending after an ASCII
    whitespace (or at the end), read lazily. A short text is one chunk, the text itself."""
    n, pos = len(text), 0
    while pos < n:
        m = _ASCII_WS.search(text, pos + _WINDOW) if n - pos > _WINDOW else None
        end = m.end() if m else n
        yield pos, (text if pos == 0 and end == n else text[pos:end])
        pos = end


# ---- one text -> pieces ------------------------------------------------------------------------------
# Each segment helper appends to ``acc`` and returns the next word index. They are called once per
# segment (a window, or the text between two special tokens), never per character or word.


def encode_text(tok: Tokenizer, text: str, limit: int | None = None) -> Pieces:
    """ids, tokens, offsets, word_ids of one text (no added special tokens).

    With ``limit``, reading stops once at least ``limit`` pieces are out (a word is never split):
    the result is then the first pieces of the text, at least ``limit`` of them.
    """
    acc: Pieces = ([], [], [], [])
    ids, toks, offs, wids = acc
    basic = tok.basic
    lower = basic.do_lower_case
    w = 0
    for w0, chunk in _windows(text):
        for is_special, seg, base in basic.split_specials(chunk):
            if limit is not None and len(ids) >= limit:
                return acc
            base += w0
            if is_special:
                ids.append(tok.vocab[seg])
                toks.append(seg)
                offs.append((base, base + len(seg)))
                wids.append(w)
                w += 1
            elif seg.isascii() and not _ASCII_CTRL.search(seg):
                # Fast path: normalisation is only lower(), offsets are identity.
                w = _ascii_segment(tok, seg.lower() if lower else seg, base, w, limit, acc)
            else:
                w = _unicode_segment(tok, seg, base, w, limit, acc)
    return acc


def _ascii_whole_words(vocab_get, seg: str, base: int, w: int, acc: Pieces) -> int | None:
    """When every basic token of an ASCII segment is one vocab entry, its tokens are its words: add them
    all at once and return the next word index; else add nothing and return None."""
    ms = list(_ASCII_TOKEN.finditer(seg))
    words = [m.group() for m in ms]
    whole = [vocab_get(x) for x in words]
    if None in whole:
        return None
    ids, toks, offs, wids = acc
    ids += whole
    toks += words
    offs += [m.span() for m in ms] if base == 0 else [(base + m.start(), base + m.end()) for m in ms]
    wids += range(w, w + len(words))
    return w + len(words)


def _ascii_segment(tok: Tokenizer, seg: str, base: int, w: int, limit: int | None, acc: Pieces) -> int:
    """A printable-ASCII segment, already lower-cased when the model is uncased."""
    if len(seg) <= 2 * _WINDOW:
        nw = _ascii_whole_words(tok.wordpiece.whole_word.get, seg, base, w, acc)
        if nw is not None:
            return nw
    ids, toks, offs, wids = acc
    wp_cache = tok.wordpiece._cache
    wp = tok.wordpiece.pieces
    for m in _ASCII_TOKEN.finditer(seg):  # lazy: a long segment without whitespace
        if limit is not None and len(ids) >= limit:
            break
        word = m.group()
        p = wp_cache.get(word)
        if p is None:
            p = wp(word)
        s = base + m.start()
        if len(p) == 1:
            q = p[0]
            ids.append(q[1])
            toks.append(q[0])
            offs.append((s, s + len(word)))
            wids.append(w)
        else:
            for q in p:
                ids.append(q[1])
                toks.append(q[0])
                offs.append((s + q[2], s + q[3]))
                wids.append(w)
        w += 1
    return w


def _unicode_segment(tok: Tokenizer, seg: str, base: int, w: int, limit: int | None, acc: Pieces) -> int:
    """Any other segment: the basic tokenizer's general path, then WordPiece with per-character spans."""
    ids, toks, offs, wids = acc
    wp_cache = tok.wordpiece._cache
    wp = tok.wordpiece.pieces
    btoks: list = []
    tok.basic._segment(seg, base, btoks, None if limit is None else limit - len(ids))
    for word, s, _e, spans in btoks:
        p = wp_cache.get(word)
        if p is None:
            p = wp(word)
        for q in p:
            ids.append(q[1])
            toks.append(q[0])
            if spans is None:
                offs.append((s + q[2], s + q[3]))
            else:
                offs.append((spans[q[2]][0], spans[q[3] - 1][1]))
            wids.append(w)
        w += 1
    return w


# ---- text or pair -> Encoding ------------------------------------------------------------------------


def encode_pair(
    tok: Tokenizer,
    text_a: str,
    text_b: str | None,
    max_length: int | None,
    truncation: bool,
    add_special_tokens: bool,
) -> Encoding:
    """Tokenizer.encode (see there)."""
    check_text(text_a, "text_a")
    if text_b is not None:
        check_text(text_b, "text_b")
    n_special = (2 if text_b is None else 3) if add_special_tokens else 0
    if max_length is not None:
        if isinstance(max_length, bool) or not isinstance(max_length, int):
            raise TokenizerError(f"max_length must be an int or None, not {type(max_length).__name__}")
        if max_length < max(n_special, 1):
            raise TokenizerError(f"max_length={max_length} leaves no room: {n_special} special tokens are needed")
    # With truncation, read each text only COUNT_AHEAD pieces past the budget: the kept lengths
    # depend on each text's length only up to budget + 1 (checked in tests), so they are exact.
    limit = max_length - n_special + _COUNT_AHEAD if truncation and max_length is not None else None
    a = encode_text(tok, text_a, limit)
    b = encode_text(tok, text_b, limit) if text_b is not None else None
    la = len(a[0])
    lb = len(b[0]) if b is not None else 0
    removed = 0
    if truncation and max_length is not None:
        removed = max(0, la + lb + n_special - max_length)
        if removed:
            la, lb = _longest_first(la, lb, removed, pair=b is not None)
    return _assemble(tok, a, b, la, lb, add_special_tokens, removed)


def _longest_first(la: int, lb: int, removed: int, pair: bool) -> tuple[int, int]:
    """Kept lengths after dropping ``removed`` tokens the way transformers'
    ``PreTrainedTokenizer.truncate_sequences`` does with LONGEST_FIRST: one at a time from the end of the
    longer sequence, from B when both are equally long."""
    if not pair:
        return la - removed, lb
    first = min(abs(la - lb), removed)
    second = removed - first
    if la > lb:
        ra, rb = first + second // 2, second - second // 2
    else:
        ra, rb = second // 2, first + second - second // 2
    return la - ra, lb - rb


def _assemble(
    tok: Tokenizer, a: Pieces, b: Pieces | None, la: int, lb: int, add_special_tokens: bool, removed: int
) -> Encoding:
    """[CLS] A[:la] [SEP] (B[:lb] [SEP]) with type ids, sequence ids and masks."""
    enc = Encoding(truncated=removed > 0, num_truncated=removed)
    cls_ = ([tok.cls_id], [tok.cls_token], [(0, 0)], [None])
    sep = ([tok.sep_id], [tok.sep_token], [(0, 0)], [None])
    if add_special_tokens:
        _extend(enc, cls_, 1, seq=None, type_id=0, special=1)
    segments = [(a, la, 0)] if b is None else [(a, la, 0), (b, lb, 1)]
    for pieces, n, seq in segments:
        _extend(enc, pieces, n, seq=seq, type_id=seq, special=0)
        if add_special_tokens:
            _extend(enc, sep, 1, seq=None, type_id=seq, special=1)
    enc.attention_mask = [1] * len(enc.ids)
    return enc


def _extend(enc: Encoding, pieces: Pieces, n: int, *, seq: int | None, type_id: int, special: int) -> None:
    """Append the first n tokens of ``pieces`` to ``enc``, all with sequence id ``seq``, token type
    ``type_id`` and special-tokens-mask value ``special``."""
    ids, toks, offs, wids = pieces
    enc.ids += ids[:n]
    enc.tokens += toks[:n]
    enc.offsets += offs[:n]
    enc.word_ids += wids[:n]
    enc.sequence_ids += [seq] * n
    enc.type_ids += [type_id] * n
    enc.special_tokens_mask += [special] * n
