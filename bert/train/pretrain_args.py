"""`PretrainArgs`: the settings of one pre-training run (bert/train/pretrain.py trains with it), one
JSON line as a run records them."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from .device import DEVICES
from .next_word import MLM_NSP, OBJECTIVES
from .precision import PRECISIONS


@dataclass
class PretrainArgs:
    out: str  # run folder: checkpoint/, final/, snapshots/
    init: str = "minilm-l6"  # a loadable model to continue from, or "scratch"
    corpora: list[str] = field(default_factory=lambda: ["wiki", "brown", "bbc"])
    text_file: str | None = None  # a .txt of the user's instead of the corpora
    # scratch only: the new model's size, dropout and vocabulary ("default" or "train:<size>")
    layers: int = 4
    hidden: int = 256
    heads: int = 4
    dropout: float = 0.1  # hidden and attention dropout (0 speeds up tiny models)
    vocab: str = "default"
    max_seq_length: int = 128
    batch_size: int = 16
    steps: int = 1000
    lr: float = 1e-4
    head_lr_scale: float = 1.0  # LR multiplier for the MLM/NSP heads
    freeze_word_embeddings: bool = False  # keep the word embeddings (= MLM decoder) as loaded
    warmup_steps: int = 100
    weight_decay: float = 0.01
    clip: float = 1.0
    mlm_probability: float = 0.15
    whole_word: bool = False
    log_every: int = 10
    eval_every: int = 200
    eval_sequences: int = 256
    save_every: int = 200
    snapshot_every: int = 0  # also keep the model every N steps in snapshots/ (to average)
    valid_fraction: float = 0.05
    seed: int = 0
    threads: int | None = None
    probe: str = "the capital of france is [MASK] ."
    cache_tokens: bool = True  # keep the tokenized text in <cache>/tokenized (False: a
    # user's upload, tokenized in memory and never written)
    device: str = field(default="auto", metadata={"choices": DEVICES})  # auto: cuda, else mps, else cpu
    # fp32, or bf16 autocast (fp32 master weights); auto: bf16 where the processor has it (bert/train/precision.py)
    precision: str = field(default="fp32", metadata={"choices": PRECISIONS})
    stop_file: str | None = None  # the run stops (keeping its model) once this file exists: Stop under torchrun
    # "mlm+nsp": BERT's two games; "next-word": predict token t+1 from tokens <= t (causal mask,
    # the MLM head at every position, no NSP; bert/train/next_word.py)
    objective: str = field(default=MLM_NSP, metadata={"choices": OBJECTIVES})

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)
