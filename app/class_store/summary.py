"""What a run posted to the class board says: its task, settings, final scores and two thinned
curves, nothing of its data but the data set's name (`summary_of`), kept to known fields of the
right kinds and sizes (`clean_summary`), and what the best runs share.

A run's scores are fractions: its MAIN score ("accuracy", the name a classifier's posts have always
had) sorts the board and draws its validation curve, its OTHER one is shown beside it
(TASK_SCORES: a tagger's word accuracy and entity F1, a reader's F1 and exact match)."""

from __future__ import annotations

import json
import time
from pathlib import PurePath
from typing import TYPE_CHECKING

from bert.train.events import FinetuneEval, FinetuneStep, TaskHeadEval, TaskHeadStep, of_type

if TYPE_CHECKING:
    from collections.abc import Callable

    import pandas as pd

    from bert.train.finetune_args import FinetuneArgs
    from bert.train.task_head_args import TaskHeadArgs

from ..formatting import finite_float

MAX_POINTS = 200  # per curve
TEXT_CHARS = 80  # of a model or data set name

# per task (bert/task_heads.py's keys): the labels of its (main, other) score; a post names no task: a classifier's
TASK_SCORES = {
    "classifier": ("accuracy", None),
    "tagger": ("word accuracy", "entity F1"),
    "reader": ("F1", "exact match"),
}

# the posted settings: key, label in the table and in "what the best runs share"
SETTING_LABELS = {
    "base_model": "base model",
    "lr": "learning rate",
    "batch_size": "batch size",
    "epochs": "epochs",
    "pooling": "pooling",
    "max_length": "max length",
    "dataset": "data set",
}


def _text(v) -> str | None:
    return None if v is None else str(v)[:TEXT_CHARS]


def _thin(points, n: int = MAX_POINTS) -> list[list[float]]:
    """At most `n` finite (step, value) points, evenly spread, the last one kept."""
    pts = []
    for p in list(points or [])[: 100 * n]:
        try:
            x, y = finite_float(p[0]), finite_float(p[1])
        except (TypeError, IndexError, KeyError):
            continue
        if x is not None and y is not None:
            pts.append([x, y])
    if len(pts) > n:
        pts = [pts[round(i * (len(pts) - 1) / (n - 1))] for i in range(n)]
    return pts


def clean_summary(s: dict) -> dict:
    """Only the known fields, of the right kinds and sizes."""
    s = s if isinstance(s, dict) else {}
    out = {
        "task": s.get("task") if s.get("task") in TASK_SCORES else "classifier",
        "base_model": _text(s.get("base_model")),
        "lr": finite_float(s.get("lr")),
        "batch_size": finite_float(s.get("batch_size")),
        "epochs": finite_float(s.get("epochs")),
        "pooling": _text(s.get("pooling")),
        "max_length": finite_float(s.get("max_length")),
        "dataset": _text(s.get("dataset")),
        "accuracy": finite_float(s.get("accuracy")),
        "other_score": finite_float(s.get("other_score")),
        "val_accuracy": _thin(s.get("val_accuracy")),
        "train_loss": _thin(s.get("train_loss")),
    }
    for k in ("batch_size", "epochs", "max_length"):
        if out[k] is not None:
            out[k] = int(out[k])
    return out


def _dataset(data) -> str | None:
    data = str(data or "")
    return PurePath(data.replace("\\", "/")).name.replace("builtin:", "") if data else None


def summary_of(res: dict) -> dict:
    """The posted summary of a fine-tuning result dict (app/training), a classifier's or a per-token
    head's: settings, scores and the curves. Nothing from the data but its name."""
    from bert.train.task_head_args import (
        TaskHeadArgs,  # here, not at import: it imports torch, and Home draws before any
    )

    info = res.get("info") or {}
    args: FinetuneArgs | TaskHeadArgs = info["args"]
    metrics = res.get("metrics") or []
    settings = {
        "base_model": info.get("base_name") or args.checkpoint,
        "lr": args.lr,
        "batch_size": args.batch_size,
        "epochs": args.epochs,
        "max_length": args.max_length,
        "dataset": _dataset(args.data),
        "train_loss": [(m.step, m.loss) for m in of_type(metrics, (TaskHeadStep, FinetuneStep))],
    }
    if isinstance(args, TaskHeadArgs):
        return clean_summary({**settings, **_head_scores(args.head, res.get("done"), metrics)})
    fin = res.get("done")
    acc = (res.get("report") or {}).get("accuracy", fin.accuracy if fin is not None else None)
    return clean_summary(
        {
            **settings,
            "pooling": args.pooling,
            "accuracy": acc,
            "val_accuracy": [(m.step, m.accuracy) for m in of_type(metrics, FinetuneEval)],
        }
    )


def _head_scores(head: str, done, metrics) -> dict:
    """A tagger's word accuracy (main) and entity F1, a reader's F1 (main) and exact match (the
    trainer's percent made fractions), and the main one's validation curve."""
    main, other, scale = ("accuracy", "f1", 1.0) if head == "tagger" else ("f1", "exact_match", 0.01)

    def frac(v):
        v = finite_float(v)
        return None if v is None else v * scale

    scores = (done.scores if done is not None else None) or {}
    return {
        "task": head,
        "accuracy": frac(scores.get(main)),
        "other_score": frac(scores.get(other)),
        "val_accuracy": [(e.step, frac(e.scores.get(main))) for e in of_type(metrics, TaskHeadEval)],
    }


def fmt_setting(key: str, value) -> str:
    if value is None:
        return "?"
    if key == "lr":
        return f"{value:g}"
    return str(value)


def what_the_best_share(entries: list[dict], top: int = 3) -> list[str]:
    """The settings equal across the `top` best runs by accuracy, e.g. "pooling: mean"; none
    when fewer than two runs have an accuracy."""
    scored = sorted((e for e in entries if finite_float(e.get("accuracy")) is not None), key=lambda e: -e["accuracy"])
    best = scored[:top]
    if len(best) < 2:
        return []
    lines = []
    for key, label in SETTING_LABELS.items():
        values = {json.dumps(e.get(key)) for e in best}
        if len(values) == 1 and best[0].get(key) is not None:
            lines.append(f"{label}: {fmt_setting(key, best[0][key])}")
    return lines


def runs_table(runs: list[dict], name_of: Callable[[str], str] | None = None) -> pd.DataFrame:
    """The Class board's table of one task's posted runs, the best first: their scores, and the
    settings any of them has; with `name_of` (the teacher's own screen: a nickname's student's
    real name), a "name" column beside the nickname."""
    import pandas as pd  # here: the board's store imports this module, and a page's start needs no pandas

    main, other = TASK_SCORES[runs[0]["task"]] if runs else TASK_SCORES["classifier"]
    keys = [k for k in SETTING_LABELS if any(r.get(k) is not None for r in runs)]
    rows = [
        {
            "nickname": r["nickname"],
            **({"name": name_of(r["nickname"])} if name_of else {}),
            f"{main} %": _pct(r["accuracy"]),
            **({f"{other} %": _pct(r["other_score"])} if other else {}),
            **{SETTING_LABELS[k]: fmt_setting(k, r.get(k)) for k in keys},
            "posted": time.strftime("%H:%M", time.localtime(r["posted"])),
        }
        for r in runs
    ]
    df = pd.DataFrame(rows)
    return df.sort_values(f"{main} %", ascending=False, na_position="last") if len(df) else df


def _pct(v: float | None) -> float | None:
    return None if v is None else round(100 * v, 1)


def entry_name(r: dict) -> str:
    """A posted run in one line, as the teacher's remove menu names it."""
    main = TASK_SCORES[r["task"]][0]
    named = "" if r["task"] == "classifier" else f"{main} "  # another task's score says what it is
    acc = f"no {main}" if r["accuracy"] is None else f"{named}{100 * r['accuracy']:.1f} %"
    return f"{r['nickname']} · {acc} · posted {time.strftime('%H:%M', time.localtime(r['posted']))}"
