"""Scoring a sequence classifier: texts to padded batches, logits, validation metrics, and the
report of a fine-tuned bundle (`evaluate_classifier`). Used by bert/train/finetune.py while it
trains and by the Fine-tuning page afterwards."""

from __future__ import annotations

import threading

import torch
import torch.nn.functional as F

from ..bundle import Bundle
from ..data.labelled import LabelledData
from ..errors import DataError, TrainingError
from .batching import LENGTH_MULTIPLE, pad_batch
from .device import module_device
from .precision import autocast, bf16_copies, call_with


def tokenize_texts(tokenizer, texts: list[str], max_length: int) -> list[list[int]]:
    # A very long text is cut first: only its first max_length tokens are used anyway.
    limit = max(2000, 64 * max_length)
    return [tokenizer.encode(t[:limit], max_length=max_length).ids for t in texts]


def collate(seqs: list[list[int]], pad_id: int, max_length: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, T) ids padded to the longest text, T rounded up to LENGTH_MULTIPLE but never past
    `max_length` (None: not rounded), and the attention mask."""
    padded = pad_batch(seqs, pad_id, multiple=LENGTH_MULTIPLE if max_length else 1, limit=max_length)
    return padded.input_ids, padded.attention_mask


class FrozenStates:
    """The state entering layer `layers` of a classifier whose embeddings and lowest `layers`
    layers are frozen, for each batch `predict` makes of one list of texts: kept at the first
    evaluation, read at each later one. Frozen weights never change and evaluation has no dropout,
    so a later evaluation's logits equal a whole pass's bit for bit (the same batches through the
    same ops), without running the frozen layers again. The states are fp32, as the layers hand them on:
    (B, T, C) floats a batch, so it is kept for a sample of texts, not for a whole validation set."""

    def __init__(self, layers: int):
        self.layers = layers
        self.kept: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}  # batch number -> (its ids, state)

    def logits(self, model, weights: dict, batch: int, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The classifier's logits (B, K) on batch number `batch` (ids and mask (B, T)), under the
        caller's autocast; its state is computed and kept unless kept already for these ids."""
        kept = self.kept.get(batch)
        if kept is None or not torch.equal(kept[0], ids):
            state = call_with(model, weights, ids, None, self.layers, attention_mask=mask, method="bert.run").state
            kept = self.kept[batch] = (ids, state)
        return call_with(model, weights, kept[1], self.layers, mask, method="classify_from")


@torch.inference_mode()
def predict(
    model,
    seqs: list[list[int]],
    pad_id: int,
    batch_size: int = 64,
    stop: threading.Event | None = None,
    precision: str = "fp32",
    max_length: int | None = None,
    frozen: FrozenStates | None = None,
) -> torch.Tensor | None:
    """(N, K) logits (on the CPU, fp32) in the original order, computed on the model's device in
    `precision` ("fp32" or "bf16", bert/train/precision.py); None if `stop` was set meanwhile.
    `max_length`: what the texts were cut to, for rounding batches' lengths (`collate`). `frozen`:
    the frozen bottom's states of these texts, kept from the last call with them (`FrozenStates`)."""
    was_training = model.training
    model.eval()
    device = module_device(model)
    weights = bf16_copies(model, frozen_only=False) if precision == "bf16" else {}  # cast once, not per batch
    order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
    logits = torch.empty(len(seqs), model.classifier.out_features)
    for n, s in enumerate(range(0, len(order), batch_size)):
        if stop is not None and stop.is_set():
            model.train(was_training)
            return None
        idx = order[s : s + batch_size]
        ids, mask = (t.to(device) for t in collate([seqs[i] for i in idx], pad_id, max_length))
        with autocast(device, precision):
            if frozen is None:
                out = call_with(model, weights, ids, attention_mask=mask).logits
            else:
                out = frozen.logits(model, weights, n, ids, mask)
        logits[idx] = out.float().cpu()
    model.train(was_training)
    return logits


def score_metrics(logits: torch.Tensor, labels: torch.Tensor) -> dict:
    loss = F.cross_entropy(logits, labels).item() if len(labels) else float("nan")
    acc = (logits.argmax(-1) == labels).float().mean().item() if len(labels) else float("nan")
    return {"val_loss": loss, "accuracy": acc}


def evaluate_classifier(
    bundle: Bundle, data: LabelledData, max_length: int = 128, mistakes: int = 10, logits: torch.Tensor | None = None
) -> dict:
    """accuracy, per-class precision/recall/F1, confusion matrix (rows true, columns predicted),
    and the most confident mistakes [{text, true, predicted, prob}]. `logits`: the model's on
    `data` already (N, K), e.g. from the run's last evaluation: not computed again."""
    if not bundle.is_classifier:
        raise TrainingError(f"{bundle.name} is not a classifier")
    classes = bundle.labels
    index = {c: i for i, c in enumerate(classes)}
    try:
        y = torch.tensor([index[data.classes[t]] for t in data.labels], dtype=torch.long)
    except KeyError as e:
        raise DataError(
            f"the data has a class the model does not know: {e.args[0]!r} (model classes: {', '.join(classes)})"
        ) from None
    if logits is None or logits.shape != (len(data), len(classes)):
        seqs = tokenize_texts(bundle.tokenizer, data.texts, max_length)
        logits = predict(bundle.model, seqs, bundle.tokenizer.pad_id, max_length=max_length)
    probs = logits.softmax(-1)
    pred = probs.argmax(-1)
    K = len(classes)
    conf = torch.zeros(K, K, dtype=torch.long)
    conf.index_put_((y, pred), torch.ones_like(y), accumulate=True)
    per_class = {c: _class_scores(conf, k) for k, c in enumerate(classes)}
    wrong = (pred != y).nonzero().flatten().tolist()
    wrong.sort(key=lambda i: -probs[i, pred[i]].item())
    return {
        "accuracy": (pred == y).float().mean().item() if len(y) else float("nan"),
        "macro_f1": sum(v["f1"] for v in per_class.values()) / K,
        "per_class": per_class,
        "classes": classes,
        "confusion": conf.tolist(),
        "mistakes": [
            {
                "text": data.texts[i],
                "true": classes[y[i]],
                "predicted": classes[pred[i]],
                "prob": probs[i, pred[i]].item(),
            }
            for i in wrong[:mistakes]
        ],
        "n": len(y),
    }


def _class_scores(conf: torch.Tensor, k: int) -> dict:
    """Precision, recall, F1 and support of class k from a confusion matrix (rows true)."""
    tp = conf[k, k].item()
    p_den, r_den = conf[:, k].sum().item(), conf[k].sum().item()
    precision = tp / p_den if p_den else 0.0
    recall = tp / r_den if r_den else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1, "support": r_den}
