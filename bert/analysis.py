"""Analyses of what a BERT has learned, as pure computations for the Analysis pages.

Each analysis is a well-known one from the research on BERT, made live for one input:

- head patterns (Clark et al. 2019, "What does BERT look at?"): what each head mostly attends to;
- attention rollout (Abnar & Zuidema 2020) next to gradient saliency (input x gradient), with
  their rank correlation: raw attention is not an explanation;
- logit lens: the MLM head read out at every layer, to see where the answer appears;
- head ablation: switch heads off and see the prediction change; rank heads by their effect;
- side by side: two models on the same input;
- contextual embedding map: one word in several sentences, projected to 2-D layer by layer.

Everything here is thread-safe and leaves the model untouched: no hooks, no `.train()`, no
gradients on parameters (saliency takes `torch.autograd.grad` with respect to an embedding
tensor of its own and re-runs the public encoder layers by hand). Models are expected in eval
mode (dropout off), as `bert.load` returns them. Results are numpy arrays in dataclasses.

Dimension letters: L layers, H heads, T tokens, C hidden size, V vocabulary, N sentences,
P predicted ([MASK]) positions, K classes, k top predictions.
"""
from __future__ import annotations

import math
import time
import unicodedata
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch
from torch import Tensor

from .errors import InputError
from .outputs import BertOutput

__all__ = [
    "PATTERNS", "LABELS", "LABEL_HELP", "PATTERN_THRESHOLD", "BROAD_ENTROPY",
    "head_pattern_stats", "label_heads", "probe_sentences", "head_patterns_over", "HeadPatterns",
    "attention_rollout", "saliency_mlm", "saliency_classifier", "Saliency", "spearman",
    "logit_lens", "LogitLens", "mlm_topk", "MLMPredictions", "ablate", "ablate_classifier",
    "classifier_probs", "head_importance", "HeadImportance", "attentions_of",
    "compare_attention", "AttentionDiff", "compare_outputs", "ModelOutputs", "SideBySide",
    "word_vectors_by_layer", "find_word", "pca_2d", "pca_by_layer", "separation",
    "sense_examples",
]

SPECIAL = ("[CLS]", "[SEP]", "[PAD]")

# ================================================================================================
# helpers
# ================================================================================================


def _encode(bundle, text: str, text_b: str | None = None):
    """Encoding and (1, T) id / segment tensors for one input."""
    enc = bundle.tokenizer.encode(text, text_b, max_length=bundle.config.max_position_embeddings)
    ids = torch.tensor([enc.ids], dtype=torch.long)                       # (1, T)
    types = torch.tensor([enc.type_ids], dtype=torch.long)                # (1, T)
    return enc, ids, types


def _pad(encs, pad_id: int):
    """Right-pad encodings into (B, T) ids, segments and attention mask."""
    T = max(len(e.ids) for e in encs)
    ids = torch.full((len(encs), T), pad_id, dtype=torch.long)
    types = torch.zeros((len(encs), T), dtype=torch.long)
    mask = torch.zeros((len(encs), T), dtype=torch.long)
    for i, e in enumerate(encs):
        n = len(e.ids)
        ids[i, :n] = torch.tensor(e.ids)
        types[i, :n] = torch.tensor(e.type_ids)
        mask[i, :n] = 1
    return ids, types, mask


def _need_mlm(bundle, what: str) -> None:
    if not bundle.has_mlm:
        raise InputError(f"{what} needs a masked-language-model head, and {bundle.name} is a "
                         f"classifier; pick a pre-training model")


def _need_classifier(bundle, what: str) -> None:
    if not bundle.is_classifier:
        raise InputError(f"{what} needs a fine-tuned classifier, and {bundle.name} is not one")


def _mask_positions(enc, tokenizer, positions=None) -> list[int]:
    """The given positions (checked), or every [MASK] in the input."""
    T = len(enc.ids)
    if positions is None:
        found = [i for i, t in enumerate(enc.ids) if t == tokenizer.mask_id]
        if not found:
            raise InputError("there is no [MASK] in the text: write [MASK] where the model "
                             "should guess a word (e.g. 'She opened the [MASK] and walked in.')")
        return found
    if isinstance(positions, (int, np.integer)):
        positions = [int(positions)]
    out = []
    for p in positions:
        p = int(p)
        if not 0 <= p < T:
            raise InputError(f"position {p} is outside the {T} tokens of the input")
        out.append(p)
    if not out:
        raise InputError("no positions given")
    return out


def _as_head_mask(bundle, head_mask) -> Tensor:
    """(L, H) float tensor of head weights (1 = on, 0 = off), shape checked."""
    L, H = bundle.config.num_hidden_layers, bundle.config.num_attention_heads
    m = torch.as_tensor(np.asarray(head_mask, dtype=np.float32))
    if tuple(m.shape) != (L, H):
        raise InputError(f"head_mask must have one entry per head: shape (layers, heads) = "
                         f"({L}, {H}), got {tuple(m.shape)}")
    return m


def _as_attention(attentions) -> np.ndarray:
    """(L, H, T, T) float64 from a tensor/array, or from the model's tuple of L (1, H, T, T)."""
    if isinstance(attentions, (tuple, list)):
        attentions = [a.detach().float().cpu().numpy() if isinstance(a, Tensor) else np.asarray(a)
                      for a in attentions]
        attentions = np.stack([a[0] if a.ndim == 4 else a for a in attentions])
    elif isinstance(attentions, Tensor):
        attentions = attentions.detach().float().cpu().numpy()
    a = np.asarray(attentions, dtype=np.float64)
    if a.ndim == 5 and a.shape[1] == 1:            # (L, 1, H, T, T): a batch of one
        a = a[:, 0]
    if a.ndim == 2:                                # one head (T, T)
        a = a[None, None]
    if a.ndim != 4 or a.shape[-1] != a.shape[-2]:
        raise InputError(f"attention must be (layers, heads, tokens, tokens), got {a.shape}")
    return a


def _is_punctuation(token: str) -> bool:
    t = token[2:] if token.startswith("##") else token
    if not t or token in SPECIAL or token == "[MASK]":
        return False
    return all(unicodedata.category(c).startswith("P") or (c.isascii() and not c.isalnum()
                                                          and not c.isspace()) for c in t)


def _run_layers(bert_model, x: Tensor, layers: range | None = None, head_mask: Tensor | None = None,
                need_weights: bool = False):
    """Run encoder layers by hand from hidden state `x` (B, T, C), no padding mask.

    Returns the final state, the list of states after each layer and the attentions (or [])."""
    layers = range(len(bert_model.layers)) if layers is None else layers
    states, atts = [], []
    for i in layers:
        hm = head_mask[i] if head_mask is not None else None
        x, probs, _ = bert_model.layers[i](x, None, need_weights, hm)
        states.append(x)
        if need_weights:
            atts.append(probs)
    return x, states, atts


def _classifier_logits(model, h: Tensor) -> Tensor:
    """The classifier head on final hidden states h (B, T, C) with no padding -> (B, K)."""
    pooled = torch.tanh(model.bert.pooler(h[:, 0]))                       # (B, C)
    out = BertOutput(last_hidden_state=h, pooler_output=pooled)
    return model.classifier(model.dropout(model.pool(out, None)))


# ================================================================================================
# 1. head patterns (Clark et al. 2019)
# ================================================================================================

PATTERNS = ("[CLS]", "[SEP]", "previous", "next", "self", "punctuation")
LABELS = PATTERNS + ("broad", "other")
PATTERN_THRESHOLD = 0.4   # a head is labelled by a pattern that gets >= 40% of its attention
BROAD_ENTROPY = 0.7       # ... else "broad" when its entropy is >= 70% of the uniform maximum

LABEL_HELP = {
    "[CLS]": "attends mostly to the [CLS] token at the start",
    "[SEP]": "attends mostly to [SEP]: often a 'no-op', a place to park attention",
    "previous": "attends mostly to the token just before",
    "next": "attends mostly to the token just after",
    "self": "attends mostly to the token itself",
    "punctuation": "attends mostly to punctuation such as commas and full stops",
    "broad": "spreads its attention over many tokens (high entropy): a bag-of-words summary",
    "other": "focused, but on none of the simple targets (e.g. syntax, or the same word elsewhere)",
}


def head_pattern_stats(attentions, tokens: Sequence[str]) -> dict[str, np.ndarray]:
    """How much each head attends to [CLS], [SEP], the previous/next token, itself and punctuation.

    attentions: (L, H, T, T) for one input (rows = queries, softmax over keys), or the model's
    tuple of L (1, H, T, T); tokens: the T token strings. Each entry is an (L, H) array: the
    attention weight on that target averaged over query tokens ("previous" over the tokens that
    have one, "next" likewise), and "entropy": the mean entropy of a row divided by log T, from
    0 (every row on one token) to 1 (uniform).
    """
    a = _as_attention(attentions)                                        # (L, H, T, T)
    T = a.shape[-1]
    tokens = list(tokens)
    if len(tokens) != T:
        raise InputError(f"{len(tokens)} tokens given for an attention over {T} tokens")

    def to(cols):
        if not cols:
            return np.zeros(a.shape[:2])
        return a[..., cols].sum(-1).mean(-1)                             # (L, H)

    diag = lambda k: np.diagonal(a, offset=k, axis1=2, axis2=3)  # noqa: E731  (L, H, T-|k|)
    empty = np.zeros(a.shape[:2])
    stats = {
        "[CLS]": to([j for j, t in enumerate(tokens) if t == "[CLS]"]),
        "[SEP]": to([j for j, t in enumerate(tokens) if t == "[SEP]"]),
        "previous": diag(-1).mean(-1) if T > 1 else empty,               # A[i, i-1], i >= 1
        "next": diag(1).mean(-1) if T > 1 else empty,                    # A[i, i+1], i < T-1
        "self": diag(0).mean(-1),
        "punctuation": to([j for j, t in enumerate(tokens) if _is_punctuation(t)]),
    }
    p = np.clip(a, 1e-12, 1.0)
    ent = -(a * np.log(p)).sum(-1).mean(-1)                              # (L, H) nats
    stats["entropy"] = ent / math.log(T) if T > 1 else np.zeros(a.shape[:2])
    return stats


def label_heads(stats: dict[str, np.ndarray], threshold: float = PATTERN_THRESHOLD,
                broad_entropy: float = BROAD_ENTROPY) -> np.ndarray:
    """Name each head's dominant pattern: (L, H) array of strings from LABELS.

    Rule: the pattern in PATTERNS with the largest average weight, if that weight is at least
    `threshold` (0.4: the head puts 40%+ of its attention there); otherwise "broad" when the
    normalised entropy is at least `broad_entropy` (0.7), and "other" (focused, but on something
    none of the simple patterns describe) when it is not.
    """
    scores = np.stack([np.asarray(stats[p], dtype=np.float64) for p in PATTERNS])  # (6, L, H)
    best = scores.argmax(0)                                               # (L, H)
    top = scores.max(0)
    names = np.array(PATTERNS, dtype=object)[best]
    ent = np.asarray(stats["entropy"])
    fallback = np.where(ent >= broad_entropy, "broad", "other").astype(object)
    return np.where(top >= threshold, names, fallback).astype(str)


def probe_sentences() -> list[str]:
    """Twelve varied English sentences (our own) to average head patterns over."""
    return [
        "The cat sat quietly on the warm windowsill.",
        "After the long meeting, everyone went home early.",
        "Did you remember to lock the front door?",
        "She said, \"I will be there by noon.\"",
        "Rivers carry sand, mud and small stones down to the sea.",
        "The old bridge, which was built in 1890, is closed for repairs.",
        "If it rains tomorrow, the match will be played indoors.",
        "My brother plays the guitar; my sister prefers the piano.",
        "Scientists measured the temperature every hour for three weeks.",
        "Wow, that was the best pizza I have ever eaten!",
        "The committee that approved the plan met again on Friday.",
        "Birds build nests in spring, and their chicks hatch weeks later.",
    ]


@dataclass
class HeadPatterns:
    """Head pattern statistics averaged over sentences, and each head's label."""
    stats: dict[str, np.ndarray]        # PATTERNS + "entropy" -> (L, H)
    labels: np.ndarray                  # (L, H) str, from LABELS
    sentences: list[str]
    seconds: float = 0.0

    def counts(self) -> dict[str, int]:
        """How many heads carry each label."""
        return {lab: int((self.labels == lab).sum()) for lab in LABELS}


def head_patterns_over(bundle, sentences: Sequence[str] | None = None,
                       max_length: int = 128) -> HeadPatterns:
    """Head pattern statistics averaged over a set of sentences (the probe set by default).

    The sentences run as one padded batch; each one's statistics are computed on its own
    tokens only and then averaged with equal weight.
    """
    t0 = time.perf_counter()
    sentences = list(probe_sentences() if sentences is None else sentences)
    if not sentences:
        raise InputError("no sentences to average over")
    tok = bundle.tokenizer
    max_length = min(max_length, bundle.config.max_position_embeddings)
    encs = [tok.encode(s, max_length=max_length) for s in sentences]
    ids, types, mask = _pad(encs, tok.pad_id)
    with torch.inference_mode():
        out = bundle.model.bert(ids, types, mask, output_attentions=True)
    att = torch.stack(out.attentions, 1).float().numpy()                 # (B, L, H, T, T)
    total: dict[str, np.ndarray] = {}
    for b, e in enumerate(encs):
        n = len(e.ids)
        s = head_pattern_stats(att[b, :, :, :n, :n], e.tokens)
        for k, v in s.items():
            total[k] = total.get(k, 0.0) + v / len(encs)
    return HeadPatterns(stats=total, labels=label_heads(total), sentences=sentences,
                        seconds=time.perf_counter() - t0)


# ================================================================================================
# 2. attention rollout and gradient saliency
# ================================================================================================


def attention_rollout(attentions, residual: float = 0.5, upto: int | None = None) -> np.ndarray:
    """Attention rollout (Abnar & Zuidema 2020): how much each position draws on each input token.

    Per layer the heads are averaged and the residual connection added,
    A' = (1 - residual) * mean_heads(A) + residual * I, rows renormalised to sum to 1; the
    layers are then multiplied, R = A'_L ... A'_2 A'_1. Row i of the (T, T) result is a
    distribution over input tokens for position i's final representation. `upto` stops after
    that many layers.
    """
    a = _as_attention(attentions)                                        # (L, H, T, T)
    L, _, T, _ = a.shape
    upto = L if upto is None else int(upto)
    if not 0 <= upto <= L:
        raise InputError(f"upto must be between 0 and {L}")
    eye = np.eye(T)
    rollout = eye.copy()
    for l in range(upto):
        m = (1.0 - residual) * a[l].mean(0) + residual * eye             # (T, T)
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
    position: int              # the token the prediction is read from ([MASK], or 0 = [CLS])
    target: str                # predicted token, or class label
    target_index: int          # vocabulary id, or class index
    target_prob: float
    saliency: np.ndarray       # (T,) >= 0, sums to 1
    signed: np.ndarray         # (T,)
    rollout: np.ndarray        # (T,) sums to 1
    correlation: float
    seconds: float = 0.0


def _saliency(bundle, enc, ids, types, readout, choose_target, rollout_row, position: int,
              label_of, t0: float) -> Saliency:
    """Shared part of the saliency functions.

    readout(h (1, T, C)) -> (V,) or (K,) logits; choose_target(logp) -> index explained.
    The gradient is taken with torch.autograd.grad with respect to our own copy of the
    embedding output, so no parameter's .grad is ever touched (safe on a shared model)."""
    bert_model = bundle.model.bert
    with torch.inference_mode(False), torch.enable_grad():
        with torch.no_grad():
            emb, _ = bert_model.embeddings(ids, types)                    # (1, T, C)
        x = emb.detach().clone().requires_grad_(True)
        h, _, atts = _run_layers(bert_model, x, need_weights=True)
        logp = torch.log_softmax(readout(h).float(), -1)                   # (V,) or (K,)
        target = choose_target(logp.detach())
        (grad,) = torch.autograd.grad(logp[target], x)
    xg = (x.detach() * grad)[0]                                           # (T, C)
    mag = xg.norm(dim=-1).numpy().astype(np.float64)
    sal = mag / mag.sum() if mag.sum() > 0 else mag
    signed = xg.sum(-1).numpy().astype(np.float64)
    att = np.stack([a.detach()[0].numpy() for a in atts])                 # (L, H, T, T)
    roll = rollout_row(attention_rollout(att))
    keep = [i for i, t in enumerate(enc.tokens) if t not in SPECIAL]
    if len(keep) < 2:
        keep = list(range(len(enc.tokens)))
    return Saliency(tokens=list(enc.tokens), position=position, target=label_of(target),
                    target_index=target, target_prob=float(logp[target].detach().exp()),
                    saliency=sal, signed=signed, rollout=roll,
                    correlation=spearman(sal[keep], roll[keep]), seconds=time.perf_counter() - t0)


def saliency_mlm(bundle, text: str, position: int | None = None, target: str | int | None = None,
                 text_b: str | None = None) -> Saliency:
    """Input x gradient and attention rollout for one masked-word prediction.

    position: the token to predict (default: the first [MASK]); target: the word whose
    log-probability is explained (default: the model's top prediction there).
    """
    t0 = time.perf_counter()
    _need_mlm(bundle, "masked-word saliency")
    enc, ids, types = _encode(bundle, text, text_b)
    pos = _mask_positions(enc, bundle.tokenizer, position)[0]
    mlm, tok = bundle.model.mlm, bundle.tokenizer
    tid = None if target is None else _token_id(tok, target)
    return _saliency(bundle, enc, ids, types, lambda h: mlm(h[0, pos]),
                     lambda logp: int(logp.argmax()) if tid is None else tid,
                     lambda r: r[pos], pos, tok.convert_ids_to_tokens, t0)


def saliency_classifier(bundle, text: str, class_index: int | str | None = None,
                        text_b: str | None = None) -> Saliency:
    """Input x gradient and attention rollout for a fine-tuned classifier's prediction.

    class_index: the class explained (index or label; default: the predicted class). The
    rollout row is [CLS]'s for "cls" pooling, the mean over tokens for "mean"/"max" pooling.
    """
    t0 = time.perf_counter()
    _need_classifier(bundle, "classifier saliency")
    enc, ids, types = _encode(bundle, text, text_b)
    model = bundle.model
    k = None if class_index is None else _class_index(bundle, class_index)
    row = (lambda r: r[0]) if model.pooling == "cls" else (lambda r: r.mean(0))
    return _saliency(bundle, enc, ids, types, lambda h: _classifier_logits(model, h)[0],
                     lambda logp: int(logp.argmax()) if k is None else k,
                     row, 0, lambda i: bundle.labels[i], t0)


def _token_id(tokenizer, target) -> int:
    if isinstance(target, (int, np.integer)):
        if not 0 <= int(target) < len(tokenizer.ids_to_tokens):
            raise InputError(f"token id {target} is not in the vocabulary")
        return int(target)
    t = str(target).strip()
    if t in tokenizer.vocab:
        return tokenizer.vocab[t]
    pieces = tokenizer.tokenize(t)
    if len(pieces) != 1 or pieces[0] == tokenizer.unk_token:
        raise InputError(f"{target!r} is not a single token of this vocabulary "
                         f"(it splits into {pieces})")
    return tokenizer.vocab[pieces[0]]


def _class_index(bundle, c) -> int:
    labels = bundle.labels
    if isinstance(c, str):
        if c not in labels:
            raise InputError(f"unknown class {c!r}; classes: {', '.join(labels)}")
        return labels.index(c)
    if not 0 <= int(c) < len(labels):
        raise InputError(f"class index {c} is outside 0..{len(labels) - 1}")
    return int(c)


# ================================================================================================
# 3. logit lens
# ================================================================================================


@dataclass
class LogitLens:
    """The MLM head applied to every layer's hidden state at the predicted positions.

    Layer 0 is the embedding output, layer L the final one (identical to the model's own MLM
    output). `answer_prob[p, l]` is the probability, at layer l, of the final layer's top token:
    where the answer appears.
    """
    tokens: list[str]
    positions: list[int]                 # P predicted positions
    top_ids: np.ndarray                  # (P, L+1, k)
    top_probs: np.ndarray                # (P, L+1, k)
    top_tokens: list[list[list[str]]]    # [P][L+1][k]
    answer_prob: np.ndarray              # (P, L+1)
    answer_rank: np.ndarray              # (P, L+1), 1 = top
    seconds: float = 0.0


def logit_lens(bundle, text: str, k: int = 5, positions: Sequence[int] | None = None,
               text_b: str | None = None) -> LogitLens:
    """Logit lens: decode each layer's hidden state at every [MASK] with the MLM head."""
    t0 = time.perf_counter()
    _need_mlm(bundle, "the logit lens")
    enc, ids, types = _encode(bundle, text, text_b)
    pos = _mask_positions(enc, bundle.tokenizer, positions)
    k = max(1, min(int(k), bundle.config.vocab_size))
    sel = torch.tensor(pos)
    with torch.inference_mode():
        out = bundle.model.bert(ids, types, output_hidden_states=True)
        # one head call per layer on exactly the rows the model's forward(mlm_positions=...)
        # uses, so the last layer reproduces the model's output bit for bit
        probs = torch.stack([torch.softmax(bundle.model.mlm(h[0][sel]).float(), -1)
                             for h in out.hidden_states], 1)                  # (P, L+1, V)
    top_p, top_i = probs.topk(k, -1)                                          # (P, L+1, k)
    answer = top_i[:, -1, 0]                                                  # (P,)
    ans_p = probs.gather(-1, answer[:, None, None].expand(-1, probs.shape[1], 1))[..., 0]
    ans_rank = (probs > ans_p[..., None]).sum(-1) + 1                         # (P, L+1)
    conv = bundle.tokenizer.convert_ids_to_tokens
    return LogitLens(tokens=list(enc.tokens), positions=pos, top_ids=top_i.numpy(),
                     top_probs=top_p.numpy().astype(np.float64),
                     top_tokens=[[conv(r.tolist()) for r in per] for per in top_i],
                     answer_prob=ans_p.numpy().astype(np.float64), answer_rank=ans_rank.numpy(),
                     seconds=time.perf_counter() - t0)


# ================================================================================================
# 4. head ablation
# ================================================================================================


@dataclass
class MLMPredictions:
    """Top-k masked-word predictions at each predicted position."""
    tokens: list[str]
    positions: list[int]              # P
    top_ids: np.ndarray               # (P, k)
    top_probs: np.ndarray             # (P, k)
    top_tokens: list[list[str]]       # [P][k]


def mlm_topk(bundle, text: str, k: int = 5, head_mask=None, positions: Sequence[int] | None = None,
             text_b: str | None = None) -> MLMPredictions:
    """The model's top-k words at each [MASK] (optionally with some heads switched off)."""
    _need_mlm(bundle, "masked-word prediction")
    enc, ids, types = _encode(bundle, text, text_b)
    pos = _mask_positions(enc, bundle.tokenizer, positions)
    hm = None if head_mask is None else _as_head_mask(bundle, head_mask)
    where = torch.zeros_like(ids, dtype=torch.bool)
    where[0, pos] = True
    with torch.inference_mode():
        out = bundle.model(ids, types, mlm_positions=where, head_mask=hm)
        top_p, top_i = torch.softmax(out.mlm_logits.float(), -1).topk(
            max(1, min(int(k), bundle.config.vocab_size)), -1)              # (P, k)
    conv = bundle.tokenizer.convert_ids_to_tokens
    return MLMPredictions(tokens=list(enc.tokens), positions=sorted(pos), top_ids=top_i.numpy(),
                          top_probs=top_p.numpy().astype(np.float64),
                          top_tokens=[conv(r.tolist()) for r in top_i])


def ablate(bundle, text: str, head_mask, k: int = 5, text_b: str | None = None) -> MLMPredictions:
    """Masked-word predictions with heads switched off: head_mask (L, H), 0 = off, 1 = on.

    A switched-off head's output is zeroed before the attention output projection, so only
    the other heads (and the residual connection) carry information through that layer."""
    return mlm_topk(bundle, text, k=k, head_mask=head_mask, text_b=text_b)


def classifier_probs(bundle, text: str, head_mask=None, text_b: str | None = None) -> np.ndarray:
    """(K,) class probabilities of a fine-tuned classifier (optionally with heads switched off)."""
    _need_classifier(bundle, "class probabilities")
    _, ids, types = _encode(bundle, text, text_b)
    hm = None if head_mask is None else _as_head_mask(bundle, head_mask)
    with torch.inference_mode():
        out = bundle.model(ids, types, head_mask=hm)
    return torch.softmax(out.logits.float(), -1)[0].numpy().astype(np.float64)


def ablate_classifier(bundle, text: str, head_mask, text_b: str | None = None) -> np.ndarray:
    """Class probabilities (K,) with heads switched off: head_mask (L, H), 0 = off, 1 = on."""
    return classifier_probs(bundle, text, head_mask=head_mask, text_b=text_b)


@dataclass
class HeadImportance:
    """Effect of switching each head off alone, on one prediction.

    scores[l, h] = baseline - value with head (l, h) off: positive means the head helps the
    prediction. For an MLM the value is the log-probability of the target word at the
    position; for a classifier it is the probability of the target class.
    """
    scores: np.ndarray          # (L, H)
    ablated: np.ndarray         # (L, H) the value with that head off
    baseline: float             # the value with every head on
    kind: str                   # "mlm" or "classifier"
    target: str                 # word or class label
    position: int               # token the prediction is read from
    unit: str                   # "log-probability" or "probability"
    seconds: float = 0.0

    def ranking(self, n: int | None = None) -> list[tuple[int, int, float]]:
        """(layer, head, score), most important first."""
        flat = np.argsort(-self.scores, axis=None, kind="stable")
        L, H = self.scores.shape
        out = [(int(i // H), int(i % H), float(self.scores.flat[i])) for i in flat]
        return out if n is None else out[:n]


def head_importance(bundle, text: str, target: str | int | None = None,
                    position: int | None = None, text_b: str | None = None) -> HeadImportance:
    """Rank heads by how much the prediction drops when each one alone is switched off.

    MLM models: the log-probability of `target` (default: the top prediction) at `position`
    (default: the first [MASK]). Classifiers: the probability of class `target` (default: the
    predicted class). L x H ablations, computed layer by layer: the layers below the ablated one
    are shared with the unablated run, and the H variants of one layer run as one batch
    through the layers above.
    """
    t0 = time.perf_counter()
    model = bundle.model
    bert_model = model.bert
    enc, ids, types = _encode(bundle, text, text_b)
    L, H = bundle.config.num_hidden_layers, bundle.config.num_attention_heads
    if bundle.has_mlm:
        pos = _mask_positions(enc, bundle.tokenizer, position)[0]

        def value(h):                                                     # (B, T, C) -> (B, V)
            return torch.log_softmax(model.mlm(h[:, pos]).float(), -1)
        kind, unit = "mlm", "log-probability"
    else:
        pos = 0

        def value(h):
            return torch.softmax(_classifier_logits(model, h).float(), -1)
        kind, unit = "classifier", "probability"
    ablated = np.zeros((L, H))
    with torch.inference_mode():
        x, _ = bert_model.embeddings(ids, types)                          # (1, T, C)
        final, states, _ = _run_layers(bert_model, x)
        inputs = [x] + states[:-1]                                         # input of each layer
        base = value(final)[0]
        if target is None:
            tgt = int(base.argmax())
        else:
            tgt = _token_id(bundle.tokenizer, target) if kind == "mlm" else _class_index(bundle, target)
        for l in range(L):
            outs = []
            for h in range(H):
                hm = torch.ones(H)
                hm[h] = 0.0
                y, _, _ = bert_model.layers[l](inputs[l], None, False, hm)
                outs.append(y)
            y = torch.cat(outs)                                            # (H, T, C)
            y, _, _ = _run_layers(bert_model, y, range(l + 1, L))
            ablated[l] = value(y)[:, tgt].numpy()
    baseline = float(base[tgt])
    label = (bundle.tokenizer.convert_ids_to_tokens(tgt) if kind == "mlm" else bundle.labels[tgt])
    return HeadImportance(scores=baseline - ablated, ablated=ablated, baseline=baseline, kind=kind,
                          target=label, position=pos, unit=unit, seconds=time.perf_counter() - t0)


# ================================================================================================
# 6. two models side by side
# ================================================================================================


def attentions_of(bundle, text: str, text_b: str | None = None) -> tuple[list[str], np.ndarray]:
    """(tokens, (L, H, T, T) attention probabilities) of one input."""
    enc, ids, types = _encode(bundle, text, text_b)
    with torch.inference_mode():
        out = bundle.model.bert(ids, types, output_attentions=True)
    return list(enc.tokens), torch.stack(out.attentions, 1)[0].float().numpy()


@dataclass
class AttentionDiff:
    """a - b for two attention maps of the same shape, and how far each head moved.

    moved[l, h]: total variation between the two heads' rows, averaged over query tokens,
    i.e. the fraction of attention that goes somewhere else in b (0 = same, 1 = disjoint).
    """
    diff: np.ndarray            # (L, H, T, T) or the shape given
    moved: np.ndarray           # (L, H)
    max_abs: float


def compare_attention(att_a, att_b, tokens_a: Sequence[str] | None = None,
                      tokens_b: Sequence[str] | None = None) -> AttentionDiff:
    """Difference of two models' attention on the same input (same layers, heads and tokens).

    Raises InputError when the layer or head counts differ, or when the two tokenizers split
    the input differently (then the maps are not position-by-position comparable)."""
    a, b = _as_attention(att_a), _as_attention(att_b)
    if a.shape[:2] != b.shape[:2]:
        raise InputError(f"the models have different shapes: {a.shape[0]} layers x {a.shape[1]} heads "
                         f"vs {b.shape[0]} x {b.shape[1]}; compare a layer and head that both have, "
                         f"one map at a time")
    if tokens_a is not None and tokens_b is not None and list(tokens_a) != list(tokens_b):
        raise InputError("the two models split the text into different tokens (different "
                         "vocabularies), so their attention maps cannot be subtracted; view them "
                         "side by side instead")
    if a.shape != b.shape:
        raise InputError(f"the attention maps cover different numbers of tokens "
                         f"({a.shape[-1]} vs {b.shape[-1]}): the tokenizers differ")
    d = a - b
    moved = 0.5 * np.abs(d).sum(-1).mean(-1)
    return AttentionDiff(diff=d, moved=moved, max_abs=float(np.abs(d).max()) if d.size else 0.0)


@dataclass
class ModelOutputs:
    """One model's answer to an input: MLM predictions or class probabilities."""
    name: str
    tokens: list[str]
    kind: str                                  # "mlm" or "classifier"
    mlm: MLMPredictions | None = None
    probs: np.ndarray | None = None            # (K,)
    labels: list[str] = field(default_factory=list)


@dataclass
class SideBySide:
    a: ModelOutputs
    b: ModelOutputs
    same_tokens: bool           # both tokenizers gave the same tokens


def _outputs(bundle, text: str, k: int, text_b: str | None) -> ModelOutputs:
    if bundle.is_classifier:
        enc, _, _ = _encode(bundle, text, text_b)
        return ModelOutputs(name=bundle.name, tokens=list(enc.tokens), kind="classifier",
                            probs=classifier_probs(bundle, text, text_b=text_b),
                            labels=list(bundle.labels))
    m = mlm_topk(bundle, text, k=k, text_b=text_b)
    return ModelOutputs(name=bundle.name, tokens=m.tokens, kind="mlm", mlm=m)


def compare_outputs(bundle_a, bundle_b, text: str, k: int = 5,
                    text_b: str | None = None) -> SideBySide:
    """Each model's own output on the same text: MLM top-k at each [MASK], or class probabilities.

    Each model uses its own tokenizer, so models with different vocabularies are compared on
    their own tokens (see `same_tokens`)."""
    a = _outputs(bundle_a, text, k, text_b)
    b = _outputs(bundle_b, text, k, text_b)
    return SideBySide(a=a, b=b, same_tokens=a.tokens == b.tokens)


# ================================================================================================
# 7. contextual embedding map
# ================================================================================================


def find_word(tokenizer, sentence: str, word: str, max_length: int = 512) -> int:
    """Index of the first word piece of the first occurrence of `word` in `sentence`'s encoding.

    Matching is on whole words after the tokenizer's normalisation (lower-casing for an uncased
    model): "bank" matches "Bank" but not "banks"."""
    target = tokenizer.basic.tokenize(word)
    if len(target) != 1:
        raise InputError(f"{word!r} must be a single word (it splits into {target})")
    words = [w for w, _ in tokenizer.words_with_offsets(sentence)]
    if target[0] not in words:
        raise InputError(f"the word {word!r} is not in the sentence {sentence!r}")
    w = words.index(target[0])
    enc = tokenizer.encode(sentence, max_length=max_length)
    for i, (wid, seq) in enumerate(zip(enc.word_ids, enc.sequence_ids)):
        if wid == w and seq == 0:
            return i
    raise InputError(f"the word {word!r} falls beyond the model's {max_length} tokens in {sentence!r}")


WORD_BATCH = 8      # sentences per forward pass in word_vectors_by_layer


def word_vectors_by_layer(bundle, sentences: Sequence[str], word: str,
                          batch_size: int = WORD_BATCH) -> np.ndarray:
    """(L+1, N, C): the hidden state of `word` (its first piece) in each sentence, per layer.

    Layer 0 is the embedding output, where the vectors differ only by position and segment;
    deeper layers mix in the context. Raises InputError if a sentence lacks the word (before
    any model run). The sentences run `batch_size` at a time, and only the word's vectors of
    each batch are kept: memory is that of one batch's hidden states, whatever N is."""
    sentences = list(sentences)
    if len(sentences) < 2:
        raise InputError("give at least two sentences that contain the word")
    tok = bundle.tokenizer
    P = bundle.config.max_position_embeddings
    positions = [find_word(tok, s, word, P) for s in sentences]
    parts = []
    for i in range(0, len(sentences), max(1, batch_size)):
        encs = [tok.encode(s, max_length=P) for s in sentences[i:i + batch_size]]
        ids, types, mask = _pad(encs, tok.pad_id)
        with torch.inference_mode():
            out = bundle.model.bert(ids, types, mask, output_hidden_states=True)
        idx = torch.tensor(positions[i:i + batch_size])
        parts.append(torch.stack([h[torch.arange(len(encs)), idx] for h in out.hidden_states]))  # (L+1, B, C)
        del out
    return torch.cat(parts, 1).float().numpy()                            # (L+1, N, C)


def pca_2d(vectors) -> np.ndarray:
    """(N, C) -> (N, 2): the two directions along which the vectors vary most (PCA).

    Signs are fixed (each axis's largest coordinate is positive) so plots do not flip at random."""
    x = np.asarray(vectors, dtype=np.float64)
    if x.ndim != 2:
        raise InputError(f"pca_2d needs (N, C) vectors, got shape {x.shape}")
    x = x - x.mean(0, keepdims=True)
    if x.shape[0] < 2:
        return np.zeros((x.shape[0], 2))
    u, s, _ = np.linalg.svd(x, full_matrices=False)
    pc = u[:, :2] * s[:2]                                                 # (N, <=2)
    for j in range(pc.shape[1]):
        i = np.argmax(np.abs(pc[:, j]))
        if pc[i, j] < 0:
            pc[:, j] = -pc[:, j]
    if pc.shape[1] < 2:
        pc = np.pad(pc, ((0, 0), (0, 2 - pc.shape[1])))
    return pc


def pca_by_layer(vectors) -> np.ndarray:
    """(L+1, N, C) -> (L+1, N, 2): pca_2d of each layer separately."""
    v = np.asarray(vectors)
    return np.stack([pca_2d(layer) for layer in v])


def separation(vectors, labels: Sequence) -> np.ndarray | float:
    """How well the vectors separate into the labelled groups (senses): mean silhouette.

    For each vector, a = mean cosine distance to its own group, b = mean distance to the
    nearest other group, s = (b - a) / max(a, b); the score is the mean s, from -1 (mixed up)
    through 0 (overlapping) to 1 (tight, well-apart groups). A vector alone in its group scores 0.
    vectors (N, C) -> float, or (L+1, N, C) -> (L+1,) one score per layer.
    """
    v = np.asarray(vectors, dtype=np.float64)
    if v.ndim == 3:
        return np.array([separation(layer, labels) for layer in v])
    labels = np.asarray(list(labels))
    if v.ndim != 2 or len(labels) != v.shape[0]:
        raise InputError(f"need one label per vector: {len(labels)} labels for shape {v.shape}")
    groups = np.unique(labels)
    if len(groups) < 2:
        raise InputError("separation needs at least two different labels (senses)")
    u = v / np.clip(np.linalg.norm(v, axis=1, keepdims=True), 1e-12, None)
    d = 1.0 - u @ u.T                                                     # (N, N) cosine distance
    s = np.zeros(len(v))
    for i in range(len(v)):
        own = labels == labels[i]
        if own.sum() < 2:
            continue
        a = d[i, own].sum() / (own.sum() - 1)                            # self-distance is 0
        b = min(d[i, labels == g].mean() for g in groups if g != labels[i])
        m = max(a, b)
        s[i] = (b - a) / m if m > 0 else 0.0
    return float(s.mean())


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
