"""Batches of token-id lists: grouped by length, then padded to their longest member.

Grouping texts of similar length keeps padding (wasted compute) small; shuffling the chunks
and the batches keeps the order random. Pre-training and fine-tuning share both steps.

Dimension letters: B batch, T sequence length (the longest in the batch).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Literal, NamedTuple

import numpy as np
import torch

__all__ = ["LENGTH_MULTIPLE", "PaddedBatch", "bucket_batches", "pad_batch", "pad_encoded"]


class PaddedBatch(NamedTuple):
    input_ids: torch.Tensor  # (B, T) long, pad_id after each sequence
    attention_mask: torch.Tensor  # (B, T) long, 1 on tokens, 0 on padding
    token_type_ids: torch.Tensor | None  # (B, T) long, 0 on padding; None when no types were given


# A training job's batch length is rounded up to a multiple of this: on the CPU each bf16 matmul
# shape gets a kernel of its own (oneDNN), compiled once and kept for the process, so batches of
# every length would each leave one behind. Rounded, a run meets at most max_length / 8 shapes. An
# fp32 run rounds alike, so that a run's precision changes its arithmetic and nothing else.
LENGTH_MULTIPLE = 8


def pad_batch(
    seqs: Sequence[Sequence[int]],
    pad_id: int,
    token_types: Sequence[Sequence[int]] | None = None,
    multiple: int = 1,
    limit: int | None = None,
) -> PaddedBatch:
    """Pad id lists (and their token types, if given) to the longest one, rounded up to a
    `multiple` of tokens but never past `limit` (the longest list may be longer than `limit`)."""
    B = len(seqs)
    longest = max(len(s) for s in seqs)
    T = -(-longest // multiple) * multiple
    if limit is not None:
        T = max(longest, min(T, limit))
    ids = np.full((B, T), pad_id, dtype=np.int64)
    att = np.zeros((B, T), dtype=np.int64)
    types = np.zeros((B, T), dtype=np.int64) if token_types is not None else None
    for b, s in enumerate(seqs):
        n = len(s)
        ids[b, :n] = s
        att[b, :n] = 1
        if types is not None:
            types[b, :n] = token_types[b]
    return PaddedBatch(
        torch.from_numpy(ids), torch.from_numpy(att), torch.from_numpy(types) if types is not None else None
    )


def pad_encoded(items: Sequence[dict], pad_id: int, limit: int) -> dict[str, torch.Tensor]:
    """A training job's model inputs from encoded items (each with input_ids and token_type_ids):
    input_ids, token_type_ids and attention_mask, (B, T), T rounded up to LENGTH_MULTIPLE but never
    past `limit`."""
    ids, types = [x["input_ids"] for x in items], [x["token_type_ids"] for x in items]
    p = pad_batch(ids, pad_id, types, LENGTH_MULTIPLE, limit)
    return {"input_ids": p.input_ids, "token_type_ids": p.token_type_ids, "attention_mask": p.attention_mask}


def _permuter(seed: int, rng: Literal["numpy", "python"]) -> Callable[[int], list[int]]:
    """n -> a random permutation of range(n), successive calls drawing from one generator."""
    if rng == "numpy":
        gen = np.random.default_rng(seed)
        return lambda n: gen.permutation(n).tolist()
    if rng == "python":
        r = random.Random(seed)

        def permutation(n: int) -> list[int]:
            # random.shuffle moves items by position only: shuffling range(n) gives the
            # permutation that shuffling any list of n items applies to it.
            order = list(range(n))
            r.shuffle(order)
            return order

        return permutation
    raise ValueError(f"rng must be 'numpy' or 'python', not {rng!r}")


def bucket_batches(
    lengths: Sequence[int],
    batch_size: int,
    seed: int = 0,
    shuffle: bool = True,
    chunk_batches: int = 50,
    drop_last: bool = False,
    rng: Literal["numpy", "python"] = "numpy",
) -> list[list[int]]:
    """Indices grouped into batches of similar length: shuffle, sort (stably) within chunks of
    ``chunk_batches`` batches, cut into batches, shuffle the batches. Deterministic in ``seed``.

    ``rng`` picks the generator the shuffles draw from: NumPy's for pre-training, Python's
    ``random`` for fine-tuning. Both were used before the two batchers became one, and a seed
    must keep giving the same batches: the published results (docs/MODELS.md, fine-tuning accuracies)
    are reproduced from their seeds.
    """
    n = len(lengths)
    permutation = _permuter(seed, rng)
    order = np.asarray(permutation(n) if shuffle else range(n), dtype=np.int64)
    lens = np.asarray(lengths)
    chunk = max(1, batch_size * chunk_batches)
    batches: list[list[int]] = []
    for s in range(0, n, chunk):
        idx = order[s : s + chunk]
        idx = idx[np.argsort(lens[idx], kind="stable")]
        for b in range(0, len(idx), batch_size):
            batches.append(idx[b : b + batch_size].tolist())
    if drop_last:
        batches = [b for b in batches if len(b) == batch_size]
    if shuffle:
        batches = [batches[i] for i in permutation(len(batches))]
    return batches
