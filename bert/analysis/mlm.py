"""The model's own heads on one input: masked-word top-k (and the sentence with the best
guesses filled in), next-sentence probability, ELECTRA's replaced-token probabilities, class
probabilities.

Dimension letters: P predicted ([MASK]) positions, k top predictions, V vocabulary, K classes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from ..attention_masks import BIDIRECTIONAL, MaskKind
from ..errors import InputError
from .common import as_head_mask, encode_tensors, mask_positions, need_classifier, need_mlm


@dataclass
class MLMPredictions:
    """Top-k masked-word predictions at each predicted position, and the text with the top
    guess put in at every one of them."""

    tokens: list[str]
    positions: list[int]  # P, in order
    top_ids: np.ndarray  # (P, k)
    top_probs: np.ndarray  # (P, k)
    top_tokens: list[list[str]]  # [P][k]
    filled_tokens: list[str] = field(default_factory=list)  # the text's tokens, guesses put in
    filled_is_pred: list[bool] = field(default_factory=list)  # which of them are guesses
    filled: str = ""  # filled_tokens decoded back to text
    truncated: bool = False  # the input was cut at the model's maximum length


def _filled(tokenizer, enc, positions: list[int], best: list[int]):
    """The text's own tokens (no [CLS]/[SEP]) with `best[n]` put in at `positions[n]`."""
    ids = list(enc.ids)
    for pos, i in zip(positions, best, strict=True):
        ids[pos] = int(i)
    where = set(positions)
    inner = [i for i, s in zip(ids, enc.sequence_ids, strict=True) if s is not None]
    is_pred = [j in where for j, s in enumerate(enc.sequence_ids) if s is not None]
    return tokenizer.convert_ids_to_tokens(inner), is_pred, tokenizer.decode(inner)


def mlm_topk(
    bundle,
    text: str,
    k: int = 5,
    head_mask=None,
    positions: Sequence[int] | None = None,
    text_b: str | None = None,
    mask_kind: MaskKind = BIDIRECTIONAL,
) -> MLMPredictions:
    """The model's top-k words at each [MASK] (or at `positions`), optionally with some heads
    switched off (head_mask (L, H): 1 = on, 0 = off) and read under `mask_kind`
    (bert/attention_masks.py: "causal" reads each gap from its left only)."""
    need_mlm(bundle, "masked-word prediction")
    tok = bundle.tokenizer
    enc, ids, types = encode_tensors(bundle, text, text_b)
    pos = sorted(set(mask_positions(enc, tok, positions)))
    hm = None if head_mask is None else as_head_mask(bundle, head_mask)
    where = torch.zeros_like(ids, dtype=torch.bool)
    where[0, pos] = True
    with torch.inference_mode():
        out = bundle.model(ids, types, mlm_positions=where, head_mask=hm, mask_kind=mask_kind)
        top_p, top_i = torch.softmax(out.mlm_logits.float(), -1).topk(
            max(1, min(int(k), bundle.config.vocab_size)), -1
        )  # (P, k)
    filled_tokens, is_pred, filled = _filled(tok, enc, pos, top_i[:, 0].tolist())
    return MLMPredictions(
        tokens=list(enc.tokens),
        positions=pos,
        top_ids=top_i.numpy(),
        top_probs=top_p.numpy().astype(np.float64),
        top_tokens=[tok.convert_ids_to_tokens(r.tolist()) for r in top_i],
        filled_tokens=filled_tokens,
        filled_is_pred=is_pred,
        filled=filled,
        truncated=enc.truncated,
    )


def nsp_probability(bundle, text_a: str, text_b: str) -> float:
    """P(IsNext): the NSP head's belief that B really follows A (index 0, as in Google's BERT)."""
    need_mlm(bundle, "Next-sentence prediction")
    _, ids, types = encode_tensors(bundle, text_a, text_b)
    with torch.inference_mode():
        out = bundle.model(ids, types)
    return float(torch.softmax(out.nsp_logits.float(), dim=-1)[0, 0])


@dataclass
class ReplacedTokens:
    """ELECTRA's discriminator on one input: for every token, P(it was replaced)."""

    tokens: list[str]
    probs: np.ndarray  # (T,)
    truncated: bool = False


def replaced_probabilities(bundle, text: str) -> ReplacedTokens:
    """P(replaced) of every token of `text` ([CLS] and [SEP] included), from ELECTRA's
    discriminator head; InputError for a model without one."""
    if getattr(bundle.model, "rtd", None) is None:
        raise InputError(f"{bundle.name} has no replaced-token head: only an ELECTRA discriminator has one")
    enc, ids, types = encode_tensors(bundle, text)
    with torch.inference_mode():
        out = bundle.model(ids, types)
    probs = torch.sigmoid(out.replaced_logits.float())[0].numpy().astype(np.float64)
    return ReplacedTokens(tokens=list(enc.tokens), probs=probs, truncated=enc.truncated)


def classifier_probs(bundle, text: str, head_mask=None, text_b: str | None = None) -> np.ndarray:
    """(K,) class probabilities of a fine-tuned classifier (optionally with heads switched off)."""
    need_classifier(bundle, "class probabilities")
    _, ids, types = encode_tensors(bundle, text, text_b)
    hm = None if head_mask is None else as_head_mask(bundle, head_mask)
    with torch.inference_mode():
        out = bundle.model(ids, types, head_mask=hm)
    return torch.softmax(out.logits.float(), -1)[0].numpy().astype(np.float64)
