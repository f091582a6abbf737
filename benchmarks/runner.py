"""One run: which rows are wanted, the rows measured and skipped, the sections in order."""

from __future__ import annotations

import os
import platform
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import torch

from . import app_rows, class_rows, memory, model_rows
from .models import build_setup, hf
from .report import Row, format_row, header
from .timing import Timing, matmul_gflops, profile_top


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


class Bench:
    """The state of one run; the sections (model_rows, app_rows, memory) add rows to it."""

    def __init__(self, args):
        self.args = args
        self.quick = args.quick or args.tiny
        self.only = [s.strip() for s in (args.only or "").split(",") if s.strip()]
        self.clock = args.clock
        self.rows: list[Row] = []
        self.skipped: list[dict] = []
        self.meta: dict = {}
        self.profiles: list[str] = []
        self.train_times: dict[str, Timing] = {}

    # selection
    def wants(self, name: str) -> bool:
        return not self.only or any(name.startswith(p) for p in self.only)

    def wants_any(self, names) -> bool:
        return any(self.wants(n) for n in names)

    def add(self, row: Row) -> None:
        if self.wants(row.name):
            self.rows.append(row)
            print(format_row(row), flush=True)

    def skip(self, name: str, reason: str) -> None:
        if self.wants(name):
            self.skipped.append({"name": name, "reason": reason})
            print(f"  {name:<22} skipped: {reason}", flush=True)

    def reps(self, full: int, quick: int) -> int:
        return quick if self.quick else full

    def profile(self, title: str, f: Callable[[], object], calls: int = 3) -> None:
        if self.args.profile:
            text = profile_top(f, calls, title=title)
            self.profiles.append(text)
            print(text, flush=True)

    def _machine(self, peak: dict, transformers_version: str) -> dict:
        args = self.args
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

    # ---- run everything
    def run(self) -> dict:
        args = self.args
        t_start = time.perf_counter()
        torch.set_num_threads(args.threads)
        tmp = Path(tempfile.mkdtemp(prefix="bert-bench-"))
        try:
            t = hf()
            peak = matmul_gflops(5 if self.quick else 10)
            self.meta = self._machine(peak, t.__version__)
            print(header(self.meta), flush=True)
            sections = self.meta["section_seconds"] = {}
            t0 = time.perf_counter()
            setup = build_setup(args.tiny, args.threads, tmp)
            sections["setup"] = time.perf_counter() - t0
            self.meta["rss_after_loading_default_mb"] = memory.rss_mb()
            for name, fn in (
                ("inference", lambda: model_rows.inference(self, setup)),
                ("training", lambda: model_rows.training(self, setup, peak)),
                ("tokenization", lambda: model_rows.tokenization(self, setup)),
                ("app", lambda: app_rows.app_work(self, setup)),
                ("startup", lambda: app_rows.startup(self)),
                ("memory", lambda: memory.memory(self, setup)),
                ("teaching", lambda: class_rows.teaching(self)),
            ):
                t0 = time.perf_counter()
                fn()
                sections[name] = round(time.perf_counter() - t0, 1)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        self.meta["seconds"] = time.perf_counter() - t_start
        self.meta["loadavg_end"] = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
        return {"meta": self.meta, "rows": [asdict(r) for r in self.rows], "skipped": self.skipped}
