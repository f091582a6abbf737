"""A class's turn at fine-tuning: every student presses Start on the Fine-tuning page's default run
at the same moment; how long until the last run has finished (trained, reported, saved under its
run code), as the app's job manager runs them.

    python -m benchmarks.class_queue                              # 30 students, the page's defaults
    python -m benchmarks.class_queue --students 4 --json out.json
    python -m benchmarks.class_queue --size full --max-jobs 1     # the full-size run, one at a time
    python -m benchmarks.class_queue --students 1 --precision fp32  # fp32 forced (default: the server's)

The jobs are the app's own (app/training: finetune_job + keep_run, on the built-in data set the
page opens with), under the server's settings for jobs at once (BERT_EXPLORER_MAX_JOBS) and torch
threads per job (BERT_EXPLORER_JOB_THREADS) unless given; the queue is made long enough for the
class. Runs are saved to a temporary cache folder, removed afterwards.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import tempfile
import time


def default_specs(students: int, size: str, threads: int, seed: int):
    """(base model, JobSpec of every student's default run: the page's, each its own student)."""
    from app.jobs.spec import finetune_spec
    from app.run_session.run_size import PAGE_EVALS, RUN_SIZES, VALID_FRACTION, page_finetune_args
    from app.training.data import builtin_data, split_data
    from app.training.start import default_finetune_base
    from bert import load
    from bert.data import datasets

    base = load(default_finetune_base())
    data = builtin_data(next(iter(datasets.available_datasets())))
    run = RUN_SIZES[size]
    train, valid = split_data(data, None, VALID_FRACTION, seed, run.max_train, run.max_valid)
    specs = []
    for i in range(students):
        stem = data.source.replace("builtin:", "")
        args = page_finetune_args(
            base.name, len(train), data.source, stem, PAGE_EVALS, threads, freeze_layers=run.freeze_layers, seed=seed
        )
        info = {"code": f"S{i:05d}", "title": f"student {i}", "base_name": base.name}
        specs.append(
            finetune_spec(info["code"], base.name, train, valid, args, f"s{i}", title=info["title"], info=info)
        )
    return base, specs


def _jobs(students: int, size: str, threads: int, seed: int):
    """(title, JobFn) of every student's default run."""
    from app.jobs.worker import run_job

    base, specs = default_specs(students, size, threads, seed)
    return [(spec.title, lambda stop, spec=spec: run_job(spec, stop, base=base)) for spec in specs]


@contextlib.contextmanager
def environment(name: str, value: str):
    """The variable `name` set to `value` while inside; as it was afterwards."""
    before = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before


@contextlib.contextmanager
def runs_saved_in_a_temporary_cache():
    """The runs' saved models go to a folder removed afterwards (the data sets were read before)."""
    with tempfile.TemporaryDirectory() as cache, environment("BERT_EXPLORER_CACHE", cache):
        yield


def class_turn(
    students: int = 30, size: str = "quick", max_jobs: int | None = None, threads: int | None = None, seed: int = 0
) -> dict:
    """Submit every student's run at once; wait for all; the figures."""
    from app.jobs.local import JobManager, default_max_running
    from app.jobs.worker import job_threads
    from bert.train.events import FinetuneDone, last
    from bert.train.precision import server_precision

    max_jobs = max_jobs or default_max_running()
    threads = threads or job_threads()
    jobs = _jobs(students, size, threads, seed)
    jm = JobManager(max_running=max_jobs, max_queue=students)
    with runs_saved_in_a_temporary_cache():
        t0 = time.time()
        submitted = [jm.submit(f"s{i}", "finetune", fn, title=title) for i, (title, fn) in enumerate(jobs)]
        for job in submitted:
            jm.wait(job, timeout=3600)
            job.drain()
    last_end = max(j.finished for j in submitted)
    accs = [d.accuracy for d in (last(j.metrics, FinetuneDone) for j in submitted) if d is not None]
    runs = [j.finished - j.started for j in submitted]
    return {
        "students": students,
        "size": size,
        "max_jobs": max_jobs,
        "threads_per_job": threads,
        "minutes_until_last": round((last_end - t0) / 60, 2),
        "run_seconds_mean": round(statistics.mean(runs), 1),
        "run_seconds_max": round(max(runs), 1),
        "accuracy_mean": round(statistics.mean(accs), 4) if accs else None,
        "precision": server_precision(),
        "errors": [j.error for j in submitted if j.status != "done"],
    }


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(prog="python -m benchmarks.class_queue", description=__doc__.split("\n\n")[0])
    p.add_argument("--students", type=int, default=30)
    p.add_argument("--size", default="quick", help="the page's run size: quick (the default) or full")
    p.add_argument("--max-jobs", type=int, default=None, help="jobs at once (default: the server's)")
    p.add_argument("--threads", type=int, default=None, help="torch threads per job (default: the server's)")
    p.add_argument(
        "--precision", default=None, help="auto, fp32 or bf16 (default: the server's, BERT_EXPLORER_PRECISION)"
    )
    p.add_argument("--json", default=None, help="also write the result here")
    a = p.parse_args(argv)
    if a.precision:
        os.environ["BERT_EXPLORER_PRECISION"] = a.precision
    res = class_turn(a.students, a.size, a.max_jobs, a.threads)
    print(json.dumps(res))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    return res


if __name__ == "__main__":
    main()
