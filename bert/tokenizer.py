"""BERT's WordPiece tokenizer, written from the algorithm, with character offsets and a trace.

Pipeline (identical ids and tokens to the reference Python tokenizer, transformers' ``BertTokenizerLegacy``,
formerly the slow ``BertTokenizer``):

    text
     -> split out special tokens written in the text ("[MASK]", "[CLS]", ...): kept whole, wherever they stand
     -> clean:       drop U+0000, U+FFFD and control characters (category C*, except \\t \\n \\r);
                     whitespace (\\t \\n \\r, space, category Zs) becomes a word boundary
     -> CJK:         every CJK ideograph becomes a word of its own
     -> per word:    NFC; then, when do_lower_case, lower-case and strip accents (NFD, drop category Mn)
     -> punctuation: every punctuation character (ASCII 33-47, 58-64, 91-96, 123-126, or category P*)
                     becomes a word of its own                               -> "basic tokens"
     -> WordPiece:   greedy longest-match-first against the vocab, "##" marks a continuation; a basic token
                     that cannot be covered, or is longer than 100 characters, becomes [UNK]

Offsets are (start, end) character positions in the ORIGINAL string. Every normalised character remembers
the original character it came from (lower-casing and NFD can turn one character into several; accent
stripping and cleaning remove characters), so a piece's span runs from the original position of its first
character to the end of the original character of its last one. Removed characters at the edge of a piece
(a combining accent after the last letter, a zero-width space) are therefore outside its span, as in the
Rust ``tokenizers`` library; removed characters inside it are inside. (One known difference with Rust:
its Unicode tables are older than Python's ``unicodedata`` and it keeps unassigned code points, which BERT's
cleaning, and so we, drop; next to an [UNK] word they make Rust's [UNK] span wider than ours.)

Speed: a plain-ASCII segment takes a regex fast path; WordPiece results are cached per basic token, and the
normalisation of non-ASCII words is cached per word. The caches only memoise pure functions.
A truncating ``encode`` reads the text lazily and stops a fixed number of pieces past ``max_length``,
so a pasted megabyte costs milliseconds; a whitespace word longer than 256 characters is cut before an
ASCII punctuation character where that changes no token (its memory stays bounded). The one visible
effect: in such a word, when NFC composition defeats the per-character alignment (a cased model, a
decomposed accent), the cluster alignment below applies to that part only, not to the whole word.

Pure Python: only the standard library (``re``, ``unicodedata``) is imported.
"""

from __future__ import annotations

import os
import re
import tempfile
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

__all__ = [
    "TokenizerError",
    "BasicTokenizer",
    "WordPiece",
    "Tokenizer",
    "Encoding",
    "TraceStep",
    "Trace",
    "SPECIAL_TOKENS",
]

SPECIAL_TOKENS = ("[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]")
MAX_INPUT_CHARS_PER_WORD = 100
_CACHE_LIMIT = 500_000  # entries per cache; cleared when exceeded (memory bound for long-running apps)
_CACHE_WORD_CHARS = 200  # longer words are not cached (rare, and they would hold their memory)

# Lazy encoding (``encode`` with truncation): the text is read in windows of about _WINDOW characters,
# each ending after an ASCII whitespace (a word boundary on every path, never inside a special token),
# and reading stops _COUNT_AHEAD pieces past what ``max_length`` keeps: enough to count what was cut
# exactly for any text up to that length, and constant time and memory for a longer paste.
_WINDOW = 4096
_COUNT_AHEAD = 10_000
_ASCII_WS = re.compile(r"[ \t\n\r]")
# A whitespace word longer than _LONG_WORD kept characters is cut before one of these (ASCII
# punctuation: stable under NFC/NFD and lower-casing, a basic token of its own; never "[", so neither
# part can be a special token). Cutting changes no token; it bounds the memory of a long word.
# ' . : ^ ` are case-ignorable (str.lower() looks past them for a final sigma), so they cut a
# lower-cased word only when it has no capital sigma.
_LONG_WORD = 256
_CUT_BEFORE = frozenset('!"#$%&()*+,-/;<=>?@\\]_{|}~')
_CUT_BEFORE_NO_SIGMA = _CUT_BEFORE | frozenset("'.:^`")


from .errors import TokenizerError  # noqa: E402  (typed error shared by bert/)

# --------------------------------------------------------------------------------------------------------
# Character classes
# --------------------------------------------------------------------------------------------------------

_KEEP, _DROP, _SPACE, _CJK = 0, 1, 2, 3

_CJK_RANGES = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)


def _is_cjk(cp: int) -> bool:
    """CJK Unified Ideographs (and extensions, compatibility ideographs): BERT's "Chinese character"."""
    for lo, hi in _CJK_RANGES:
        if lo <= cp <= hi:
            return True
    return False


def _classify(c: str) -> int:
    """Class of a raw character for the cleaning / word-splitting stage (cached in _CHAR_CLASS)."""
    cp = ord(c)
    if cp == 0 or cp == 0xFFFD:
        k = _DROP
    elif c in " \t\n\r":
        k = _SPACE
    else:
        cat = unicodedata.category(c)
        if cat == "Zs":
            k = _SPACE
        elif cat[0] == "C":  # control, format (zero-width, bidi marks), unassigned, private use, surrogate
            k = _DROP
        elif c.isspace():  # U+2028, U+2029: not cleaned, but str.split() splits on them
            k = _SPACE
        elif _is_cjk(cp):
            k = _CJK
        else:
            k = _KEEP
    _CHAR_CLASS[c] = k
    return k


_CHAR_CLASS: dict[str, int] = {}


def _is_punctuation(c: str) -> bool:
    cp = ord(c)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(c)[0] == "P"


_PUNCT: dict[str, bool] = {}


def _strip_accents(s: str) -> str:
    """NFD, then drop non-spacing marks (category Mn)."""
    s = unicodedata.normalize("NFD", s)
    if s.isascii():
        return s
    return "".join(ch for ch in s if unicodedata.category(ch) != "Mn")


def _norm_uncased(s: str) -> str:
    return _strip_accents(unicodedata.normalize("NFC", s).lower())


def _norm_cased(s: str) -> str:
    return unicodedata.normalize("NFC", s)


# ASCII fast path: printable ASCII is either alphanumeric or punctuation; whitespace is " \t\n\r".
_ASCII_CTRL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_ASCII_TOKEN = re.compile(r"[A-Za-z0-9]+|[^A-Za-z0-9 \t\n\r]")


# --------------------------------------------------------------------------------------------------------
# Basic tokenizer
# --------------------------------------------------------------------------------------------------------

# A basic token is (text, start, end, spans):
#   text   normalised token text
#   start, end  its span in the original string
#   spans  None when text[i] comes from original[start + i] one-to-one (the common case), else a tuple with,
#          for every character of text, the (start, end) span of the original character(s) it came from.
BasicToken = tuple  # (str, int, int, tuple[tuple[int, int], ...] | None)


def _windows(text: str):
    """(start, chunk): ``text`` in pieces of about _WINDOW characters, each ending after an ASCII
    whitespace (or at the end), read lazily. A short text is one chunk, the text itself."""
    n, pos = len(text), 0
    while pos < n:
        m = _ASCII_WS.search(text, pos + _WINDOW) if n - pos > _WINDOW else None
        end = m.end() if m else n
        yield pos, (text if pos == 0 and end == n else text[pos:end])
        pos = end


class BasicTokenizer:
    """Cleaning, CJK splitting, lower-casing + accent stripping, punctuation splitting, with offsets.

    ``never_split`` strings (the special tokens) are cut out of the raw text wherever they occur, and a
    whitespace word equal to one of them after cleaning is also kept whole and unnormalised, as in
    transformers' Python BERT tokenizer.
    """

    def __init__(self, do_lower_case: bool = True, never_split: Iterable[str] = SPECIAL_TOKENS):
        self.do_lower_case = bool(do_lower_case)
        self.never_split = frozenset(never_split)
        specials = sorted(self.never_split, key=len, reverse=True)
        self._special_re = re.compile("|".join(re.escape(s) for s in specials)) if specials else None
        self._special_chars = frozenset(s[0] for s in specials)
        self._norm = _norm_uncased if self.do_lower_case else _norm_cased
        self._char_norm: dict[str, str] = {}
        self._word_cache: dict[str, list] = {}

    # ---- public ------------------------------------------------------------------------------------------

    def tokenize(self, text: str) -> list[str]:
        """Basic tokens (normalised strings) of ``text``."""
        return [t[0] for t in self.tokens_with_offsets(text)]

    def tokens_with_offsets(self, text: str) -> list[tuple[str, int, int]]:
        """(normalised token, start, end) with start/end into ``text``; special tokens included."""
        return [(t[0], t[1], t[2]) for t in self._tokens(text)]

    # ---- internals ---------------------------------------------------------------------------------------

    def split_specials(self, text: str) -> list[tuple[bool, str, int]]:
        """Cut the never_split strings out of the raw text: [(is_special, piece, start), ...]."""
        if self._special_re is None or not any(c in text for c in self._special_chars):
            return [(False, text, 0)]
        out = []
        pos = 0
        for m in self._special_re.finditer(text):
            if m.start() > pos:
                out.append((False, text[pos : m.start()], pos))
            out.append((True, m.group(), m.start()))
            pos = m.end()
        if pos < len(text):
            out.append((False, text[pos:], pos))
        return out

    def _tokens(self, text: str) -> list[BasicToken]:
        out: list[BasicToken] = []
        for is_special, seg, base in self.split_specials(text):
            if is_special:
                out.append((seg, base, base + len(seg), None))
            elif seg.isascii() and not _ASCII_CTRL.search(seg):
                s = seg.lower() if self.do_lower_case else seg
                for m in _ASCII_TOKEN.finditer(s):
                    out.append((m.group(), base + m.start(), base + m.end(), None))
            else:
                self._segment(seg, base, out)
        return out

    def _segment(self, seg: str, base: int, out: list, stop: int | None = None) -> None:
        """General (Unicode) path for one segment without special tokens.

        With ``stop``, returns once ``out`` holds at least ``stop`` basic tokens (the rest unread).
        """
        cls_get = _CHAR_CLASS.get
        cut = _CUT_BEFORE_NO_SIGMA if not self.do_lower_case or "\u03a3" not in seg else _CUT_BEFORE
        chars: list[str] = []
        idx: list[int] = []
        for i, c in enumerate(seg):
            k = cls_get(c)
            if k is None:
                k = _classify(c)
            if k == _KEEP:
                if len(chars) >= _LONG_WORD and c in cut:  # a long word: cut it here (see _CUT_BEFORE)
                    self._word(chars, idx, base, out)
                    chars = []
                    idx = []
                    if stop is not None and len(out) >= stop:
                        return
                chars.append(c)
                idx.append(i)
            elif k != _DROP:  # whitespace or CJK: a word boundary
                if chars:
                    self._word(chars, idx, base, out)
                    chars = []
                    idx = []
                if k == _CJK:
                    self._word([c], [i], base, out)
                if stop is not None and len(out) >= stop:
                    return
        if chars:
            self._word(chars, idx, base, out)

    def _word(self, chars: list[str], idx: list[int], base: int, out: list) -> None:
        """Normalise and punctuation-split one whitespace word; idx[k] = position of chars[k] in the segment."""
        w = "".join(chars)
        ents = self._word_cache.get(w)
        if ents is None:
            ents = self._normalize_word(w)
            if len(w) <= _CACHE_WORD_CHARS:
                if len(self._word_cache) > _CACHE_LIMIT:
                    self._word_cache.clear()
                self._word_cache[w] = ents
        contiguous = idx[-1] - idx[0] == len(idx) - 1
        for text, k0, k1, kspans in ents:
            if kspans is None:
                start = base + idx[k0]
                if contiguous:
                    out.append((text, start, start + k1 - k0, None))
                    continue
                end = base + idx[k1 - 1] + 1
                if end - start == k1 - k0:
                    out.append((text, start, end, None))
                    continue
                kspans = tuple((k, k + 1) for k in range(k0, k1))
            spans = tuple((base + idx[a], base + idx[b - 1] + 1) for a, b in kspans)
            out.append((text, spans[0][0], spans[-1][1], spans))

    def _normalize_word(self, w: str) -> list:
        """[(token, k0, k1, kspans)]: kspans None = token chars map 1:1 onto w[k0:k1]; else per-char (a, b)."""
        n = len(w)
        nfc = unicodedata.normalize("NFC", w)
        if nfc in self.never_split:
            return [(nfc, 0, n, None if len(nfc) == n else tuple((0, n) for _ in nfc))]
        target = self._norm(w)
        if not target:
            return []
        # Align: normalise character by character (cached) and map each output char to its source char.
        cn = self._char_norm
        pieces: list[str] = []
        spans: list[tuple[int, int]] = []
        for k, c in enumerate(w):
            g = cn.get(c)
            if g is None:
                g = cn[c] = self._norm(c)
            pieces.append(g)
            spans.extend([(k, k + 1)] * len(g))
        if len(spans) != len(target):
            # Context-dependent normalisation (NFC composition): align by grapheme-ish clusters instead.
            spans = self._cluster_spans(w, target)
        # (equal lengths but different text, e.g. final sigma: keep target's characters, per-char spans)
        out = []
        j = 0
        m = len(target)
        while j < m:
            punct = _PUNCT.get(target[j])
            if punct is None:
                punct = _PUNCT[target[j]] = _is_punctuation(target[j])
            if punct:
                e = j + 1
            else:
                e = j + 1
                while e < m:
                    p = _PUNCT.get(target[e])
                    if p is None:
                        p = _PUNCT[target[e]] = _is_punctuation(target[e])
                    if p:
                        break
                    e += 1
            sp = spans[j:e]
            k0 = sp[0][0]
            one_to_one = all(a == k0 + t and b == a + 1 for t, (a, b) in enumerate(sp))
            out.append((target[j:e], k0, sp[-1][1], None if one_to_one else tuple(sp)))
            j = e
        return out

    def _cluster_spans(self, w: str, target: str) -> list[tuple[int, int]]:
        """Spans for target's chars from normalising clusters (a base char plus following marks) of w."""
        bounds = [0]
        for k in range(1, len(w)):
            if not unicodedata.category(w[k]).startswith("M"):
                bounds.append(k)
        bounds.append(len(w))
        spans: list[tuple[int, int]] = []
        for a, b in zip(bounds, bounds[1:]):
            spans.extend([(a, b)] * len(self._norm(w[a:b])))
        if len(spans) == len(target):
            return spans
        return [(0, len(w))] * len(target)  # last resort: every char spans the whole word


# --------------------------------------------------------------------------------------------------------
# WordPiece
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TraceStep:
    """One candidate tried by greedy longest-match-first WordPiece.

    start, end: character positions in the normalised word; candidate: the vocab string looked up
    ("##" + word[start:end] when start > 0); accepted: it was in the vocab (the longest match from start).
    """

    start: int
    end: int
    candidate: str
    accepted: bool


class Trace(list):
    """A list of TraceStep, plus the outcome.

    Attributes: word (the input), normalized (the basic token actually traced), pieces (final tokens),
    ids, unk (True when the word became [UNK]), reason (why, when unk; else "").
    """

    def __init__(self, steps=(), *, word="", normalized="", pieces=(), ids=(), unk=False, reason=""):
        super().__init__(steps)
        self.word = word
        self.normalized = normalized
        self.pieces = list(pieces)
        self.ids = list(ids)
        self.unk = unk
        self.reason = reason

    def __repr__(self) -> str:
        return f"Trace(word={self.word!r}, pieces={self.pieces!r}, steps={len(self)}, unk={self.unk})"


class WordPiece:
    """Greedy longest-match-first WordPiece over a vocab dict, with a per-word cache."""

    def __init__(self, vocab: dict[str, int], unk_token: str = "[UNK]", max_input_chars_per_word: int = 100):
        self.vocab = vocab
        self.unk_token = unk_token
        self.unk_id = vocab[unk_token]
        self.max_input_chars_per_word = max_input_chars_per_word
        # A candidate longer than the longest vocab entry cannot match: skipping it changes nothing.
        self._max_len = max((len(t) for t in vocab), default=1)
        self._cache: dict[str, tuple] = {}
        # token -> id for the vocab entries that are their own WordPiece result (the common case)
        self.whole_word = {t: i for t, i in vocab.items() if len(t) <= max_input_chars_per_word}

    def pieces(self, word: str) -> tuple:
        """((token, id, start, end), ...) with start/end character positions in ``word``; cached."""
        r = self._cache.get(word)
        if r is None:
            r = self._pieces(word)
            if len(word) <= _CACHE_WORD_CHARS:
                if len(self._cache) > _CACHE_LIMIT:
                    self._cache.clear()
                self._cache[word] = r
        return r

    def _pieces(self, word: str) -> tuple:
        n = len(word)
        unk = ((self.unk_token, self.unk_id, 0, n),)
        if n > self.max_input_chars_per_word:
            return unk
        vocab_get = self.vocab.get
        i = vocab_get(word)
        if i is not None:
            return ((word, i, 0, n),)
        out = []
        start = 0
        max_len = self._max_len
        while start < n:
            end = min(n, start + max_len)
            while end > start:
                sub = word[start:end] if start == 0 else "##" + word[start:end]
                i = vocab_get(sub)
                if i is not None:
                    break
                end -= 1
            else:
                return unk
            out.append((sub, i, start, end))
            start = end
        return tuple(out)

    def tokenize(self, word: str) -> list[str]:
        return [p[0] for p in self.pieces(word)]

    def trace(self, word: str) -> Trace:
        """Every candidate the reference algorithm looks up, longest first, without the length shortcut."""
        n = len(word)
        if n > self.max_input_chars_per_word:
            return Trace(
                word=word,
                normalized=word,
                pieces=[self.unk_token],
                ids=[self.unk_id],
                unk=True,
                reason=f"longer than {self.max_input_chars_per_word} characters ({n})",
            )
        steps: list[TraceStep] = []
        pieces: list[str] = []
        start = 0
        while start < n:
            end = n
            found = None
            while end > start:
                sub = word[start:end] if start == 0 else "##" + word[start:end]
                ok = sub in self.vocab
                steps.append(TraceStep(start, end, sub, ok))
                if ok:
                    found = sub
                    break
                end -= 1
            if found is None:
                return Trace(
                    steps,
                    word=word,
                    normalized=word,
                    pieces=[self.unk_token],
                    ids=[self.unk_id],
                    unk=True,
                    reason=f"no vocab entry starts at character {start} ({word[start]!r})",
                )
            pieces.append(found)
            start = end
        return Trace(steps, word=word, normalized=word, pieces=pieces, ids=[self.vocab[p] for p in pieces])


# --------------------------------------------------------------------------------------------------------
# Encoding
# --------------------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------------------
# Tokenizer
# --------------------------------------------------------------------------------------------------------


def _read_vocab_file(path) -> list[str]:
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


class Tokenizer:
    """BERT WordPiece tokenizer: ``Tokenizer.from_file("vocab.txt")`` or ``Tokenizer(tokens_or_dict)``.

    ``vocab`` is a list of tokens (id = position, like the lines of vocab.txt; on duplicates the last
    position wins for token -> id, as in transformers) or a dict token -> id with ids 0..n-1.
    """

    def __init__(
        self,
        vocab: dict[str, int] | Sequence[str],
        do_lower_case: bool = True,
        *,
        unk_token: str = "[UNK]",
        cls_token: str = "[CLS]",
        sep_token: str = "[SEP]",
        pad_token: str = "[PAD]",
        mask_token: str = "[MASK]",
    ):
        if isinstance(vocab, dict):
            ids = sorted(vocab.values())
            if not all(isinstance(i, int) for i in ids) or ids != list(range(len(ids))):
                raise TokenizerError("vocab dict ids must be the integers 0..n-1, each once")
            self.ids_to_tokens: list[str] = [""] * len(ids)
            for t, i in vocab.items():
                self.ids_to_tokens[i] = t
            self.vocab: dict[str, int] = dict(vocab)
        elif isinstance(vocab, (list, tuple)):
            self.ids_to_tokens = [str(t) for t in vocab]
            self.vocab = {t: i for i, t in enumerate(self.ids_to_tokens)}
        else:
            raise TokenizerError(f"vocab must be a dict or a list of tokens, not {type(vocab).__name__}")
        if not self.ids_to_tokens:
            raise TokenizerError("vocab is empty")
        self.unk_token, self.cls_token, self.sep_token = unk_token, cls_token, sep_token
        self.pad_token, self.mask_token = pad_token, mask_token
        self.special_tokens = (unk_token, cls_token, sep_token, pad_token, mask_token)
        missing = [t for t in self.special_tokens if t not in self.vocab]
        if missing:
            raise TokenizerError(f"vocab lacks special token(s) {', '.join(missing)}")
        self.do_lower_case = bool(do_lower_case)
        self.basic = BasicTokenizer(do_lower_case, never_split=self.special_tokens)
        self.wordpiece = WordPiece(self.vocab, unk_token, MAX_INPUT_CHARS_PER_WORD)
        self._special_ids = frozenset(self.vocab[t] for t in self.special_tokens)

    @classmethod
    def from_file(cls, vocab_path, do_lower_case: bool = True, **kwargs) -> Tokenizer:
        """Load a vocab.txt (one token per line, id = line number); a directory means DIR/vocab.txt."""
        p = os.fspath(vocab_path)
        if os.path.isdir(p):
            p = os.path.join(p, "vocab.txt")
        return cls(_read_vocab_file(p), do_lower_case, **kwargs)

    def save(self, path) -> str:
        """Write the vocab (one token per line, in id order) atomically; a directory means DIR/vocab.txt."""
        p = os.fspath(path)
        if os.path.isdir(p):
            p = os.path.join(p, "vocab.txt")
        d = os.path.dirname(os.path.abspath(p))
        fd, tmp = tempfile.mkstemp(prefix=".vocab.", suffix=".tmp", dir=d)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
                f.write("".join(t + "\n" for t in self.ids_to_tokens))
            os.replace(tmp, p)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        return p

    # ---- basics ------------------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.ids_to_tokens)

    def __repr__(self) -> str:
        return f"Tokenizer(vocab_size={len(self)}, do_lower_case={self.do_lower_case})"

    @property
    def unk_id(self) -> int:
        return self.vocab[self.unk_token]

    @property
    def cls_id(self) -> int:
        return self.vocab[self.cls_token]

    @property
    def sep_id(self) -> int:
        return self.vocab[self.sep_token]

    @property
    def pad_id(self) -> int:
        return self.vocab[self.pad_token]

    @property
    def mask_id(self) -> int:
        return self.vocab[self.mask_token]

    def convert_tokens_to_ids(self, tokens: str | Iterable[str]) -> int | list[int]:
        """Token(s) -> id(s); a token not in the vocab gives unk_id."""
        unk = self.unk_id
        if isinstance(tokens, str):
            return self.vocab.get(tokens, unk)
        return [self.vocab.get(t, unk) for t in tokens]

    def convert_ids_to_tokens(self, ids: int | Iterable[int]) -> str | list[str]:
        """Id(s) -> token(s); an id outside 0..len-1 raises TokenizerError."""
        n = len(self.ids_to_tokens)

        def one(i) -> str:
            i = int(i)
            if not 0 <= i < n:
                raise TokenizerError(f"token id {i} is outside the vocab (0..{n - 1})")
            return self.ids_to_tokens[i]

        if isinstance(ids, int) or (hasattr(ids, "ndim") and ids.ndim == 0):
            return one(ids)
        return [one(i) for i in ids]

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
        return self._encode_text(self._check_text(text, "text"))[1]

    def basic_tokenize(self, text: str) -> list[str]:
        """Basic tokens (words after cleaning, normalisation and punctuation splitting)."""
        return self.basic.tokenize(self._check_text(text, "text"))

    def words_with_offsets(self, text: str) -> list[tuple[str, tuple[int, int]]]:
        """[(basic token, (start, end))]: the words WordPiece sees and where they are in ``text``.

        Their order and index match Encoding.word_ids.
        """
        return [(t, (s, e)) for t, s, e in self.basic.tokens_with_offsets(self._check_text(text, "text"))]

    @staticmethod
    def _check_text(text, name: str) -> str:
        if not isinstance(text, str):
            raise TokenizerError(f"{name} must be a str, not {type(text).__name__}")
        return text

    def _encode_text(self, text: str, limit: int | None = None):
        """ids, tokens, offsets, word_ids of one text (no added special tokens).

        With ``limit``, reading stops once at least ``limit`` pieces are out (a word is never split):
        the result is then the first pieces of the text, at least ``limit`` of them.
        """
        ids: list[int] = []
        toks: list[str] = []
        offs: list[tuple[int, int]] = []
        wids: list[int] = []
        vocab_get = self.wordpiece.whole_word.get
        wp_cache = self.wordpiece._cache
        wp = self.wordpiece.pieces
        basic = self.basic
        lower = basic.do_lower_case
        w = 0
        for w0, chunk in _windows(text):
            for is_special, seg, base in basic.split_specials(chunk):
                if limit is not None and len(ids) >= limit:
                    return ids, toks, offs, wids
                base += w0
                if is_special:
                    ids.append(self.vocab[seg])
                    toks.append(seg)
                    offs.append((base, base + len(seg)))
                    wids.append(w)
                    w += 1
                elif seg.isascii() and not _ASCII_CTRL.search(seg):
                    # Fast path: normalisation is only lower(), offsets are identity.
                    if lower:
                        seg = seg.lower()
                    if len(seg) <= 2 * _WINDOW:  # fused: every word one vocab entry -> tokens are words
                        ms = list(_ASCII_TOKEN.finditer(seg))
                        words = [m.group() for m in ms]
                        whole = [vocab_get(x) for x in words]
                        if None not in whole:
                            ids += whole
                            toks += words
                            offs += (
                                [m.span() for m in ms]
                                if base == 0
                                else [(base + m.start(), base + m.end()) for m in ms]
                            )
                            wids += range(w, w + len(words))
                            w += len(words)
                            continue
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
                else:
                    btoks: list = []
                    basic._segment(seg, base, btoks, None if limit is None else limit - len(ids))
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
        return ids, toks, offs, wids

    def encode(
        self,
        text_a: str,
        text_b: str | None = None,
        max_length: int | None = 512,
        truncation: bool = True,
        add_special_tokens: bool = True,
    ) -> Encoding:
        """[CLS] A [SEP] (B [SEP]) with type ids, offsets and word ids.

        Truncation (when ``truncation`` and the total exceeds ``max_length``, specials included) is
        transformers' "longest_first": tokens are dropped from the end of the longer sequence one at a
        time, from B when both are equally long. ``max_length=None`` means no limit. A truncated text
        is read only up to 10,000 pieces past ``max_length``: a long paste costs no more than that,
        and ``num_truncated`` is exact below it and a lower bound above.
        """
        self._check_text(text_a, "text_a")
        if text_b is not None:
            self._check_text(text_b, "text_b")
        n_special = (2 if text_b is None else 3) if add_special_tokens else 0
        if max_length is not None:
            if isinstance(max_length, bool) or not isinstance(max_length, int):
                raise TokenizerError(f"max_length must be an int or None, not {type(max_length).__name__}")
            if max_length < max(n_special, 1):
                raise TokenizerError(f"max_length={max_length} leaves no room: {n_special} special tokens are needed")
        # With truncation, read each text only COUNT_AHEAD pieces past the budget: the kept lengths
        # depend on each text's length only up to budget + 1 (checked in tests), so they are exact.
        limit = max_length - n_special + _COUNT_AHEAD if truncation and max_length is not None else None
        a = self._encode_text(text_a, limit)
        b = self._encode_text(text_b, limit) if text_b is not None else None
        la = len(a[0])
        lb = len(b[0]) if b is not None else 0
        removed = 0
        if truncation and max_length is not None:
            removed = max(0, la + lb + n_special - max_length)
            if removed:
                if b is None:
                    la -= removed
                else:
                    # transformers.PreTrainedTokenizer.truncate_sequences, LONGEST_FIRST with a pair
                    first = min(abs(la - lb), removed)
                    second = removed - first
                    if la > lb:
                        ra, rb = first + second // 2, second - second // 2
                    else:
                        ra, rb = second // 2, first + second - second // 2
                    la, lb = la - ra, lb - rb
        a_ids, a_toks, a_offs, a_wids = a
        if la < len(a_ids):
            a_ids, a_toks, a_offs, a_wids = a_ids[:la], a_toks[:la], a_offs[:la], a_wids[:la]
        if add_special_tokens:
            cls_, sep, zero = [self.cls_id], [self.sep_id], [(0, 0)]
            ids = cls_ + a_ids + sep
            toks = [self.cls_token] + a_toks + [self.sep_token]
            offs = zero + a_offs + zero
            wids = [None] + a_wids + [None]
            seqs = [None] + [0] * la + [None]
            special = [1] + [0] * la + [1]
        else:
            ids, toks, offs, wids = list(a_ids), list(a_toks), list(a_offs), list(a_wids)
            seqs = [0] * la
            special = [0] * la
        type_ids = [0] * len(ids)
        if b is not None:
            b_ids, b_toks, b_offs, b_wids = b
            if lb < len(b_ids):
                b_ids, b_toks, b_offs, b_wids = b_ids[:lb], b_toks[:lb], b_offs[:lb], b_wids[:lb]
            ids += b_ids
            toks += b_toks
            offs += b_offs
            wids += b_wids
            seqs += [1] * lb
            special += [0] * lb
            if add_special_tokens:
                ids.append(self.sep_id)
                toks.append(self.sep_token)
                offs.append((0, 0))
                wids.append(None)
                seqs.append(None)
                special.append(1)
            type_ids += [1] * (len(ids) - len(type_ids))
        return Encoding(
            ids=ids,
            tokens=toks,
            type_ids=type_ids,
            offsets=offs,
            sequence_ids=seqs,
            word_ids=wids,
            attention_mask=[1] * len(ids),
            special_tokens_mask=special,
            truncated=removed > 0,
            num_truncated=removed,
        )

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

    # ---- trace -------------------------------------------------------------------------------------------

    def trace(self, word: str) -> Trace:
        """Greedy longest-match-first steps for one word, for the UI.

        ``word`` is normalised first (lower-case, accents) like any text; it must come out as exactly one
        basic token, otherwise TokenizerError (use ``trace_text`` for a phrase). ``Trace.normalized`` is
        the basic token traced; a special token like "[MASK]" traces as one accepted step.
        """
        self._check_text(word, "word")
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
        for b in self.basic.tokenize(self._check_text(text, "text")):
            t = self.wordpiece.trace(b)
            out.append(t)
        return out
