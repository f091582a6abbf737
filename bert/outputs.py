"""Dataclasses returned by the models' forward passes.

Dimension letters: B batch, T tokens, C hidden size, H heads, D head size, V vocabulary,
L layers, N masked positions.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass
class EmbeddingParts:
    """The pieces the embedding layer adds up, each (B, T, C)."""

    token: Tensor
    segment: Tensor
    position: Tensor
    sum: Tensor
    normed: Tensor  # after LayerNorm (before dropout): the encoder's input


@dataclass
class BertOutput:
    last_hidden_state: Tensor  # (B, T, C)
    pooler_output: Tensor | None = None  # (B, C)
    hidden_states: tuple[Tensor, ...] | None = None  # L+1 x (B, T, C); [0] = embedding output
    attentions: tuple[Tensor, ...] | None = None  # L x (B, H, T, T) softmax probabilities
    embedding_parts: EmbeddingParts | None = None
    queries: tuple[Tensor, ...] | None = None  # L x (B, H, T, D)
    keys: tuple[Tensor, ...] | None = None  # L x (B, H, T, D)
    values: tuple[Tensor, ...] | None = None  # L x (B, H, T, D)


@dataclass
class PartRun:
    """What BertModel.run gives: the state where the run stopped and the sites it recorded."""

    state: Tensor  # (B, T, C): the residual state leaving layer stop - 1 (entering layer stop)
    cache: dict[str, list[Tensor]]  # site -> one value a layer, the i-th of layer start + i


class _ReadsEncoder:
    """What every model's output reads from its encoder's run (`bert`, a BertOutput)."""

    bert: BertOutput

    @property
    def hidden_states(self):
        return self.bert.hidden_states

    @property
    def attentions(self):
        return self.bert.attentions


@dataclass
class PreTrainingOutput(_ReadsEncoder):
    mlm_logits: Tensor  # (B, T, V), or (N, V) at `mlm_positions` only when labels/positions given
    nsp_logits: Tensor  # (B, 2); index 0 = IsNext
    bert: BertOutput
    loss: Tensor | None = None
    mlm_loss: Tensor | None = None
    nsp_loss: Tensor | None = None
    mlm_positions: Tensor | None = None  # (N, 2) rows of (batch index, token index) when masked-only
    replaced_logits: Tensor | None = None  # (B, T): ELECTRA's discriminator, logit of "this token was replaced"


@dataclass
class LabelOutput(_ReadsEncoder):
    """Scores over config.id2label's labels, per sentence or per token (the subclasses)."""

    logits: Tensor  # (..., K)
    bert: BertOutput
    loss: Tensor | None = None

    @property
    def probs(self) -> Tensor:
        return torch.softmax(self.logits, dim=-1)


@dataclass
class ClassifierOutput(LabelOutput):
    """logits (B, K): one score per class for each input."""


@dataclass
class TokenClassifierOutput(LabelOutput):
    """logits (B, T, K): one score per tag on every token."""


@dataclass
class SpanOutput(_ReadsEncoder):
    start_logits: Tensor  # (B, T): how much each token looks like the answer's first token
    end_logits: Tensor  # (B, T): ... its last token
    bert: BertOutput
    loss: Tensor | None = None
