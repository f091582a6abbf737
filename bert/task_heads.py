"""The heads a BERT wears: pre-training's, and the three fine-tuning shapes (classify the text,
label every word, find the answer in a passage), one row each.

The loader, the export, the models folder's listing and the pages read these rows: which head a
folder holds (`task_head_of`), what transformers calls its class, what the page calls its task. No torch
here, so the listing and the first page can read them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class TaskHead:
    key: str  # ours: config.json's "architecture" in this app's format
    task: str  # what the page calls it
    hf_class: str  # transformers' class for a BERT with this head (the export's `architectures`)
    weights: str  # the prefix of the head's own weights in our names ("" for pre-training's heads)
    labelled: bool  # it needs config.id2label (one score per label)
    shape: str  # what the head computes, in one line
    pooler: bool = True  # it reads the pooler (transformers' per-token classes have none)
    outputs: int = 0  # scores per position when not one per label (transformers' num_labels)


TASK_HEADS = {
    "pretraining": TaskHead(
        "pretraining",
        "guess the hidden word",
        "BertForPreTraining",
        "",
        False,
        "a vocabulary's scores on every token (masked LM) and two on [CLS] (next sentence)",
    ),
    "classifier": TaskHead(
        "classifier",
        "classify the text",
        "BertForSequenceClassification",
        "classifier",
        True,
        "one score per class on the pooled sentence vector",
    ),
    "tagger": TaskHead(
        "tagger",
        "label every word",
        "BertForTokenClassification",
        "classifier",
        True,
        "one score per tag on every token's vector (read at each word's first piece)",
        pooler=False,
    ),
    "reader": TaskHead(
        "reader",
        "find the answer",
        "BertForQuestionAnswering",
        "qa_outputs",
        False,
        "two scores on every passage token: how likely the answer starts there, and ends there",
        pooler=False,
        outputs=2,
    ),
}

# transformers' class names end with these, whatever the family member ("ElectraForTokenClassification")
_HF_SUFFIX = {
    "ForTokenClassification": "tagger",
    "ForQuestionAnswering": "reader",
    "ForSequenceClassification": "classifier",
}


def task_head_of(config, weight_names: Iterable[str]) -> TaskHead:
    """The head a folder holds, from its config (our "architecture", else transformers'
    "architectures") and, for a folder that names neither, its weights' names (ours): a
    labelled head without labels in the config is no such head (pre-training's)."""
    names = set(weight_names)
    key = config.extra.get("architecture")
    if key not in TASK_HEADS:
        key = None
        for arch in config.extra.get("architectures") or ():
            key = next((k for suffix, k in _HF_SUFFIX.items() if str(arch).endswith(suffix)), None)
            if key:
                break
    if key is None:
        key = "reader" if "qa_outputs.weight" in names else "classifier" if "classifier.weight" in names else None
    head = TASK_HEADS.get(key or "pretraining")
    if head.labelled and not config.id2label:
        return TASK_HEADS["pretraining"]
    return head
