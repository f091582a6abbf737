"""Two models side by side on the same input: their attention maps and how far each head
moved, and each model's own answer (masked-word guesses or class probabilities).

Dimension letters: L layers, H heads, T tokens, K classes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from ..errors import InputError
from .common import as_attention, encode_tensors
from .mlm import MLMPredictions, classifier_probs, mlm_topk


def attentions_of(bundle, text: str, text_b: str | None = None) -> tuple[list[str], np.ndarray]:
    """(tokens, (L, H, T, T) attention probabilities) of one input."""
    enc, ids, types = encode_tensors(bundle, text, text_b)
    with torch.inference_mode():
        out = bundle.model.bert(ids, types, output_attentions=True)
    return list(enc.tokens), torch.stack(out.attentions, 1)[0].float().numpy()


@dataclass
class AttentionDiff:
    """a - b for two attention maps of the same shape, and how far each head moved.

    moved[l, h]: total variation between the two heads' rows, averaged over query tokens,
    i.e. the fraction of attention that goes somewhere else in b (0 = same, 1 = disjoint).
    """

    diff: np.ndarray  # (L, H, T, T) or the shape given
    moved: np.ndarray  # (L, H)
    max_abs: float


def compare_attention(
    att_a, att_b, tokens_a: Sequence[str] | None = None, tokens_b: Sequence[str] | None = None
) -> AttentionDiff:
    """Difference of two models' attention on the same input (same layers, heads and tokens).

    Raises InputError when the layer or head counts differ, or when the two tokenizers split
    the input differently (then the maps are not position-by-position comparable)."""
    a, b = as_attention(att_a), as_attention(att_b)
    if a.shape[:2] != b.shape[:2]:
        raise InputError(
            f"the models have different shapes: {a.shape[0]} layers x {a.shape[1]} heads "
            f"vs {b.shape[0]} x {b.shape[1]}; compare a layer and head that both have, "
            f"one map at a time"
        )
    if tokens_a is not None and tokens_b is not None and list(tokens_a) != list(tokens_b):
        raise InputError(
            "the two models split the text into different tokens (different "
            "vocabularies), so their attention maps cannot be subtracted; view them "
            "side by side instead"
        )
    if a.shape != b.shape:
        raise InputError(
            f"the attention maps cover different numbers of tokens "
            f"({a.shape[-1]} vs {b.shape[-1]}): the tokenizers differ"
        )
    d = a - b
    moved = 0.5 * np.abs(d).sum(-1).mean(-1)
    return AttentionDiff(diff=d, moved=moved, max_abs=float(np.abs(d).max()) if d.size else 0.0)


@dataclass
class ModelOutputs:
    """One model's answer to an input: MLM predictions or class probabilities."""

    name: str
    tokens: list[str]
    kind: str  # "mlm" or "classifier"
    mlm: MLMPredictions | None = None
    probs: np.ndarray | None = None  # (K,)
    labels: list[str] = field(default_factory=list)


@dataclass
class SideBySide:
    a: ModelOutputs
    b: ModelOutputs
    same_tokens: bool  # both tokenizers gave the same tokens


def model_outputs(bundle, text: str, k: int = 5, text_b: str | None = None) -> ModelOutputs:
    """One model's own answer: MLM top-k at each [MASK], or class probabilities."""
    if bundle.is_classifier:
        enc, _, _ = encode_tensors(bundle, text, text_b)
        return ModelOutputs(
            name=bundle.name,
            tokens=list(enc.tokens),
            kind="classifier",
            probs=classifier_probs(bundle, text, text_b=text_b),
            labels=list(bundle.labels),
        )
    m = mlm_topk(bundle, text, k=k, text_b=text_b)
    return ModelOutputs(name=bundle.name, tokens=m.tokens, kind="mlm", mlm=m)


def compare_outputs(bundle_a, bundle_b, text: str, k: int = 5, text_b: str | None = None) -> SideBySide:
    """Each model's own output on the same text: MLM top-k at each [MASK], or class probabilities.

    Each model uses its own tokenizer, so models with different vocabularies are compared on
    their own tokens (see `same_tokens`)."""
    a = model_outputs(bundle_a, text, k, text_b)
    b = model_outputs(bundle_b, text, k, text_b)
    return SideBySide(a=a, b=b, same_tokens=a.tokens == b.tokens)
