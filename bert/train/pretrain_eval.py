"""Scoring a model while it pre-trains: fixed validation batches, masked-LM and NSP metrics, and
the probe sentence's top words (what the Pre-training page shows). On the model's device."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from ..bundle import Bundle
from ..model import BertForPreTraining
from .device import module_device, to_device
from .examples import PretrainingDataset, collate
from .masking import MLMMasker
from .precision import autocast


def fixed_eval_batches(
    dataset: PretrainingDataset, masker: MLMMasker, n_sequences: int, batch_size: int
) -> list[dict[str, torch.Tensor]]:
    """Validation batches with a fixed share of word pieces (the masker's probability) all replaced by [MASK]."""
    full = dataclasses.replace(masker, whole_word=False, is_continuation=None)
    examples = dataset.examples(epoch=0)[:n_sequences]
    g = torch.Generator().manual_seed(1234)
    out = []
    for i in range(0, len(examples), batch_size):
        b = collate(examples[i : i + batch_size], masker.pad_id)
        special = full.special_mask(b["input_ids"], b["attention_mask"])
        chosen = (torch.rand(b["input_ids"].shape, generator=g) < masker.mlm_probability) & ~special
        b["mlm_labels"] = torch.where(chosen, b["input_ids"], torch.full_like(b["input_ids"], -100))
        b["input_ids"] = b["input_ids"].masked_fill(chosen, masker.mask_id)
        out.append(b)
    return out


def mlm_nsp_forward(net, batch: dict[str, torch.Tensor], **options):
    """The model (or its DDP wrapper) on a masked-LM + next-sentence batch (`collate`'s keys, the
    masker's labels): its output with `.loss`, `.mlm_loss`, `.nsp_loss` and both heads' logits.
    `options`: BertForPreTraining.forward's others (e.g. prune)."""
    return net(
        batch["input_ids"],
        batch["token_type_ids"],
        batch["attention_mask"],
        mlm_labels=batch["mlm_labels"],
        nsp_labels=batch["nsp_labels"],
        **options,
    )


class WordScores:
    """A running tally of word predictions at the scored positions: summed loss, top-1 and top-5
    hits, and how often the target is `baseline_id` (the most frequent token), as the mlm_* scores;
    `sequences` counts the sequences read."""

    def __init__(self, baseline_id: int | None = None):
        self.baseline_id = baseline_id
        self.n = self.sequences = self.top1 = self.top5 = self.base = 0
        self.loss = 0.0

    def add(self, logits: torch.Tensor, targets: torch.Tensor, loss_sum: float) -> None:
        """Count one batch: `logits` (N, V) at the N scored positions, `targets` (N,), their summed loss."""
        best = logits.topk(min(5, logits.shape[-1]), dim=-1).indices  # (N, 5)
        self.loss += loss_sum
        self.top1 += (best[:, 0] == targets).sum().item()
        self.top5 += (best == targets[:, None]).any(-1).sum().item()
        if self.baseline_id is not None:
            self.base += (targets == self.baseline_id).sum().item()
        self.n += targets.numel()

    def result(self, **more: float) -> dict[str, float]:
        """The means (`more`, e.g. next-sentence scores, after the word ones), masked_tokens and sequences."""
        n = max(self.n, 1)
        res = {"mlm_loss": self.loss / n, "mlm_top1": self.top1 / n, "mlm_top5": self.top5 / n, **more}
        res.update(masked_tokens=self.n, sequences=self.sequences)
        if self.baseline_id is not None:
            res["baseline_top1"] = self.base / n
        return res


def evaluate_batches(
    model: nn.Module,
    batches: list[dict[str, torch.Tensor]],
    forward: Callable[[dict[str, torch.Tensor]], Any],
    score: Callable[[dict[str, torch.Tensor], Any], None],
    precision: str = "fp32",
    stop=None,
) -> bool:
    """`forward(batch)` on each of `batches` (moved to the model's device; in eval mode, under
    `precision`'s autocast: bert/train/precision.py), then `score(batch, output)`; the model's mode
    back after. False when `stop` was set (checked between batches) and the rest left unread."""
    was_training = model.training
    model.eval()
    device = module_device(model)
    try:
        for b in batches:
            if stop is not None and stop.is_set():
                return False
            b = to_device(b, device)
            with autocast(device, precision):
                out = forward(b)
            score(b, out)
        return True
    finally:
        model.train(was_training)


@torch.inference_mode()
def evaluate(
    model: BertForPreTraining,
    batches: list[dict[str, torch.Tensor]],
    baseline_id: int | None = None,
    precision: str = "fp32",
    stop=None,
) -> dict[str, float] | None:
    """MLM loss, top-1/top-5 accuracy at masked positions, NSP loss and accuracy (on the model's
    device, in `precision`: bert/train/precision.py); None once `stop` is set (checked between batches)."""
    words = WordScores(baseline_id)
    nsp = {"loss": 0.0, "right": 0}

    def score(b, out):
        targets = b["mlm_labels"][b["mlm_labels"] != -100]
        if targets.numel():
            words.add(out.mlm_logits, targets, out.mlm_loss.item() * targets.numel())
        words.sequences += len(b["nsp_labels"])
        nsp["loss"] += out.nsp_loss.item() * len(b["nsp_labels"])
        nsp["right"] += (out.nsp_logits.argmax(-1) == b["nsp_labels"]).sum().item()

    def forward(b):  # the last layer at the scored positions and [CLS] only, as in training: the
        # full layer's scores to rounding, at about two thirds of its cost
        return mlm_nsp_forward(model, b, prune=True)

    if not evaluate_batches(model, batches, forward, score, precision, stop):
        return None
    seqs = max(words.sequences, 1)
    return words.result(nsp_loss=nsp["loss"] / seqs, nsp_acc=nsp["right"] / seqs)


@torch.inference_mode()
def probe_predictions(bundle: Bundle, text: str, k: int = 5) -> list[list[tuple[str, float]]]:
    """Top-k words for each [MASK] in `text` (what the page shows while a model learns)."""
    model = bundle.model
    was_training = model.training
    model.eval()
    enc = bundle.tokenizer.encode(text, max_length=model.config.max_tokens)
    ids = torch.tensor([enc.ids], device=module_device(model))
    where = ids == bundle.tokenizer.mask_id
    res = []
    if where.any():
        logits = model(ids, mlm_positions=where).mlm_logits  # (N, V)
        probs = logits.softmax(-1).topk(k, dim=-1)
        for p, i in zip(probs.values, probs.indices):
            res.append(
                [(bundle.tokenizer.ids_to_tokens[j], round(float(q), 4)) for q, j in zip(p.tolist(), i.tolist())]
            )
    model.train(was_training)
    return res
