"""BERT Explorer's own BERT: pure PyTorch model, WordPiece tokenizer, checkpoints, training.

import bert
bundle = bert.load("minilm-l6")
enc = bundle.tokenizer.encode("the capital of france is [MASK] .")
"""

from .checkpoint import Bundle, encode_batch, export_hf, load, save
from .config import BertConfig
from .errors import BertExplorerError, CheckpointError, DataError, InputError, TokenizerError, TrainingError
from .model import BertForPreTraining, BertForSequenceClassification, BertModel, parameter_counts
from .tokenizer import Tokenizer

__all__ = [
    "BertConfig",
    "BertModel",
    "BertForPreTraining",
    "BertForSequenceClassification",
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
