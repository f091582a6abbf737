"""Every training job's budget: the server's caps and the memory estimate the pages show.

The caps are set by whoever runs the server (bert/settings.py; docs/SETTINGS.md):

    BERT_EXPLORER_MAX_STEP_TOKENS   tokens per training step, batch x max length   (default 2,048)
    BERT_EXPLORER_MAX_JOB_MB        estimated memory of one training job, in MB     (default 1,024)
    BERT_EXPLORER_MAX_JOB_MINUTES   training time of one job; then it stops itself  (default 15)
    BERT_EXPLORER_MAX_QUEUE         jobs waiting for a slot; more are refused        (default 10)
    BERT_EXPLORER_MAX_DISK_MB       saved runs + job folders + tokenized files       (default 2,000)

The step's tokens are capped because a Stop (or a closed tab) is obeyed between steps, so a step
must stay well under the time the page promises, and a step's memory grows with its tokens: a
class server has little of it. docs/PERFORMANCE.md ("A training step's time and memory") has the
measured steps behind the defaults.
"""

from __future__ import annotations

from types import SimpleNamespace

from bert import settings
from bert.checkpoint.sizes import embedding_parameters, encoder_parameters, layer_parameters, model_parameters
from bert.errors import BertExplorerError


class LimitError(BertExplorerError):
    """A request over one of the server's caps; the message says which and what to do."""


def max_step_tokens() -> int:
    return settings.whole("BERT_EXPLORER_MAX_STEP_TOKENS")


def max_job_mb() -> int:
    return settings.whole("BERT_EXPLORER_MAX_JOB_MB")


def max_job_seconds() -> float:
    return 60.0 * settings.number("BERT_EXPLORER_MAX_JOB_MINUTES")


def max_queue() -> int:
    return settings.whole("BERT_EXPLORER_MAX_QUEUE")


def max_disk_mb() -> int:
    return settings.whole("BERT_EXPLORER_MAX_DISK_MB")


# ---- memory of a training step -------------------------------------------------------------------
# Floats kept for the backward pass, per token and layer: ACT_HIDDEN x hidden size (q, k, v, the
# feed-forward's wide input and output, layer norms, dropout masks, and what the allocator keeps
# of earlier steps' activations) + ACT_ATTENTION x heads x sequence length (masked attention runs on
# the (T, T) scores); the MLM head keeps MLM_LOGITS floats per vocabulary word at each masked
# position, and pre-training runs the last layer at those positions only. Per trainable weight: the
# weight's gradient, AdamW's two moments and the temporaries of its batched update (OPTIMIZER
# floats). Plus FIXED_MB of allocator and autograd overhead. The peak is a run's steady state, not
# its first step's: the allocator keeps more of a step's freed activations for a few steps, then
# levels off. Against VmHWM in a subprocess after 7 steps of full-length batches (`python -m
# benchmarks.memory_estimate`: a classifier and a tagger of 6 layers x 384 at 16 x 64, 16 x 128 and
# 4 x 512, and of 4 x 256 at 16 x 128) the estimate is close either way (docs/PERFORMANCE.md).
#
# A per-token head (a tagger's one score per tag, a reader's two) keeps TOKEN_SCORES floats per
# score at EVERY token (its logits, their log-softmax in the loss, the logits' gradient): tokens x
# tags x 3 for a tagger, tokens x 2 x 3 for a reader; its encoder is fine-tuning's, the pooler held
# but never trained, and its runs settle HEAD_ACTIVATIONS times higher than a classifier's on the
# same batches.
ACT_HIDDEN = 36
ACT_ATTENTION = 2.4
MLM_LOGITS = 3
MASKED = 0.15
TOKEN_SCORES = 3
HEAD_ACTIVATIONS = 1.15
OPTIMIZER = 4
FIXED_MB = 60


def training_mb(
    layers: int,
    hidden: int,
    heads: int,
    batch: int,
    seq_len: int,
    params: int,
    trainable: int,
    vocab: int = 0,
    scores: int = 0,
    predicted: float = MASKED,
) -> int:
    """About how many MB one job takes while it trains: its copy of the weights, the gradients and
    AdamW's two moments of the trainable ones, and a step's activations (`vocab`: with an MLM head,
    read at the `predicted` share of the tokens; `scores`: a per-token head's scores at every token)."""
    tokens = batch * seq_len
    full_layers = layers - (1 - predicted) if vocab else layers
    acts = tokens * full_layers * (ACT_HIDDEN * hidden + ACT_ATTENTION * heads * seq_len)
    if scores:
        acts = acts * HEAD_ACTIVATIONS + tokens * TOKEN_SCORES * scores
    acts += tokens * predicted * MLM_LOGITS * vocab
    return int(round(FIXED_MB + (params + OPTIMIZER * trainable + acts) * 4 / 2**20))


def check_step(batch: int, seq_len: int, estimate_mb: int, what: str = "text") -> None:
    """Raise LimitError when a setting is over the server's caps (before anything is allocated)."""
    tokens, cap = batch * seq_len, max_step_tokens()
    if tokens > cap:
        raise LimitError(
            f"Too big for this server: batch {batch} x {seq_len} tokens per {what} = {tokens:,} tokens "
            f"per step, and the server allows {cap:,}. Lower the batch size or the tokens per {what}."
        )
    if estimate_mb > max_job_mb():
        raise LimitError(
            f"Too big for this server: this job would take about {estimate_mb:,} MB of memory, and the "
            f"server allows {max_job_mb():,} MB per job. Lower the batch size, the tokens per {what} "
            f"or the model's size."
        )


def budget_line(batch: int, seq_len: int, estimate_mb: int, what: str = "text") -> str:
    """The line the pages show under the settings, before Start."""
    minutes = max_job_seconds() / 60
    return (
        f"Each step trains on {batch} x {seq_len} = {batch * seq_len:,} tokens (this server allows "
        f"{max_step_tokens():,}); this job needs about {estimate_mb:,} MB of memory (at most "
        f"{max_job_mb():,}) and stops itself after {minutes:g} minutes, keeping its best model."
    )


def finetune_mb(
    config, batch: int, max_length: int, freeze_embeddings: bool = True, freeze_layers: int = 0, classes: int = 2
) -> int:
    """training_mb of fine-tuning a model of `config` (a bert.BertConfig) for `classes` classes."""
    L = config.num_hidden_layers
    total = model_parameters(config, classifier=True, classes=classes)
    frozen = embedding_parameters(config) if freeze_embeddings or freeze_layers > 0 else 0
    frozen += min(freeze_layers, L) * layer_parameters(config)
    return training_mb(L, config.hidden_size, config.num_attention_heads, batch, max_length, total, total - frozen)


def head_mb(config, batch: int, max_length: int, scores: int, freeze_embeddings: bool = True) -> int:
    """training_mb of fine-tuning a per-token head of `scores` outputs per token (a tagger's tags, a
    reader's 2) on a model of `config`."""
    L, C = config.num_hidden_layers, config.hidden_size
    total = model_parameters(config, classifier=True, classes=scores)  # the pooler too: it is held
    trained = total - (C * C + C) - (embedding_parameters(config) if freeze_embeddings else 0)
    return training_mb(L, C, config.num_attention_heads, batch, max_length, total, trained, scores=scores)


def pretrain_mb(
    layers: int, hidden: int, heads: int, vocab: int, batch: int, seq_len: int, next_word: bool = False
) -> int:
    """training_mb of pre-training a BERT of these sizes from scratch (feed-forward 4 x hidden); the
    next-word game reads the word head at every token, the masked-word game at the masked ones.
    Evaluation runs the training batch under inference mode: within a step's peak."""
    sizes = dict(num_hidden_layers=layers, hidden_size=hidden, intermediate_size=4 * hidden, vocab_size=vocab)
    total = model_parameters(SimpleNamespace(**sizes, max_position_embeddings=max(128, seq_len), type_vocab_size=2))
    predicted = 1.0 if next_word else MASKED
    return training_mb(layers, hidden, heads, batch, seq_len, total, total, vocab=vocab, predicted=predicted)


# ---- the Decoder on top's job ----------------------------------------------------------------------
# An encoder-decoder step keeps the encoder's activations at its source tokens (none when the encoder
# is frozen: no graph runs through it), the decoder's at its target tokens, each decoder layer's
# cross-attention (CROSS_HIDDEN floats per target token, its keys and values per source token) and
# the LM head's full-vocabulary logits at every target token (MLM_LOGITS floats per word). The job
# also holds the best model's weights (a copy, kept at each better evaluation) and every pair's
# token ids as Python ints (PAIR_TOKEN_BYTES each). Held-out scoring decodes a training batch at a
# time under inference mode (no graph, one step's logits): within the training step's peak.
CROSS_HIDDEN = 8
PAIR_TOKEN_BYTES = 40


def seq2seq_parameters(config, decoder_layers: int) -> int:
    """How many numbers an encoder-decoder on an encoder of `config` with `decoder_layers` layers
    holds (bert/seq2seq/model.py): the encoder and its pooler, the decoder's embeddings, layers with
    their cross-attention and LayerNorm, and its LM head (the output matrix tied to the embeddings)."""
    C, V = config.hidden_size, config.vocab_size
    embeddings = (V + config.max_tokens + (config.type_vocab_size or 2)) * C + 2 * C  # positions from 0
    layer = layer_parameters(config) + 4 * C * C + 4 * C + 2 * C
    head = C * C + 3 * C + V
    return encoder_parameters(config) + C * C + C + embeddings + decoder_layers * layer + head


def seq2seq_mb(
    config,
    decoder_layers: int,
    batch: int,
    source: int,
    target: int,
    freeze_encoder: bool = False,
    pair_tokens: int = 0,
) -> int:
    """About how many MB a Decoder on top job takes: the model, the best model's copy, the gradients
    and AdamW's moments of what trains, a step of `batch` pairs of `source` tokens in and `target`
    out (with their special tokens), and `pair_tokens` token ids of the pairs (all of them, held out
    too)."""
    C, H, L, V = config.hidden_size, config.num_attention_heads, config.num_hidden_layers, config.vocab_size
    params = seq2seq_parameters(config, decoder_layers)
    encoder = encoder_parameters(config) + C * C + C
    trainable = params - encoder if freeze_encoder else params
    S, T = batch * source, batch * target
    acts = 0 if freeze_encoder else S * L * (ACT_HIDDEN * C + ACT_ATTENTION * H * source)
    acts += S * C + T * decoder_layers * ((ACT_HIDDEN + CROSS_HIDDEN) * C + ACT_ATTENTION * H * (target + source))
    acts += S * decoder_layers * 2 * C + T * MLM_LOGITS * V
    data = pair_tokens * PAIR_TOKEN_BYTES / 4
    return int(round(FIXED_MB + (2 * params + OPTIMIZER * trainable + acts + data) * 4 / 2**20))
