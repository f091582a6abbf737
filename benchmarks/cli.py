"""The command line of `python -m benchmarks` (see the package's docstring for the rows)."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import torch

from . import __doc__ as PACKAGE_DOC
from .bench import Bench
from .memory import worker
from .report import ALL_ROWS, format_markdown, format_table
from .runner import run


def _usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def default_threads() -> tuple[int, str]:
    """The usable cores, or 1 when the machine is already busy (1-minute load average above the
    core count): then every extra OpenMP thread mostly waits for the others at each operation's
    barrier, and on a 2-core machine under load a 2-thread run was 5-10x slower than 1 thread."""
    cores = _usable_cores()
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return cores, "the usable cores"
    if cores > 1 and load > cores:
        return 1, f"load average {load:.1f} > {cores} cores, so 1 thread (--threads to override)"
    return cores, "the usable cores"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=PACKAGE_DOC.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="fewer repeats, no browser (under 3 minutes)")
    p.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    p.add_argument("--markdown", metavar="PATH", help="also write the table as Markdown")
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch.set_num_threads for both libraries (default: the usable cores, or 1 "
        "when the load average is above the core count)",
    )
    p.add_argument("--only", metavar="ROWS", help="comma-separated row-name prefixes, e.g. infer-base,pretrain")
    p.add_argument(
        "--tiny",
        action="store_true",
        help="a tiny config for every model row, a small tokenization sample, no server "
        "or browser (for the test: keeps the bench working, measures nothing useful)",
    )
    p.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="what the timing rows and targets use: wall-clock time (default) or the "
        "process's CPU time (steadier on a loaded machine with --threads 1)",
    )
    p.add_argument("--profile", action="store_true", help="print torch profiler tables of the rows run")
    p.add_argument("--worker", choices=("ours", "theirs"), help=argparse.SUPPRESS)
    p.add_argument("--stages", default="load,finetune,pretrain", help=argparse.SUPPRESS)
    p.add_argument("--hf-dir", help=argparse.SUPPRESS)
    return p


def main(argv: list[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    args.threads_reason = "--threads"
    if args.threads is None:
        args.threads, args.threads_reason = default_threads()
    if args.threads < 1:
        p.error("--threads must be at least 1")
    if args.only:
        unknown = [s for s in args.only.split(",") if s.strip() and not any(r.startswith(s.strip()) for r in ALL_ROWS)]
        if unknown:
            p.error(f"--only: no row starts with {', '.join(unknown)} (rows: {', '.join(ALL_ROWS)})")
    torch.set_num_threads(args.threads)
    if args.worker:
        stages = [x for x in args.stages.split(",") if x]
        print(json.dumps(worker(args.worker, stages, args.tiny, args.hf_dir)), flush=True)
        return 0
    bench = Bench(args)
    result = run(bench)
    result["profiles"] = bench.profiles
    print("\n" + format_table(result), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2, default=float) + "\n", encoding="utf-8")
    if args.markdown:
        Path(args.markdown).write_text(format_markdown(result) + "\n", encoding="utf-8")
    return 0
