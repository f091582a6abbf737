"""``BackedTokenizer``: our WordPiece ``Tokenizer``'s interface (encode, pad, decode, words, traces) over a
tokenizer of the ``tokenizers`` library, for BERT's relatives whose algorithm is not WordPiece (RoBERTa's
byte-level BPE in bpe.py, ALBERT's Unigram in unigram.py).

The library splits out special tokens typed in the text, normalises, pre-tokenizes and segments each text;
we put the special tokens around it, truncate longest-first as transformers does, and keep the encoding,
offsets and word ids in our ``Encoding``. Offsets are character positions in the ORIGINAL text of the
token's segment, as transformers' fast tokenizers give them.

Our choices, where transformers has none or another:
  * "[MASK]" typed in a text is the model's mask token, whatever the model spells it (RoBERTa's "<mask>"):
    every page lets students type "[MASK]". It is split out like the mask token itself (with its lstrip),
    so "a [MASK] b" encodes exactly as "a <mask> b" does; transformers would read "[", "MASK", "]".
  * A lone surrogate (which the library cannot take) becomes U+FFFD, one character for one: offsets hold.
  * A special token typed in the text is text: 0 in special_tokens_mask, as in transformers.
  * Word ids count the words of each segment from 0 in order (the index into ``words_with_offsets``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from tokenizers import AddedToken
from tokenizers import Tokenizer as LibraryTokenizer

from ..atomic_files import atomic_write_text
from ..errors import TokenizerError
from .files import TOKENIZER_JSON
from .tokenizer import COUNT_AHEAD, Encoding, Pieces, TokenizerCommon, check_encode_args, check_text
from .vocab import MASK_TOKEN, vocab_tables

_SURROGATE = re.compile("[\ud800-\udfff]")
# Lazy encoding: a truncating encode reads a long text in prefixes cut at a space between two non-spaces
# (a word boundary for both pre-tokenizers, never inside a special token), from LAZY_MIN_CHARS characters
# on, until it has COUNT_AHEAD pieces past what max_length keeps.
LAZY_MIN_CHARS = 16_384
_SAFE_CUT = re.compile(r"(?<=\S) (?=\S)")

# ids, tokens, offsets, word ids of one text: four parallel lists (as in tokenizer.py).


class Words:
    """``tokenizer.basic`` for a library-backed tokenizer: ``tokenize(text)`` gives its words (see
    ``BackedTokenizer.words_with_offsets``), the units ``Encoding.word_ids`` counts."""

    def __init__(self, tokenizer: BackedTokenizer):
        self.tokenizer = tokenizer
        self.do_lower_case = tokenizer.do_lower_case

    def tokenize(self, text: str) -> list[str]:
        return [w for w, _ in self.tokenizer.words_with_offsets(text)]


class BackedTokenizer(TokenizerCommon):
    """The shared part of RobertaTokenizer and AlbertTokenizer: see the module docstring.

    Subclasses set ``kind``, their ``special_tokens`` as spelled in their vocabulary (unk, cls, sep,
    pad, mask), the pair template (``pair_separators``: separators between A and B; ``pair_type_id``:
    the token type of B and what follows it) and ``trace_word``.
    """

    kind = ""
    pair_separators = 1
    pair_type_id = 1

    special_tokens: tuple[str, ...] = ()

    def __init__(self, backend: LibraryTokenizer, *, do_lower_case: bool):
        backend.no_truncation()
        backend.no_padding()
        self.backend = backend  # as loaded: what save() writes
        self.ids_to_tokens, self.vocab = vocab_tables(backend.get_vocab(with_added_tokens=True))
        self._set_special_tokens(*self.special_tokens)
        self.do_lower_case = bool(do_lower_case)
        self.basic = Words(self)
        self.encoder, self.aliases = self._with_mask_alias(backend)

    def _with_mask_alias(self, backend: LibraryTokenizer) -> tuple[LibraryTokenizer, dict[int, int]]:
        """The tokenizer that encodes: ``backend``, plus "[MASK]" as an added token of its own (with the
        mask token's lstrip / rstrip) when the model's mask token is spelled otherwise; and its id -> mask_id."""
        if self.mask_token == MASK_TOKEN:
            return backend, {}
        encoder = LibraryTokenizer.from_str(backend.to_str())
        mask = backend.get_added_tokens_decoder().get(self.mask_id)
        flags = {"lstrip": mask.lstrip, "rstrip": mask.rstrip, "single_word": mask.single_word} if mask else {}
        encoder.add_special_tokens([AddedToken(MASK_TOKEN, normalized=False, special=True, **flags)])
        return encoder, {encoder.token_to_id(MASK_TOKEN): self.mask_id}

    def save(self, folder) -> str:
        """Write tokenizer.json (the whole pipeline, as loaded) into ``folder`` atomically; return the folder."""
        folder = Path(folder)
        if not folder.is_dir():
            raise TokenizerError(f"not a folder: {str(folder)!r}")
        atomic_write_text(folder / TOKENIZER_JSON, self.backend.to_str(pretty=True))
        return str(folder)

    def decode(self, ids: Iterable[int], skip_special_tokens: bool = False) -> str:
        """The text of ``ids`` by the model's decoder (bytes back to text; "▁" back to spaces): the same as
        transformers' ``decode(ids, clean_up_tokenization_spaces=False)``."""
        ids = [int(i) for i in ids]
        self.convert_ids_to_tokens(ids)  # the range check
        return self.backend.decode(ids, skip_special_tokens=skip_special_tokens)

    # ---- one text -> pieces --------------------------------------------------------------------------------

    def _pieces(self, text: str) -> Pieces:
        """ids, tokens, offsets, word ids of the whole of ``text`` (no added special tokens)."""
        e = self.encoder.encode(text, add_special_tokens=False)
        ids = e.ids
        if self.aliases and any(i in self.aliases for i in ids):
            ids = [self.aliases.get(i, i) for i in ids]
        # The vocab's strings: the library spells a token that took the space before it (lstrip) " <mask>".
        table = self.ids_to_tokens
        tokens = [table[i] for i in ids]
        words: dict = {}
        word_ids = [words.setdefault((w, k) if w is None else w, len(words)) for k, w in enumerate(e.word_ids)]
        return list(ids), tokens, list(e.offsets), word_ids

    def encode_text(self, text: str, limit: int | None = None) -> Pieces:
        """ids, tokens, offsets, word ids of one text. With ``limit``, a long text is read in prefixes until
        at least ``limit`` pieces are out (or the text ends): the result starts as the whole text's does."""
        return self._read(text, limit)[0]

    def _read(self, text: str, limit: int | None) -> tuple[Pieces, bool]:
        """encode_text, and whether the pieces are the whole text's."""
        text = _SURROGATE.sub("\ufffd", text)
        if limit is None or len(text) <= LAZY_MIN_CHARS:
            return self._pieces(text), True
        size = max(LAZY_MIN_CHARS, 4 * limit)
        while True:
            m = _SAFE_CUT.search(text, size) if size < len(text) else None
            if m is None:
                return self._pieces(text), True
            pieces = self._pieces(text[: m.start()])
            if len(pieces[0]) >= limit:
                return pieces, False
            size *= 4

    # ---- tokenization ------------------------------------------------------------------------------------

    def tokenize(self, text: str) -> list[str]:
        """The tokens of ``text`` as the vocab spells them, without added special tokens."""
        return self.encode_text(check_text(text, "text"))[1]

    def words_with_offsets(self, text: str) -> list[tuple[str, tuple[int, int]]]:
        """[(word, (start, end))]: the pre-tokenizer's words, in order, so that Encoding.word_ids index them.

        A word is the span of its tokens in ``text``, normalised as the model normalises (ALBERT lower-cases)
        and without the space the model attaches to it; a special token typed in the text is a word as
        typed. In byte-level BPE a run of extra whitespace is a word of its own: its text is "".
        """
        text = _SURROGATE.sub("\ufffd", check_text(text, "text"))
        ids, _toks, offs, wids = self._pieces(text)
        spans: list[list[int]] = []
        special: list[bool] = []
        for i, (s, e), w in zip(ids, offs, wids):
            if w == len(spans):
                spans.append([s, e])
                special.append(i in self._special_ids)
            else:
                spans[w][0], spans[w][1] = min(spans[w][0], s), max(spans[w][1], e)
        return [
            (text[s:e] if sp else self.word_text(text[s:e]), (s, e)) for (s, e), sp in zip(spans, special, strict=True)
        ]

    def word_text(self, raw: str) -> str:
        """A word's text as the model normalises it, without the whitespace around it."""
        normalizer = self.backend.normalizer
        return (normalizer.normalize_str(raw) if normalizer is not None else raw).strip()

    def basic_tokenize(self, text: str) -> list[str]:
        """The words of ``text`` (see words_with_offsets)."""
        return self.basic.tokenize(text)

    def _encode(
        self, text_a: str, text_b: str | None, max_length: int | None, truncation: bool, add_special_tokens: bool
    ) -> Encoding:
        """The model's template around A (and B); "longest_first" as transformers' library-backed
        tokenizers do it (see longest_first: when both texts must lose tokens, the longer keeps the
        odd one; B when they are equally long)."""
        n_special = (2 if text_b is None else 2 + self.pair_separators) if add_special_tokens else 0
        check_encode_args(text_a, text_b, max_length, n_special)
        limit = max_length - n_special + COUNT_AHEAD if truncation and max_length is not None else None
        a, whole_a = self._read(text_a, limit)
        b, whole_b = self._read(text_b, limit) if text_b is not None else (None, True)
        if not (whole_a or whole_b) and (max_length - n_special) % 2:
            # Both texts are long: the longer keeps the odd token, so which is longer must be known.
            a, b = self._pieces(_SURROGATE.sub("\ufffd", text_a)), self._pieces(_SURROGATE.sub("\ufffd", text_b))
        la, lb = len(a[0]), len(b[0]) if b is not None else 0
        removed = 0
        if truncation and max_length is not None:
            removed = max(0, la + lb + n_special - max_length)
            if removed:
                la, lb = longest_first(la, lb, max_length - n_special, pair=b is not None)
        return self._assemble(a, b, la, lb, add_special_tokens, removed)

    def _assemble(self, a: Pieces, b: Pieces | None, la: int, lb: int, add_special: bool, removed: int) -> Encoding:
        """CLS A[:la] SEP (SEP... B[:lb] SEP) with type ids, sequence ids and masks."""
        enc = Encoding(truncated=removed > 0, num_truncated=removed)
        cls_ = ([self.cls_id], [self.cls_token], [(0, 0)], [None])
        sep = ([self.sep_id], [self.sep_token], [(0, 0)], [None])
        if add_special:
            enc.extend(cls_, 1, seq=None, type_id=0, special=1)
        enc.extend(a, la, seq=0, type_id=0, special=0)
        if add_special:
            enc.extend(sep, 1, seq=None, type_id=0, special=1)
        if b is not None:
            t = self.pair_type_id
            if add_special:
                for _ in range(self.pair_separators - 1):
                    enc.extend(sep, 1, seq=None, type_id=t, special=1)
            enc.extend(b, lb, seq=1, type_id=t, special=0)
            if add_special:
                enc.extend(sep, 1, seq=None, type_id=t, special=1)
        enc.attention_mask = [1] * len(enc.ids)
        return enc

    # ---- trace -------------------------------------------------------------------------------------------

    def model_words(self, text: str) -> list[tuple[str, bool]]:
        """[(the string the model segments, whether it is a special token)] for each word of ``text``."""
        raise NotImplementedError

    def trace_word(self, model_word: str, word: str, special: bool = False):
        """The segmentation of one model word (see model_words), step by step: a Trace (``word``: the
        input, kept in Trace.word; a special token is its own piece, in no steps)."""
        raise NotImplementedError

    def trace(self, word: str):
        """The algorithm's steps for one word, for the UI. ``word`` must come out as exactly one word
        (a leading space is part of a word in byte-level BPE: " hello" is not "hello"); otherwise
        TokenizerError (use ``trace_text`` for a phrase). A special token traces as no steps."""
        check_text(word, "word")
        words = self.model_words(_SURROGATE.sub("\ufffd", word))
        if len(words) != 1:
            raise TokenizerError(
                f"trace needs a single word; {word!r} splits into {len(words)} words "
                f"{[w for w, _ in words]!r} (use trace_text for a phrase)"
            )
        model_word, special = words[0]
        return self.trace_word(model_word, word, special)

    def trace_text(self, text: str) -> list:
        """trace() of every word of ``text``."""
        text = _SURROGATE.sub("\ufffd", check_text(text, "text"))
        return [self.trace_word(w, w, special) for w, special in self.model_words(text)]


def longest_first(la: int, lb: int, budget: int, pair: bool) -> tuple[int, int]:
    """Kept lengths of A and B when only ``budget`` text tokens fit, as the tokenizers library truncates
    LONGEST_FIRST (what transformers 5 does for RoBERTa and ALBERT): the shorter text is kept whole when the
    longer can give up the rest; else each keeps half the budget, the longer (B on a tie) the odd token.

    (Our WordPiece Tokenizer follows transformers' Python tokenizers instead, which drop one token at a
    time from the longer text and from B on a tie: the two differ only in who keeps an odd token.)
    """
    if not pair:
        return min(la, budget), lb
    swap = la > lb
    n1, n2 = (lb, la) if swap else (la, lb)
    n2 = n1 if n1 > budget else max(n1, budget - n1)
    if n1 + n2 > budget:
        n1 = budget // 2
        n2 = n1 + budget % 2
    return (n2, n1) if swap else (n1, n2)
