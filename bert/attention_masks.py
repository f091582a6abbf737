"""Which tokens each token may attend to: an encoder's, a decoder's, or a prefix-LM's mask.

One set of weights, three ways to read a text:

- "bidirectional" (an encoder's, BERT's own): every token sees every token;
- "causal" (a decoder's masked self-attention, as in GPT): each token sees itself and its left;
- an int k (a prefix-LM, as in T5's and UniLM's): the first k tokens see each other, every later
  token sees itself and its left. k = 0 and k = 1 are "causal"; k = T is "bidirectional".

The mask is a rule over positions, not over words: it composes with the padding mask (a
position may be read only when both allow it) and never hides a token from itself, so no row of
attention is ever empty.

A model remembers the mask kind it was trained on in its config as transformers does for a BERT
read left to right: `is_decoder` (`trained_mask_kind`). A next-word model carries it; BERT and its
family do not, nor a classifier fine-tuned from a next-word model (fine-tuning reads both ways).

Dimension letters: T tokens.
"""

from __future__ import annotations

import torch
from torch import Tensor

from .errors import InputError

BIDIRECTIONAL = "bidirectional"
CAUSAL = "causal"
NAMED = (BIDIRECTIONAL, CAUSAL)
TRAINED_LEFT_TO_RIGHT = "is_decoder"  # transformers' config field for a BERT read left to right

MaskKind = str | int


def check_mask_kind(kind: MaskKind, n_tokens: int | None = None) -> MaskKind:
    """The mask kind itself when it is one: "bidirectional", "causal" or an int k with
    0 <= k <= n_tokens (a prefix longer than the input has no meaning); an InputError otherwise."""
    if isinstance(kind, str):
        if kind not in NAMED:
            raise InputError(f"mask_kind must be 'bidirectional', 'causal' or a prefix length, got {kind!r}")
        return kind
    if isinstance(kind, bool) or not isinstance(kind, int):
        # bool is an int in Python: True would silently mean a prefix of 1
        raise InputError(f"mask_kind must be 'bidirectional', 'causal' or an int, got {kind!r}")
    if kind < 0:
        raise InputError(f"a prefix of {kind} tokens makes no sense: k must be 0 or more")
    if n_tokens is not None and kind > n_tokens:
        raise InputError(
            f"a prefix of {kind} tokens is longer than the input, which has {n_tokens} tokens "
            f"([CLS] and [SEP] included): pick k from 0 to {n_tokens}"
        )
    return kind


def allowed(kind: MaskKind, n_tokens: int, device: torch.device | str | None = None) -> Tensor | None:
    """(T, T) bool: [i, j] is True when token i may attend to token j. None for
    "bidirectional" (nothing is hidden, and the fast paths then take no mask at all)."""
    kind = check_mask_kind(kind, n_tokens)
    if kind == BIDIRECTIONAL:
        return None
    pos = torch.arange(n_tokens, device=device)
    see = pos[None, :] <= pos[:, None]  # (T, T): j <= i, the left and itself
    if isinstance(kind, int) and kind > 1:
        in_prefix = pos < kind  # (T,)
        see = see | (in_prefix[:, None] & in_prefix[None, :])
    return see


def is_prefix(kind: MaskKind) -> bool:
    return isinstance(kind, int) and not isinstance(kind, bool)


def describe(kind: MaskKind) -> str:
    """A mask kind in words, for the pages and reports."""
    if kind == BIDIRECTIONAL:
        return "reads both ways (bidirectional, an encoder)"
    if kind == CAUSAL:
        return "reads left only (causal, a decoder)"
    return f"prefix of {kind}: the first {kind} tokens see each other, the rest read left only"


def trained_mask_kind(config) -> MaskKind:
    """The mask kind a model (its BertConfig) was trained to read with: "causal" for a next-word
    model (its config's is_decoder), "bidirectional" otherwise."""
    return CAUSAL if config.extra.get(TRAINED_LEFT_TO_RIGHT) else BIDIRECTIONAL


def set_trained_mask_kind(config, kind: MaskKind) -> None:
    """Mark `config` as trained reading with `kind` ("causal" or "bidirectional"), for
    `trained_mask_kind` and for transformers, which reads is_decoder the same way."""
    if check_mask_kind(kind) == CAUSAL:
        config.extra[TRAINED_LEFT_TO_RIGHT] = True
    else:
        config.extra.pop(TRAINED_LEFT_TO_RIGHT, None)
