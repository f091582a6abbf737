"""How much of a dictionary's features is one part of speech: the control's yardstick.

A feature's part-of-speech purity is the share of its top-`top` contexts (the held-out words it
fires on most strongly) that carry its commonest tag; a dictionary's purity is the mean over its
features active on at least `top` words (the rest are too rare to judge and are counted apart).
The words are the Brown Corpus's own tagged sentences (bert/data/brown_pos.py, 16 coarse tags)
from the Brown files pre-training held out, so no dictionary or model trained on them. A word is
read at its first piece, as the tagger reads it (bert/tagging.py); its later pieces are left out.

Chance is the same share for `top` words drawn at random from the same words: the purity of a
feature that fires regardless of the word. A dictionary of a random-weights model of the same
shape (the control) sits between chance and the trained model's: what it finds comes from the
words themselves (a random embedding still tells "the" from "ran").

Dimension letters: N words, k active features a word, F features, K tags.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ..bundle import Bundle
from ..data.brown_pos import brown_pos
from ..data.tagged import TaggedData
from ..errors import InputError
from ..tagging import first_pieces, join_words
from .dictionary import Dictionary
from .dictionary_features import encode_all
from .dictionary_vectors import CORPORA, gather_activations

TOP = 50  # contexts a feature is judged by
CHANCE_DRAWS = 500  # random sets of TOP words averaged for chance
MAX_WORDS = 60_000  # tagged words read at most


@dataclass
class Purity:
    """A dictionary's part-of-speech purity on held-out tagged words."""

    mean: float  # over the features counted (nan when none is)
    per_feature: np.ndarray  # (F,) purity, nan where a feature fired on fewer than `top` words
    commonest: np.ndarray  # (F,) index into tags of each feature's commonest tag (-1: not counted)
    counted: int  # features active on at least `top` words
    chance: float  # the same share for `top` words drawn at random
    words: int  # tagged words read
    top: int
    tags: list[str]

    def tag_of(self, feature: int) -> str | None:
        """A counted feature's commonest tag (None for one fired on fewer than `top` words)."""
        t = int(self.commonest[feature])
        return self.tags[t] if t >= 0 else None

    def summary(self) -> dict:
        """The figures a page, a run's record and a bench row keep (no per-feature arrays)."""
        return {
            "mean": self.mean,
            "counted": self.counted,
            "n_features": len(self.per_feature),
            "chance": self.chance,
            "words": self.words,
            "top": self.top,
        }


def feature_purity(
    indices: np.ndarray, values: np.ndarray, tags: np.ndarray, n_features: int, n_tags: int, top: int = TOP
) -> tuple[np.ndarray, np.ndarray]:
    """(purity (F,), commonest tag (F,)) from every word's active features: indices and values
    (N, k), the words' tags (N,). A feature's top-`top` words by activation (ties: the earlier
    word); purity nan and commonest -1 where it is active (> 0) on fewer than `top` words."""
    indices, values, tags = np.asarray(indices), np.asarray(values, dtype=np.float64), np.asarray(tags)
    if indices.shape != values.shape or indices.ndim != 2 or len(tags) != len(indices):
        raise InputError(
            f"need indices and values of one shape (N, k) and N tags, got {indices.shape}, {values.shape}, {tags.shape}"
        )
    if top < 1:
        raise InputError(f"top must be at least 1, got {top}")
    rows = np.broadcast_to(np.arange(len(indices))[:, None], indices.shape)
    on = values > 0
    feat, val, word = indices[on], values[on], rows[on]
    order = np.lexsort((word, -val, feat))  # by feature, strongest first, then word order
    feat, word = feat[order], word[order]
    starts = np.searchsorted(feat, np.arange(n_features))
    rank = np.arange(len(feat)) - starts[feat]
    keep = rank < top
    counts = np.zeros((n_features, n_tags), dtype=np.int64)
    np.add.at(counts, (feat[keep], tags[word[keep]]), 1)
    full = counts.sum(1) == top
    purity = np.where(full, counts.max(1) / top, np.nan)
    return purity, np.where(full, counts.argmax(1), -1)


def chance_purity(tags: np.ndarray, n_tags: int, top: int = TOP, draws: int = CHANCE_DRAWS, seed: int = 0) -> float:
    """The mean share of the commonest tag among `top` words drawn at random (without replacement)."""
    tags = np.asarray(tags)
    if len(tags) < top:
        return float("nan")
    rng = np.random.default_rng(seed)
    shares = [
        np.bincount(tags[rng.choice(len(tags), top, replace=False)], minlength=n_tags).max() / top for _ in range(draws)
    ]
    return float(np.mean(shares))


@functools.lru_cache(maxsize=1)
def held_out_brown_files() -> tuple[str, ...]:
    """The Brown files ("ca24", ...) pre-training held out (bert.analysis.dictionary_vectors.CORPORA's split,
    the same on every call: read once a process)."""
    from ..train.pretrain_args import PretrainArgs
    from ..train.pretrain_setup import training_split

    _, held = training_split(PretrainArgs(out="", corpora=list(CORPORA)))
    return tuple(t.split()[0] for t in held.titles if t[:1] == "c" and t.endswith(")") and len(t.split()[0]) == 4)


def held_out_tagged(max_sentences: int = 1500) -> TaggedData:
    """Up to `max_sentences` tagged sentences of the held-out Brown files, in corpus order."""
    return brown_pos(max_sentences=max_sentences, files=held_out_brown_files())


@dataclass
class TaggedCodes:
    """A dictionary's active features at the first piece of every tagged word it read."""

    indices: np.ndarray  # (N, k)
    values: np.ndarray  # (N, k)
    tags: np.ndarray  # (N,)
    words: list[str]  # (N,) the words as written


def tagged_codes(bundle: Bundle, dictionary: Dictionary, tagged: TaggedData, max_words: int = MAX_WORDS) -> TaggedCodes:
    """Read `tagged`'s sentences (words joined by spaces) through `bundle` to the dictionary's
    layer and encode each word's first piece; words the model's window cuts are left out."""
    texts, spans = zip(*(join_words(s) for s in tagged.sentences), strict=True) if tagged.sentences else ((), ())
    acts = gather_activations(bundle, dictionary.layer, list(texts), max_tokens=max_words)
    where = {(int(t), int(p)): r for r, (t, p) in enumerate(zip(acts.text_index, acts.position, strict=True))}
    rows, tags, words = [], [], []
    for i in range(acts.texts_read):
        enc = bundle.tokenizer.encode(texts[i], max_length=bundle.config.max_tokens)
        for w, (first, tag) in enumerate(zip(first_pieces(enc, spans[i]), tagged.tags[i], strict=True)):
            if first is not None and (i, first) in where:
                rows.append(where[(i, first)])
                tags.append(tag)
                words.append(tagged.sentences[i][w])
    codes = encode_all(dictionary, acts)
    take = np.asarray(rows, dtype=np.int64)
    return TaggedCodes(codes.indices.numpy()[take], codes.values.numpy()[take], np.asarray(tags, dtype=np.int64), words)


def pos_purity(
    bundle: Bundle, dictionary: Dictionary, tagged: TaggedData | None = None, top: int = TOP, max_words: int = MAX_WORDS
) -> Purity:
    """The dictionary's part-of-speech purity on `tagged` (default: the held-out Brown files'
    sentences) read through `bundle`, the model it was trained on."""
    tagged = held_out_tagged() if tagged is None else tagged
    tc = tagged_codes(bundle, dictionary, tagged, max_words)
    n_tags = len(tagged.tag_names)
    per, commonest = feature_purity(tc.indices, tc.values, tc.tags, dictionary.n_features, n_tags, top)
    counted = int(np.isfinite(per).sum())
    return Purity(
        mean=float(np.nanmean(per)) if counted else float("nan"),
        per_feature=per,
        commonest=commonest,
        counted=counted,
        chance=chance_purity(tc.tags, n_tags, top),
        words=len(tc.tags),
        top=top,
        tags=list(tagged.tag_names),
    )


__all__ = ["Purity", "chance_purity", "feature_purity", "held_out_tagged", "pos_purity", "tagged_codes"]
