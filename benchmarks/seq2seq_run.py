"""seq2seq-exact: seconds until the Decoder page's default run (a fresh tiny BERT encoder and two
decoder layers on the default task, bert.train.seq2seq's defaults) reaches exact match 0.9 on the
held-out pairs, on one torch thread as a job in the app; the wall clock from the first step,
held-out scoring included, pair making and model building not. Run alone:

    python -m benchmarks.seq2seq_run
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace

from bert.seq2seq.tasks import task_pairs
from bert.train.seq2seq import Seq2SeqArgs, Seq2SeqEval, Seq2SeqStart, train_seq2seq

TARGET_EXACT = 0.9


def measure(limit_s: float = 600.0, **changes) -> dict:
    """{seconds (None: not reached within limit_s), cpu_seconds (the process's CPU time until then),
    step, exact_match, task, args}."""
    args = replace(Seq2SeqArgs(), threads=1, target_exact=TARGET_EXACT, **changes)  # the page's steps and schedule
    train, valid = task_pairs(args.task, args.train_pairs, args.valid_pairs, args.seed)
    stop = threading.Event()
    t0 = c0 = None
    last = None
    for e in train_seq2seq(args, train, valid, stop=stop):
        if isinstance(e, Seq2SeqStart):
            t0, c0 = time.perf_counter(), time.process_time()
        elif isinstance(e, Seq2SeqEval):
            last = e
            if e.exact_match >= TARGET_EXACT:
                return {"seconds": time.perf_counter() - t0, "cpu_seconds": time.process_time() - c0,
                        "step": e.step, "exact_match": e.exact_match, "task": args.task, "args": args}  # fmt: skip
            if time.perf_counter() - t0 > limit_s:
                stop.set()
    return {"seconds": None, "cpu_seconds": None, "step": last and last.step, "exact_match": last and last.exact_match,
            "task": args.task, "args": args}  # fmt: skip


def main() -> int:
    r = measure()
    a = r["args"]
    took = "not reached" if r["seconds"] is None else f"{r['seconds']:.1f} s"
    print(
        f"task {r['task']}: exact match {r['exact_match']} at step {r['step']}, "
        f"{took} on one thread "
        f"(tiny encoder {a.hidden} wide, {a.layers} layers; {a.decoder_layers} decoder layers; batch {a.batch_size}, "
        f"lr {a.lr:g}, held-out scoring every {a.eval_every} steps)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
