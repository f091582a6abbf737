"""Steering with a dictionary's feature: its activation set to a value at some tokens of a text,
the rest of the vector (other features, the reconstruction's error) left as it was, and the rest
of the layers run from the edited state, as activation patching does (patching.py): no hooks on
the shared model.

Dimension letters: T tokens of a text, C hidden size, P places, V vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from ..bundle import Bundle
from ..errors import InputError
from .common import encode, mask_positions, need_mlm
from .dictionary import Dictionary, SparseDictionary, check_feature, check_same_model
from .dictionary_vectors import finish_run, state_after, word_positions

MAX_CLAMP = 1000.0  # the largest |value| a feature may be clamped to


def steered_state(sae: SparseDictionary, x: Tensor, feature: int, positions: list[int], value: float) -> Tensor:
    """x (T, C) with the feature's activation set to `value` at `positions`: x + (value - f) d,
    the rest of the vector (other features, the reconstruction's error) left as it was."""
    x = x.clone()
    f = sae.encode(x[positions].float())[:, feature]  # (P,)
    x[positions] += ((value - f)[:, None] * sae.W_dec[:, feature][None]).to(x.dtype)
    return x


@dataclass
class Steering:
    tokens: list[str]
    feature: int
    value: float
    positions: list[int]  # where it was set
    was: list[float]  # its activation there before
    masks: list[int]  # the [MASK]s read
    before: list[list[tuple[str, float]]]  # per [MASK]: top (token, probability)
    after: list[list[tuple[str, float]]]


def steer(
    bundle: Bundle,
    dictionary: Dictionary,
    text: str,
    feature: int,
    value: float = 0.0,
    positions: list[int] | None = None,
    k: int = 5,
) -> Steering:
    """The [MASK] guesses of `text` before and after setting `feature` to `value` (0: off) at
    `positions` (token indices; default every word piece), the rest of the model run from the
    edited state."""
    need_mlm(bundle, "steering")
    check_same_model(bundle, dictionary)
    feature = check_feature(dictionary, feature)
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise InputError(f"the value to set must be a number, got {value!r}") from None
    if not np.isfinite(value) or abs(value) > MAX_CLAMP:
        raise InputError(f"the value to set must be a number between -{MAX_CLAMP:g} and {MAX_CLAMP:g}, got {value}")
    enc = encode(bundle, text)
    masks = mask_positions(enc, bundle.tokenizer)
    words = word_positions(enc)
    if positions is None:
        positions = words
    positions = sorted({int(p) for p in positions})
    if not positions or any(p not in words for p in positions):
        raise InputError(f"the tokens to steer must be among the text's word pieces, {words[0]}..{words[-1]}")
    ids, types = torch.tensor([enc.ids]), torch.tensor([enc.type_ids])
    tok = bundle.tokenizer
    with torch.inference_mode():
        x = state_after(bundle, ids, types, dictionary.layer)  # (1, T, C)
        was = dictionary.sae.encode(x[0, positions].float())[:, feature]
        edited = steered_state(dictionary.sae, x[0], feature, positions, value)[None]
        probs = torch.softmax(
            bundle.model.mlm(finish_run(bundle, torch.cat([x, edited]), dictionary.layer)[:, masks]).float(), -1
        )  # (2, P, V)
        top = probs.topk(k, dim=-1)

    def words_of(r: int):
        return [
            list(zip(tok.convert_ids_to_tokens(i.tolist()), p.tolist(), strict=True))
            for i, p in zip(top.indices[r], top.values[r], strict=True)
        ]

    return Steering(list(enc.tokens), feature, value, positions, was.tolist(), masks, words_of(0), words_of(1))
