"""Head patterns (Clark et al. 2019, "What does BERT look at?"): what each head mostly attends
to ([CLS], [SEP], the previous or next token, itself, punctuation), and a label per head; and
which heads link one word of an input to another (`heads_by_link`).

Dimension letters: L layers, H heads, T tokens, B batch.
"""

from __future__ import annotations

import math
import time
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ..errors import InputError
from ..tokenizer.vocab import CLS_TOKEN, SEP_TOKEN, SPECIAL_TOKENS
from .common import as_attention, bare_word, bert_names, pad_tensors

PATTERNS = (CLS_TOKEN, SEP_TOKEN, "previous", "next", "self", "punctuation")
LABELS = PATTERNS + ("broad", "other")
PATTERN_THRESHOLD = 0.4  # a head is labelled by a pattern that gets >= 40% of its attention
BROAD_ENTROPY = 0.7  # ... else "broad" when its entropy is >= 70% of the uniform maximum

LABEL_HELP = {
    CLS_TOKEN: "attends mostly to the [CLS] token at the start",
    SEP_TOKEN: "attends mostly to [SEP]: often a 'no-op', a place to park attention",
    "previous": "attends mostly to the token just before",
    "next": "attends mostly to the token just after",
    "self": "attends mostly to the token itself",
    "punctuation": "attends mostly to punctuation such as commas and full stops",
    "broad": "spreads its attention over many tokens (high entropy): a bag-of-words summary",
    "other": "focused, but on none of the simple targets (e.g. syntax, or the same word elsewhere)",
}


def _is_punctuation(token: str) -> bool:
    t = token[2:] if token.startswith("##") else token
    if not t or token in SPECIAL_TOKENS:
        return False
    return all(
        unicodedata.category(c).startswith("P") or (c.isascii() and not c.isalnum() and not c.isspace()) for c in t
    )


def head_pattern_stats(attentions, tokens: Sequence[str]) -> dict[str, np.ndarray]:
    """How much each head attends to [CLS], [SEP], the previous/next token, itself and punctuation.

    attentions: (L, H, T, T) for one input (rows = queries, softmax over keys), or the model's
    tuple of L (1, H, T, T); tokens: the T token strings. Each entry is an (L, H) array: the
    attention weight on that target averaged over query tokens ("previous" over the tokens that
    have one, "next" likewise), and "entropy": the mean entropy of a row divided by log T, from
    0 (every row on one token) to 1 (uniform).
    """
    a = as_attention(attentions)  # (L, H, T, T)
    T = a.shape[-1]
    tokens = bert_names(tokens)  # RoBERTa's <s> and </s> are its [CLS] and [SEP]
    if len(tokens) != T:
        raise InputError(f"{len(tokens)} tokens given for an attention over {T} tokens")

    def to(cols):
        if not cols:
            return np.zeros(a.shape[:2])
        return a[..., cols].sum(-1).mean(-1)  # (L, H)

    diag = lambda k: np.diagonal(a, offset=k, axis1=2, axis2=3)  # noqa: E731  (L, H, T-|k|)
    empty = np.zeros(a.shape[:2])
    stats = {
        CLS_TOKEN: to([j for j, t in enumerate(tokens) if t == CLS_TOKEN]),
        SEP_TOKEN: to([j for j, t in enumerate(tokens) if t == SEP_TOKEN]),
        "previous": diag(-1).mean(-1) if T > 1 else empty,  # A[i, i-1], i >= 1
        "next": diag(1).mean(-1) if T > 1 else empty,  # A[i, i+1], i < T-1
        "self": diag(0).mean(-1),
        "punctuation": to([j for j, t in enumerate(tokens) if _is_punctuation(t)]),
    }
    p = np.clip(a, 1e-12, 1.0)
    ent = -(a * np.log(p)).sum(-1).mean(-1)  # (L, H) nats
    stats["entropy"] = ent / math.log(T) if T > 1 else np.zeros(a.shape[:2])
    return stats


def label_heads(
    stats: dict[str, np.ndarray], threshold: float = PATTERN_THRESHOLD, broad_entropy: float = BROAD_ENTROPY
) -> np.ndarray:
    """Name each head's dominant pattern: (L, H) array of strings from LABELS.

    Rule: the pattern in PATTERNS with the largest average weight, if that weight is at least
    `threshold` (0.4: the head puts 40%+ of its attention there); otherwise "broad" when the
    normalised entropy is at least `broad_entropy` (0.7), and "other" (focused, but on something
    none of the simple patterns describe) when it is not.
    """
    scores = np.stack([np.asarray(stats[p], dtype=np.float64) for p in PATTERNS])  # (6, L, H)
    best = scores.argmax(0)  # (L, H)
    top = scores.max(0)
    names = np.array(PATTERNS, dtype=object)[best]
    ent = np.asarray(stats["entropy"])
    fallback = np.where(ent >= broad_entropy, "broad", "other").astype(object)
    return np.where(top >= threshold, names, fallback).astype(str)


@dataclass(frozen=True)
class Word:
    """One word of an input: its text (its pieces glued) and its token positions. An added
    special token ([CLS], [SEP]) is a word of its own."""

    text: str
    positions: tuple[int, ...]


def input_words(
    tokens: Sequence[str], word_ids: Sequence[int | None], sequence_ids: Sequence[int | None]
) -> list[Word]:
    """The words of one encoded input, in order (tokens, word_ids and sequence_ids of an Encoding:
    pieces of one word share a word id within their sentence)."""
    words: list[Word] = []
    where: dict[tuple, int] = {}
    for i, (tok, wid, seq) in enumerate(zip(tokens, word_ids, sequence_ids, strict=True)):
        key = ("special", i) if wid is None else (seq, wid)
        if key in where:
            w = words[where[key]]
            words[where[key]] = Word(w.text + bare_word(tok), (*w.positions, i))
        else:
            where[key] = len(words)
            words.append(Word(bare_word(tok) if wid is not None else tok, (i,)))
    return words


def link_weights(attentions, source: Sequence[int], target: Sequence[int]) -> np.ndarray:
    """(L, H): how much each head's `source` word attends to the `target` word (token positions):
    the weight on the target's pieces summed, averaged over the source's pieces (word-level
    attention as in Clark et al. 2019). Between 0 and 1, since every row sums to 1."""
    # read once per word a page offers: only the source's rows are copied, never the whole (L, H, T, T)
    per_layer = isinstance(attentions, (tuple, list))
    T = (attentions[0] if per_layer else attentions).shape[-1]
    if not source or not target or not all(0 <= i < T for i in (*source, *target)):
        raise InputError(f"word positions must be tokens of the input (0 to {T - 1})")
    src, dst = list(source), list(target)
    if per_layer:  # the model's tuple of L (1, H, T, T)
        rows = np.stack([_as_numpy(a[..., src, :]).reshape(-1, len(src), T) for a in attentions])  # (L, H, S, T)
    elif len(attentions.shape) == 4:  # (L, H, T, T): the source's rows sliced before any copy
        rows = _as_numpy(attentions[:, :, src])
    else:
        rows = as_attention(attentions)[:, :, src]
    return rows[..., dst].astype(np.float64).sum(-1).mean(-1)  # (L, H)


def _as_numpy(a) -> np.ndarray:
    return a.detach().float().cpu().numpy() if isinstance(a, torch.Tensor) else np.asarray(a)


def heads_by_link(
    attentions, source: Sequence[int], target: Sequence[int], top: int = 5
) -> list[tuple[int, int, float]]:
    """The `top` heads with the most attention from the source word to the target word:
    (layer, head, weight), 0-based, the largest weight first (ties: the lower layer, then head)."""
    w = link_weights(attentions, source, target)
    order = sorted(np.ndindex(*w.shape), key=lambda lh: (-w[lh], lh))
    return [(int(l), int(h), float(w[l, h])) for l, h in order[: max(0, top)]]


def probe_sentences() -> list[str]:
    """Twelve varied English sentences (our own) to average head patterns over."""
    return [
        "The cat sat quietly on the warm windowsill.",
        "After the long meeting, everyone went home early.",
        "Did you remember to lock the front door?",
        'She said, "I will be there by noon."',
        "Rivers carry sand, mud and small stones down to the sea.",
        "The old bridge, which was built in 1890, is closed for repairs.",
        "If it rains tomorrow, the match will be played indoors.",
        "My brother plays the guitar; my sister prefers the piano.",
        "Scientists measured the temperature every hour for three weeks.",
        "Wow, that was the best pizza I have ever eaten!",
        "The committee that approved the plan met again on Friday.",
        "Birds build nests in spring, and their chicks hatch weeks later.",
    ]


@dataclass
class HeadPatterns:
    """Head pattern statistics averaged over sentences, and each head's label."""

    stats: dict[str, np.ndarray]  # PATTERNS + "entropy" -> (L, H)
    labels: np.ndarray  # (L, H) str, from LABELS
    sentences: list[str]
    seconds: float = 0.0

    def counts(self) -> dict[str, int]:
        """How many heads carry each label."""
        return {lab: int((self.labels == lab).sum()) for lab in LABELS}


def head_patterns_over(bundle, sentences: Sequence[str] | None = None, max_length: int = 128) -> HeadPatterns:
    """Head pattern statistics averaged over a set of sentences (the probe set by default).

    The sentences run as one padded batch; each one's statistics are computed on its own
    tokens only and then averaged with equal weight.
    """
    t0 = time.perf_counter()
    sentences = list(probe_sentences() if sentences is None else sentences)
    if not sentences:
        raise InputError("no sentences to average over")
    tok = bundle.tokenizer
    max_length = min(max_length, bundle.config.max_tokens)
    encs = [tok.encode(s, max_length=max_length) for s in sentences]
    ids, types, mask = pad_tensors(encs, tok)
    with torch.inference_mode():
        out = bundle.model.bert(ids, types, mask, output_attentions=True)
    att = torch.stack(out.attentions, 1).float().numpy()  # (B, L, H, T, T)
    total: dict[str, np.ndarray] = {}
    for b, e in enumerate(encs):
        n = len(e.ids)
        s = head_pattern_stats(att[b, :, :, :n, :n], e.tokens)
        for k, v in s.items():
            total[k] = total.get(k, 0.0) + v / len(encs)
    return HeadPatterns(stats=total, labels=label_heads(total), sentences=sentences, seconds=time.perf_counter() - t0)
