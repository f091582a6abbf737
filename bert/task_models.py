"""The fine-tuning heads on the encoder of bert/model.py, and the model class of each head of
bert/task_heads.py.

- `BertForSequenceClassification`: one sentence vector (pooled) -> dropout -> linear -> one score
  per class, (B, K); the pooling is "cls", "mean" or "max".
- `BertForTokenClassification`: every token's last vector -> dropout -> linear -> one score per
  tag, (B, T, K). Its loss reads only positions whose label is not -100 (the words' first pieces).
- `BertForQuestionAnswering`: every token's last vector -> linear -> two scores, the answer's
  start and end, (B, T) each. Its loss is the mean of the start's and the end's cross-entropy;
  a position outside the input (a truncated answer) is ignored, as in transformers.
Each takes and gives what transformers' class of the same name does, weights named alike.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .config import BertConfig
from .dropout import Dropout
from .errors import InputError
from .model import BertForPreTraining, TaskModel
from .outputs import BertOutput, ClassifierOutput, SpanOutput, TokenClassifierOutput


class LabelTaskModel(TaskModel):
    """An encoder with a new head that scores config.id2label's labels: vectors -> dropout ->
    linear (`classifier`) -> K logits. The subclasses say which vectors: one a sentence
    (BertForSequenceClassification) or every token's (bert/task_models.py's tagger)."""

    needs = "a classifier needs labels"  # the refusal without labels, in the subclass's words
    targets = ("labels",)

    def __init__(self, config: BertConfig):
        if not config.id2label:
            raise InputError(f"{self.needs} (config.id2label)")
        super().__init__(config)

    def add_heads(self, config: BertConfig) -> None:
        p = config.classifier_dropout
        self.dropout = Dropout(config.hidden_dropout_prob if p is None else p)
        self.classifier = nn.Linear(config.hidden_size, len(config.id2label))


class BertForSequenceClassification(LabelTaskModel):
    """An encoder with a new head: pooled sentence vector -> dropout -> linear -> class logits.

    pooling: "cls" (the pooler's tanh(W h_[CLS])), "mean" or "max" over non-padding tokens. With
    "cls" and no other outputs asked for, the last layer runs at [CLS] only (BertModel.run's `rows`):
    out.bert.last_hidden_state is then zero elsewhere."""

    @property
    def pooling(self) -> str:
        return self.config.classifier_pooling

    def pool(self, h: Tensor, attention_mask: Tensor | None = None) -> Tensor:
        """The sentence vector (B, C) from the final hidden states h (B, T, C), by `pooling`."""
        if self.pooling == "cls":
            return self.bert.pool(h)
        if attention_mask is None:
            attention_mask = torch.ones(h.shape[:2], device=h.device)
        m = attention_mask.view(h.shape[:2]).unsqueeze(-1).to(h.dtype)  # (B, T, 1)
        if self.pooling == "mean":
            return (h * m).sum(1) / m.sum(1).clamp(min=1.0)
        return h.masked_fill(m == 0, torch.finfo(h.dtype).min).max(dim=1).values

    def classify(self, h: Tensor, attention_mask: Tensor | None = None) -> Tensor:
        """The class logits (B, K) from the final hidden states h (B, T, C): the one classifier
        head, for forward and for an analysis that ran the encoder itself (BertModel.run)."""
        return self.classifier(self.dropout(self.pool(h, attention_mask)))

    def classify_from(self, state: Tensor, start: int, attention_mask: Tensor | None = None) -> Tensor:
        """The class logits (B, K) from the state (B, T, C) entering layer `start` (BertModel.run's,
        stopped there): the rest of the encoder and the head, as forward runs them, so that a state
        kept from a frozen bottom gives forward's logits bit for bit."""
        h = self.bert.run(state, start, attention_mask=attention_mask, rows=self._rows(state.shape[:2], state.device))
        return self.classify(h.state, attention_mask)

    def _rows(self, shape: torch.Size, device: torch.device) -> Tensor | None:
        """The rows the last layer runs at (BertModel.run's `rows`): [CLS] only with "cls" pooling, else all."""
        return torch.zeros(shape, dtype=torch.bool, device=device) if self.pooling == "cls" else None

    def encoder_options(self, input_ids: Tensor, options: dict) -> dict:
        plain = all(v is None or v is False for k, v in options.items() if k != "mask_kind")
        if self.pooling == "cls" and "rows" not in options and plain:
            ids = input_ids if input_ids.dim() == 2 else input_ids.view(1, -1)
            options["rows"] = self._rows(ids.shape, ids.device)
        return options

    def head(self, out: BertOutput, attention_mask: Tensor | None, labels: Tensor | None = None) -> ClassifierOutput:
        logits = self.classify(out.last_hidden_state, attention_mask)  # (B, K)
        loss = F.cross_entropy(logits.float(), labels.view(-1)) if labels is not None else None
        return ClassifierOutput(logits=logits, bert=out, loss=loss)


class BertForTokenClassification(LabelTaskModel):
    needs = "a tagger needs tags"

    def head(
        self, out: BertOutput, attention_mask: Tensor | None, labels: Tensor | None = None
    ) -> TokenClassifierOutput:
        """labels: (B, T) tag indices, -100 where no tag is read (specials, later pieces, padding)."""
        logits = self.classifier(self.dropout(out.last_hidden_state))  # (B, T, K)
        loss = None
        if labels is not None:
            flat = labels.reshape(-1)
            if bool((flat != -100).any()):
                loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), flat, ignore_index=-100)
            else:  # nothing to learn in this batch
                loss = logits.sum() * 0.0
        return TokenClassifierOutput(logits=logits, bert=out, loss=loss)


class BertForQuestionAnswering(TaskModel):
    targets = ("start_positions", "end_positions")

    def add_heads(self, config: BertConfig) -> None:
        self.qa_outputs = nn.Linear(config.hidden_size, 2)  # [start, end]

    def head(
        self,
        out: BertOutput,
        attention_mask: Tensor | None,
        start_positions: Tensor | None = None,
        end_positions: Tensor | None = None,
    ) -> SpanOutput:
        """start_positions, end_positions: (B,) token indices of the answer (0, [CLS], for none)."""
        start, end = self.qa_outputs(out.last_hidden_state).unbind(-1)  # (B, T) each
        loss = None
        if start_positions is not None and end_positions is not None:
            T = start.shape[1]  # a position past the input is ignored
            s = start_positions.view(-1).clamp(0, T)
            e = end_positions.view(-1).clamp(0, T)
            loss = (
                F.cross_entropy(start.float(), s, ignore_index=T) + F.cross_entropy(end.float(), e, ignore_index=T)
            ) / 2
        return SpanOutput(start_logits=start, end_logits=end, bert=out, loss=loss)


MODEL_CLASSES = {
    "pretraining": BertForPreTraining,
    "classifier": BertForSequenceClassification,
    "tagger": BertForTokenClassification,
    "reader": BertForQuestionAnswering,
}
