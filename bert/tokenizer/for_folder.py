"""The tokenizer of a model folder, by the tokenizer kind of the family member its config.json names
(bert/family.py): WordPiece (vocab.txt) for BERT, DistilBERT and ELECTRA; byte-level BPE for RoBERTa;
Unigram (tokenizer.json) for ALBERT."""

from __future__ import annotations

from pathlib import Path

from ..errors import CheckpointError, TokenizerError
from ..family import MEMBERS
from ..public import public_path
from .backed import BackedTokenizer
from .bpe import RobertaTokenizer
from .files import MAX_VOCAB_BYTES, MERGES_TXT, TOKENIZER_JSON, VOCAB_JSON
from .tokenizer import Tokenizer
from .unigram import AlbertTokenizer


def tokenizer_for_folder(folder: Path, model_type: str, do_lower_case: bool = True) -> Tokenizer | BackedTokenizer:
    """The tokenizer of ``folder`` for a ``model_type`` of bert/family.py's MEMBERS; ``do_lower_case`` is for WordPiece
    only (RoBERTa never lower-cases; ALBERT does what its tokenizer.json says). Every file is sized before
    it is read; a missing one is a CheckpointError, a bad one a TokenizerError."""
    folder = Path(folder)
    if not folder.is_dir():
        raise CheckpointError(f"{public_path(folder)} is not a folder")
    kin = MEMBERS.get(model_type)
    kind = kin.tokenizer_kind if kin else None
    if kind == "wordpiece":
        vocab = folder / "vocab.txt"
        if not vocab.is_file():
            raise CheckpointError(f"no vocab.txt in {public_path(folder)}")
        if vocab.stat().st_size > MAX_VOCAB_BYTES:
            raise TokenizerError(f"vocab.txt is over {MAX_VOCAB_BYTES >> 20} MB: too big for a vocabulary")
        return Tokenizer.from_file(vocab, do_lower_case=do_lower_case)
    if kind == "bpe":
        if not (folder / TOKENIZER_JSON).is_file() and not (folder / VOCAB_JSON).is_file():
            raise CheckpointError(f"{folder.name} has neither {TOKENIZER_JSON} nor {VOCAB_JSON} + {MERGES_TXT}")
        return RobertaTokenizer.from_folder(folder)
    if kind == "unigram":
        if not (folder / TOKENIZER_JSON).is_file():
            raise CheckpointError(f"{folder.name} has no {TOKENIZER_JSON} (ALBERT's spiece.model alone is not read)")
        return AlbertTokenizer.from_folder(folder)
    raise TokenizerError(f"no tokenizer for model type {model_type!r} (known: {', '.join(MEMBERS)})")
