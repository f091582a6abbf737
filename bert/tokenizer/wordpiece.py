"""WordPiece: greedy longest-match-first pieces of one basic token against the vocab, with a per-word cache,
and the step-by-step trace of that search shown in the UI."""

from __future__ import annotations

from dataclasses import dataclass

from .basic import remember
from .vocab import UNK_TOKEN

# A basic token longer than this becomes [UNK] without a search (BERT's max_input_chars_per_word).
MAX_INPUT_CHARS_PER_WORD = 100


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
    ids, unk (True when the word became [UNK]), capped (True when the word is longer than the trace
    follows: no steps, but pieces and ids are still the word's tokens), reason (why, when unk or capped;
    else "").
    """

    def __init__(self, steps=(), *, word="", normalized="", pieces=(), ids=(), unk=False, capped=False, reason=""):
        super().__init__(steps)
        self.word = word
        self.normalized = normalized
        self.pieces = list(pieces)
        self.ids = list(ids)
        self.unk = unk
        self.capped = capped
        self.reason = reason

    def __repr__(self) -> str:
        return (
            f"Trace(word={self.word!r}, pieces={self.pieces!r}, steps={len(self)}, unk={self.unk}, "
            f"capped={self.capped})"
        )


class WordPiece:
    """Greedy longest-match-first WordPiece over a vocab dict, with a per-word cache."""

    def __init__(
        self,
        vocab: dict[str, int],
        unk_token: str = UNK_TOKEN,
        max_input_chars_per_word: int = MAX_INPUT_CHARS_PER_WORD,
    ):
        self.vocab = vocab
        self.unk_token = unk_token
        self.unk_id = vocab[unk_token]
        self.max_input_chars_per_word = max_input_chars_per_word
        # A candidate longer than the longest vocab entry cannot match: skipping it changes nothing.
        self._max_len = max((len(t) for t in vocab), default=1)
        # word -> pieces(word); public so Tokenizer's hot loop can read it without a call per word
        self.cache: dict[str, tuple] = {}
        # token -> id for the vocab entries that are their own WordPiece result (the common case)
        self.whole_word = {t: i for t, i in vocab.items() if len(t) <= max_input_chars_per_word}

    def pieces(self, word: str) -> tuple:
        """((token, id, start, end), ...) with start/end character positions in ``word``; cached."""
        r = self.cache.get(word)
        if r is None:
            r = remember(self.cache, word, self._pieces(word))
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
            return self._unk_trace(word, [], f"longer than {self.max_input_chars_per_word} characters ({n})")
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
                return self._unk_trace(word, steps, f"no vocab entry starts at character {start} ({word[start]!r})")
            pieces.append(found)
            start = end
        return Trace(steps, word=word, normalized=word, pieces=pieces, ids=[self.vocab[p] for p in pieces])

    def _unk_trace(self, word: str, steps: list[TraceStep], reason: str) -> Trace:
        """The trace of a word that became [UNK], and why."""
        return Trace(
            steps, word=word, normalized=word, pieces=[self.unk_token], ids=[self.unk_id], unk=True, reason=reason
        )
