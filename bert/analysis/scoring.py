"""Sentences scored by a masked language model: the pseudo-log-likelihood (Salazar et al. 2020),
and minimal pairs scored with it (the model "prefers" the sentence it scores higher).

PLL(S) = sum over the sentence's tokens t of log P(t | S with t masked); [CLS] and [SEP] are not
scored. The word-level variant (Kauf & Ivanova 2023, "PLL-word-l2r") also masks the later pieces
of t's word, so a word split into pieces cannot be guessed from its own other pieces. Each
sentence runs as one batch of its scored tokens, one masked copy each.

Dimension letters: T tokens, W words, N pairs, V vocabulary.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ..errors import Cancelled, InputError
from ..train.precision import analysis_autocast
from .common import bare_word, encode_tensors, need_mlm, readonly

MAX_TOKENS = 128  # a sentence runs once per token: 128 copies of 128 tokens at most
MAX_PAIRS = 500


@dataclass
class SentenceScore:
    """One sentence's pseudo-log-likelihood, per token and per word."""

    text: str
    tokens: list[str]
    scores: np.ndarray  # (T,) log P(token | the rest), NaN at [CLS] and [SEP]
    words: list[str]  # W words, their pieces joined
    word_scores: np.ndarray  # (W,) the sums of their pieces' scores
    total: float  # the PLL: the sum of every scored token's
    word_level: bool


def pseudo_log_likelihood(bundle, sentence: str, word_level: bool = False, precision: str = "fp32") -> SentenceScore:
    """The sentence's PLL (module docstring); word_level masks the word's later pieces too. The model
    runs in `precision` (bert/train/precision.py); the log-softmax is taken in float64 either way."""
    need_mlm(bundle, "scoring a sentence")
    enc, ids, types = encode_tensors(bundle, sentence)
    tok = bundle.tokenizer
    if enc.truncated or len(enc.ids) > MAX_TOKENS:
        raise InputError(
            f"a sentence to score may have at most {min(MAX_TOKENS, bundle.config.max_tokens)} tokens: "
            "each one is masked in turn"
        )
    if tok.mask_id in enc.ids:
        raise InputError("a sentence to score has no [MASK]: write it whole, every word is masked in turn")
    scored = [i for i, s in enumerate(enc.sequence_ids) if s is not None]
    words = enc.word_ids
    batch = ids.repeat(len(scored), 1)  # (n, T)
    for row, i in enumerate(scored):
        batch[row, i] = tok.mask_id
        if word_level:
            later = [j for j in scored if j > i and words[j] == words[i]]
            batch[row, later] = tok.mask_id
    where = torch.zeros_like(batch, dtype=torch.bool)
    where[torch.arange(len(scored)), torch.tensor(scored)] = True  # one predicted place per copy
    with torch.inference_mode(), analysis_autocast(precision):
        logits = bundle.model(batch, types.expand_as(batch), mlm_positions=where).mlm_logits  # (n, V)
        logp = torch.log_softmax(logits.double(), -1)[torch.arange(len(scored)), ids[0, scored]]
    scores = np.full(len(enc.ids), np.nan)
    scores[scored] = logp.numpy()
    order: list[int] = []  # the words in order of their first piece
    for i in scored:
        if words[i] not in order:
            order.append(words[i])
    pieces = {w: [i for i in scored if words[i] == w] for w in order}
    return SentenceScore(
        text=sentence,
        tokens=list(enc.tokens),
        scores=readonly(scores),
        words=["".join(bare_word(enc.tokens[i]) for i in pieces[w]) for w in order],
        word_scores=readonly([scores[pieces[w]].sum() for w in order]),
        total=float(logp.sum()),
        word_level=word_level,
    )


def sentence_tokens(tokenizer, sentence: str) -> int:
    """The tokens PLL scores in `sentence` (its pieces, without [CLS] and [SEP]; counted up to
    MAX_TOKENS + 1, past which it is refused anyway)."""
    return len(tokenizer.encode(sentence, max_length=MAX_TOKENS + 1, add_special_tokens=False).ids)


def pairs_within(tokenizer, pairs: Sequence[tuple[str, str]], budget: int) -> tuple[list[tuple[str, str]], int, int]:
    """(the first pairs whose scoring reads at most `budget` tokens, the tokens they read, the tokens
    all the pairs would read). A sentence of T scored tokens runs T masked copies of itself: it
    reads T * T tokens, which is what its scoring costs."""
    kept, used, asked = [], 0, 0
    for good, bad in pairs:
        n = sentence_tokens(tokenizer, good) ** 2 + sentence_tokens(tokenizer, bad) ** 2
        asked += n
        if asked <= budget:  # a prefix: once one pair is over, every later one is too
            kept.append((good, bad))
            used = asked
    return kept, used, asked


def scoring_peak_bytes(config, longest: int) -> int:
    """What scoring a sentence of `longest` tokens holds at its peak: one layer's attention scores
    and probabilities for `longest` copies, its hidden states, and the scored rows' logits (float32
    and their float64 log-probabilities)."""
    T, H, C, V = longest + 2, config.num_attention_heads, config.hidden_size, config.vocab_size
    return T * T * (2 * H * T + 8 * C) * 4 + T * V * 12


@dataclass
class PairScores:
    """Minimal pairs scored: the model is right on a pair when it scores the good sentence higher."""

    good: list[SentenceScore]
    bad: list[SentenceScore]
    differences: np.ndarray  # (N,) PLL(good) - PLL(bad)
    correct: np.ndarray  # (N,) bool

    @property
    def accuracy(self) -> float:
        return float(self.correct.mean()) if len(self.correct) else float("nan")


def score_pairs(
    bundle,
    pairs: Sequence[tuple[str, str]],
    word_level: bool = False,
    cancelled: Callable[[], bool] | None = None,
    precision: str = "fp32",
) -> PairScores:
    """Each (good, bad) pair's two PLLs and whether the good one is higher, the model run in
    `precision`. `cancelled` is asked before each sentence: once it says True, Cancelled is raised
    and no further sentence is read."""
    if not pairs:
        raise InputError("no pairs to score: give at least one line 'good sentence | bad sentence'")
    if len(pairs) > MAX_PAIRS:
        raise InputError(f"{len(pairs)} pairs is more than the {MAX_PAIRS} scored at once")

    def scored(sentence: str) -> SentenceScore:
        if cancelled is not None and cancelled():
            raise Cancelled("the scoring was given up: nobody is left to read it")
        return pseudo_log_likelihood(bundle, sentence, word_level, precision)

    with analysis_autocast(precision):  # one context: each weight cast to bf16 once, not once a sentence
        good = [scored(g) for g, _ in pairs]
        bad = [scored(b) for _, b in pairs]
    diff = np.array([g.total - b.total for g, b in zip(good, bad, strict=True)])
    return PairScores(good=good, bad=bad, differences=readonly(diff), correct=diff > 0)


@dataclass
class PairSplit:
    """PLL(good) - PLL(bad) split in two: the words that differ and the words both sentences share
    (the two word lists aligned in order, difflib's longest matching runs). changed + shared is
    the whole difference."""

    good_words: list[tuple[str, float]]  # the good sentence's words the bad one lacks, with their scores
    bad_words: list[tuple[str, float]]  # the bad sentence's words the good one lacks
    shared_words: list[tuple[str, float, float]]  # each shared word: its score in the good, in the bad

    @property
    def changed(self) -> float:
        return sum(s for _, s in self.good_words) - sum(s for _, s in self.bad_words)

    @property
    def shared(self) -> float:
        return sum(g - b for _, g, b in self.shared_words)


def split_pair(good: SentenceScore, bad: SentenceScore) -> PairSplit:
    """The pair's difference split into its differing words' and its shared words' (PairSplit)."""
    g, b = good.words, bad.words
    split = PairSplit([], [], [])
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=g, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            split.shared_words += [(g[i], float(good.word_scores[i]), float(bad.word_scores[j])) for i, j in
                                   zip(range(i1, i2), range(j1, j2), strict=True)]  # fmt: skip
        else:
            split.good_words += [(g[i], float(good.word_scores[i])) for i in range(i1, i2)]
            split.bad_words += [(b[j], float(bad.word_scores[j])) for j in range(j1, j2)]
    return split
