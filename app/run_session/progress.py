"""The live panels' lines: progress of a running job and the pre-training probe's guesses."""

from __future__ import annotations

import math

import pandas as pd

from bert.train.events import (
    FinetuneDone,
    FinetuneStart,
    FinetuneStep,
    PretrainEval,
    PretrainStart,
    PretrainStep,
    TaskHeadDone,
    TaskHeadStart,
    TaskHeadStep,
)
from bert.train.events import last as last_event  # the latest event of a class (the pages' name for it)


def fmt_seconds(s: float | None) -> str:
    if s is None or not math.isfinite(s):
        return "?"
    s = int(round(max(s, 0)))
    if s < 60:
        return f"{s} s"
    m, s = divmod(s, 60)
    if m < 60:
        return f"{m} min {s:02d} s"
    h, m = divmod(m, 60)
    return f"{h} h {m:02d} min"


def finetune_progress(metrics) -> tuple[float, str]:
    """(fraction done, one line: step, examples/s, time left) for the progress bar."""
    start = last_event(metrics, FinetuneStart)
    tr = last_event(metrics, FinetuneStep)
    if start is None:
        return 0.0, "Preparing: copying the model and tokenizing the texts…"
    total = start.steps
    done = last_event(metrics, FinetuneDone)
    if done is not None:
        return (
            float(min(done.step / max(total, 1), 1.0)),
            f"{'Stopped' if done.stopped else 'Finished'} at step {done.step:,} of {total:,}: "
            f"scoring the validation texts for the report…",
        )
    if tr is None:
        return 0.0, f"Step 0 of {total:,}: the first batch is running…"
    frac = float(min(max(tr.progress, 0.0), 1.0))
    return frac, (
        f"Step {tr.step:,} of {total:,} · {tr.examples_per_s:.1f} examples/s · about {fmt_seconds(tr.eta_s)} left"
    )


def task_head_progress(metrics) -> tuple[float, str]:
    """(fraction done, one line) of a per-token head's run for the progress bar."""
    start, step, done = (
        last_event(metrics, TaskHeadStart),
        last_event(metrics, TaskHeadStep),
        last_event(metrics, TaskHeadDone),
    )
    if start is None:
        return 0.0, "preparing the data…"
    if done is not None:
        return 1.0, f"{'Stopped' if done.stopped else 'Finished'} at step {done.step:,} of {start.steps:,}"
    if step is None:
        return 0.0, f"step 0 of {start.steps:,}: the first batch is running…"
    return float(min(max(step.progress, 0.0), 1.0)), f"step {step.step:,} of {start.steps:,}" + precision_note(start)


def pretrain_progress(metrics, total_steps: int, log_every: int) -> tuple[float, str]:
    start = last_event(metrics, PretrainStart)
    tr = last_event(metrics, PretrainStep)
    if start is None:
        return 0.0, "Preparing: building the vocabulary and tokenizing the corpus…"
    if tr is None:
        return 0.0, f"Step 0 of {total_steps:,}: the first steps are running…"
    step = tr.step
    per_step = tr.seconds / max(log_every, 1)
    eta = (total_steps - step) * per_step
    return (
        min(step / max(total_steps, 1), 1.0),
        f"Step {step:,} of {total_steps:,} · {tr.tokens_per_s:,.0f} tokens/s · about {fmt_seconds(eta)} left"
        + precision_note(start),
    )


def probe_frame(metrics, top: int = 3, next_word: bool = False) -> pd.DataFrame:
    """One row per evaluation: the probe sentence's top guesses for each [MASK], or (`next_word`)
    for the word after each of its last prefixes, the whole probe last."""
    rows = []
    for m in metrics:
        if not isinstance(m, PretrainEval) or not m.probe:
            continue
        row = {"step": m.step}
        n = len(m.probe)
        for i, cands in enumerate(m.probe):
            name = (f"after all but {n - 1 - i}" if i < n - 1 else "after it all") if next_word else f"[MASK] {i + 1}"
            row[name] = "  ".join(f"{t} ({p:.0%})" for t, p in cands[:top])
        rows.append(row)
    return pd.DataFrame(rows)


def precision_note(start) -> str:
    """ " · in bf16" (or fp32): the arithmetic a run's Start event says it trains in ("" when it says none)."""
    precision = getattr(start, "precision", None)
    return f" · in {precision}" if precision else ""


def finetune_start_line(start: FinetuneStart) -> str:
    """What a fine-tuning run trains on, for the live panel: texts, parameters, texts cut, precision."""
    return (
        f"{start.train_examples:,} training and {start.valid_examples:,} validation texts · "
        f"{start.trainable:,} of {start.parameters:,} parameters trained"
        + (f" · {start.truncated:,} texts cut at the maximum length" if start.truncated else "")
        + precision_note(start)
    )
