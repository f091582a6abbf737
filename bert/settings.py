"""Every setting of a BERT Explorer server, in one place: its name, default and what it does.

The person running the server sets them as environment variables (README, "Settings"). They are
read when used, through the four readers below, so a test or a server may change them at any
time; a value that is not of the right kind (or not positive, where that matters) means the
default. Nothing else in `bert/`, `app/` or `pages/` reads a BERT_EXPLORER_* variable.
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Setting:
    name: str
    default: object  # None: computed where it is used (said in `what`)
    what: str


SETTINGS = {
    s.name: s
    for s in [
        # model sources (app/resources.py, bert/checkpoint.py)
        Setting("BERT_EXPLORER_MODELS_DIR", "models/", "the one folder whose model folders students may load by name"),
        Setting("BERT_EXPLORER_ALLOW_HUB", False, "1: students may name Hugging Face Hub ids (downloads)"),
        Setting(
            "BERT_EXPLORER_MAX_HUB_MB", 500, "the most one hub download may weigh, in MB, checked before it starts"
        ),
        Setting(
            "BERT_EXPLORER_MAX_MODEL_MB", 2000, "the largest model loaded at all (fp32 parameters, heads included), MB"
        ),
        # training jobs (app/budget.py, app/jobs.py, app/training/)
        Setting("BERT_EXPLORER_MAX_JOBS", None, "training jobs at once, others queue (default: one a core)"),
        Setting("BERT_EXPLORER_MAX_QUEUE", 10, "jobs waiting for a slot; more are refused with a message"),
        Setting("BERT_EXPLORER_MAX_STEP_TOKENS", 2048, "tokens per training step (batch x tokens per sequence)"),
        Setting("BERT_EXPLORER_MAX_JOB_MB", 1024, "estimated memory of one training job, MB; shown before Start"),
        Setting(
            "BERT_EXPLORER_MAX_JOB_MINUTES", 15, "training time of one job; then it stops itself and keeps its model"
        ),
        Setting("BERT_EXPLORER_JOB_THREADS", 1, "torch threads of one training job"),
        Setting("BERT_EXPLORER_FINETUNE_BASE", "all-minilm-l6-v2", "the Fine-tuning page's starting model"),
        Setting("BERT_EXPLORER_DEVICE", "auto", "training device: auto (cuda, else mps, else cpu), cpu, cuda or mps"),
        # pages, memory and disk (app/resources.py, app/cache.py, app/runs_store.py, bert/corpus/fetch.py)
        Setting("BERT_EXPLORER_TORCH_THREADS", 1, "torch threads for the pages' inference"),
        Setting("BERT_EXPLORER_CACHE_MB", 256, "memory of the cached analyses, MB (0: no cache)"),
        Setting("BERT_EXPLORER_MAX_DISK_MB", 2000, "saved runs + job folders + tokenized files on disk, MB"),
        Setting("BERT_EXPLORER_CACHE", ".cache/", "folder for corpora, data sets, runs and job folders"),
        # the class board (app/board.py, pages/board.py)
        Setting("BERT_EXPLORER_BOARD", False, "1: the Class board page, where students post fine-tuning runs"),
    ]
}


def _raw(name: str) -> str:
    if name not in SETTINGS:
        raise KeyError(f"{name} is not a BERT Explorer setting")
    return os.environ.get(name, "").strip()


def number(name: str, default: float | None = None) -> float:
    """A positive number, else the default."""
    default = SETTINGS[name].default if default is None else default
    try:
        value = float(_raw(name))
    except ValueError:
        return float(default)
    return value if value > 0 else float(default)


def whole(name: str, default: int | None = None, minimum: int = 1) -> int:
    """A whole number ≥ `minimum`, else the default."""
    default = SETTINGS[name].default if default is None else default
    value = _raw(name)
    return int(value) if value.isdigit() and int(value) >= minimum else int(default)


def text(name: str) -> str:
    """The value as typed (stripped), '' when unset."""
    return _raw(name)


def flag(name: str) -> bool:
    """True only for 1."""
    return _raw(name) == "1"
