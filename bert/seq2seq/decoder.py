"""The decoder of an encoder-decoder: BERT's embeddings, then N decoder layers and a language-model
head tied to the decoder's own word embeddings (transformers' BertLMHeadModel with
`add_cross_attention`, under our names).

A decoder layer is BERT's post-LayerNorm block with a cross-attention between its two halves:

    x = LN(x + self_attn(x, causal mask))          position t sees positions <= t only
    x = LN(x + cross_attn(x, encoder's last layer))  every decoder position sees every source token
    x = LN(x + ffn(x))

Dimension letters as in bert/model.py; S the source (encoder) length, T the decoder length.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from ..config import BertConfig
from ..embeddings import Embeddings
from ..encoder_layer import EncoderLayer, SelfAttention
from ..model import MLMHead


class CrossAttention(nn.Module):
    """Multi-head attention whose queries come from the decoder and keys/values from the encoder's
    last layer: q (C -> C), a fused k/v projection (C -> 2C, rows [key; value]), out (C -> C)."""

    attend = SelfAttention.attend  # the same softmax(q k^T / sqrt(D) + mask) v, explicit or fused

    def __init__(self, config: BertConfig):
        super().__init__()
        C = config.hidden_size
        self.num_heads = config.num_attention_heads
        self.head_size = config.head_size
        self.q = nn.Linear(C, C)
        self.kv = nn.Linear(C, 2 * C)
        self.out = nn.Linear(C, C)
        self.dropout_p = config.attention_probs_dropout_prob

    def forward(self, x: Tensor, memory: Tensor, mask: Tensor | None, need_weights: bool = False):
        B, T, C = x.shape
        S = memory.shape[1]
        H, D = self.num_heads, self.head_size
        q = self.q(x).view(B, T, H, D).transpose(1, 2)  # (B, H, T, D)
        k, v = self.kv(memory).view(B, S, 2, H, D).permute(2, 0, 3, 1, 4).unbind(0)  # (B, H, S, D) each
        ctx, probs = self.attend(q, k, v, mask, need_weights)  # (B, H, T, D), probs (B, H, T, S)
        return self.out(ctx.transpose(1, 2).reshape(B, T, C)), probs


class DecoderLayer(EncoderLayer):
    """Masked self-attention, cross-attention, feed-forward; each added back and LayerNormed.
    An EncoderLayer (its self-attention and feed-forward, under its names, so an encoder layer's
    state dict loads into it as it is) with a cross-attention block between its two halves."""

    def __init__(self, config: BertConfig):
        super().__init__(config)
        self.cross = CrossAttention(config)
        self.cross_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, x: Tensor, self_mask: Tensor, memory: Tensor, memory_mask: Tensor | None, need_weights=False):
        a, self_probs, _ = self.attn(x, self_mask, need_weights)
        x = self.attn_norm(x + self.dropout(a))  # (B, T, C)
        c, cross_probs = self.cross(x, memory, memory_mask, need_weights)
        x = self.cross_norm(x + self.dropout(c))
        h = self.ffn_out(self.act(self.ffn_in(x)))
        x = self.ffn_norm(x + self.dropout(h))
        return x, self_probs, cross_probs


class Decoder(nn.Module):
    """Embeddings (word + segment 0 + position 0..T-1), N decoder layers, and the LM head whose
    output matrix is the decoder's word embeddings (tied, as BERT's MLM head)."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        self.embeddings = Embeddings(config)
        self.layers = nn.ModuleList(DecoderLayer(config) for _ in range(config.num_hidden_layers))
        self.lm = MLMHead(config, self.embeddings.word_embeddings)

    def forward(
        self,
        input_ids: Tensor,
        memory: Tensor,
        memory_mask: Tensor | None,
        attention_mask: Tensor | None = None,
        output_attentions: bool = False,
    ) -> tuple[Tensor, tuple[Tensor, ...] | None, tuple[Tensor, ...] | None]:
        """input_ids (B, T); memory (B, S, C) the encoder's last layer; memory_mask the additive
        (B, 1, 1, S) mask over source padding (None: none). attention_mask (B, T) of 1/0 over the
        decoder's own padding. Returns logits (B, T, V) and, when asked, each layer's
        self-attention (B, H, T, T) and cross-attention (B, H, T, S)."""
        B, T = input_ids.shape
        x, _ = self.embeddings(input_ids, torch.zeros_like(input_ids))
        mask = causal_mask(T, x.dtype, x.device)  # (1, 1, T, T)
        if attention_mask is not None and not bool(attention_mask.all()):
            pad = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
            mask = (mask + pad).clamp(min=torch.finfo(x.dtype).min)  # (B, 1, T, T)
        selfs, crosses = ([], []) if output_attentions else (None, None)
        for layer in self.layers:
            x, sp, cp = layer(x, mask, memory, memory_mask, output_attentions)
            if output_attentions:
                selfs.append(sp)
                crosses.append(cp)
        logits = self.lm(x)  # (B, T, V)
        return logits, (tuple(selfs) if selfs is not None else None), (tuple(crosses) if crosses is not None else None)


def causal_mask(T: int, dtype: torch.dtype, device=None) -> Tensor:
    """(1, 1, T, T) additive mask: 0 where key <= query, the dtype's minimum above the diagonal."""
    upper = torch.ones(T, T, dtype=torch.bool, device=device).triu(1)
    return torch.zeros(T, T, dtype=dtype, device=device).masked_fill(upper, torch.finfo(dtype).min)[None, None]
