"""A word's vector in context, layer by layer: the same word across sentences (and its senses
on a 2-D map), and every word of a sentence against a shuffle of its words.

One rule everywhere: a word's vector is the MEAN of its word pieces' hidden states ("cats" =
mean of "cat" and "##s"), at every layer from the embedding output (layer 0) to the last.

Dimension letters: L layers, N sentences, T tokens, C hidden size, W words.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from ..errors import InputError
from .common import encode, pad_tensors
from .vectors import cosine, pca_by_layer

WORD_BATCH = 8  # sentences per forward pass in word_vectors_by_layer
MAX_ORDER_WORDS = 120  # word_order looks at the first words of the text only


def word_pieces(tokenizer, sentence: str, word: str, max_length: int = 512) -> list[int]:
    """Token indices of the pieces of the first occurrence of `word` in `sentence`'s encoding.

    Matching is on whole words after the tokenizer's normalisation (lower-casing for an uncased
    model): "bank" matches "Bank" but not "banks"."""
    target = tokenizer.basic.tokenize(word)
    if not target:
        raise InputError("Type exactly one word to follow (for example: bank).")
    if len(target) != 1:
        raise InputError(f"{word!r} must be a single word (it splits into {target})")
    words = [w for w, _ in tokenizer.words_with_offsets(sentence)]
    if target[0] not in words:
        raise InputError(f"the word {word!r} is not in the sentence {sentence!r}")
    w = words.index(target[0])
    enc = tokenizer.encode(sentence, max_length=max_length)
    idx = [i for i, (wid, seq) in enumerate(zip(enc.word_ids, enc.sequence_ids, strict=True)) if wid == w and seq == 0]
    if not idx:
        raise InputError(f"the word {word!r} falls beyond the model's {max_length} tokens in {sentence!r}")
    return idx


def find_word(tokenizer, sentence: str, word: str, max_length: int = 512) -> int:
    """Index of the first word piece of the first occurrence of `word` in `sentence`'s encoding."""
    return word_pieces(tokenizer, sentence, word, max_length)[0]


def word_vectors_by_layer(bundle, sentences: Sequence[str], word: str, batch_size: int = WORD_BATCH) -> np.ndarray:
    """(L+1, N, C): the hidden state of `word` (the mean of its pieces) in each sentence, per layer.

    Layer 0 is the embedding output, where the vectors differ only by position and segment;
    deeper layers mix in the context. Raises InputError if a sentence lacks the word (before
    any model run). The sentences run `batch_size` at a time, and only the word's vectors of
    each batch are kept: memory is that of one batch's hidden states, whatever N is."""
    sentences = list(sentences)
    if len(sentences) < 2:
        raise InputError("give at least two sentences that contain the word")
    tok = bundle.tokenizer
    P = bundle.config.max_tokens
    pieces = [word_pieces(tok, s, word, P) for s in sentences]
    step = max(1, batch_size)
    parts = []
    for i in range(0, len(sentences), step):
        encs = [tok.encode(s, max_length=P) for s in sentences[i : i + step]]
        ids, types, mask = pad_tensors(encs, tok)
        with torch.inference_mode():
            out = bundle.model.bert(ids, types, mask, output_hidden_states=True)
        parts.append(
            torch.stack(
                [
                    torch.stack([h[b, idx].mean(0) for b, idx in enumerate(pieces[i : i + step])])
                    for h in out.hidden_states
                ]
            )
        )  # (L+1, B, C)
        del out
    return torch.cat(parts, 1).float().numpy()  # (L+1, N, C)


def _words_mean(hidden: Tensor, word_ids, n_words: int) -> np.ndarray:
    """Mean over each word's pieces: (L+1, T, C) -> (L+1, W, C) (zeros for a word cut off)."""
    out = np.zeros((hidden.shape[0], n_words, hidden.shape[-1]), dtype=np.float32)
    for w in range(n_words):
        idx = [i for i, x in enumerate(word_ids) if x == w]
        if idx:
            out[:, w] = hidden[:, idx].mean(dim=1).numpy()
    return out


def shuffle_words(words: list[str], seed: int) -> tuple[list[str], list[int]]:
    """A shuffled copy of `words` and the permutation used (new index -> old index).

    When there are at least two different words the shuffle is never the identity.
    """
    order = list(range(len(words)))
    rng = random.Random(seed)
    if len(set(words)) < 2:
        return list(words), order
    for _ in range(100):
        rng.shuffle(order)
        if [words[i] for i in order] != list(words):
            break
    return [words[i] for i in order], order


@dataclass(frozen=True)
class WordOrder:
    """Each word's vector in the text and in a shuffle of its words, compared."""

    words: list[str]
    shuffled: list[str]
    per_layer: list[float]  # (L+1,) mean over words of cosine(original, shuffled)
    per_word: list[float]  # (W,) that cosine at the last layer
    sentence_cosine: float  # cosine of the mean last-layer vectors of the two runs


def _hidden_by_layer(bundle, words: list[str]):
    """(L+1, T, C) hidden states of the words joined by spaces, and the encoding's word ids."""
    enc = encode(bundle, " ".join(words))
    with torch.inference_mode():
        out = bundle.model.bert(
            torch.tensor([enc.ids]), token_type_ids=torch.tensor([enc.type_ids]), output_hidden_states=True
        )
    return torch.stack([h[0] for h in out.hidden_states]), enc.word_ids


def word_order(bundle, text: str, seed: int) -> WordOrder:
    """Run the text and a shuffle of its words; compare each word's vector layer by layer."""
    words = bundle.tokenizer.basic_tokenize(text)[:MAX_ORDER_WORDS]
    if len(words) < 2:
        raise InputError("The word-order demo needs at least two words in sentence A.")
    shuffled, order = shuffle_words(words, seed)
    if shuffled == words:
        raise InputError("All words in sentence A are the same, so shuffling changes nothing.")
    (h_orig, w_orig), (h_shuf, w_shuf) = _hidden_by_layer(bundle, words), _hidden_by_layer(bundle, shuffled)
    n = len(words)
    orig = _words_mean(h_orig, w_orig, n)  # (L+1, W, C)
    shuf = _words_mean(h_shuf, w_shuf, n)
    back = np.zeros_like(shuf)  # shuffled[j] = words[order[j]]: back into the original order
    for j, i in enumerate(order):
        back[:, i] = shuf[:, j]
    per_layer = [float(np.mean([cosine(orig[l, i], back[l, i]) for i in range(n)])) for l in range(orig.shape[0])]
    return WordOrder(
        words=words,
        shuffled=shuffled,
        per_layer=per_layer,
        per_word=[cosine(orig[-1, i], back[-1, i]) for i in range(n)],
        sentence_cosine=cosine(h_orig[-1].mean(0).numpy(), h_shuf[-1].mean(0).numpy()),
    )


@dataclass(frozen=True)
class SameWord:
    """One word in several sentences: its vectors and the cosine of every pair, per layer."""

    word: str  # as the tokenizer normalises it
    vectors: np.ndarray  # (L+1, N, C)
    pairs: dict[tuple[int, int], list[float]]  # (i, j), i < j -> (L+1,) cosines


def same_word(bundle, sentences: Sequence[str], word: str) -> SameWord:
    """The vector of `word` in each sentence, layer by layer, and the pairwise cosines."""
    vecs = word_vectors_by_layer(bundle, sentences, word)  # (L+1, N, C)
    N = vecs.shape[1]
    pairs = {
        (i, j): [cosine(vecs[l, i], vecs[l, j]) for l in range(vecs.shape[0])]
        for i in range(N)
        for j in range(i + 1, N)
    }
    return SameWord(word=bundle.tokenizer.basic.tokenize(word)[0], vectors=vecs, pairs=pairs)


@dataclass(frozen=True)
class WordMap:
    """One word in many sentences, projected to 2-D layer by layer."""

    vectors: np.ndarray  # (L+1, N, C)
    coords: np.ndarray  # (L+1, N, 2) PCA of each layer separately


def word_map(bundle, sentences: Sequence[str], word: str) -> WordMap:
    """The word's vectors per layer and their 2-D PCA per layer."""
    vecs = word_vectors_by_layer(bundle, sentences, word)
    return WordMap(vectors=vecs, coords=pca_by_layer(vecs))


def sense_examples() -> tuple[str, list[str], list[str]]:
    """A built-in example: the word "bank" in eight sentences of our own, with its sense."""
    sentences = [
        "We sat on the bank of the river and watched the water.",
        "The boat drifted toward the muddy bank.",
        "Wild flowers grew along the bank of the stream.",
        "The children fished from the grassy bank all afternoon.",
        "She went to the bank to open a savings account.",
        "The bank approved my loan this morning.",
        "He withdrew some cash from the bank before the trip.",
        "The bank raised its interest rates again.",
    ]
    return "bank", sentences, ["river"] * 4 + ["money"] * 4
