"""The basic tokenizer: cleaning, CJK splitting, normalisation (NFC, lower-case, accents) and punctuation
splitting, with every basic token's span in the original text.

Offsets are (start, end) character positions in the ORIGINAL string. Every normalised character remembers
the original character it came from (lower-casing and NFD can turn one character into several; accent
stripping and cleaning remove characters), so a piece's span runs from the original position of its first
character to the end of the original character of its last one. Removed characters at the edge of a piece
(a combining accent after the last letter, a zero-width space) are therefore outside its span, as in the
Rust ``tokenizers`` library; removed characters inside it are inside. (One known difference with Rust:
its Unicode tables are older than Python's ``unicodedata`` and it keeps unassigned code points, which BERT's
cleaning, and so we, drop; next to an [UNK] word they make Rust's [UNK] span wider than ours.)

A whitespace word longer than _LONG_WORD characters is cut before an ASCII punctuation character where that
changes no token (its memory stays bounded). The one visible effect: in such a word, when NFC composition
defeats the per-character alignment (a cased model, a decomposed accent), the cluster alignment applies to
that part only, not to the whole word.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from .vocab import SPECIAL_TOKENS

# The caches of this package only memoise pure functions; these bound their memory in a long-running app.
_CACHE_LIMIT = 500_000  # entries per cache; cleared when exceeded
_CACHE_WORD_CHARS = 200  # longer words are not cached (rare, and they would hold their memory)


def remember(cache: dict, word: str, value):
    """Keep ``value`` for ``word`` in one of these bounded caches (unless the word is long); return it."""
    if len(word) <= _CACHE_WORD_CHARS:
        if len(cache) > _CACHE_LIMIT:
            cache.clear()
        cache[word] = value
    return value


# A whitespace word longer than _LONG_WORD kept characters is cut before one of these (ASCII
# punctuation: stable under NFC/NFD and lower-casing, a basic token of its own; never "[", so neither
# part can be a special token). Cutting changes no token; it bounds the memory of a long word.
# ' . : ^ ` are case-ignorable (str.lower() looks past them for a final sigma), so they cut a
# lower-cased word only when it has no capital sigma.
_LONG_WORD = 256
_CUT_BEFORE = frozenset('!"#$%&()*+,-/;<=>?@\\]_{|}~')
_CUT_BEFORE_NO_SIGMA = _CUT_BEFORE | frozenset("'.:^`")

# ---- character classes -------------------------------------------------------------------------------

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
ASCII_CTRL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
ASCII_TOKEN = re.compile(r"[A-Za-z0-9]+|[^A-Za-z0-9 \t\n\r]")


def _punct_split(target: str, spans: list[tuple[int, int]]) -> list:
    """Cut a normalised word into runs of non-punctuation and single punctuation characters.

    ``spans[j]`` is the (a, b) span in the source word of target[j]; returns [(token, k0, k1, kspans)]
    with kspans None when the token's characters map one to one onto the source word's [k0, k1).
    """
    out = []
    j = 0
    m = len(target)
    while j < m:
        punct = _PUNCT.get(target[j])
        if punct is None:
            punct = _PUNCT[target[j]] = _is_punctuation(target[j])
        e = j + 1
        if not punct:
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


# ---- basic tokenizer ---------------------------------------------------------------------------------

# A basic token is (text, start, end, spans):
#   text   normalised token text
#   start, end  its span in the original string
#   spans  None when text[i] comes from original[start + i] one-to-one (the common case), else a tuple with,
#          for every character of text, the (start, end) span of the original character(s) it came from.
BasicToken = tuple  # (str, int, int, tuple[tuple[int, int], ...] | None)


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
            elif seg.isascii() and not ASCII_CTRL.search(seg):
                s = seg.lower() if self.do_lower_case else seg
                for m in ASCII_TOKEN.finditer(s):
                    out.append((m.group(), base + m.start(), base + m.end(), None))
            else:
                self.segment(seg, base, out)
        return out

    def segment(self, seg: str, base: int, out: list, stop: int | None = None) -> None:
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
            ents = remember(self._word_cache, w, self._normalize_word(w))
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
        spans: list[tuple[int, int]] = []
        for k, c in enumerate(w):
            g = cn.get(c)
            if g is None:
                g = cn[c] = self._norm(c)
            spans.extend([(k, k + 1)] * len(g))
        if len(spans) != len(target):
            # Context-dependent normalisation (NFC composition): align by grapheme-ish clusters instead.
            spans = self._cluster_spans(w, target)
        # (equal lengths but different text, e.g. final sigma: keep target's characters, per-char spans)
        return _punct_split(target, spans)

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
