"""The tagger's task for bert/train/task_head_train.py: tagged sentences as inputs (labels on each word's
first piece, -100 elsewhere), and its scores on the validation sentences (bert/train/tag_metrics.py):
word accuracy, entity F1 where the tags are entities' (B-/I-...), per-tag precision and recall, the
confusion matrix and the worst sentences. Words past max_length tokens are not scored (said)."""

from __future__ import annotations

from dataclasses import asdict

import torch

from ..bundle import Bundle
from ..data.tagged import TaggedData
from ..tagging import IGNORED, first_pieces, join_words, word_labels
from .batching import pad_encoded
from .device import module_device
from .precision import autocast
from .tag_metrics import is_bio, tag_report
from .task_head_args import TaskHeadArgs

WORST = 8  # sentences shown as the worst


class TaggerTask:
    head = "tagger"

    def __init__(self, train: TaggedData, valid: TaggedData, args: TaskHeadArgs):
        self.train, self.valid = args.samples(train, valid)
        self.args = args
        self.labels = list(train.tag_names)
        self.primary = "f1" if is_bio(self.labels) else "accuracy"
        self.train_examples, self.valid_examples = len(self.train), len(self.valid)
        self._valid_inputs = None

    def _encode(self, tok, data: TaggedData) -> list[dict]:
        out = []
        for words, tags in zip(data.sentences, data.tags):
            text, spans = join_words(words)
            enc = tok.encode(text, max_length=self.args.max_length)
            firsts = first_pieces(enc, spans)
            out.append(
                {
                    "input_ids": enc.ids,
                    "token_type_ids": enc.type_ids,
                    "labels": word_labels(enc, firsts, tags),
                    "firsts": firsts,
                }
            )
        return out

    def inputs(self, tokenizer) -> list[dict]:
        return self._encode(tokenizer, self.train)

    def batch(self, items: list[dict], pad_id: int) -> dict[str, torch.Tensor]:
        return _batch(items, pad_id, self.args.max_length)

    @torch.inference_mode()
    def evaluate(self, bundle: Bundle, stop, precision: str = "fp32") -> tuple[dict, float, dict] | None:
        if self._valid_inputs is None:
            self._valid_inputs = self._encode(bundle.tokenizer, self.valid)
        items, model = self._valid_inputs, bundle.model
        was_training = model.training
        model.eval()
        device = module_device(model)
        gold, pred, loss_sum, n_labels, cut = [], [], 0.0, 0, 0
        for s in range(0, len(items), 32):
            if stop is not None and stop.is_set():
                model.train(was_training)
                return None
            chunk = items[s : s + 32]
            inputs = {k: v.to(device) for k, v in _batch(chunk, bundle.tokenizer.pad_id, self.args.max_length).items()}
            with autocast(device, precision):
                out = model(**inputs)
            n = int((inputs["labels"] != IGNORED).sum())
            loss_sum, n_labels = loss_sum + float(out.loss) * n, n_labels + n
            best = out.logits.float().argmax(-1).cpu()
            for k, item in enumerate(chunk):
                tags = self.valid.tags[s + k]
                kept = [(t, int(best[k, p])) for t, p in zip(tags, item["firsts"]) if p is not None]
                cut += len(tags) - len(kept)
                gold.append([t for t, _ in kept])
                pred.append([p for _, p in kept])
        model.train(was_training)
        r = tag_report(gold, pred, self.labels)
        scores = {"accuracy": r.accuracy, "f1": r.entity["f1"] if r.entity else None}
        report = {**asdict(r), "worst": self._worst(gold, pred), "words_cut": cut}
        return scores, loss_sum / max(n_labels, 1), report

    def _worst(self, gold: list[list[int]], pred: list[list[int]]) -> list[dict]:
        """The validation sentences with the most words wrong (at least one), most first."""
        wrong = [(sum(a != b for a, b in zip(g, p)), k) for k, (g, p) in enumerate(zip(gold, pred))]
        out = []
        for n, k in sorted((w for w in wrong if w[0]), key=lambda w: (-w[0], w[1]))[:WORST]:
            words = self.valid.sentences[k][: len(gold[k])]
            out.append(
                {
                    "words": words,
                    "gold": [self.labels[t] for t in gold[k]],
                    "predicted": [self.labels[t] for t in pred[k]],
                    "wrong": n,
                }
            )
        return out

    def card(self) -> list[str]:
        counts = ", ".join(f"{t} {n:,}" for t, n in self.train.tag_counts.items())
        return [
            f"Data: {self.train.source or self.args.data}: {len(self.train):,} training sentences, "
            f"{len(self.valid):,} validation sentences.",
            f"Tags (output order): {counts}; each word's tag is read at its first piece.",
        ]


def _batch(items: list[dict], pad_id: int, max_length: int) -> dict[str, torch.Tensor]:
    """Padded inputs (lengths rounded as a classifier's batches), with labels padded by -100."""
    out = pad_encoded(items, pad_id, max_length)
    labels = torch.full(out["input_ids"].shape, IGNORED, dtype=torch.long)
    for i, x in enumerate(items):
        labels[i, : len(x["labels"])] = torch.tensor(x["labels"])
    out["labels"] = labels
    return out
