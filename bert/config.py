"""BertConfig: the hyper-parameters of a BERT, or of a member of its family, with Hugging Face
field names.

A config round-trips through JSON (`to_json` / `from_json`) and reads a Hugging Face
`config.json` (unknown fields are kept in `extra` so nothing is lost on export). `model_type`
names the family member (bert/family.py: what each changed); a DistilBERT config.json speaks
its own names (dim, n_layers, ...), read here into BERT's.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import CheckpointError
from .family import MEMBERS, member

# Ceilings, checked before anything is allocated: far above every published BERT (bert-large:
# 1,024 hidden, 24 layers, 16 heads; multilingual: 119,547 tokens), far below what would
# exhaust a shared server.
LIMITS = {
    "hidden_size": 4096,
    "num_hidden_layers": 48,
    "num_attention_heads": 64,
    "intermediate_size": 16384,
    "vocab_size": 250_000,
    "max_position_embeddings": 4096,
    "type_vocab_size": 16,
    "embedding_size": 4096,
}
MAX_LABELS = 1000
MAX_CONFIG_BYTES = 1 << 20  # room for MAX_LABELS long labels

# DistilBERT's config.json names -> BERT's (its other fields: as BERT's, or kept in `extra`)
DISTILBERT_NAMES = {
    "dim": "hidden_size",
    "n_layers": "num_hidden_layers",
    "n_heads": "num_attention_heads",
    "hidden_dim": "intermediate_size",
    "activation": "hidden_act",
    "dropout": "hidden_dropout_prob",
    "attention_dropout": "attention_probs_dropout_prob",
}
ACTIVATIONS = ("gelu", "relu", "gelu_new", "gelu_pytorch_tanh", "silu", "swish", "tanh")
POOLINGS = ("cls", "mean", "max")


@dataclass
class BertConfig:
    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12
    pad_token_id: int = 0
    # The family (bert/family.py): which member, and ELECTRA's or ALBERT's embedding width when it
    # is not hidden_size (None: hidden_size). A DistilBERT has no segment embeddings: type_vocab_size 0.
    model_type: str = "bert"
    embedding_size: int | None = None
    # ALBERT: how many distinct layers (groups) the num_hidden_layers share, and layers a group has;
    # every released ALBERT has 1 and 1 (one layer's weights, used at every depth), all this app runs.
    num_hidden_groups: int = 1
    inner_group_num: int = 1
    # Sequence classification (fine-tuning); empty for a pre-training model.
    id2label: dict[int, str] = field(default_factory=dict)
    classifier_pooling: str = "cls"
    classifier_dropout: float | None = None
    # Fields of a Hugging Face config we do not use, kept for a faithful export.
    extra: dict[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        _check_labels(self.id2label)
        try:
            self.id2label = {int(k): str(v) for k, v in (self.id2label or {}).items()}
        except (TypeError, ValueError):
            raise CheckpointError("config: id2label keys must be whole numbers") from None
        self.validate()

    def validate(self) -> None:
        ints = (
            "vocab_size",
            "hidden_size",
            "num_hidden_layers",
            "num_attention_heads",
            "intermediate_size",
            "max_position_embeddings",
            "type_vocab_size",
        )
        if self.model_type not in MEMBERS:
            raise CheckpointError(
                f"config: model_type {_short(self.model_type)} is not one this app knows ({', '.join(MEMBERS)})"
            )
        if self.embedding_size is not None:
            ints += ("embedding_size",)
        if (self.num_hidden_groups, self.inner_group_num) != (1, 1):
            raise CheckpointError(
                f"config: an ALBERT of {_short(self.num_hidden_groups)} layer groups of {_short(self.inner_group_num)} "
                "layers; this app runs the released shape, one group of one layer shared by every depth"
            )
        for name in ints:
            value = getattr(self, name)
            zero_ok = name == "type_vocab_size" and self.model_type == "distilbert"
            if not isinstance(value, int) or isinstance(value, bool) or value < (0 if zero_ok else 1):
                raise CheckpointError(f"config: {name} must be a positive integer, got {_short(value)}")
            if name in LIMITS and value > LIMITS[name]:
                raise CheckpointError(f"config: {name} {value:,} is over this app's limit of {LIMITS[name]:,}")
        _check_labels(self.id2label)
        if self.hidden_size % self.num_attention_heads:
            raise CheckpointError(
                f"config: hidden_size {self.hidden_size} is not divisible by "
                f"num_attention_heads {self.num_attention_heads}"
            )
        if self.hidden_act not in ACTIVATIONS:
            raise CheckpointError(
                f"config: unsupported hidden_act {_short(self.hidden_act)}; supported: {', '.join(ACTIVATIONS)}"
            )
        pad = self.pad_token_id
        if pad is not None and (not isinstance(pad, int) or isinstance(pad, bool) or not 0 <= pad < self.vocab_size):
            raise CheckpointError(
                f"config: pad_token_id {_short(pad)} is not a token id of the vocabulary (0 to {self.vocab_size - 1})"
            )
        if self.classifier_pooling not in POOLINGS:
            raise CheckpointError(f"config: classifier_pooling must be one of {POOLINGS}")

    @property
    def position_offset(self) -> int:
        """The first position row a token uses: RoBERTa counts positions from its padding index + 1
        (rows 0 .. pad are never a real token's); 0 for the others."""
        return self.pad_token_id + 1 if member(self).position_offset_from_pad else 0

    @property
    def max_tokens(self) -> int:
        """The longest input: the position rows a token can use."""
        return self.max_position_embeddings - self.position_offset

    @property
    def embedding_width(self) -> int:
        """E: the width of the embedding tables (ELECTRA's may be narrower than hidden_size)."""
        return self.embedding_size or self.hidden_size

    @property
    def head_size(self) -> int:
        return self.hidden_size // self.num_attention_heads

    @property
    def labels(self) -> list[str]:
        return [self.id2label[i] for i in sorted(self.id2label)]

    # ---- JSON ---------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "extra"}
        d["id2label"] = {str(k): v for k, v in self.id2label.items()}
        if self.id2label:
            d["label2id"] = {v: k for k, v in self.id2label.items()}
            d["num_labels"] = len(self.id2label)
        if d["embedding_size"] is None:
            del d["embedding_size"]
        if not member(self).shared_layers:
            del d["num_hidden_groups"], d["inner_group_num"]
        out = dict(self.extra)
        out.update(d)
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> BertConfig:
        if not isinstance(d, dict):
            raise CheckpointError("config: expected a JSON object")
        model_type = d.get("model_type") or "bert"
        d = {**d, "model_type": model_type}
        if model_type not in MEMBERS:
            raise CheckpointError(
                f"config: model_type {_short(model_type)} is not one this app knows ({', '.join(MEMBERS)})"
            )
        if model_type == "distilbert":
            d = {DISTILBERT_NAMES.get(k, k): v for k, v in d.items()}
            d.setdefault("type_vocab_size", 0)  # no segment embeddings
        names = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        known = {k: v for k, v in d.items() if k in names}
        extra = {k: v for k, v in d.items() if k not in names and k not in ("label2id", "num_labels", "extra")}
        n = d.get("num_labels")
        if n is not None and (not isinstance(n, int) or isinstance(n, bool) or not 0 <= n <= MAX_LABELS):
            raise CheckpointError(
                f"config: num_labels must be a whole number from 0 to {MAX_LABELS:,}, got {_short(n)}"
            )
        _check_labels(known.get("id2label"))
        if (
            "id2label" in known
            and not d.get("num_labels")
            and len(known["id2label"]) == 2
            and set(known["id2label"].values()) == {"LABEL_0", "LABEL_1"}
        ):
            known.pop("id2label")  # HF's default labels on every config: not a classifier
        try:
            return cls(**known, extra=extra)
        except TypeError as e:
            raise CheckpointError(f"config: {e}") from None

    @classmethod
    def from_json(cls, text: str) -> BertConfig:
        try:
            return cls.from_dict(json.loads(text))
        except json.JSONDecodeError as e:
            raise CheckpointError(f"config.json is not valid JSON: {e}") from None

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> BertConfig:
        """Read a config.json, refusing one too big to be a config before reading it."""
        path = Path(path)
        try:
            size = path.stat().st_size
            if size > MAX_CONFIG_BYTES:
                raise CheckpointError(
                    f"{path.name} is {size / 2**20:.1f} MB: too big for a model "
                    f"config (the limit is {MAX_CONFIG_BYTES // 2**10:,} kB)"
                )
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            raise CheckpointError(f"{path.name} cannot be read") from None
        return cls.from_json(text)

    def save(self, path: str | os.PathLike) -> None:
        from .atomic_files import atomic_write_text

        atomic_write_text(Path(path), self.to_json() + "\n")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _check_labels(id2label: Any) -> None:
    """At most MAX_LABELS labels, checked before the labels are copied or a head is built."""
    if id2label is None:
        return
    if not isinstance(id2label, dict):
        raise CheckpointError("config: id2label must be a JSON object")
    if len(id2label) > MAX_LABELS:
        raise CheckpointError(f"config: {len(id2label):,} labels is over this app's limit of {MAX_LABELS:,}")
