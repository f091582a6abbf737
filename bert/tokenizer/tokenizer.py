"""The ``Tokenizer`` class: vocab and special tokens, tokenize / encode / decode, padding, and traces;
and the encoding of a text or a pair: lazy reading of long pastes, the per-segment fast paths from basic
tokens to WordPiece ids with offsets and word ids, longest-first truncation, and the ``Encoding`` result.

A truncating ``encode`` reads the text lazily and stops a fixed number of pieces past ``max_length``,
so a pasted megabyte costs milliseconds.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..errors import TokenizerError
from .basic import ASCII_CTRL, ASCII_TOKEN, BasicTokenizer
from .vocab import (
    CLS_TOKEN,
    MASK_TOKEN,
    PAD_TOKEN,
    SEP_TOKEN,
    UNK_TOKEN,
    read_vocab_file,
    vocab_file_path,
    vocab_tables,
    write_vocab_file,
)
from .wordpiece import MAX_INPUT_CHARS_PER_WORD, Trace, WordPiece

# Lazy encoding (``encode`` with truncation): the text is read in windows of about WINDOW characters,
# each ending after an ASCII whitespace (a word boundary on every path, never inside a special token),
# and reading stops COUNT_AHEAD pieces past what ``max_length`` keeps: enough to count what was cut
# exactly for any text up to that length, and constant time and memory for a longer paste.
WINDOW = 4096
COUNT_AHEAD = 10_000
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

    def extend(self, pieces: Pieces, n: int, *, seq: int | None, type_id: int, special: int) -> None:
        """Append the first n tokens of ``pieces``, all with sequence id ``seq``, token type
        ``type_id`` and special-tokens-mask value ``special``."""
        ids, toks, offs, wids = pieces
        self.ids += ids[:n]
        self.tokens += toks[:n]
        self.offsets += offs[:n]
        self.word_ids += wids[:n]
        self.sequence_ids += [seq] * n
        self.type_ids += [type_id] * n
        self.special_tokens_mask += [special] * n

    def __len__(self) -> int:
        return len(self.ids)


def check_text(text, name: str) -> str:
    if not isinstance(text, str):
        raise TokenizerError(f"{name} must be a str, not {type(text).__name__}")
    return text


def _windows(text: str):
    """(start, chunk): ``text`` in pieces of about WINDOW characters, each ending after an ASCII
    whitespace (or at the end), read lazily. A short text is one chunk, the text itself."""
    n, pos = len(text), 0
    while pos < n:
        m = _ASCII_WS.search(text, pos + WINDOW) if n - pos > WINDOW else None
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
            elif seg.isascii() and not ASCII_CTRL.search(seg):
                # Fast path: normalisation is only lower(), offsets are identity.
                w = _ascii_segment(tok, seg.lower() if lower else seg, base, w, limit, acc)
            else:
                w = _unicode_segment(tok, seg, base, w, limit, acc)
    return acc


def _ascii_whole_words(vocab_get, seg: str, base: int, w: int, acc: Pieces) -> int | None:
    """When every basic token of an ASCII segment is one vocab entry, its tokens are its words: add them
    all at once and return the next word index; else add nothing and return None."""
    ms = list(ASCII_TOKEN.finditer(seg))
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
    if len(seg) <= 2 * WINDOW:
        nw = _ascii_whole_words(tok.wordpiece.whole_word.get, seg, base, w, acc)
        if nw is not None:
            return nw
    ids, toks, offs, wids = acc
    wp_cache = tok.wordpiece.cache
    wp = tok.wordpiece.pieces
    for m in ASCII_TOKEN.finditer(seg):  # lazy: a long segment without whitespace
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
    wp_cache = tok.wordpiece.cache
    wp = tok.wordpiece.pieces
    btoks: list = []
    tok.basic.segment(seg, base, btoks, None if limit is None else limit - len(ids))
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


def check_encode_args(text_a: str, text_b: str | None, max_length: int | None, n_special: int) -> None:
    """TokenizerError unless the texts are text and `max_length` (None: no limit) is an int with room
    for the `n_special` special tokens and one more."""
    check_text(text_a, "text_a")
    if text_b is not None:
        check_text(text_b, "text_b")
    if max_length is not None:
        if isinstance(max_length, bool) or not isinstance(max_length, int):
            raise TokenizerError(f"max_length must be an int or None, not {type(max_length).__name__}")
        if max_length < max(n_special, 1):
            raise TokenizerError(f"max_length={max_length} leaves no room: {n_special} special tokens are needed")


def encode_pair(
    tok: Tokenizer,
    text_a: str,
    text_b: str | None,
    max_length: int | None,
    truncation: bool,
    add_special_tokens: bool,
) -> Encoding:
    """Tokenizer.encode (see there)."""
    n_special = (2 if text_b is None else 3) if add_special_tokens else 0
    check_encode_args(text_a, text_b, max_length, n_special)
    # With truncation, read each text only COUNT_AHEAD pieces past the budget: the kept lengths
    # depend on each text's length only up to budget + 1 (checked in tests), so they are exact.
    limit = max_length - n_special + COUNT_AHEAD if truncation and max_length is not None else None
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
        enc.extend(cls_, 1, seq=None, type_id=0, special=1)
    segments = [(a, la, 0)] if b is None else [(a, la, 0), (b, lb, 1)]
    for pieces, n, seq in segments:
        enc.extend(pieces, n, seq=seq, type_id=seq, special=0)
        if add_special_tokens:
            enc.extend(sep, 1, seq=None, type_id=seq, special=1)
    enc.attention_mask = [1] * len(enc.ids)
    return enc


def _special_id(token_attr: str) -> property:
    """A read-only property: the vocab id of the special token held in attribute ``token_attr``."""
    return property(lambda self: self.vocab[getattr(self, token_attr)], doc=f"The vocab id of ``{token_attr}``.")


class TokenizerCommon:
    """What every tokenizer (WordPiece here, the family's BPE and Unigram in backed.py) does the same
    way on top of its own ``encode`` and vocab tables (``vocab``, ``ids_to_tokens``): its special
    tokens and their ids, tokens <-> ids, a batch of texts, right-padding."""

    def _set_special_tokens(self, unk: str, cls: str, sep: str, pad: str, mask: str) -> None:
        """The special tokens (after the vocab tables); TokenizerError when the vocab lacks one."""
        self.unk_token, self.cls_token, self.sep_token, self.pad_token, self.mask_token = unk, cls, sep, pad, mask
        self.special_tokens = (unk, cls, sep, pad, mask)
        missing = [t for t in self.special_tokens if t not in self.vocab]
        if missing:
            raise TokenizerError(f"vocab lacks special token(s) {', '.join(missing)}")
        self._special_ids = frozenset(self.vocab[t] for t in self.special_tokens)

    unk_id = _special_id("unk_token")
    cls_id = _special_id("cls_token")
    sep_id = _special_id("sep_token")
    pad_id = _special_id("pad_token")
    mask_id = _special_id("mask_token")

    def __len__(self) -> int:
        return len(self.ids_to_tokens)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(vocab_size={len(self)}, do_lower_case={self.do_lower_case})"

    def convert_tokens_to_ids(self, tokens: str | Iterable[str]) -> int | list[int]:
        """Token(s) -> id(s); a token not in the vocab gives unk_id."""
        unk = self.unk_id
        if isinstance(tokens, str):
            return self.vocab.get(tokens, unk)
        return [self.vocab.get(t, unk) for t in tokens]

    def convert_ids_to_tokens(self, ids: int | Iterable[int]) -> str | list[str]:
        """Id(s) -> token(s) as the vocab spells them ("##ing", RoBERTa's "Ġworld", ALBERT's "▁world");
        an id outside 0..len-1 raises TokenizerError."""
        n = len(self.ids_to_tokens)

        def one(i) -> str:
            i = int(i)
            if not 0 <= i < n:
                raise TokenizerError(f"token id {i} is outside the vocab (0..{n - 1})")
            return self.ids_to_tokens[i]

        if isinstance(ids, int) or (hasattr(ids, "ndim") and ids.ndim == 0):
            return one(ids)
        return [one(i) for i in ids]

    def encode(
        self,
        text_a: str,
        text_b: str | None = None,
        max_length: int | None = 512,
        truncation: bool = True,
        add_special_tokens: bool = True,
    ) -> Encoding:
        """The model's template around A (and B) with type ids, offsets and word ids.

        Truncation (when ``truncation`` and the total exceeds ``max_length``, specials included) is
        transformers' "longest_first", as each kind of tokenizer does it (its ``_encode``).
        ``max_length=None`` means no limit. A truncated text is read only up to COUNT_AHEAD pieces
        past ``max_length``: a long paste costs no more than that, and ``num_truncated`` is exact
        below it and a lower bound above.
        """
        return self._encode(text_a, text_b, max_length, truncation, add_special_tokens)

    def encode_batch(
        self,
        texts: Sequence[str | tuple[str, str]],
        max_length: int | None = 512,
        truncation: bool = True,
        add_special_tokens: bool = True,
    ) -> list[Encoding]:
        """Encode many texts; an item may be a str or an (text_a, text_b) pair."""
        if isinstance(texts, str):
            raise TokenizerError("encode_batch takes a list of texts, not a str")
        out = []
        for t in texts:
            if isinstance(t, (tuple, list)):
                if len(t) != 2:
                    raise TokenizerError("a pair in encode_batch must be (text_a, text_b)")
                out.append(self.encode(t[0], t[1], max_length, truncation, add_special_tokens))
            else:
                out.append(self.encode(t, None, max_length, truncation, add_special_tokens))
        return out

    def pad(self, encodings: Sequence[Encoding], length: int | None = None) -> dict[str, list[list[int]]]:
        """Right-pad to the longest (or ``length``): {"input_ids", "token_type_ids", "attention_mask"}."""
        n = max((len(e) for e in encodings), default=0) if length is None else length
        if any(len(e) > n for e in encodings):
            raise TokenizerError(f"an encoding is longer than length={n}")
        pad = self.pad_id
        return {
            "input_ids": [e.ids + [pad] * (n - len(e)) for e in encodings],
            "token_type_ids": [e.type_ids + [0] * (n - len(e)) for e in encodings],
            "attention_mask": [e.attention_mask + [0] * (n - len(e)) for e in encodings],
        }


class Tokenizer(TokenizerCommon):
    """BERT WordPiece tokenizer: ``Tokenizer.from_file("vocab.txt")`` or ``Tokenizer(tokens_or_dict)``.

    ``vocab`` is a list of tokens (id = position, like the lines of vocab.txt; on duplicates the last
    position wins for token -> id, as in transformers) or a dict token -> id with ids 0..n-1.
    """

    kind = "wordpiece"  # the algorithm, for the pages (bpe.py's and unigram.py's say "bpe" and "unigram")

    def __init__(
        self,
        vocab: dict[str, int] | Sequence[str],
        do_lower_case: bool = True,
        *,
        unk_token: str = UNK_TOKEN,
        cls_token: str = CLS_TOKEN,
        sep_token: str = SEP_TOKEN,
        pad_token: str = PAD_TOKEN,
        mask_token: str = MASK_TOKEN,
    ):
        self.ids_to_tokens, self.vocab = vocab_tables(vocab)
        self._set_special_tokens(unk_token, cls_token, sep_token, pad_token, mask_token)
        self.do_lower_case = bool(do_lower_case)
        self.basic = BasicTokenizer(do_lower_case, never_split=self.special_tokens)
        self.wordpiece = WordPiece(self.vocab, unk_token, MAX_INPUT_CHARS_PER_WORD)

    @classmethod
    def from_file(cls, vocab_path, do_lower_case: bool = True, **kwargs) -> Tokenizer:
        """Load a vocab.txt (one token per line, id = line number); a directory means DIR/vocab.txt."""
        return cls(read_vocab_file(vocab_file_path(vocab_path)), do_lower_case, **kwargs)

    def save(self, path) -> str:
        """Write the vocab (one token per line, in id order) atomically; a directory means DIR/vocab.txt."""
        return write_vocab_file(self.ids_to_tokens, vocab_file_path(path))

    # ---- basics ------------------------------------------------------------------------------------------

    def decode(self, ids: Iterable[int], skip_special_tokens: bool = False) -> str:
        """Tokens joined by spaces with "##" continuations glued on (no further clean-up of spaces).

        Same as transformers' ``decode(ids, clean_up_tokenization_spaces=False)``: "hello , world" stays.
        """
        toks = self.convert_ids_to_tokens(list(ids))
        if skip_special_tokens:
            toks = [t for t in toks if t not in self.special_tokens]
        return " ".join(toks).replace(" ##", "").strip()

    # ---- tokenization ------------------------------------------------------------------------------------

    def tokenize(self, text: str) -> list[str]:
        """WordPiece tokens of ``text``, without [CLS]/[SEP]."""
        return encode_text(self, check_text(text, "text"))[1]

    def basic_tokenize(self, text: str) -> list[str]:
        """Basic tokens (words after cleaning, normalisation and punctuation splitting)."""
        return self.basic.tokenize(check_text(text, "text"))

    def words_with_offsets(self, text: str) -> list[tuple[str, tuple[int, int]]]:
        """[(basic token, (start, end))]: the words WordPiece sees and where they are in ``text``.

        Their order and index match Encoding.word_ids.
        """
        return [(t, (s, e)) for t, s, e in self.basic.tokens_with_offsets(check_text(text, "text"))]

    def _encode(
        self, text_a: str, text_b: str | None, max_length: int | None, truncation: bool, add_special_tokens: bool
    ) -> Encoding:
        """[CLS] A [SEP] (B [SEP]); "longest_first" drops tokens from the end of the longer sequence
        one at a time, from B when both are equally long."""
        return encode_pair(self, text_a, text_b, max_length, truncation, add_special_tokens)

    # ---- trace -------------------------------------------------------------------------------------------

    def trace(self, word: str) -> Trace:
        """Greedy longest-match-first steps for one word, for the UI.

        ``word`` is normalised first (lower-case, accents) like any text; it must come out as exactly one
        basic token, otherwise TokenizerError (use ``trace_text`` for a phrase). ``Trace.normalized`` is
        the basic token traced; a special token like "[MASK]" traces as one accepted step.
        """
        check_text(word, "word")
        btoks = self.basic.tokenize(word)
        if len(btoks) != 1:
            raise TokenizerError(
                f"trace needs a single word; {word!r} splits into {len(btoks)} basic tokens {btoks!r}"
                " (use trace_text for a phrase)"
            )
        t = self.wordpiece.trace(btoks[0])
        t.word = word
        return t

    def trace_text(self, text: str) -> list[Trace]:
        """trace() of every basic token of ``text``."""
        out = []
        for b in self.basic.tokenize(check_text(text, "text")):
            t = self.wordpiece.trace(b)
            out.append(t)
        return out
