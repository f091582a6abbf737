"""`FinetuneArgs`: the settings of one fine-tuning run, checked against the base model before it
starts (bert/train/finetune.py trains with it)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..config import POOLINGS
from ..data.labelled import DEFAULT_MAX_ROWS
from ..errors import TrainingError
from .device import DEVICES, resolve_device
from .precision import PRECISIONS, resolve_precision


# The defaults are the best of the settings measured on Rotten Tomatoes (docs/MODELS.md: "Which one to
# fine-tune"); the other settings tried there were not better.
@dataclass
class FinetuneArgs:
    data: str  # a labelled file, or "builtin:rotten_tomatoes" / "builtin:tweets"
    val_data: str | None = None  # a validation file; else a stratified split of data
    text_col: str | None = None  # override the detected columns
    label_col: str | None = None
    checkpoint: str = "all-minilm-l6-v2"  # any loadable model (built-in name or folder)
    out: str | None = None  # folder for the fine-tuned model (command line)
    name: str | None = None  # display name of the result
    pooling: str = "mean"  # cls | mean | max
    freeze_embeddings: bool = True  # the word/position embeddings stay as they are (faster)
    freeze_layers: int = 0  # freeze the lowest N encoder layers
    max_length: int = 64  # tokens per text, [CLS] and [SEP] included
    batch_size: int = 16
    lr: float = 2e-4  # encoder learning rate (peak)
    head_lr_scale: float = 10.0  # the new head learns this many times faster
    layer_decay: float = 1.0  # each lower layer's LR is this times the one above (LLRD)
    epochs: int = 1
    warmup_ratio: float = 0.1
    weight_decay: float = 0.01
    clip: float = 1.0  # gradient norm clipping
    dropout: float = 0.1  # before the classifier head
    encoder_dropout: float | None = None  # hidden/attention dropout in the encoder (None: the checkpoint's)
    seed: int = 0
    eval_every: int = 0  # steps between evaluations; 0: at the end of each epoch
    log_every: int = 1  # steps between "train" events
    valid_fraction: float = 0.2  # of data, when there is no val_data
    max_train: int | None = None  # use at most this many training texts (stratified)
    max_valid: int | None = None  # evaluate on at most this many texts (stratified)
    # Mid-run evaluations score a fixed stratified sample of this many validation texts (0: all),
    # so a curve can have many points cheaply; the run's last evaluation and the kept model's
    # accuracy use every validation text. The best model is chosen on the sample.
    eval_sample: int = 0
    max_rows: int = DEFAULT_MAX_ROWS  # rows read from a file at most (stratified sample)
    threads: int | None = None  # torch threads (None: torch's default)
    device: str = field(default="auto", metadata={"choices": DEVICES})  # auto: cuda, else mps, else cpu
    # fp32, or bf16 autocast (fp32 master weights); auto: bf16 where the processor has it (bert/train/precision.py)
    precision: str = field(default="fp32", metadata={"choices": PRECISIONS})

    def check(self, max_positions: int | None = None, num_layers: int | None = None) -> None:
        """Raise TrainingError for settings that make no sense (not for ones that merely diverge)."""

        def bad(msg):
            raise TrainingError(msg)

        if self.pooling not in POOLINGS:
            bad(f"pooling must be one of {', '.join(POOLINGS)}, not {self.pooling!r}")
        if self.batch_size < 1:
            bad("the batch size must be at least 1")
        if self.epochs < 1:
            bad("train for at least one epoch")
        if not (math.isfinite(self.lr) and self.lr > 0):
            bad(f"the learning rate must be a positive number, not {self.lr}")
        if not (math.isfinite(self.head_lr_scale) and self.head_lr_scale > 0):
            bad("head_lr_scale must be positive")
        if not 0.0 < self.layer_decay <= 1.0:
            bad("layer_decay must lie in (0, 1]")
        if not 0.0 <= self.warmup_ratio < 1.0:
            bad("the warm-up ratio must lie in [0, 1)")
        if not 0.0 <= self.dropout < 1.0 or not 0.0 <= (self.encoder_dropout or 0.0) < 1.0:
            bad("dropout must lie in [0, 1)")
        if self.max_length < 3:
            bad("max_length must be at least 3 tokens ([CLS], a word, [SEP])")
        if max_positions is not None and self.max_length > max_positions:
            bad(f"max_length {self.max_length} is more than the model's {max_positions} positions")
        if self.freeze_layers < 0 or (num_layers is not None and self.freeze_layers > num_layers):
            bad(f"freeze_layers must lie between 0 and {num_layers}")
        if self.eval_every < 0 or self.log_every < 1 or self.eval_sample < 0:
            bad("eval_every and eval_sample must be >= 0 and log_every >= 1")
        resolve_precision(self.precision, resolve_device(self.device))  # unknown names, or what this machine lacks
