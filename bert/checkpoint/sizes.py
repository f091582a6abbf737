"""How many parameters a BERT of a given config has, from the config alone (no torch): what
`bert.checkpoint.load` sizes a file against before reading it (`check_model_size`), what the fine-tuning budget
estimates, and what the Home page and the sidebar show before any weights are loaded."""

from __future__ import annotations

from .. import settings
from ..config import BertConfig
from ..errors import CheckpointError
from ..family import member


def max_model_mb() -> int:
    """BERT_EXPLORER_MAX_MODEL_MB: the largest model (fp32 parameters, in MB) loaded at all."""
    return settings.whole("BERT_EXPLORER_MAX_MODEL_MB")


def embedding_parameters(config) -> int:
    """How many numbers the embeddings of `config` have: three tables (two for a DistilBERT) and a
    LayerNorm, E wide, and the projection E -> C when E is not C (ALBERT's always)."""
    C = config.hidden_size
    E = getattr(config, "embedding_size", None) or C
    project = E * C + C if E != C or member(config).embedding_projection else 0
    return (config.vocab_size + config.max_position_embeddings + config.type_vocab_size) * E + 2 * E + project


def layer_parameters(config) -> int:
    """How many numbers one encoder layer of `config` has: qkv, out, two LayerNorms, feed-forward."""
    C, I = config.hidden_size, config.intermediate_size
    return 4 * C * C + 2 * C * I + 9 * C + I


def distinct_layers(config) -> int:
    """How many layers' weights the encoder holds: ALBERT's one, shared by every depth."""
    return 1 if member(config).shared_layers else config.num_hidden_layers


def encoder_parameters(config) -> int:
    """How many numbers the encoder of `config` has (embeddings + layers, no pooler or heads):
    what any checkpoint of that config must hold."""
    return embedding_parameters(config) + distinct_layers(config) * layer_parameters(config)


def parameter_breakdown(config, classifier: bool = False, classes: int | None = None) -> dict[str, int]:
    """Parameters per component of the model `load_folder` builds from `config`, named as
    `bert.parameter_counts` names them (the same numbers, without building the model)."""
    C, V = config.hidden_size, config.vocab_size
    counts = {
        "embeddings": embedding_parameters(config),
        "encoder layers": distinct_layers(config) * layer_parameters(config),
        "pooler": C * C + C,
    }
    if classifier:
        counts["classifier head"] = (C + 1) * (len(config.id2label) if classes is None else classes)
    else:
        E = getattr(config, "embedding_size", None) or C
        counts["MLM head (decoder tied to embeddings)"] = C * E + 3 * E + V
        counts["NSP head"] = 2 * C + 2
        if member(config).replaced_token_head:
            counts["replaced-token head"] = C * C + 2 * C + 1
    counts["total"] = sum(counts.values())
    return counts


def model_parameters(config, classifier: bool = False, classes: int | None = None) -> int:
    """All the numbers of the model `load_folder` builds from `config`: encoder, pooler, and
    the MLM (its decoder tied to the word embeddings) and NSP heads, or the classifier (of
    `classes` outputs; default one per label of `config`)."""
    return parameter_breakdown(config, classifier, classes)["total"]


def check_model_size(
    config: BertConfig, file_bytes: int, file_name: str = "the weights file", small: bool = False
) -> None:
    """Before a model is built: the model `config` describes must fit BERT_EXPLORER_MAX_MODEL_MB
    in fp32, and the weights file's size must be one such a model can have: not over fp32 of
    every head, an untied decoder and some slack, or (`small`) under fp16 of the encoder."""
    params = max(model_parameters(config), model_parameters(config, True) if config.id2label else 0)
    limit = max_model_mb()
    if params * 4 > limit * 2**20:
        raise CheckpointError(
            f"config.json describes a model of {params:,} parameters "
            f"({params * 4 / 2**20:,.0f} MB in memory): over this server's limit "
            f"of {limit:,} MB"
        )
    encoder = encoder_parameters(config)
    low = 2 * encoder * 0.95
    high = 4 * (
        model_parameters(config) + model_parameters(config, True) + config.vocab_size * config.hidden_size
    ) * 1.1 + (16 << 20)
    size = f"{file_bytes / 2**20:,.1f} MB"
    if small and file_bytes < low:
        raise CheckpointError(
            f"config.json describes an encoder of {encoder:,} parameters (at least "
            f"{low / 2**20:,.1f} MB even in fp16) but {file_name} holds only {size}: "
            f"config and weights do not match"
        )
    if file_bytes > high:
        raise CheckpointError(
            f"{file_name} is {size}, far more than the {high / 2**20:,.1f} MB a model "
            f"of this config.json can need: config and weights do not match"
        )
