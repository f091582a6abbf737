"""Floating-point operations of a BERT forward pass or training step, counted analytically.

Letters as in bert/model.py: B batch, T tokens per sequence (padding included: the matmuls run on it),
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

With `last_layer_rows` = R (our pre-training step: the masked positions and each [CLS]), the
last layer computes keys and values for all B*T tokens but queries, attention, output projection
and feed-forward only at R rows: its encoder term becomes 2 * (2*C*C*B*T + (2*C*C + 2*C*F)*R)
and its attention term 4 * R * T * C.

Training step = 3 x forward: the backward pass costs two matmuls (gradient of the input and of
the weight) for each one of the forward pass. This is the familiar "6 * params * tokens"
plus the attention and head terms.
"""

from __future__ import annotations

from bert.config import BertConfig


def encoder_matmul_params(config: BertConfig) -> int:
    """N: the weights of the encoder's matrix multiplications (biases and LayerNorms left out)."""
    C, Fs, L = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    return L * (4 * C * C + 2 * C * Fs)


def forward_flops(
    config: BertConfig,
    batch: int,
    seq_len: int,
    *,
    pooler: bool = True,
    num_labels: int = 0,
    mlm_positions: int = 0,
    nsp: bool = False,
    last_layer_rows: int | None = None,
) -> int:
    """FLOPs of one forward pass over a (batch, seq_len) input; see the module docstring.

    mlm_positions: how many positions the MLM head runs at (batch*seq_len for full logits).
    last_layer_rows: the rows the last layer runs at (None: all).
    """
    C, L, V, Fs = config.hidden_size, config.num_hidden_layers, config.vocab_size, config.intermediate_size
    tokens = batch * seq_len
    total = 2 * encoder_matmul_params(config) * tokens
    total += 4 * L * batch * seq_len * seq_len * C
    if last_layer_rows is not None and L > 0:
        R = last_layer_rows
        total -= 2 * (4 * C * C + 2 * C * Fs) * tokens + 4 * batch * seq_len * seq_len * C  # the full last layer
        total += 2 * (2 * C * C * tokens + (2 * C * C + 2 * C * Fs) * R) + 4 * R * seq_len * C
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
