"""BERT Explorer's own BERT and its family (DistilBERT, ELECTRA, RoBERTa, ALBERT): pure PyTorch models,
their tokenizers, checkpoints, training.

import bert
bundle = bert.load("minilm-l6")
enc = bundle.tokenizer.encode("the capital of france is [MASK] .")

`import bert` does not import torch: the names that need it (the model, `load`, `Bundle`, ...)
and the submodules (`bert.checkpoint`, `bert.analysis`, ...) are imported on first use, so the
app's first page, which needs none of them, starts without torch.
"""

import importlib

from .config import BertConfig
from .errors import BertExplorerError, CheckpointError, DataError, InputError, TokenizerError, TrainingError
from .tokenizer import Tokenizer

_LAZY = {
    "Bundle": "bundle",
    "encode_batch": "bundle",
    "load": "checkpoint.load",
    "save": "checkpoint.load",
    "export_hf": "checkpoint.export",
    "BertModel": "model",
    "BertForPreTraining": "model",
    "BertForSequenceClassification": "task_models",
    "BertForTokenClassification": "task_models",
    "BertForQuestionAnswering": "task_models",
    "parameter_counts": "model",
}

__all__ = [
    "BertConfig",
    "BertModel",
    "BertForPreTraining",
    "BertForSequenceClassification",
    "BertForTokenClassification",
    "BertForQuestionAnswering",
    "Bundle",
    "Tokenizer",
    "load",
    "save",
    "export_hf",
    "encode_batch",
    "parameter_counts",
    "BertExplorerError",
    "CheckpointError",
    "DataError",
    "InputError",
    "TokenizerError",
    "TrainingError",
]


def __getattr__(name: str):
    """A name of `_LAZY` from its module, or a submodule (`bert.checkpoint`), on first use."""
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    if name.startswith("__"):
        raise AttributeError(name)
    try:
        return importlib.import_module(f".{name}", __name__)
    except ModuleNotFoundError as e:
        if e.name != f"{__name__}.{name}":
            raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
