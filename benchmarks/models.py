"""Ours and theirs on the same weights: the transformers side, the shared set-up, inputs and
training steps.

Ours are loaded from theirs with `bert.checkpoint.hf_names.hf_to_ours`, or theirs from `bert.export_hf` of
ours. `transformers` is imported inside functions only (`hf()`), offline.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from bert.checkpoint.hf_names import hf_to_ours
from bert.config import BertConfig
from bert.model import BertForPreTraining
from bert.task_models import BertForSequenceClassification
from bert.train.pretrain_eval import mlm_nsp_forward

TINY = {
    "vocab_size": 99,
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 37,
    "max_position_embeddings": 128,
    "type_vocab_size": 2,
}
BASE = {k: getattr(BertConfig(), k) for k in TINY}  # bert-base: the same fields at BertConfig's defaults
LABELS = {0: "negative", 1: "positive"}
FT_BATCH, FT_LEN = 32, 64
PT_BATCH, PT_LEN = 16, 128


# ---------------------------------------------------------------------------------------------
# The transformers side


def hf():
    """The `transformers` module, offline and quiet."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import transformers

    transformers.logging.set_verbosity_error()
    try:
        transformers.utils.logging.disable_progress_bar()
    except AttributeError:
        pass
    return transformers


# the fields of our config that a transformers BertConfig takes as they are
HF_FIELDS = (
    "vocab_size hidden_size num_hidden_layers num_attention_heads intermediate_size hidden_act hidden_dropout_prob "
    "attention_probs_dropout_prob max_position_embeddings type_vocab_size initializer_range layer_norm_eps pad_token_id"
).split()


def hf_config(config: BertConfig, attn: str = "eager", **kw):
    t = hf()
    return t.BertConfig(**{k: getattr(config, k) for k in HF_FIELDS}, attn_implementation=attn, **kw)


def ours_from_theirs(theirs, ours: torch.nn.Module, config: BertConfig) -> torch.nn.Module:
    """Load a transformers model's weights into ours; every weight of ours must be covered
    (the tied MLM decoder aside), every weight of theirs used."""
    state, unused = hf_to_ours(theirs.state_dict(), config)
    res = ours.load_state_dict(state, strict=False)
    missing = [k for k in res.missing_keys if k != "mlm.word_embeddings.weight"]
    if missing or unused or res.unexpected_keys:
        raise RuntimeError(
            f"weights do not line up: missing {missing[:3]}, unused {unused[:3]}, unexpected {res.unexpected_keys[:3]}"
        )
    return ours


def set_attn(model, impl: str):
    """Switch a transformers model between eager and SDPA attention."""
    if hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation(impl)
    else:  # older transformers read it from the config on every forward
        model.config._attn_implementation = impl
    return model


def theirs_from_dir(cls_name: str, folder: Path, attn: str, **kw):
    t = hf()
    return getattr(t, cls_name).from_pretrained(str(folder), attn_implementation=attn, **kw)


# ---------------------------------------------------------------------------------------------
# The set-up every row shares


@dataclass
class Setup:
    """What the rows need, built once per run."""

    tiny: bool
    threads: int
    tmp: Path
    bundle: object = None  # ours: bert.Bundle of minilm-l6 (or tiny)
    hf_dir: Path | None = None  # the same weights as a transformers folder
    label: str = "minilm-l6"

    @property
    def config(self) -> BertConfig:
        return self.bundle.model.config


def _tiny_tokenizer(vocab_size: int):
    from bert.tokenizer import SPECIAL_TOKENS, Tokenizer

    specials = list(SPECIAL_TOKENS)
    return Tokenizer(specials + [f"w{i}" for i in range(vocab_size - len(specials))])


def build_setup(tiny: bool, threads: int, tmp: Path) -> Setup:
    from bert.bundle import Bundle
    from bert.checkpoint import load as checkpoint
    from bert.checkpoint.export import export_hf

    s = Setup(tiny=tiny, threads=threads, tmp=tmp)
    if tiny:
        torch.manual_seed(0)
        config = BertConfig(**TINY)
        model = BertForPreTraining(config).eval()
        s.bundle = Bundle(model=model, tokenizer=_tiny_tokenizer(config.vocab_size), name="tiny")
        s.label = "tiny"
    else:
        s.bundle = checkpoint.load("minilm-l6")
    s.hf_dir = export_hf(s.bundle, tmp / "hf")
    return s


# ---------------------------------------------------------------------------------------------
# Inputs


def _special_ids(tokenizer) -> dict[str, int]:
    return {
        "pad": tokenizer.pad_id,
        "cls": tokenizer.cls_id,
        "sep": tokenizer.sep_id,
        "mask": tokenizer.mask_id,
        "unk": tokenizer.unk_id,
    }


def _low_id(vocab_size: int) -> int:
    """Smallest id used for random 'words' (above the specials of both vocab layouts)."""
    return 999 if vocab_size > 2000 else 5


def inference_inputs(config: BertConfig, T: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(_low_id(config.vocab_size), config.vocab_size, (1, T), generator=g)
    return ids, torch.zeros_like(ids)


def finetune_batch(config: BertConfig, tokenizer, B: int = FT_BATCH, T: int = FT_LEN, seed: int = 0):
    """B texts of 3T/4..T tokens ([CLS] ... [SEP]) padded to T: a batch from length-bucketed
    batching with dynamic padding, as bert.train.finetune makes them. Binary labels."""
    sp = _special_ids(tokenizer)
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(3 * T // 4, T + 1, (B,), generator=g)
    lengths[0] = T
    ids = torch.randint(_low_id(config.vocab_size), config.vocab_size, (B, T), generator=g)
    mask = (torch.arange(T)[None, :] < lengths[:, None]).long()
    ids[:, 0] = sp["cls"]
    ids[torch.arange(B), lengths - 1] = sp["sep"]
    ids = ids.masked_fill(mask == 0, sp["pad"])
    labels = torch.randint(0, 2, (B,), generator=g)
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def pretrain_batch(config: BertConfig, tokenizer, B: int = PT_BATCH, T: int = PT_LEN, seed: int = 0):
    """B sentence pairs packed to T tokens: [CLS] A [SEP] B [SEP], MLM 15 % (80/10/10), NSP labels."""
    from bert.train.masking import MLMMasker

    sp = _special_ids(tokenizer)
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(_low_id(config.vocab_size), config.vocab_size, (B, T), generator=g)
    split = torch.randint(T // 4, 3 * T // 4, (B,), generator=g)
    ids[:, 0] = sp["cls"]
    ids[torch.arange(B), split] = sp["sep"]
    ids[:, T - 1] = sp["sep"]
    types = (torch.arange(T)[None, :] > split[:, None]).long()
    mask = torch.ones(B, T, dtype=torch.long)
    masker = MLMMasker(
        vocab_size=config.vocab_size, mask_id=sp["mask"], pad_id=sp["pad"], special_ids=sorted(set(sp.values()))
    )
    masked, mlm_labels = masker(ids, mask, g)
    nsp = torch.randint(0, 2, (B,), generator=g)
    return {
        "input_ids": masked,
        "token_type_ids": types,
        "attention_mask": mask,
        "mlm_labels": mlm_labels,
        "nsp_labels": nsp,
    }


# ---------------------------------------------------------------------------------------------
# Training steps (what a step of bert.train.finetune / bert.train.pretrain does: forward, backward,
# gradient clipping, AdamW)


def _adamw(model, fused: bool = False):
    from bert.train.optim import adamw

    return adamw(model, 1e-5, fused=fused)


def ours_classifier(config: BertConfig) -> BertForSequenceClassification:
    config = copy.deepcopy(config)
    config.id2label = dict(LABELS)
    config.classifier_pooling = "cls"  # transformers' head: the pooler's output
    return BertForSequenceClassification(config)


def training_model(side: str, task: str, folder: Path, config: BertConfig) -> torch.nn.Module:
    """One side's model for `task` ("finetune": a classifier with a new random head, "pretrain":
    MLM + NSP) with the weights of the transformers `folder`; ours reads them without transformers."""
    if side == "theirs":
        if task == "finetune":
            return theirs_from_dir("BertForSequenceClassification", folder, "sdpa", num_labels=len(LABELS))
        return theirs_from_dir("BertForPreTraining", folder, "sdpa")
    from bert.checkpoint.weights import read_weights

    state, _ = hf_to_ours(read_weights(folder / "model.safetensors"), config)
    model = ours_classifier(config) if task == "finetune" else BertForPreTraining(config)
    model.load_state_dict(state, strict=False)
    return model


def finetune_models(setup: Setup):
    """(ours, theirs): classifiers on the minilm encoder, same random head, train mode."""
    theirs = training_model("theirs", "finetune", setup.hf_dir, setup.config)
    ours = ours_from_theirs(theirs, ours_classifier(setup.config), setup.config)
    return ours.train(), theirs.train()


def pretrain_models(setup: Setup):
    theirs = training_model("theirs", "pretrain", setup.hf_dir, setup.config)
    ours = ours_from_theirs(theirs, BertForPreTraining(copy.deepcopy(setup.config)), setup.config)
    return ours.train(), theirs.train()


def _train_step(model, loss_of: Callable[[], torch.Tensor], precision: str = "fp32") -> Callable[[], torch.Tensor]:
    """A training step as the trainers take it in `precision` (bf16: autocast around the forward and
    the fused AdamW, bert/train/precision.py)."""
    from bert.train.precision import autocast

    opt = _adamw(model, fused=precision == "bf16")
    cpu = torch.device("cpu")

    def step():
        opt.zero_grad(set_to_none=True)
        with autocast(cpu, precision):
            loss = loss_of()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss

    return step


def finetune_step(model, batch, ours: bool, precision: str = "fp32") -> Callable[[], torch.Tensor]:
    if ours:

        def loss_of():
            return model(batch["input_ids"], attention_mask=batch["attention_mask"], labels=batch["labels"]).loss
    else:

        def loss_of():
            return model(
                input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=batch["labels"]
            ).loss

    return _train_step(model, loss_of, precision)


def pretrain_step(model, batch, ours: bool, precision: str = "fp32") -> Callable[[], torch.Tensor]:
    if ours:

        def loss_of():
            return mlm_nsp_forward(model, batch).loss
    else:

        def loss_of():
            return model(
                input_ids=batch["input_ids"],
                token_type_ids=batch["token_type_ids"],
                attention_mask=batch["attention_mask"],
                labels=batch["mlm_labels"],
                next_sentence_label=batch["nsp_labels"],
            ).loss

    return _train_step(model, loss_of, precision)


def training_step(task: str, model, config: BertConfig, tokenizer, ours: bool) -> Callable[[], torch.Tensor]:
    """A step of `task` ("finetune" or "pretrain") on its batch (finetune_batch / pretrain_batch)."""
    if task == "finetune":
        return finetune_step(model, finetune_batch(config, tokenizer), ours)
    return pretrain_step(model, pretrain_batch(config, tokenizer), ours)
