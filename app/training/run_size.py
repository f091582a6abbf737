"""The Fine-tuning page's run: its two sizes (a quick one for a class's turn, the full one), how
often the curve gets a point, and the FinetuneArgs the page starts (benchmarks/class_queue.py
starts the same). No streamlit here."""

from __future__ import annotations

from dataclasses import dataclass

from bert.train.finetune_args import FinetuneArgs
from bert.train.precision import server_precision

VALID_FRACTION = 0.2  # of a data set without a validation file
PAGE_EVALS = 10  # evaluations per epoch: points on the validation curve
EVAL_SAMPLE = 100  # the validation texts each mid-run point of the curve scores (the last one: all)
EVALS_HELP = (
    f"How often the validation curve gets a point. Each point while training scores the same {EVAL_SAMPLE} "
    "validation texts (a stratified sample, so the curve is cheap); the last one scores all of them, and the "
    "model kept is the best on the sample."
)


@dataclass(frozen=True)
class RunSize:
    label: str
    max_train: int  # training texts at most (a stratified sample)
    max_valid: int  # validation texts at most
    freeze_layers: int  # the lowest N encoder layers stay as they are
    note: str  # what it costs and gives, measured (benchmarks/class_queue.py, docs/PERFORMANCE.md)


RUN_SIZES = {
    "quick": RunSize(
        "Quick",
        1000,
        500,
        2,
        "1,000 training texts, the lowest 2 layers frozen: accuracy about 0.77 on Rotten Tomatoes (mean of 5 "
        "seeds; the full run: 0.79) in about half the full run's time (33 s vs 67 s on one core). For a class taking "
        "turns: the server trains a few runs at once and the rest wait in a queue.",
    ),
    "full": RunSize(
        "Full",
        2000,
        1000,
        0,
        "2,000 training texts, every layer trained: accuracy about 0.79 on Rotten Tomatoes (mean of 5 seeds). "
        "Best when few people are training at once.",
    ),
}
DEFAULT_SIZE = "quick"


def eval_every_for(steps_per_epoch: int, evals: int) -> int:
    """Steps between evaluations for at least `evals` points an epoch, its end included (0: only
    at the end of each epoch)."""
    return max(1, steps_per_epoch // evals) if evals > 1 else 0


def page_finetune_args(
    base_name: str, n_train: int, source: str | None, stem: str, evals: int, threads: int, **fields
) -> FinetuneArgs:
    """The FinetuneArgs of a run the page starts from the model `base_name`: `fields` are the
    settings the page shows (the backend's defaults for the rest; the server's precision, resolved)."""
    batch = fields.get("batch_size", FinetuneArgs.batch_size)
    fields.setdefault("precision", server_precision())
    fields.setdefault("checkpoint", base_name)
    return FinetuneArgs(
        data=source or "upload",
        eval_every=eval_every_for(-(-n_train // batch), evals),
        eval_sample=EVAL_SAMPLE,
        name=f"{base_name}-{stem}",
        threads=threads,
        **fields,
    )
