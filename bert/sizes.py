"""How many parameters a BERT of a given config has, from the config alone (no torch): what
`bert.checkpoint` sizes a file against before reading it, what the fine-tuning budget
estimates, and what the Home page and the sidebar show before any weights are loaded."""

from __future__ import annotations


def embedding_parameters(config) -> int:
    """How many numbers the embeddings of `config` have: three tables and a LayerNorm."""
    C = config.hidden_size
    return (config.vocab_size + config.max_position_embeddings + config.type_vocab_size) * C + 2 * C


def layer_parameters(config) -> int:
    """How many numbers one encoder layer of `config` has: qkv, out, two LayerNorms, feed-forward."""
    C, I = config.hidden_size, config.intermediate_size
    return 4 * C * C + 2 * C * I + 9 * C + I


def encoder_parameters(config) -> int:
    """How many numbers the encoder of `config` has (embeddings + layers, no pooler or heads):
    what any checkpoint of that config must hold."""
    return embedding_parameters(config) + config.num_hidden_layers * layer_parameters(config)


def parameter_breakdown(config, classifier: bool = False, classes: int | None = None) -> dict[str, int]:
    """Parameters per component of the model `load_folder` builds from `config`, named as
    `bert.parameter_counts` names them (the same numbers, without building the model)."""
    C, V = config.hidden_size, config.vocab_size
    counts = {
        "embeddings": embedding_parameters(config),
        "encoder layers": config.num_hidden_layers * layer_parameters(config),
        "pooler": C * C + C,
    }
    if classifier:
        counts["classifier head"] = (C + 1) * (len(config.id2label) if classes is None else classes)
    else:
        counts["MLM head (decoder tied to embeddings)"] = C * C + 3 * C + V
        counts["NSP head"] = 2 * C + 2
    counts["total"] = sum(counts.values())
    return counts


def model_parameters(config, classifier: bool = False, classes: int | None = None) -> int:
    """All the numbers of the model `load_folder` builds from `config`: encoder, pooler, and
    the MLM (its decoder tied to the word embeddings) and NSP heads, or the classifier (of
    `classes` outputs; default one per label of `config`)."""
    return parameter_breakdown(config, classifier, classes)["total"]
