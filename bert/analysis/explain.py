"""Explanations of one prediction: attention rollout (Abnar & Zuidema 2020) next to gradient
saliency (input x gradient), with their rank correlation, since raw attention is not an
explanation; and the logit lens, the MLM head read out at every layer to see where the answer
appears.

Saliency takes `torch.autograd.grad` with respect to an embedding tensor of its own, run through
the encoder from there (BertModel.run): no hooks, no gradients on parameters, safe on a shared model.

Dimension letters: L layers, H heads, T tokens, C hidden size, V vocabulary, K classes,
P predicted ([MASK]) positions, k top predictions.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ..errors import InputError
from .common import (
    ADDED_TOKENS,
    as_attention,
    bert_names,
    encode_tensors,
    mask_positions,
    need_classifier,
    need_mlm,
    token_id,
)
from .common import class_index as index_of_class  # the parameter of saliency_classifier is class_index


def attention_rollout(attentions, residual: float = 0.5, upto: int | None = None) -> np.ndarray:
    """Attention rollout (Abnar & Zuidema 2020): how much each position draws on each input token.

    Per layer the heads are averaged and the residual connection added,
    A' = (1 - residual) * mean_heads(A) + residual * I, rows renormalised to sum to 1; the
    layers are then multiplied, R = A'_L ... A'_2 A'_1. Row i of the (T, T) result is a
    distribution over input tokens for position i's final representation. `upto` stops after
    that many layers.
    """
    a = as_attention(attentions)  # (L, H, T, T)
    L, _, T, _ = a.shape
    upto = L if upto is None else int(upto)
    if not 0 <= upto <= L:
        raise InputError(f"upto must be between 0 and {L}")
    eye = np.eye(T)
    rollout = eye.copy()
    for l in range(upto):
        m = (1.0 - residual) * a[l].mean(0) + residual * eye  # (T, T)
        m = m / m.sum(-1, keepdims=True)
        rollout = m @ rollout
    return rollout


def _rankdata(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n, ties getting the average of their ranks (as scipy.stats.rankdata)."""
    x = np.asarray(x, dtype=np.float64)
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x))
    ranks[order] = np.arange(1, len(x) + 1)
    _, inv = np.unique(x, return_inverse=True)
    sums = np.bincount(inv, weights=ranks)
    counts = np.bincount(inv)
    return (sums / counts)[inv]


def spearman(a, b) -> float:
    """Spearman's rank correlation between two score vectors (nan when one is constant)."""
    a = np.asarray(a, dtype=np.float64).ravel()
    b = np.asarray(b, dtype=np.float64).ravel()
    if a.shape != b.shape:
        raise InputError(f"spearman needs two vectors of the same length, got {a.size} and {b.size}")
    if a.size < 2:
        return float("nan")
    ra, rb = _rankdata(a) - (a.size + 1) / 2, _rankdata(b) - (b.size + 1) / 2
    den = math.sqrt(float((ra * ra).sum() * (rb * rb).sum()))
    return float((ra * rb).sum() / den) if den > 0 else float("nan")


@dataclass
class Saliency:
    """Which input tokens a prediction depends on, two ways, side by side.

    saliency: input x gradient. The gradient of the target's log-probability with respect to
    the encoder input (embedding output, (T, C)) is multiplied by that input element-wise; a
    token's score is the L2 norm of its row, normalised to sum to 1 (magnitude: how much the
    prediction is sensitive to this token). `signed` is the plain sum of the row (first-order
    estimate of the token's contribution, positive = supports the target).
    rollout: the row of attention rollout for the position the prediction is read from.
    correlation: Spearman rank correlation of the two over the text's tokens ([CLS]/[SEP] left
    out, since both methods treat them specially).
    """

    tokens: list[str]
    position: int  # the token the prediction is read from ([MASK], or 0 = [CLS])
    target: str  # predicted token, or class label
    target_index: int  # vocabulary id, or class index
    target_prob: float
    saliency: np.ndarray  # (T,) >= 0, sums to 1
    signed: np.ndarray  # (T,)
    rollout: np.ndarray  # (T,) sums to 1
    correlation: float
    seconds: float = 0.0


def _saliency(
    bundle, enc, ids, types, readout, choose_target, rollout_row, position: int, label_of, t0: float
) -> Saliency:
    """Shared part of the saliency functions.

    readout(h (1, T, C)) -> (V,) or (K,) logits; choose_target(logp) -> index explained.
    The gradient is taken with torch.autograd.grad with respect to our own copy of the
    embedding output, so no parameter's .grad is ever touched (safe on a shared model)."""
    bert_model = bundle.model.bert
    with torch.inference_mode(False), torch.enable_grad():
        with torch.no_grad():
            emb = bert_model.run(ids, stop=0, token_type_ids=types).state  # (1, T, C): the embeddings
        x = emb.detach().clone().requires_grad_(True)
        run = bert_model.run(x, 0, record=["probs"])
        h, atts = run.state, run.cache["probs"]
        logp = torch.log_softmax(readout(h).float(), -1)  # (V,) or (K,)
        target = choose_target(logp.detach())
        (grad,) = torch.autograd.grad(logp[target], x)
    xg = (x.detach() * grad)[0]  # (T, C)
    mag = xg.norm(dim=-1).numpy().astype(np.float64)
    sal = mag / mag.sum() if mag.sum() > 0 else mag
    signed = xg.sum(-1).numpy().astype(np.float64)
    att = np.stack([a.detach()[0].numpy() for a in atts])  # (L, H, T, T)
    roll = rollout_row(attention_rollout(att))
    keep = [i for i, t in enumerate(bert_names(enc.tokens)) if t not in ADDED_TOKENS]
    if len(keep) < 2:
        keep = list(range(len(enc.tokens)))
    return Saliency(
        tokens=list(enc.tokens),
        position=position,
        target=label_of(target),
        target_index=target,
        target_prob=float(logp[target].detach().exp()),
        saliency=sal,
        signed=signed,
        rollout=roll,
        correlation=spearman(sal[keep], roll[keep]),
        seconds=time.perf_counter() - t0,
    )


def saliency_mlm(
    bundle, text: str, position: int | None = None, target: str | int | None = None, text_b: str | None = None
) -> Saliency:
    """Input x gradient and attention rollout for one masked-word prediction.

    position: the token to predict (default: the first [MASK]); target: the word whose
    log-probability is explained (default: the model's top prediction there).
    """
    t0 = time.perf_counter()
    need_mlm(bundle, "masked-word saliency")
    enc, ids, types = encode_tensors(bundle, text, text_b)
    pos = mask_positions(enc, bundle.tokenizer, position)[0]
    mlm, tok = bundle.model.mlm, bundle.tokenizer
    tid = None if target is None else token_id(tok, target)
    return _saliency(
        bundle,
        enc,
        ids,
        types,
        lambda h: mlm(h[0, pos]),
        lambda logp: int(logp.argmax()) if tid is None else tid,
        lambda r: r[pos],
        pos,
        tok.convert_ids_to_tokens,
        t0,
    )


def saliency_classifier(bundle, text: str, class_index: int | str | None = None, text_b: str | None = None) -> Saliency:
    """Input x gradient and attention rollout for a fine-tuned classifier's prediction.

    class_index: the class explained (index or label; default: the predicted class). The
    rollout row is [CLS]'s for "cls" pooling, the mean over tokens for "mean"/"max" pooling.
    """
    t0 = time.perf_counter()
    need_classifier(bundle, "classifier saliency")
    enc, ids, types = encode_tensors(bundle, text, text_b)
    model = bundle.model
    k = None if class_index is None else index_of_class(bundle, class_index)
    row = (lambda r: r[0]) if model.pooling == "cls" else (lambda r: r.mean(0))
    return _saliency(
        bundle,
        enc,
        ids,
        types,
        lambda h: model.classify(h)[0],
        lambda logp: int(logp.argmax()) if k is None else k,
        row,
        0,
        lambda i: bundle.labels[i],
        t0,
    )


@dataclass
class LogitLens:
    """The MLM head applied to every layer's hidden state at the predicted positions.

    Layer 0 is the embedding output, layer L the final one (identical to the model's own MLM
    output). `answer_prob[p, l]` is the probability, at layer l, of the final layer's top token:
    where the answer appears.
    """

    tokens: list[str]
    positions: list[int]  # P predicted positions
    top_ids: np.ndarray  # (P, L+1, k)
    top_probs: np.ndarray  # (P, L+1, k)
    top_tokens: list[list[list[str]]]  # [P][L+1][k]
    answer_prob: np.ndarray  # (P, L+1)
    answer_rank: np.ndarray  # (P, L+1), 1 = top
    seconds: float = 0.0


def logit_lens(
    bundle, text: str, k: int = 5, positions: Sequence[int] | None = None, text_b: str | None = None
) -> LogitLens:
    """Logit lens: decode each layer's hidden state at every [MASK] with the MLM head."""
    t0 = time.perf_counter()
    need_mlm(bundle, "the logit lens")
    enc, ids, types = encode_tensors(bundle, text, text_b)
    pos = mask_positions(enc, bundle.tokenizer, positions)
    k = max(1, min(int(k), bundle.config.vocab_size))
    sel = torch.tensor(pos)
    with torch.inference_mode():
        out = bundle.model.bert(ids, types, output_hidden_states=True)
        # one head call per layer on exactly the rows the model's forward(mlm_positions=...)
        # uses, so the last layer reproduces the model's output bit for bit
        probs = torch.stack(
            [torch.softmax(bundle.model.mlm(h[0][sel]).float(), -1) for h in out.hidden_states], 1
        )  # (P, L+1, V)
    top_p, top_i = probs.topk(k, -1)  # (P, L+1, k)
    answer = top_i[:, -1, 0]  # (P,)
    ans_p = probs.gather(-1, answer[:, None, None].expand(-1, probs.shape[1], 1))[..., 0]
    ans_rank = (probs > ans_p[..., None]).sum(-1) + 1  # (P, L+1)
    conv = bundle.tokenizer.convert_ids_to_tokens
    return LogitLens(
        tokens=list(enc.tokens),
        positions=pos,
        top_ids=top_i.numpy(),
        top_probs=top_p.numpy().astype(np.float64),
        top_tokens=[[conv(r.tolist()) for r in per] for per in top_i],
        answer_prob=ans_p.numpy().astype(np.float64),
        answer_rank=ans_rank.numpy(),
        seconds=time.perf_counter() - t0,
    )
