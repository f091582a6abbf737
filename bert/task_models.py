"""The two per-token fine-tuning heads (the text's own: `BertForSequenceClassification` in
bert/model.py), and the model class of each head of bert/task_heads.py.

- `BertForTokenClassification`: every token's last vector -> dropout -> linear -> one score per
  tag, (B, T, K). Its loss reads only positions whose label is not -100 (the words' first pieces).
- `BertForQuestionAnswering`: every token's last vector -> linear -> two scores, the answer's
  start and end, (B, T) each. Its loss is the mean of the start's and the end's cross-entropy;
  a position outside the input (a truncated answer) is ignored, as in transformers.
Both take and give what transformers' classes of the same names do, weights named alike.
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from .config import BertConfig
from .model import BertForPreTraining, BertForSequenceClassification, LabelTaskModel, TaskModel
from .outputs import BertOutput, SpanOutput, TokenClassifierOutput


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
