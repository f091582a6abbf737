"""The embeddings of BERT and its family: a token's starting vector is word + segment (token type) +
learned absolute position, then LayerNorm and dropout (bert/model.py runs the layers on it).

Dimension letters as in bert/model.py; E the embeddings' width (config.embedding_width), C hidden size.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .config import BertConfig
from .dropout import Dropout
from .family import member
from .outputs import EmbeddingParts


class Embeddings(nn.Module):
    """word + segment (token type) + learned absolute position, then LayerNorm and dropout.

    Family: DistilBERT has no segment table (its segment part is zero); ELECTRA's and ALBERT's
    tables may be E wide, narrower than C, and a projection E -> C follows (ELECTRA's
    `embeddings_project` when E != C; ALBERT's `embedding_hidden_mapping_in` always); RoBERTa's
    real tokens take position rows pad + 1, pad + 2, ... and padding takes row pad."""

    def __init__(self, config: BertConfig):
        super().__init__()
        E, C = config.embedding_width, config.hidden_size
        self.word_embeddings = nn.Embedding(config.vocab_size, E, padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, E)
        types = config.type_vocab_size
        self.token_type_embeddings = nn.Embedding(types, E) if types else None
        self.layer_norm = nn.LayerNorm(E, eps=config.layer_norm_eps)
        self.dropout = Dropout(config.hidden_dropout_prob)
        kin = member(config)
        self.project = nn.Linear(E, C) if E != C or kin.embedding_projection else None
        self.roberta_pad = config.pad_token_id if kin.position_offset_from_pad else None

    def positions(self, input_ids: Tensor) -> Tensor:
        """The position rows of input_ids: (1, T, E), or RoBERTa's (B, T, E) counted past padding."""
        T = input_ids.shape[1]
        if self.roberta_pad is None:
            return self.position_embeddings.weight[:T].unsqueeze(0)  # (1, T, E): rows 0..T-1
        real = input_ids.ne(self.roberta_pad).long()  # (B, T)
        return self.position_embeddings(torch.cumsum(real, dim=1) * real + self.roberta_pad)  # (B, T, E)

    def forward(self, input_ids: Tensor, token_type_ids: Tensor, return_parts: bool = False):
        token = self.word_embeddings(input_ids)  # (B, T, E)
        if self.token_type_embeddings is not None:
            segment = self.token_type_embeddings(token_type_ids)  # (B, T, E)
        else:
            segment = torch.zeros_like(token)  # DistilBERT: no segments
        position = self.positions(input_ids)
        total = token + segment + position
        normed = self.layer_norm(total)
        parts = None
        if return_parts:
            parts = EmbeddingParts(
                token=token, segment=segment, position=position.expand_as(token), sum=total, normed=normed
            )
        x = self.dropout(normed)
        return (self.project(x) if self.project is not None else x), parts  # (B, T, C)
