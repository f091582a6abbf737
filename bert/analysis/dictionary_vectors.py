"""The vectors a dictionary of features (dictionary.py) learns from and is read on: the state
leaving encoder layer `layer` (1..L) at every token of the text, [CLS] and [SEP] left out (their
states are few and far from the rest; the dictionary never sees them, and splicing leaves them as
they were). The model runs part-way through its one entry (BertModel.run) on batches of texts of
the same token length, so no padding and no mask. Training reads every other text with some word
pieces masked, as the masked-word task shows text to the model, so the [MASK]s the splice cost and
steering read are vectors it knows. Also the corpora's sentences, split by document as
pre-training splits them.

Dimension letters: N tokens, C hidden size, T tokens of a text, B texts of one length.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from ..bundle import Bundle
from ..errors import InputError
from .common import need_mlm
from .dictionary import caps

MASK_SHARE = 0.15  # the share of a held-out text's word pieces masked for the splice cost (at least one)


@dataclass
class Activations:
    """The state leaving layer `layer` at the word pieces of `texts`: vectors (N, C) float32, and
    for each row its text and position; tokens[s] are text s's tokens ([CLS] ... [SEP])."""

    layer: int
    vectors: Tensor
    text_index: np.ndarray  # (N,)
    position: np.ndarray  # (N,)
    tokens: list[list[str]]
    texts_read: int  # texts whose tokens are in (the first ones, in order)
    texts_given: int
    capped: bool  # the token cap stopped the reading before the last text


def check_layer(bundle: Bundle, layer) -> int:
    L = bundle.config.num_hidden_layers
    if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)) or not 1 <= int(layer) <= L:
        raise InputError(f"layer must be one of 1..{L} ({bundle.name} has {L} layers), got {layer!r}")
    return int(layer)


def word_positions(enc) -> list[int]:
    return [i for i, s in enumerate(enc.sequence_ids) if s is not None]


def _same_length(encs) -> dict[int, list[int]]:
    """Text indices grouped by token length: each group one batch without padding."""
    groups: dict[int, list[int]] = {}
    for i, e in enumerate(encs):
        groups.setdefault(len(e.ids), []).append(i)
    return groups


def same_length_batches(encs, batch: int):
    """(indices, ids (B, T), segments (B, T)) of texts of one length, at most `batch` at a time."""
    for idx in _same_length(encs).values():
        for b in range(0, len(idx), batch):
            part = idx[b : b + batch]
            ids = torch.tensor([encs[i].ids for i in part], dtype=torch.long)  # (B, T)
            types = torch.tensor([encs[i].type_ids for i in part], dtype=torch.long)  # (B, T)
            yield part, ids, types


def state_after(bundle: Bundle, ids: Tensor, types: Tensor, layer: int) -> Tensor:
    """The residual state leaving layer `layer` (B, T, C): embeddings, then layers 1..layer."""
    return bundle.model.bert.run(ids, stop=layer, token_type_ids=types).state


def finish_run(bundle: Bundle, x: Tensor, layer: int) -> Tensor:
    """The final hidden states (B, T, C) from the state leaving layer `layer`."""
    return bundle.model.bert.run(x, layer).state


def encodings(bundle: Bundle, texts: list[str]):
    if isinstance(texts, str) or not texts:
        raise InputError("no text to read: give a list of sentences")
    encs = []
    for t in texts:
        e = bundle.tokenizer.encode(str(t), max_length=bundle.config.max_tokens)
        if word_positions(e):
            encs.append(e)
    if not encs:
        raise InputError("the texts gave no word pieces at all (only spaces?)")
    return encs


@dataclass
class Masked:
    """An encoding's ids with some masked (what same_length_batches reads)."""

    ids: list[int]
    type_ids: list[int]
    sequence_ids: list


def mask_some(enc, mask_id: int, rng: np.random.Generator) -> tuple[Masked, list[int]]:
    """`enc` with MASK_SHARE of its word pieces (at least one) replaced by [MASK], and where."""
    words = word_positions(enc)
    n = max(1, int(round(MASK_SHARE * len(words))))
    chosen = sorted(rng.choice(words, size=n, replace=False).tolist())
    ids = list(enc.ids)
    for p in chosen:
        ids[p] = mask_id
    return Masked(ids, enc.type_ids, enc.sequence_ids), chosen


def gather_activations(
    bundle: Bundle,
    layer: int,
    texts: list[str],
    max_tokens: int | None = None,
    batch: int = 32,
    masked: bool = False,
    seed: int = 0,
    stop=None,
) -> Activations:
    """The vectors leaving `layer` at the word pieces of `texts`, read in order until `max_tokens`
    (default: the server's cap) word pieces are in; `capped` says when the cap stopped it.
    `masked`: every other text (the 2nd, 4th, ...) is read with MASK_SHARE of its word pieces
    masked (chosen by `seed`), as the masked-word task shows text to the model: a dictionary
    trained so reconstructs the [MASK]s the splice cost and steering read, too. `stop`: an Event,
    obeyed between batches (then the vectors are only those read by then: a stopped read is not
    for use)."""
    need_mlm(bundle, "a dictionary of features")
    layer = check_layer(bundle, layer)
    cap = caps()["tokens"] if max_tokens is None else int(max_tokens)
    encs, total = [], 0
    all_encs = encodings(bundle, texts)
    for e in all_encs:
        n = len(word_positions(e))
        if encs and total + n > cap:
            break
        encs.append(e)
        total += n
    if masked:
        rng = np.random.default_rng(seed)
        encs = [mask_some(e, bundle.tokenizer.mask_id, rng)[0] if i % 2 else e for i, e in enumerate(encs)]
    vectors, text_index, position = [], [], []
    with torch.inference_mode():
        for part, ids, types in same_length_batches(encs, batch):
            if stop is not None and stop.is_set():
                break
            x = state_after(bundle, ids, types, layer).float()  # (B, T, C)
            for r, i in enumerate(part):
                pos = word_positions(encs[i])
                vectors.append(x[r, pos])
                text_index += [i] * len(pos)
                position += pos
    order = np.lexsort((np.array(position), np.array(text_index)))  # text by text, as read
    empty = torch.zeros(0, bundle.config.hidden_size)
    return Activations(
        layer=layer,
        vectors=(torch.cat(vectors) if vectors else empty)[torch.as_tensor(order, dtype=torch.long)].contiguous(),
        text_index=np.array(text_index, dtype=np.int64)[order],
        position=np.array(position, dtype=np.int64)[order],
        tokens=[bundle.tokenizer.convert_ids_to_tokens(list(e.ids)) for e in encs],
        texts_read=len(encs),
        texts_given=len(all_encs),
        capped=len(encs) < len(all_encs),
    )


# The built-in models' pre-training corpora: their held-out documents are the ones pre-training held out
CORPORA = ("wiki", "brown", "bbc")
SENTENCE_WORDS = (4, 40)  # the sentences read: at least 4 words, at most 40


def corpus_texts(n_train: int, n_held_out: int, corpora=CORPORA, seed: int = 0) -> tuple[list[str], list[str]]:
    """(`n_train` sentences of the training documents, `n_held_out` of the held-out ones): the
    corpora split by document as pre-training splits them, so no held-out sentence is trained on;
    the sentences drawn at random (`seed`) from every document of each part."""
    from ..train.pretrain_args import PretrainArgs
    from ..train.pretrain_setup import training_split

    parts = training_split(PretrainArgs(out="", corpora=list(corpora)))
    rng = np.random.default_rng(seed)
    out = []
    for corpus, n in zip(parts, (n_train, n_held_out), strict=True):
        lo, hi = SENTENCE_WORDS
        pool = [s for doc in corpus.documents for s in doc if lo <= len(s.split()) <= hi]
        pick = rng.permutation(len(pool))[: max(0, int(n))]
        out.append([pool[i] for i in pick])
    return out[0], out[1]
