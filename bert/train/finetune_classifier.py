"""The classifier a fine-tuning run trains: a copy of the base's encoder under a fresh head
(`build_classifier`), what it freezes (`freeze`) and takes from the base instead of copying
(`share_frozen`), and the learning-rate scales of its parts (`lr_scales`)."""

from __future__ import annotations

import copy
import threading

import torch

from ..attention_masks import TRAINED_LEFT_TO_RIGHT
from ..bundle import Bundle
from ..family import member
from ..task_models import BertForSequenceClassification
from .finetune_args import FinetuneArgs

INIT_LOCK = threading.Lock()  # new classifiers are initialised one at a time (torch's global seed)


def build_classifier(
    base: Bundle,
    classes: list[str],
    pooling: str = "mean",
    dropout: float | None = None,
    seed: int = 0,
    encoder_dropout: float | None = None,
) -> BertForSequenceClassification:
    """A new classifier whose encoder is a copy of `base`'s; `base` itself is left untouched."""
    config = copy.deepcopy(base.model.config)
    config.id2label = {i: str(c) for i, c in enumerate(classes)}
    config.classifier_pooling = pooling
    if dropout is not None:
        config.classifier_dropout = dropout
    if encoder_dropout is not None:
        config.hidden_dropout_prob = config.attention_probs_dropout_prob = encoder_dropout
    dropped = ("architecture", "architectures", "label2id", "num_labels", TRAINED_LEFT_TO_RIGHT)  # it reads both ways
    config.extra = {k: v for k, v in config.extra.items() if k not in dropped}
    with INIT_LOCK, torch.random.fork_rng():  # another run's start must not draw meanwhile
        torch.manual_seed(seed)
        model = BertForSequenceClassification(config)
    model.bert.load_state_dict(base.model.bert.state_dict())  # copies the values into the classifier's own
    return model


def freeze(model: BertForSequenceClassification, embeddings: bool, layers: int) -> None:
    """The embeddings and the lowest `layers` layers keep their weights. ALBERT's layers are one
    layer's weights at every depth: they are frozen only when every layer is, else none is."""
    if member(model.config).shared_layers and layers < len(model.bert.layers):
        layers = 0
    if embeddings or layers > 0:
        for p in model.bert.embeddings.parameters():
            p.requires_grad_(False)
    for layer in model.bert.layers[:layers]:
        for p in layer.parameters():
            p.requires_grad_(False)


def frozen_bottom(model: BertForSequenceClassification) -> int:
    """How many of the lowest layers never train, with the embeddings (0 when the embeddings
    train), up to all but the last layer, which forward may run at [CLS] only: what an evaluation
    may keep the states of (bert/train/finetune_eval.py's FrozenStates)."""
    if any(p.requires_grad for p in model.bert.embeddings.parameters()):
        return 0
    n = 0
    for layer in model.bert.layers[:-1]:
        if any(p.requires_grad for p in layer.parameters()):
            break
        n += 1
    return n


def share_frozen(model: BertForSequenceClassification, base: torch.nn.Module) -> None:
    """A frozen parameter takes the base's tensor in place of its copy: it never changes, so a run,
    and the model it keeps, hold only what they train. The base stays as it is: nothing writes a
    built model's weights in place (a run from a kept model builds its own copy first)."""
    theirs = dict(base.bert.named_parameters())
    for name, p in model.bert.named_parameters():
        q = theirs.get(name)
        if not p.requires_grad and q is not None and (q.shape, q.dtype, q.device) == (p.shape, p.dtype, p.device):
            p.data = q.data


def lr_scales(model: BertForSequenceClassification, args: FinetuneArgs) -> dict[str, float]:
    """LR multipliers by parameter-name prefix: the head, and layer-wise decay down the encoder."""
    scales: dict[str, float] = {}
    L = len(model.bert.layers)
    if args.layer_decay != 1.0:
        scales["bert.embeddings."] = args.layer_decay**L
        for i in range(L):
            scales[f"bert.layers.{i}."] = args.layer_decay ** (L - 1 - i)
    scales["classifier."] = args.head_lr_scale
    return scales
