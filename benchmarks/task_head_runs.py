"""tagger-pos and reader-demo: the Fine-tuning page's default runs of its two per-token shapes, on
one torch thread as the app's jobs run them (bert/train/task_head_train.py with the page's defaults,
TaskHeadArgs / for_task_head): the built-in parts of speech from the Brown Corpus on minilm-l6 ("label every
word"), and the project's template questions ("find the answer"). Seconds from loaded to the last
score, data making and model loading included, with the quality the kept model reached. Run alone:

    python -m benchmarks.task_head_runs
"""

from __future__ import annotations

import time

from bert.checkpoint.load import load
from bert.train.events import TaskHeadDone
from bert.train.task_head_args import for_task_head


def measure(head: str, threads: int = 1, **changes) -> dict:
    """{seconds, train_seconds, scores, steps, args} of one default run of `head`."""
    import threading

    from app.jobs.spec import JobSpec
    from app.jobs.task_head_job import task_head_events, task_head_spec  # the job's own data making, as the app runs it

    args = for_task_head(head, threads=threads, **changes)
    base = load(args.checkpoint)
    t0, c0 = time.perf_counter(), time.process_time()
    spec = JobSpec.from_dict(task_head_spec("", args.checkpoint, args, None).to_dict())
    done = next(
        e for e in task_head_events(spec, threading.Event(), base, load, threads) if isinstance(e, TaskHeadDone)
    )
    return {
        "seconds": time.perf_counter() - t0,
        "cpu_seconds": time.process_time() - c0,  # the core's own time: a loaded machine's waits left out
        "train_seconds": done.train_seconds,
        "scores": done.scores,
        "steps": done.steps,
        "args": args,
    }


def main() -> int:
    for head in ("tagger", "reader"):
        r = measure(head)
        a = r["args"]
        scores = ", ".join(f"{k} {v:.3f}" for k, v in r["scores"].items() if v is not None)
        print(
            f"{head}: {scores}; {r['seconds']:.1f} s in all, {r['cpu_seconds']:.1f} s of processor "
            f"({r['train_seconds']:.1f} s of training, {r['steps']} steps of {a.batch_size}, "
            f"max_length {a.max_length}, {a.max_train} examples at most) on one thread"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
