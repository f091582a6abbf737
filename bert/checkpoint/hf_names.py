"""Translate between Hugging Face parameter names (BERT and its family) and ours.

Ours fuse query/key/value into one `qkv` matrix (one matmul instead of three) and use short
names; Hugging Face checkpoints come with or without the `bert.` prefix and, in old ones,
LayerNorm `gamma`/`beta` instead of `weight`/`bias`. The family's names are first rewritten into
BERT's: DistilBERT's (`distilbert.transformer.layer.N.attention.q_lin`, `vocab_transform`, ...),
ELECTRA's (`electra.`, `embeddings_project`, `discriminator_predictions`, `generator_predictions`),
RoBERTa's (`roberta.`, `lm_head`) and ALBERT's (`albert.`, its one shared layer in
`albert_layer_groups.0.albert_layers.0`, `embedding_hidden_mapping_in`, `predictions`, `sop_classifier`).
"""

from __future__ import annotations

import re

import torch
from torch import Tensor

from ..config import BertConfig
from ..family import member

_LAYER = {
    "attention.output.dense": "attn.out",
    "attention.output.LayerNorm": "attn_norm",
    "intermediate.dense": "ffn_in",
    "output.dense": "ffn_out",
    "output.LayerNorm": "ffn_norm",
}
_TOP = {
    "embeddings.word_embeddings": "bert.embeddings.word_embeddings",
    "embeddings.position_embeddings": "bert.embeddings.position_embeddings",
    "embeddings.token_type_embeddings": "bert.embeddings.token_type_embeddings",
    "embeddings.LayerNorm": "bert.embeddings.layer_norm",
    "pooler.dense": "bert.pooler",
    "cls.predictions.transform.dense": "mlm.transform",
    "cls.predictions.transform.LayerNorm": "mlm.norm",
    "cls.seq_relationship": "nsp",
    "classifier": "classifier",
    "qa_outputs": "qa_outputs",  # a question-answering head's start and end scores
}
_TOP.update(
    {
        "embeddings.project": "bert.embeddings.project",  # ELECTRA: E -> C
        "rtd.dense": "rtd.dense",  # ELECTRA's discriminator
        "rtd.out": "rtd.out",
    }
)
_IGNORED = re.compile(r"(position_ids|cls\.predictions\.decoder\.weight|cls\.predictions\.decoder\.bias)$")

# Each family member's names -> BERT's (applied in order, to the name without its member prefix).
_FAMILY_NAMES = {
    "distilbert": [
        (r"^distilbert\.", ""),
        (r"^transformer\.layer\.(\d+)\.attention\.(q|k|v)_lin\.", None),  # see _distil_qkv
        (r"^transformer\.layer\.(\d+)\.attention\.out_lin\.", r"encoder.layer.\1.attention.output.dense."),
        (r"^transformer\.layer\.(\d+)\.sa_layer_norm\.", r"encoder.layer.\1.attention.output.LayerNorm."),
        (r"^transformer\.layer\.(\d+)\.ffn\.lin1\.", r"encoder.layer.\1.intermediate.dense."),
        (r"^transformer\.layer\.(\d+)\.ffn\.lin2\.", r"encoder.layer.\1.output.dense."),
        (r"^transformer\.layer\.(\d+)\.output_layer_norm\.", r"encoder.layer.\1.output.LayerNorm."),
        (r"^vocab_transform\.", "cls.predictions.transform.dense."),
        (r"^vocab_layer_norm\.", "cls.predictions.transform.LayerNorm."),
        (r"^vocab_projector\.bias$", "cls.predictions.bias"),
        (r"^vocab_projector\.weight$", "cls.predictions.decoder.weight"),  # tied: not read
    ],
    "roberta": [
        (r"^roberta\.", ""),
        (r"^lm_head\.dense\.", "cls.predictions.transform.dense."),
        (r"^lm_head\.layer_norm\.", "cls.predictions.transform.LayerNorm."),
        (r"^lm_head\.bias$", "cls.predictions.bias"),
        (r"^lm_head\.decoder\.", "cls.predictions.decoder."),  # tied: not read
    ],
    "albert": [
        (r"^albert\.", ""),
        (r"^encoder\.embedding_hidden_mapping_in\.", "embeddings.project."),
        (
            r"^encoder\.albert_layer_groups\.0\.albert_layers\.0\.attention\.(query|key|value)\.",
            r"encoder.layer.0.attention.self.\1.",
        ),
        (
            r"^encoder\.albert_layer_groups\.0\.albert_layers\.0\.attention\.dense\.",
            "encoder.layer.0.attention.output.dense.",
        ),
        (
            r"^encoder\.albert_layer_groups\.0\.albert_layers\.0\.attention\.LayerNorm\.",
            "encoder.layer.0.attention.output.LayerNorm.",
        ),
        (r"^encoder\.albert_layer_groups\.0\.albert_layers\.0\.ffn\.", "encoder.layer.0.intermediate.dense."),
        (r"^encoder\.albert_layer_groups\.0\.albert_layers\.0\.ffn_output\.", "encoder.layer.0.output.dense."),
        (
            r"^encoder\.albert_layer_groups\.0\.albert_layers\.0\.full_layer_layer_norm\.",
            "encoder.layer.0.output.LayerNorm.",
        ),
        (r"^pooler\.(weight|bias)$", r"pooler.dense.\1"),
        (r"^predictions\.dense\.", "cls.predictions.transform.dense."),
        (r"^predictions\.LayerNorm\.", "cls.predictions.transform.LayerNorm."),
        (r"^predictions\.bias$", "cls.predictions.bias"),
        (r"^predictions\.decoder\.", "cls.predictions.decoder."),  # tied: not read
        (r"^sop_classifier\.classifier\.", "cls.seq_relationship."),  # sentence order, on the pooler like NSP
    ],
    "electra": [
        (r"^electra\.embeddings_project\.", "embeddings.project."),
        (r"^electra\.", ""),
        (r"^discriminator_predictions\.dense_prediction\.", "rtd.out."),
        (r"^discriminator_predictions\.dense\.", "rtd.dense."),
        (r"^generator_predictions\.dense\.", "cls.predictions.transform.dense."),
        (r"^generator_predictions\.LayerNorm\.", "cls.predictions.transform.LayerNorm."),
        (r"^generator_lm_head\.bias$", "cls.predictions.bias"),
        (r"^generator_lm_head\.weight$", "cls.predictions.decoder.weight"),  # tied: not read
    ],
}
_DISTIL_QKV = {"q": "query", "k": "key", "v": "value"}


def _bert_name(key: str, model_type: str) -> str:
    """A family member's parameter name as BERT's (BERT's own names unchanged)."""
    for pattern, to in _FAMILY_NAMES.get(model_type, ()):
        m = re.match(pattern, key)
        if not m:
            continue
        if to is None:  # DistilBERT's q_lin / k_lin / v_lin
            rest = key[m.end() :]
            return f"encoder.layer.{m.group(1)}.attention.self.{_DISTIL_QKV[m.group(2)]}.{rest}"
        key = re.sub(pattern, to, key)
    return key


def _normalise(key: str) -> str:
    key = re.sub(r"\.gamma$", ".weight", key)
    key = re.sub(r"\.beta$", ".bias", key)
    for prefix in ("bert.", "model."):
        if (
            key.startswith(prefix + "embeddings.")
            or key.startswith(prefix + "encoder.")
            or key.startswith(prefix + "pooler.")
        ):
            key = key[len(prefix) :]
    return key


def hf_to_ours(hf: dict[str, Tensor], config: BertConfig) -> tuple[dict[str, Tensor], list[str]]:
    """Returns our state dict and the list of HF keys that were not used."""
    ours: dict[str, Tensor] = {}
    qkv: dict[tuple[int, str], dict[str, Tensor]] = {}
    unused: list[str] = []
    for raw, t in hf.items():
        key = _normalise(_bert_name(raw, config.model_type))
        if key == "cls.predictions.bias":
            ours["mlm.bias"] = t
            continue
        if _IGNORED.search(key):
            continue
        m = re.match(r"encoder\.layer\.(\d+)\.(.+)\.(weight|bias)$", key)
        if m:
            i, name, kind = int(m.group(1)), m.group(2), m.group(3)
            if name.startswith("attention.self."):
                qkv.setdefault((i, kind), {})[name.split(".")[-1]] = t
            elif name in _LAYER:
                ours[f"bert.layers.{i}.{_LAYER[name]}.{kind}"] = t
            else:
                unused.append(raw)
            continue
        m = re.match(r"(.+)\.(weight|bias)$", key)
        if m and m.group(1) in _TOP:
            ours[f"{_TOP[m.group(1)]}.{m.group(2)}"] = t
        else:
            unused.append(raw)
    for (i, kind), parts in qkv.items():
        if set(parts) == {"query", "key", "value"}:
            ours[f"bert.layers.{i}.attn.qkv.{kind}"] = torch.cat([parts["query"], parts["key"], parts["value"]], dim=0)
        else:
            unused.extend(f"encoder.layer.{i}.attention.self.{p}.{kind}" for p in parts)
    if member(config).shared_layers:  # its one layer, shared by every depth
        ours = {re.sub(r"^bert\.layers\.0\.", "bert.shared_layer.", k): v for k, v in ours.items()}
    return ours, unused


def ours_to_hf(ours: dict[str, Tensor], config: BertConfig) -> dict[str, Tensor]:
    """Our state dict -> Hugging Face names (`bert.` prefix, separate Q/K/V, untied copies)."""
    inv_layer = {v: k for k, v in _LAYER.items()}
    inv_top = {v: k for k, v in _TOP.items()}
    hf: dict[str, Tensor] = {}
    C = config.hidden_size
    for key, t in ours.items():
        if key == "mlm.word_embeddings.weight":
            continue
        if key == "mlm.bias":
            hf["cls.predictions.bias"] = t
            continue
        m = re.match(r"bert\.layers\.(\d+)\.(.+)\.(weight|bias)$", key)
        if m:
            i, name, kind = m.group(1), m.group(2), m.group(3)
            base = f"bert.encoder.layer.{i}"
            if name == "attn.qkv":
                for j, part in enumerate(("query", "key", "value")):
                    hf[f"{base}.attention.self.{part}.{kind}"] = t[j * C : (j + 1) * C]
            else:
                hf[f"{base}.{inv_layer[name]}.{kind}"] = t
            continue
        m = re.match(r"(.+)\.(weight|bias)$", key)
        name = inv_top[m.group(1)]
        prefix = "bert." if name.startswith(("embeddings.", "pooler.")) else ""
        hf[f"{prefix}{name}.{m.group(2)}"] = t
    if "bert.embeddings.word_embeddings.weight" in hf and "cls.predictions.bias" in hf:
        hf["cls.predictions.decoder.weight"] = hf["bert.embeddings.word_embeddings.weight"]
        hf["cls.predictions.decoder.bias"] = hf["cls.predictions.bias"]
    return {k: v.detach().contiguous().clone() for k, v in hf.items()}
