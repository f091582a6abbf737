"""The full analysis a page draws: ONE forward pass per input with everything the pages show
(attentions, hidden states, embedding parts, queries/keys/values), as read-only float32 numpy
arrays; and the model's learned position table.

Dimension letters: L layers, H heads, T tokens, C hidden size, D head size, P positions,
S segment types.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch

from ..attention_masks import BIDIRECTIONAL, MaskKind, check_mask_kind
from .common import encode, readonly
from .vectors import cosine_matrix, pca_plane

PARTS = ("token", "segment", "position", "sum", "normed")
# The encoding's per-token lists that an Analysis keeps (copied, under the same names).
TOKEN_LISTS = ("tokens", "ids", "type_ids", "offsets", "word_ids", "sequence_ids")


@dataclass(frozen=True)
class Analysis:
    """Everything one forward pass gives the pages, for one input. Arrays are read-only.

    Shapes: attentions (L, H, T, T); hidden (L+1, T, C), [0] = embedding output;
    parts[name] (T, C) for token/segment/position/sum/normed; queries/keys/values (L, H, T, D).
    """

    tokens: list[str]
    ids: list[int]
    type_ids: list[int]
    offsets: list[tuple[int, int]]
    word_ids: list[int | None]
    sequence_ids: list[int | None]
    text_a: str
    text_b: str | None
    truncated: bool
    num_truncated: int
    max_length: int
    attentions: np.ndarray
    hidden: np.ndarray
    parts: dict[str, np.ndarray]
    queries: np.ndarray
    keys: np.ndarray
    values: np.ndarray
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)
    mask_kind: MaskKind = BIDIRECTIONAL  # bert/attention_masks.py: what each token was allowed to read

    @property
    def n_tokens(self) -> int:
        return len(self.tokens)


def analysis_bytes(config, n_tokens: int) -> int:
    """What analyze() of n_tokens holds at its peak: the result, one layer's scores and
    probabilities (float32), and the per-layer queries/keys/values before they are stacked."""
    L, H, C, T = config.num_hidden_layers, config.num_attention_heads, config.hidden_size, n_tokens
    kept = (L * H * T * T + (3 * L + L + 1 + len(PARTS)) * T * C) * 4  # float32
    working = 2 * H * T * T * 4 + 3 * L * T * C * 4
    return kept + working


def _stack(per_layer) -> np.ndarray:
    """L tensors (1, ...) -> read-only (L, ...)."""
    return readonly(torch.stack([x[0] for x in per_layer]))


def analyze(bundle, text_a: str, text_b: str | None = None, mask_kind: MaskKind = BIDIRECTIONAL) -> Analysis:
    """Run the model once on (text_a, text_b) under `mask_kind` (bert/attention_masks.py; a
    prefix longer than the input's tokens is an InputError) and keep everything the pages draw.
    Under a causal or prefix mask, every hidden cell's attention is exactly 0.

    Each layer's attention is copied into one (L, H, T, T) array as soon as it is computed, so the
    attentions are held once, never as a list of layers and then their stack."""
    t0 = time.perf_counter()
    enc = encode(bundle, text_a, text_b)
    ids = torch.tensor([enc.ids], dtype=torch.long)  # (1, T)
    types = torch.tensor([enc.type_ids], dtype=torch.long)  # (1, T)
    cfg = bundle.config
    T = len(enc.ids)
    check_mask_kind(mask_kind, T)  # before the (L, H, T, T) array is made
    attentions = np.empty((cfg.num_hidden_layers, cfg.num_attention_heads, T, T), dtype=np.float32)
    into = torch.from_numpy(attentions)  # the same memory

    def keep(layer: int, probs: torch.Tensor) -> None:
        into[layer].copy_(probs[0])

    with torch.inference_mode():
        out = bundle.model.bert(
            ids,
            token_type_ids=types,
            output_hidden_states=True,
            output_embedding_parts=True,
            output_qkv=True,
            on_attention=keep,
            mask_kind=mask_kind,
        )
    attentions.setflags(write=False)
    p = out.embedding_parts
    return Analysis(
        **{name: list(getattr(enc, name)) for name in TOKEN_LISTS},
        text_a=text_a,
        text_b=text_b,
        truncated=enc.truncated,
        num_truncated=enc.num_truncated,
        max_length=int(bundle.config.max_tokens),
        attentions=attentions,  # (L, H, T, T)
        hidden=_stack(out.hidden_states),  # (L+1, T, C)
        parts={name: readonly(getattr(p, name)[0]) for name in PARTS},  # (T, C) each
        queries=_stack(out.queries),  # (L, H, T, D)
        keys=_stack(out.keys),
        values=_stack(out.values),
        seconds=time.perf_counter() - t0,
        mask_kind=mask_kind,
    )


@dataclass(frozen=True)
class PositionTable:
    """The learned position table seen whole: its 2-D PCA and the cosine of every pair."""

    coords: np.ndarray  # (P, 2)
    ratio: np.ndarray  # (2,) share of the variance along each axis
    sim: np.ndarray  # (P, P) cosine similarity between positions
    norms: np.ndarray  # (P,) length of each position's vector
    segments: np.ndarray  # (S, E) the segment (token type) vectors; S = 0 for a DistilBERT

    @property
    def P(self) -> int:
        return int(self.coords.shape[0])


def position_table(bundle) -> PositionTable:
    """The position embeddings of the model (all of them, not only an input's)."""
    emb = bundle.model.bert.embeddings
    w = emb.position_embeddings.weight.detach().float().cpu().numpy()  # (P, C)
    plane = pca_plane(w)
    return PositionTable(
        coords=plane.coords,
        ratio=plane.ratio,
        sim=cosine_matrix(w),
        norms=np.linalg.norm(w, axis=1),
        segments=(
            emb.token_type_embeddings.weight.detach().float().cpu().numpy()
            if emb.token_type_embeddings is not None
            else np.zeros((0, w.shape[1]), dtype=np.float32)  # DistilBERT: no segment table
        ),
    )
