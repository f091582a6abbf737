"""The class rows: what a class waits for, against the targets. Each row's "theirs" is
its target, so the ratio says how far under (< 1) or over it the run was.

- plateau-default: seconds until the Pre-training page's default run leaves the unigram plateau
  (benchmarks/plateau.py; one torch thread, as a job in the app), target 180 s;
- plateau-next-word: the same with the page's other game, the next word (the "next-word" recipe of
  benchmarks/plateau.py: the default's settings, objective "next-word"), target 180 s;
- seq2seq-exact: seconds until the Decoder page's default run reaches exact match 0.9 on its
  held-out pairs (benchmarks/seq2seq_run.py; one torch thread, as a job in the app), target 180 s;
- tagger-pos, reader-demo: the Fine-tuning page's default runs of "label every word" (Brown parts of
  speech on minilm-l6) and "find the answer" (the template questions), one torch thread, loaded to
  scored (benchmarks/task_head_runs.py), targets 60 s and 120 s, with the quality reached;
- finetune-run: the 2,000-snippet, one-epoch fine-tuning run of docs/MODELS.md (`python -m bert
  finetune`, the backend's defaults, the bench's threads), target 20 s, with its accuracy;
- class-30: 30 students' default runs queued at once through the app's job manager
  (benchmarks/class_queue.py), minutes until the last one ends, target 10; about ten minutes of
  work, so only with `--only class`.
- course-300: 300 students' default runs on W one-CPU Ray workers (benchmarks/course_queue.py):
  a bounded number of runs measured on W = 1 and W = 2, the 300 projected from the throughput on
  W = 2 (minutes), target 10; the W a course needs for 10 minutes in the note. Only with
  `--only course` (Ray and root for the network namespace; about 10 minutes here).
- load-paste-10: 10 students pasting new 2,000-character texts into Attention for a minute,
  against the real server (benchmarks/paste_load.py): the server's peak memory (VmHWM), target
  1,024 MB, with the page steps' times and the memory left once the sessions closed.

Not in --quick or --tiny (minutes each).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from .report import Row, check

if TYPE_CHECKING:
    from .bench import Bench

CLASS_ROWS = [
    "plateau-default",
    "plateau-next-word",
    "seq2seq-exact",
    "tagger-pos",
    "reader-demo",
    "finetune-run",
    "class-30",
    "course-300",
    "load-paste-10",
]
TARGETS = {
    "plateau-default": 180.0,
    "plateau-next-word": 180.0,
    "seq2seq-exact": 180.0,
    "tagger-pos": 60.0,
    "reader-demo": 120.0,
    "finetune-run": 20.0,
    "class-30": 10.0,
    "course-300": 10.0,
    "load-paste-10": 1024.0,  # MB: the server's peak
}


def _row(name: str, what: str, unit: str, ours: float, note: str, extra: dict | None = None) -> Row:
    target = TARGETS[name]
    row = Row(name, f"{what} (theirs: the target)", unit, ours, target, ours / target, note=note, extra=extra or {})
    return check(row, 1.0)


def _plateau(b: Bench, row: str = "plateau-default", recipe: str = "default", game: str = "") -> None:
    from . import plateau

    r = plateau.measure(recipe, plateau.page_args(**plateau.RECIPES[recipe]), limit_s=600.0)
    seconds = r["seconds"] if r["seconds"] is not None else float("inf")
    note = (
        f"left at step {r['step']} (top-1 {r['top1']} vs baseline {r['baseline']})"
        if r["seconds"] is not None
        else "still on the plateau after 600 s"
    )
    b.add(_row(row, f"Pre-training page's default run{game} leaves the plateau", "s", seconds, note))


def _seq2seq(b: Bench) -> None:
    from . import seq2seq_run

    r = seq2seq_run.measure(limit_s=600.0)
    seconds = r["seconds"] if r["seconds"] is not None else float("inf")
    a = r["args"]
    note = (
        f"{r['task']}: exact match {r['exact_match']:.2f} at step {r['step']}; tiny encoder {a.hidden} wide, "
        f"{a.layers} layers, {a.decoder_layers} decoder layers"
        if r["seconds"] is not None
        else f"exact match {r['exact_match']} after 600 s"
    )
    b.add(_row("seq2seq-exact", "Decoder page's default run reaches held-out exact match 0.9", "s", seconds, note))


def _head_run(b: Bench, row: str, head: str, what: str) -> None:
    from . import task_head_runs

    r = task_head_runs.measure(head)
    scores = ", ".join(f"{k.replace('_', ' ')} {v:.3f}" for k, v in r["scores"].items() if v is not None)
    note = f"{scores}; {r['cpu_seconds']:.1f} s of processor, {r['steps']} steps, one thread"
    b.add(_row(row, what, "s", r["seconds"], note, {**r["scores"], "cpu_seconds": r["cpu_seconds"]}))


def _finetune_run(b: Bench) -> None:
    from app.training.data import builtin_data, split_data
    from bert.train.events import FinetuneDone
    from bert.train.finetune import finetune
    from bert.train.finetune_args import FinetuneArgs

    data = builtin_data("rotten_tomatoes")
    train, valid = split_data(data, None, 0.2, 0, 2000, 1000)
    args = FinetuneArgs(data="builtin:rotten_tomatoes", threads=b.args.threads)
    t0 = time.perf_counter()
    done = next(m for m in finetune(args.checkpoint, train, valid, args) if isinstance(m, FinetuneDone))
    wall = time.perf_counter() - t0
    note = (
        f"accuracy {done.accuracy:.3f} on 1,000 snippets; {done.train_seconds:.1f} s of training, "
        f"{done.examples_per_s:.1f} examples/s, {b.args.threads} thread(s)"
    )
    extra = {"accuracy": done.accuracy, "train_seconds": done.train_seconds}
    b.add(_row("finetune-run", "2,000 x 1 epoch Rotten Tomatoes fine-tuning, loaded to scored", "s", wall, note, extra))


def _class(b: Bench) -> None:
    from . import class_queue

    r = class_queue.class_turn(30)
    note = (
        f"{r['max_jobs']} job(s) at once, {r['threads_per_job']} thread(s) each; a run {r['run_seconds_mean']} s "
        f"on average; accuracy {r['accuracy_mean']}; errors {len(r['errors'])}"
    )
    b.add(
        _row(
            "class-30",
            "30 students' default runs queued at once, until the last ends",
            "min",
            r["minutes_until_last"],
            note,
            r,
        )
    )


def _course(b: Bench) -> None:
    from . import course_queue

    r = course_queue.course([1, 2], runs=6)
    m1, m2 = r["measured"][1], r["measured"][2]
    note = (
        f"measured: a default run {r['run_seconds']} s on one worker; 6 runs in {m1['minutes_until_last']} min on "
        f"W=1, {m2['minutes_until_last']} min on W=2 ({m2['runs_per_minute']} runs/min); projected: 300 runs "
        f"{r['projected_minutes'][1]} min on W=1, {r['projected_minutes'][2]} min on W=2; "
        f"W={r['workers_for_target']} one-core workers for {r['target_min']:g} min; "
        f"errors {len(m1['errors']) + len(m2['errors'])}"
    )
    what = "300 students' default runs on 2 Ray workers, projected from 6 measured, until the last ends"
    b.add(_row("course-300", what, "min", r["projected_minutes"][2] or float("inf"), note, r))


def _paste(b: Bench) -> None:
    from . import paste_load

    r = paste_load.paste_load(sessions=10, seconds=60.0)
    note = (
        f"{r['steps']} analyses of 512 tokens; a step {r['step_p50_s']} s median, {r['step_max_s']} s at most; "
        f"the model loaded {r['loaded_mb']} MB, {r['end_mb']} MB once the sessions closed; server "
        f"{r['cpu_s_per_step']} s of processor a step; errors {len(r['errors'])}"
    )
    what = "10 students pasting 2,000-character texts into Attention for a minute, server peak"
    b.add(_row("load-paste-10", what, "MB", float(r["peak_mb"]), note, r))


def teaching(b: Bench) -> None:
    if not b.wants_any(CLASS_ROWS):
        return
    if b.quick:
        for name in CLASS_ROWS:
            b.skip(name, "minutes each: not in --quick or --tiny")
        return
    if b.wants("plateau-default"):
        _plateau(b)
    if b.wants("plateau-next-word"):
        _plateau(b, "plateau-next-word", "next-word", " with the next-word game")
    if b.wants("seq2seq-exact"):
        _seq2seq(b)
    if b.wants("tagger-pos"):
        _head_run(b, "tagger-pos", "tagger", "Fine-tuning page's default part-of-speech run, loaded to scored")
    if b.wants("reader-demo"):
        _head_run(b, "reader-demo", "reader", "Fine-tuning page's default question-answering run, loaded to scored")
    if b.wants("finetune-run"):
        _finetune_run(b)
    if any(p.startswith("class") for p in b.only):
        _class(b)
    else:
        b.skip("class-30", "about ten minutes: run it with --only class")
    if b.wants("load-paste-10"):
        _paste(b)
    if any(p.startswith("course") for p in b.only):
        _course(b)
    else:
        b.skip("course-300", "a Ray cluster, about ten minutes: run it with --only course")
