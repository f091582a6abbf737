"""One run: the machine it ran on and the sections in order, each adding its rows to the `Bench`."""

from __future__ import annotations

import os
import platform
import shutil
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

import torch

from . import app_rows, causes_rows, class_rows, features_rows, memory, model_rows, save_views
from .bench import Bench
from .models import build_setup, hf
from .report import header
from .timing import matmul_gflops


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine(b: Bench, peak: dict, transformers_version: str) -> dict:
    """What the run's figures depend on: the machine, the libraries, the options."""
    args = b.args
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    return {
        "cpu": cpu_name(),
        "cores": os.cpu_count(),
        "threads": args.threads,
        "loadavg": list(load),
        "torch": torch.__version__,
        "transformers": transformers_version,
        "python": platform.python_version(),
        "quick": bool(args.quick),
        "tiny": bool(args.tiny),
        "clock": args.clock,
        "threads_reason": getattr(args, "threads_reason", ""),
        "matmul_gflops_best": peak["best"],
        "matmul_gflops_median": peak["median"],
    }


def run(b: Bench) -> dict:
    """Every section in order; the result as `--json` writes it."""
    args = b.args
    t_start = time.perf_counter()
    torch.set_num_threads(args.threads)
    tmp = Path(tempfile.mkdtemp(prefix="bert-bench-"))
    try:
        t = hf()
        peak = matmul_gflops(5 if b.quick else 10)
        b.meta = machine(b, peak, t.__version__)
        print(header(b.meta), flush=True)
        sections = b.meta["section_seconds"] = {}
        t0 = time.perf_counter()
        setup = build_setup(args.tiny, args.threads, tmp)
        sections["setup"] = time.perf_counter() - t0
        b.meta["rss_after_loading_default_mb"] = memory.rss_mb()
        for name, fn in (
            ("inference", lambda: model_rows.inference(b, setup)),
            ("training", lambda: model_rows.training(b, setup, peak)),
            ("tokenization", lambda: model_rows.tokenization(b, setup)),
            ("app", lambda: app_rows.app_work(b, setup)),
            ("startup", lambda: app_rows.startup(b)),
            ("memory", lambda: memory.memory(b, setup)),
            ("teaching", lambda: class_rows.teaching(b)),
            ("causes", lambda: causes_rows.causes(b, setup)),
            ("features", lambda: features_rows.features(b, setup)),
            ("saved views", lambda: save_views.rows(b, setup)),
        ):
            t0 = time.perf_counter()
            fn()
            sections[name] = round(time.perf_counter() - t0, 1)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    b.meta["seconds"] = time.perf_counter() - t_start
    b.meta["loadavg_end"] = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    return {"meta": b.meta, "rows": [asdict(r) for r in b.rows], "skipped": b.skipped}
