"""Floating-point operations of a BERT forward pass or training step, counted analytically.

Letters as in model.py: B batch, T tokens per sequence (padding included: the matmuls run on it),
C hidden size, F feed-forward size, L layers, V vocabulary, K classes, M masked positions.
A multiply-add is 2 FLOPs. Embedding look-ups, LayerNorm, GELU, softmax, dropout and the
optimiser are not counted (they are memory-bound and small next to the matmuls).

Forward pass:

    encoder    2 * N * B*T            N = L * (4*C*C + 2*C*F): the encoder's matmul weights
                                      (Q, K, V, output projection; two feed-forward matrices)
    attention  4 * L * B * T*T * C    q k^T and probs v, each 2*T*T*D per head, H*D = C
    pooler     2 * C*C * B
    classifier 2 * C*K * B            (sequence classification)
    MLM head   2 * (C*C + C*V) * M    transform + vocabulary projection, at the M positions
                                      where logits are computed (all B*T for a full head)
    NSP head   2 * C*2 * B

Training step = 3 x forward: the backward pass costs two matmuls (gradient of the input and of
the weight) for each one of the forward pass. This is the familiar "6 * params * tokens"
plus the attention and head terms.
"""
from __future__ import annotations

from .config import BertConfig


def encoder_matmul_params(config: BertConfig) -> int:
    """N: the weights of the encoder's matrix multiplications (biases and LayerNorms left out)."""
    C, Fs, L = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    return L * (4 * C * C + 2 * C * Fs)


def forward_flops(config: BertConfig, batch: int, seq_len: int, *, pooler: bool = True,
                  num_labels: int = 0, mlm_positions: int = 0, nsp: bool = False) -> int:
    """FLOPs of one forward pass over a (batch, seq_len) input; see the module docstring.

    mlm_positions: how many positions the MLM head runs at (batch*seq_len for full logits).
    """
    C, L, V = config.hidden_size, config.num_hidden_layers, config.vocab_size
    tokens = batch * seq_len
    total = 2 * encoder_matmul_params(config) * tokens
    total += 4 * L * batch * seq_len * seq_len * C
    if pooler:
        total += 2 * C * C * batch
    total += 2 * C * num_labels * batch
    total += 2 * (C * C + C * V) * mlm_positions
    if nsp:
        total += 2 * C * 2 * batch
    return total


def training_flops(config: BertConfig, batch: int, seq_len: int, **kwargs) -> int:
    """FLOPs of one training step (forward + backward) = 3 x forward_flops."""
    return 3 * forward_flops(config, batch, seq_len, **kwargs)
