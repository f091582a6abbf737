"""BERT's masked-LM corruption of a padded batch: which positions to predict, and what to show there.

Dimension letters: B batch, T sequence length, V vocabulary, W words in a row (W <= T).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

__all__ = ["IGNORE_INDEX", "MLMMasker", "mask_tokens", "special_token_ids"]

IGNORE_INDEX = -100


def special_token_ids(tokenizer) -> list[int]:
    """Ids that are never masked nor drawn as random replacements: every ``[...]`` token of the
    vocabulary ([PAD], [UNK], [CLS], [SEP], [MASK], [unusedN]) plus the tokenizer's special ids."""
    ids = set()
    for attr in ("pad_id", "unk_id", "cls_id", "sep_id", "mask_id"):
        v = getattr(tokenizer, attr, None)
        if v is not None:
            ids.add(int(v))
    toks = getattr(tokenizer, "ids_to_tokens", None)
    if toks is not None:
        ids.update(i for i, t in enumerate(toks) if len(t) >= 3 and t.startswith("[") and t.endswith("]"))
    return sorted(ids)


def _rand(shape, generator: torch.Generator | None, dev: torch.device) -> torch.Tensor:
    """Uniform [0, 1) numbers drawn on the generator's device (so a seed gives the same draws
    whatever device the batch is on), moved to ``dev``."""
    return torch.rand(shape, generator=generator, device=generator.device if generator else dev).to(dev)


def _chosen(
    probs: torch.Tensor, special_mask: torch.Tensor, mlm_probability: float, word_starts: torch.Tensor | None
) -> torch.Tensor:
    """(B, T) bool: the positions to predict. With ``word_starts``, a word is chosen at its first
    piece and all its pieces go with it."""
    if word_starts is None:
        return (probs < mlm_probability) & ~special_mask
    # Specials are words of their own; a piece right after a special (cut by truncation) starts a word.
    starts = word_starts.to(device=probs.device, dtype=torch.bool) | special_mask
    starts[:, 1:] |= special_mask[:, :-1]
    starts[:, 0] = True
    word_idx = torch.cumsum(starts.long(), dim=1) - 1  # (B, T) index of the word each piece is in
    pick = ((probs < mlm_probability) & starts & ~special_mask).long()  # decided at word starts
    per_word = torch.zeros_like(word_idx).scatter_reduce_(1, word_idx, pick, reduce="amax")  # (B, W<=T)
    return torch.gather(per_word, 1, word_idx).bool() & ~special_mask


def _replacement_pool(
    input_ids: torch.Tensor, special_mask: torch.Tensor, vocab_size: int, mask_id: int, special_ids
) -> torch.Tensor:
    """1-D ids a random replacement may be: the vocabulary minus ``special_ids`` (default: the ids
    found at special positions) and ``mask_id``."""
    if special_ids is not None:
        excl = set(int(x) for x in special_ids)
    else:
        excl = set(input_ids[special_mask].unique().tolist())
    excl.add(int(mask_id))
    keep = torch.ones(vocab_size, dtype=torch.bool)
    ex = torch.tensor(sorted(e for e in excl if 0 <= e < vocab_size), dtype=torch.long)
    keep[ex] = False
    return torch.nonzero(keep).squeeze(1)


def mask_tokens(
    input_ids: torch.Tensor,
    special_mask: torch.Tensor,
    vocab_size: int,
    mask_id: int,
    mlm_probability: float = 0.15,
    generator: torch.Generator | None = None,
    word_starts: torch.Tensor | None = None,
    *,
    random_ids: torch.Tensor | None = None,
    special_ids: Sequence[int] | None = None,
    mask_fraction: float = 0.8,
    random_fraction: float = 0.1,
) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT's masked-LM corruption. Returns (masked input_ids, labels), both (B, T) long.

    ``special_mask`` (B, T) bool marks positions never chosen ([CLS], [SEP], padding...).
    Each other position is chosen with probability ``mlm_probability`` (with ``word_starts`` (B, T)
    bool: each *word* is chosen with that probability and all its pieces go together). Of the
    chosen: a ``mask_fraction`` -> ``mask_id``, a ``random_fraction`` -> a random id, the rest
    kept. Random ids are drawn from
    ``random_ids`` (1-D) or else from range(vocab_size) minus ``special_ids`` (default: ``mask_id``
    and the ids found at special positions). ``labels`` holds the original id where chosen, -100
    elsewhere.
    """
    if input_ids.dim() != 2:
        raise ValueError(f"input_ids must be (B, T), got {tuple(input_ids.shape)}")
    dev = input_ids.device
    special_mask = special_mask.to(device=dev, dtype=torch.bool)
    chosen = _chosen(_rand(input_ids.shape, generator, dev), special_mask, mlm_probability, word_starts)
    labels = torch.where(chosen, input_ids, torch.full_like(input_ids, IGNORE_INDEX))
    action = _rand(input_ids.shape, generator, dev)
    to_mask = chosen & (action < mask_fraction)
    to_random = chosen & (action >= mask_fraction) & (action < mask_fraction + random_fraction)
    out = input_ids.masked_fill(to_mask, mask_id)
    if bool(to_random.any()):
        if random_ids is None:
            random_ids = _replacement_pool(input_ids, special_mask, vocab_size, mask_id, special_ids)
        random_ids = random_ids.to(dev)
        pick = torch.randint(
            len(random_ids), input_ids.shape, generator=generator, device=generator.device if generator else dev
        ).to(dev)
        # index_select, not random_ids[pick]: advanced indexing is far slower on CPU.
        rand_tok = random_ids.index_select(0, pick.view(-1)).view(input_ids.shape)
        out = torch.where(to_random, rand_tok, out)
    return out, labels


def _lookup(table: torch.Tensor, ids: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """table[ids] for a (V,) table; index_select is far faster than advanced indexing on CPU."""
    flat = ids.reshape(-1).clamp(0, vocab_size - 1)
    return table.to(ids.device).index_select(0, flat).view(ids.shape)


@dataclass
class MLMMasker:
    """Masking settings for one vocabulary; call it on a padded batch."""

    vocab_size: int
    mask_id: int
    pad_id: int
    special_ids: list[int]  # never masked, never drawn as random replacements
    mlm_probability: float = 0.15
    whole_word: bool = False
    is_continuation: torch.Tensor | None = None  # (V,) bool: the token is a "##" piece
    random_ids: torch.Tensor = field(init=False)

    def __post_init__(self) -> None:
        keep = torch.ones(self.vocab_size, dtype=torch.bool)
        ids = [i for i in set(self.special_ids) | {self.mask_id, self.pad_id} if 0 <= i < self.vocab_size]
        keep[torch.tensor(ids, dtype=torch.long)] = False
        self.random_ids = torch.nonzero(keep).squeeze(1)
        self._special_table = ~keep  # (V,) bool
        if self.whole_word and self.is_continuation is None:
            raise ValueError("whole_word masking needs is_continuation (use MLMMasker.from_tokenizer)")

    @classmethod
    def from_tokenizer(cls, tokenizer, mlm_probability: float = 0.15, whole_word: bool = False) -> MLMMasker:
        toks = getattr(tokenizer, "ids_to_tokens", None)
        if toks is None:
            toks = sorted(tokenizer.vocab, key=tokenizer.vocab.get)
        is_cont = torch.tensor([t.startswith("##") for t in toks], dtype=torch.bool)
        return cls(
            vocab_size=len(toks),
            mask_id=tokenizer.mask_id,
            pad_id=tokenizer.pad_id,
            special_ids=special_token_ids(tokenizer),
            mlm_probability=mlm_probability,
            whole_word=whole_word,
            is_continuation=is_cont,
        )

    def special_mask(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        sm = _lookup(self._special_table, input_ids, self.vocab_size)
        if attention_mask is not None:
            sm = sm | ~attention_mask.bool()
        return sm

    def __call__(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        generator: torch.Generator | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        ws = None
        if self.whole_word:
            ws = ~_lookup(self.is_continuation, input_ids, self.vocab_size)
        return mask_tokens(
            input_ids,
            self.special_mask(input_ids, attention_mask),
            self.vocab_size,
            self.mask_id,
            self.mlm_probability,
            generator,
            ws,
            random_ids=self.random_ids,
        )
