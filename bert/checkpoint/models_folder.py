"""The server's models folder (BERT_EXPLORER_MODELS_DIR): which of its folders are models that
students may pick, each described from its files without loading it.

Torch-free, like bert/checkpoint/builtins.py: the sidebar lists the folder on every page. A folder is
listed when its config.json passes BertConfig's ceilings, its tokenizer's files fit it (vocab.txt:
vocab_size tokens, the special ones among them; a RoBERTa's or ALBERT's files: read by their
tokenizer), and its model.safetensors header (names, dtypes and shapes: no numbers are read)
describes a model that `check_model_size` accepts, holds the whole encoder, and fits the file's
length (a download cut short is not listed). A folder with only pytorch_model.bin (a pickle) is
not listed: it may still be typed. `bert.checkpoint.load.load_folder` checks everything again
when a folder is picked.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from pathlib import Path

from .. import settings
from ..config import BertConfig
from ..errors import CheckpointError, TokenizerError
from ..family import member
from ..public import REPO
from ..tokenizer.files import MAX_VOCAB_BYTES
from ..tokenizer.for_folder import tokenizer_for_folder
from ..tokenizer.vocab import SPECIAL_TOKENS, read_vocab_file
from .builtins import ModelSummary, safetensors_layout, summary_from_files
from .sizes import check_model_size, encoder_parameters

MAX_LISTED = 100  # folders looked at in one scan (in name order); more are not listed
DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1}


def models_dir() -> Path:
    """BERT_EXPLORER_MODELS_DIR: the one folder whose model folders students may load
    (default <repo>/models)."""
    env = settings.text("BERT_EXPLORER_MODELS_DIR")
    return Path(env) if env else REPO / "models"


def _held_numbers(header: dict, data_bytes: int) -> int:
    """How many numbers the tensors of a safetensors `header` hold; CheckpointError when an
    entry is malformed or the data it describes is not exactly the `data_bytes` the file has."""
    held = end = 0
    for name, t in header.items():
        if name == "__metadata__":
            continue
        try:
            shape, (start, stop), size = t["shape"], t["data_offsets"], DTYPE_BYTES[t["dtype"]]
            numel = math.prod(shape)
            ok = all(isinstance(n, int) and n >= 0 for n in [*shape, start, stop]) and stop - start == numel * size
        except (KeyError, TypeError, ValueError):
            ok = False
        if not ok:
            raise CheckpointError("model.safetensors has a malformed header")
        held, end = held + numel, max(end, stop)
    if end != data_bytes:
        raise CheckpointError(
            f"model.safetensors holds {data_bytes:,} bytes of weights but its header describes "
            f"{end:,}: the file is cut short or damaged"
        )
    return held


def describe_folder(folder: Path) -> ModelSummary:
    """The model in `folder` (ours or Hugging Face format), described from config.json, vocab.txt,
    the model.safetensors header and the card; CheckpointError saying why it is not offered."""
    if not (folder / "config.json").is_file():
        raise CheckpointError("no config.json")
    config = BertConfig.from_file(folder / "config.json")  # the ceilings
    weights = folder / "model.safetensors"
    if not weights.is_file():
        if (folder / "pytorch_model.bin").is_file():
            raise CheckpointError(
                "only pytorch_model.bin (a pickle): a listed model needs model.safetensors, "
                "which is read without running anything"
            )
        raise CheckpointError("no model.safetensors")
    if member(config).tokenizer_kind != "wordpiece":  # RoBERTa's and ALBERT's files: read by their tokenizer
        try:
            size = len(tokenizer_for_folder(folder, config.model_type))
        except TokenizerError as e:
            raise CheckpointError(str(e)) from None
        if size != config.vocab_size:
            raise CheckpointError(
                f"the tokenizer has {size:,} tokens but config.json says vocab_size {config.vocab_size:,}"
            )
    else:
        _check_vocab_txt(folder / "vocab.txt", config)
    file_bytes = weights.stat().st_size

    check_model_size(config, file_bytes, weights.name)
    check_model_size(config, file_bytes, weights.name, small=True)
    try:
        header, data_bytes = safetensors_layout(weights)
    except (ValueError, struct.error):  # JSON and UTF-8 errors are ValueErrors
        raise CheckpointError("model.safetensors has no readable header") from None
    if not isinstance(header, dict):
        raise CheckpointError("model.safetensors has a malformed header")
    held, needed = _held_numbers(header, data_bytes), encoder_parameters(config)
    if needed > held:
        raise CheckpointError(
            f"config.json describes an encoder of {needed:,} parameters but model.safetensors "
            f"holds only {held:,} numbers"
        )
    return summary_from_files(folder.name, folder, config, header)


def _check_vocab_txt(vocab: Path, config: BertConfig) -> None:
    if not vocab.is_file():
        raise CheckpointError("no vocab.txt")
    if vocab.stat().st_size > MAX_VOCAB_BYTES:
        raise CheckpointError(f"vocab.txt is over {MAX_VOCAB_BYTES >> 20} MB: too big for a vocabulary")
    tokens = read_vocab_file(vocab)  # the loader's plain reader: the tokenizer builds far more than a token list
    if len(tokens) != config.vocab_size:
        raise CheckpointError(
            f"vocab.txt has {len(tokens):,} tokens but config.json says vocab_size {config.vocab_size:,}"
        )
    if missing := [t for t in SPECIAL_TOKENS if t not in tokens]:  # near the start in a BERT vocabulary
        raise CheckpointError(f"vocab.txt lacks the special token(s) {', '.join(missing)}")


@dataclass(frozen=True)
class Scan:
    """One look at a models folder: the models it offers, in name order, and the folders
    skipped with the reason of each."""

    models: list[ModelSummary]
    skipped: list[tuple[str, str]]


def scan(root: Path, limit: int = MAX_LISTED) -> Scan:
    """The model folders directly under `root` (hidden ones, such as a download in progress,
    and plain files aside), each described by `describe_folder`; at most `limit` folders."""
    try:
        folders = sorted(p for p in Path(root).iterdir() if not p.name.startswith(".") and p.is_dir())
    except OSError:  # no models folder (the default until one is made), or unreadable
        return Scan([], [])
    models, skipped = [], []
    for folder in folders[:limit]:
        try:
            models.append(describe_folder(folder))
        except (CheckpointError, TokenizerError) as e:  # TokenizerError: a vocab.txt not in UTF-8
            skipped.append((folder.name, str(e)))
        except OSError:
            skipped.append((folder.name, "cannot be read"))
    if len(folders) > limit:
        skipped.append((f"{len(folders) - limit} more folders", f"not looked at: at most {limit} are listed"))
    return Scan(models, skipped)
