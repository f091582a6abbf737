"""`Bundle`: a model with its tokenizer and provenance (what `bert.load` returns), and `encode_batch`,
the padded batch tensors it and the training code feed the model."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from .answering import Answer, answer_question
from .config import BertConfig
from .errors import InputError
from .model import BertForPreTraining, parameter_counts
from .tagging import TaggedWord, tag_texts
from .task_heads import TASK_HEADS, TaskHead
from .task_models import (
    MODEL_CLASSES,
    BertForQuestionAnswering,
    BertForSequenceClassification,
    BertForTokenClassification,
)
from .tokenizer import Tokenizer


@dataclass
class Bundle:
    """A model with its tokenizer and provenance: what `bert.load` returns."""

    model: BertForPreTraining | BertForSequenceClassification | BertForTokenClassification | BertForQuestionAnswering
    tokenizer: Tokenizer
    name: str
    card: str = ""
    source: str = ""
    notes: list[str] = field(default_factory=list)  # e.g. "no MLM head in this checkpoint"
    mlm_head_trained: bool = True  # False: the file had no MLM head, the loader initialised one afresh
    nsp_head_trained: bool = True  # the same for the next-sentence head (False for a member without one)
    replaced_head_trained: bool = False  # ELECTRA's discriminator head, loaded from the file

    @property
    def config(self) -> BertConfig:
        return self.model.config

    @property
    def is_classifier(self) -> bool:
        return isinstance(self.model, BertForSequenceClassification)

    @property
    def is_tagger(self) -> bool:
        return isinstance(self.model, BertForTokenClassification)

    @property
    def is_reader(self) -> bool:
        return isinstance(self.model, BertForQuestionAnswering)

    @property
    def head(self) -> TaskHead:
        """Its row of bert/task_heads.py: which of the four heads the model wears."""
        return TASK_HEADS[next(k for k, cls in MODEL_CLASSES.items() if type(self.model) is cls)]

    @property
    def has_mlm(self) -> bool:
        return isinstance(self.model, BertForPreTraining)

    @property
    def labels(self) -> list[str]:
        return self.config.labels

    @property
    def num_parameters(self) -> int:
        return parameter_counts(self.model)["total"]

    @torch.inference_mode()
    def classify(self, texts: list[str], batch_size: int = 32, max_length: int = 128) -> torch.Tensor:
        """(N, num_labels) class probabilities for a list of texts."""
        if not self.is_classifier:
            raise InputError(f"{self.name} is not a fine-tuned classifier")
        if isinstance(texts, str):
            texts = [texts]
        self.model.eval()
        out = []
        for i in range(0, len(texts), batch_size):
            batch = encode_batch(self.tokenizer, texts[i : i + batch_size], max_length)
            out.append(self.model(**batch).probs)
        if not out:
            return torch.zeros(0, len(self.labels))
        return torch.cat(out)

    def tag(self, texts: list[str], batch_size: int = 16) -> list[list[TaggedWord]]:
        """Per text, per word: (word, tag, probability) read at the word's first piece (a tagger only)."""
        return tag_texts(self, texts, batch_size)

    def answer(self, question: str, passage: str, **kw) -> Answer:
        """The passage's span that answers the question: text, character offsets, score (a reader only;
        the rule and `kw`: bert/answering.py)."""
        return answer_question(self, question, passage, **kw)


def encode_batch(tokenizer: Tokenizer, texts, max_length: int, texts_b=None) -> dict[str, torch.Tensor]:
    """Tokenize and pad a batch to its longest member (dynamic padding)."""
    encs = [
        tokenizer.encode(t, None if texts_b is None else texts_b[i], max_length=max_length) for i, t in enumerate(texts)
    ]
    T = max(len(e.ids) for e in encs)
    ids = torch.full((len(encs), T), tokenizer.pad_id, dtype=torch.long)
    types = torch.zeros((len(encs), T), dtype=torch.long)
    mask = torch.zeros((len(encs), T), dtype=torch.long)
    for i, e in enumerate(encs):
        n = len(e.ids)
        ids[i, :n] = torch.tensor(e.ids)
        types[i, :n] = torch.tensor(e.type_ids)
        mask[i, :n] = 1
    return {"input_ids": ids, "token_type_ids": types, "attention_mask": mask}
