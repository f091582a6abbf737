"""ALBERT's tokenizer: SentencePiece Unigram from the Hub's tokenizer.json, behind our Tokenizer's interface,
and the trace of the best segmentation of one word.

Unigram normalises the text as its tokenizer.json says (albert-base-v2: `` and '' -> ", NFKD, accents
stripped, lower-cased, then SentencePiece's character map), splits it at whitespace, marks each word's start
with "▁" ("▁hello"), and cuts each word into the pieces whose log-probabilities sum highest (Viterbi); a
character no piece covers is "<unk>", and unknown characters next to each other are one "<unk>".

ALBERT's template: ``[CLS] A [SEP]`` and ``[CLS] A [SEP] B [SEP]``, token types 0 for A and 1 for B (as
in BERT); padding "<pad>", unknown "<unk>", mask "[MASK]".
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tokenizers import Tokenizer as LibraryTokenizer

from ..errors import TokenizerError
from .backed import BackedTokenizer
from .files import TOKENIZER_JSON, read_tokenizer_json
from .vocab import CLS_TOKEN, MASK_TOKEN, SEP_TOKEN
from .wordpiece import Trace

PAD_TOKEN, UNK_TOKEN = "<pad>", "<unk>"
UNK_PENALTY = 10.0  # an unknown character scores the lowest piece's log-probability minus this (SentencePiece)


@dataclass(frozen=True)
class LatticeStep:
    """One candidate piece of a word in the Unigram lattice.

    start, end: character positions in the normalised word ("▁hello"); candidate: the piece (or "<unk>"
    for one character no piece covers); score: its log-probability; best: it is on the best path (one of
    the pieces the word is cut into).
    """

    start: int
    end: int
    candidate: str
    score: float
    best: bool


def lowercases(normalizer: dict | None) -> bool:
    """Whether a tokenizer.json normalizer (possibly a Sequence of them) lower-cases."""
    if not isinstance(normalizer, dict):
        return False
    if normalizer.get("type") == "Lowercase":
        return True
    if normalizer.get("type") == "BertNormalizer":
        return bool(normalizer.get("lowercase"))
    return any(lowercases(n) for n in normalizer.get("normalizers") or ())


class AlbertTokenizer(BackedTokenizer):
    """ALBERT's Unigram: ``AlbertTokenizer.from_tokenizer_json(path)`` or ``from_folder(folder)``.
    ``do_lower_case`` is what the file's normalizer does."""

    kind = "unigram"
    pair_separators = 1  # [CLS] A [SEP] B [SEP]
    pair_type_id = 1
    special_tokens = (UNK_TOKEN, CLS_TOKEN, SEP_TOKEN, PAD_TOKEN, MASK_TOKEN)

    def __init__(self, backend: LibraryTokenizer, spec: dict):
        model = spec.get("model") or {}
        if model.get("type") != "Unigram" or not isinstance(model.get("vocab"), list):
            raise TokenizerError(f"tokenizer.json holds a {model.get('type')} model, not ALBERT's Unigram")
        super().__init__(backend, do_lower_case=lowercases(spec.get("normalizer")))
        self.scores = {p: float(s) for p, s in model["vocab"]}
        self.unk_score = min(self.scores.values()) - UNK_PENALTY
        self.max_piece = max(len(p) for p in self.scores)

    @classmethod
    def from_tokenizer_json(cls, path: Path) -> AlbertTokenizer:
        backend, spec = read_tokenizer_json(Path(path))
        return cls(backend, spec)

    @classmethod
    def from_folder(cls, folder: Path) -> AlbertTokenizer:
        return cls.from_tokenizer_json(Path(folder) / TOKENIZER_JSON)

    # ---- trace -------------------------------------------------------------------------------------------

    def model_words(self, text: str) -> list[tuple[str, bool]]:
        """The normalised words of ``text`` with their "▁" ("▁hello"); special tokens as themselves."""
        out = []
        for _word, (s, e) in self.words_with_offsets(text):
            raw = text[s:e]
            if raw in self.special_tokens and self.vocab.get(raw) in self._special_ids:
                out.append((raw, True))
                continue
            norm = self.backend.normalizer.normalize_str(raw) if self.backend.normalizer is not None else raw
            pre = self.backend.pre_tokenizer
            out.append(("".join(p for p, _ in pre.pre_tokenize_str(norm)) if pre is not None else norm, False))
        return out

    def trace_word(self, model_word: str, word: str, special: bool = False) -> Trace:
        """Every piece the lattice of ``model_word`` holds, in order of start then length, each marked when
        it is on the best path (Viterbi, ties to the first found, as the tokenizers library): a Trace of
        LatticeStep whose pieces and ids are the word's tokens."""
        if special:
            return Trace([], word=word, normalized=model_word, pieces=[model_word], ids=[self.vocab[model_word]])
        n = len(model_word)
        best: list[tuple[float, int, int] | None] = [None] * (n + 1)  # (score, step index, start)
        best[0] = (0.0, -1, 0)
        found: list[tuple[int, int, str, float]] = []
        for i in range(n):
            if best[i] is None:
                continue
            single = False
            for j in range(i + 1, min(n, i + self.max_piece) + 1):
                piece = model_word[i:j]
                score = self.scores.get(piece)
                if score is None:
                    continue
                single |= j == i + 1
                found.append((i, j, piece, score))
                _relax(best, i, j, score, len(found) - 1)
            if not single:
                found.append((i, i + 1, self.unk_token, self.unk_score))
                _relax(best, i, i + 1, self.unk_score, len(found) - 1)
        on_path = set()
        j = n
        while j > 0:
            _, k, i = best[j]
            on_path.add(k)
            j = i
        steps = [LatticeStep(i, j, p, s, k in on_path) for k, (i, j, p, s) in enumerate(found)]
        pieces: list[str] = []
        for st in steps:
            if st.best and not (st.candidate == self.unk_token and pieces and pieces[-1] == self.unk_token):
                pieces.append(st.candidate)  # unknown characters next to each other are one <unk>
        return Trace(
            steps,
            word=word,
            normalized=model_word,
            pieces=pieces,
            ids=[self.vocab[p] for p in pieces],
            unk=self.unk_token in pieces,
            reason="a character no piece covers" if self.unk_token in pieces else "",
        )


def _relax(best: list, i: int, j: int, score: float, k: int) -> None:
    """Viterbi: the path through step k (i -> j) becomes the best to j when it scores strictly higher."""
    total = best[i][0] + score
    if best[j] is None or total > best[j][0]:
        best[j] = (total, k, i)
