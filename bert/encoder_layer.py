"""One encoder layer of BERT in plain PyTorch: multi-head self-attention with a fused Q/K/V
projection, then the feed-forward block, each with its residual add and post-LayerNorm; and the
activation functions the family uses. bert/model.py stacks these layers into BertModel.

Dimension letters as in bert/model.py: B batch size, T sequence length, C hidden size,
H attention heads, D head size (C / H), F feed-forward size, Q rows run.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .config import BertConfig
from .dropout import Dropout, dropout

ACTIVATIONS = {
    "gelu": lambda x: F.gelu(x),  # exact (erf) GELU, as in BERT
    "gelu_new": lambda x: F.gelu(x, approximate="tanh"),
    "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "relu": F.relu,
    "silu": F.silu,
    "swish": F.silu,
    "tanh": torch.tanh,
}


class SelfAttention(nn.Module):
    """Multi-head self-attention with a fused Q/K/V projection and two paths:

    - `need_weights=True`: explicit softmax(q k^T / sqrt(D) + mask), returns the probabilities;
    - otherwise `scaled_dot_product_attention` (fused kernel, no (T, T) tensor kept).
    """

    def __init__(self, config: BertConfig):
        super().__init__()
        C = config.hidden_size
        self.num_heads = config.num_attention_heads
        self.head_size = config.head_size
        self.qkv = nn.Linear(C, 3 * C)  # rows: [query; key; value]
        self.out = nn.Linear(C, C)
        self.dropout_p = config.attention_probs_dropout_prob

    def attend(
        self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, need_weights: bool = False
    ) -> tuple[Tensor, Tensor | None]:
        """softmax(q k^T / sqrt(D) + mask) v, and the probabilities if asked for. Training with
        dropout also takes the explicit path: our dropout (bert/dropout.py) on the probabilities
        costs less than SDPA's on a CPU. So does a bf16 forward on a CPU that gradients will go
        back through: SDPA's CPU kernel is slower backward in bf16 than the two matmuls and
        softmax here (its fp32 kernel and its forward alone are not)."""
        dropout_p = self.dropout_p if self.training else 0.0
        bf16_backward = q.dtype == torch.bfloat16 and q.device.type == "cpu" and q.requires_grad
        if not (need_weights or dropout_p > 0 or bf16_backward):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask), None
        scores = torch.matmul(q, k.transpose(-1, -2))  # (B, H, Tq, T)
        scores.mul_(1.0 / math.sqrt(q.shape[-1]))  # in place: matmul's backward needs q, k only
        if mask is not None:
            scores.add_(mask)
        probs = torch.softmax(scores, dim=-1)
        ctx = torch.matmul(dropout(probs, dropout_p, self.training), v)  # (B, H, Tq, D)
        return ctx, (probs if need_weights else None)

    def forward(
        self, x: Tensor, mask: Tensor | None, need_weights: bool = False, head_mask: Tensor | None = None, edit=None
    ):
        B, T, C = x.shape
        H, D = self.num_heads, self.head_size
        qkv = self.qkv(x).view(B, T, 3, H, D).permute(2, 0, 3, 1, 4)  # (3, B, H, T, D)
        # unbind, not qkv[0], qkv[1], qkv[2]: backward then stacks the three gradients into one
        # buffer instead of zero-filling a full (3, B, H, T, D) tensor for each of them
        q, k, v = qkv.unbind(0)  # (B, H, T, D) each
        ctx, probs = self.attend(q, k, v, mask, need_weights)  # (B, H, T, D)
        if head_mask is not None:
            ctx = ctx * head_mask.view(1, H, 1, 1).to(ctx.dtype)  # switch heads off
        if edit is not None:
            ctx = edit("heads", ctx)  # (B, H, T, D): each head's output before the projection
        ctx = ctx.transpose(1, 2).reshape(B, T, C)  # (B, T, C)
        return self.out(ctx), probs, (q, k, v)


class EncoderLayer(nn.Module):
    """Post-LayerNorm transformer block as in BERT: x = LN(x + attn(x)); x = LN(x + ffn(x))."""

    def __init__(self, config: BertConfig):
        super().__init__()
        C, Fs = config.hidden_size, config.intermediate_size
        self.attn = SelfAttention(config)
        self.attn_norm = nn.LayerNorm(C, eps=config.layer_norm_eps)
        self.ffn_in = nn.Linear(C, Fs)
        self.ffn_out = nn.Linear(Fs, C)
        self.ffn_norm = nn.LayerNorm(C, eps=config.layer_norm_eps)
        self.act = ACTIVATIONS[config.hidden_act]
        self.dropout = Dropout(config.hidden_dropout_prob)

    def forward(
        self, x: Tensor, mask: Tensor | None, need_weights: bool = False, head_mask: Tensor | None = None, edit=None
    ):
        """edit(site, value) -> value: sees (and may replace) each sub-layer's output, for an
        intervention without hooks (one call's own, so thread-safe): "heads" (B, H, T, D) before
        the output projection, "attention" and "ffn" (B, T, C) before their residual add."""
        a, probs, qkv = self.attn(x, mask, need_weights, head_mask, edit)
        if edit is not None:
            a = edit("attention", a)
        x = self.attn_norm(x + self.dropout(a))
        h = self.ffn_out(self.act(self.ffn_in(x)))  # (B, T, C)
        if edit is not None:
            h = edit("ffn", h)
        x = self.ffn_norm(x + self.dropout(h))
        return x, probs, qkv

    def forward_rows(self, x: Tensor, mask: Tensor | None, idx: Tensor) -> Tensor:
        """The layer's output at the rows idx (B, Q) of x (B, T, C) only, as (B, Q, C): keys and
        values come from every token, queries, attention output and feed-forward only from
        those rows. Equal to forward(x)[0] gathered at idx; a last layer whose other rows
        nobody reads (pre-training: the masked positions and [CLS]) costs about a third."""
        B, T, C = x.shape
        a = self.attn
        H, D = a.num_heads, a.head_size
        xs = x.gather(1, idx.unsqueeze(-1).expand(-1, -1, C))  # (B, Q, C)
        if mask is not None and mask.shape[-2] > 1:  # a mask kind's (B, 1, T, T): its rows at idx
            Q = idx.shape[1]
            mask = mask.expand(B, 1, T, T).gather(2, idx[:, None, :, None].expand(B, 1, Q, T))  # (B, 1, Q, T)
        w, b = a.qkv.weight, a.qkv.bias  # rows [q; k; v]
        q = F.linear(xs, w[:C], b[:C]).view(B, -1, H, D).transpose(1, 2)  # (B, H, Q, D)
        k, v = F.linear(x, w[C:], b[C:]).view(B, T, 2, H, D).permute(2, 0, 3, 1, 4).unbind(0)
        ctx, _ = a.attend(q, k, v, mask)
        ctx = ctx.transpose(1, 2).reshape(B, -1, C)  # (B, Q, C)
        xs = self.attn_norm(xs + self.dropout(a.out(ctx)))
        h = self.ffn_out(self.act(self.ffn_in(xs)))
        return self.ffn_norm(xs + self.dropout(h))
