"""Timing machinery: paired back-to-back samples, medians, the matmul floor and peak.

On a shared machine the load changes from second to second, and the ratio of two timings taken
back to back is far steadier than either timing: so every comparison warms both sides up, then
alternates them (ours, theirs / theirs, ours / ...) and keeps the median of the paired ratios.
Every timing is taken on the wall clock and in CPU seconds of the process (all threads).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from bert.config import BertConfig


@dataclass
class Timing:
    ours: float  # median wall seconds per call
    theirs: float
    ratio: float  # median of paired ratios
    calls: int  # calls per timed sample
    repeats: int
    ours_cpu: float = float("nan")  # the same in CPU seconds of the process (all threads)
    theirs_cpu: float = float("nan")
    cpu_ratio: float = float("nan")
    ours_all: list[float] = field(default_factory=list)
    theirs_all: list[float] = field(default_factory=list)

    def on(self, clock: str) -> tuple[float, float, float]:
        """(ours, theirs, ratio) on the wall clock or in CPU time."""
        if clock == "cpu":
            return self.ours_cpu, self.theirs_cpu, self.cpu_ratio
        return self.ours, self.theirs, self.ratio

    def note(self, clock: str, scale: float = 1e3, unit: str = "ms") -> str:
        """The figures on the other clock, for a row's note."""
        if clock == "cpu":
            return f"wall {self.ours * scale:.3g}/{self.theirs * scale:.3g} {unit}, ratio {self.ratio:.2f}"
        return f"CPU {self.ours_cpu * scale:.3g}/{self.theirs_cpu * scale:.3g} {unit}, ratio {self.cpu_ratio:.2f}"


_last_cpu = [0.0]


def time_once(f: Callable[[], object], n: int = 1) -> float:
    """Wall seconds per call; the CPU seconds per call are left in last_cpu()."""
    c0, t0 = time.process_time(), time.perf_counter()
    for _ in range(n):
        f()
    _last_cpu[0] = (time.process_time() - c0) / n
    return (time.perf_counter() - t0) / n


def last_cpu() -> float:
    """CPU seconds per call of the last time_once."""
    return _last_cpu[0]


def _sample(first: Callable[[], object], second: Callable[[], object], calls: int):
    """(wall, cpu) of first, then of second, back to back."""
    x = time_once(first, calls)
    cx = last_cpu()
    y = time_once(second, calls)
    return (x, cx), (y, last_cpu())


def paired(
    ours: Callable[[], object], theirs: Callable[[], object], repeats: int, warmup: int = 1, min_sample_s: float = 0.0
) -> Timing:
    """Warm both up, then alternate them for `repeats` samples each (order flipped every
    round). A sample is `calls` back-to-back calls, enough to last about `min_sample_s`."""
    ta = tb = 0.0
    for _ in range(max(1, warmup)):
        ta, tb = time_once(ours), time_once(theirs)
    calls = 1
    if min_sample_s > 0:
        calls = int(max(1, min(200, math.ceil(min_sample_s / max(min(ta, tb), 1e-7)))))
    a, b, r, ca, cb, cr = [], [], [], [], [], []
    for i in range(repeats):
        if i % 2 == 0:
            (x, cx), (y, cy) = _sample(ours, theirs, calls)
        else:
            (y, cy), (x, cx) = _sample(theirs, ours, calls)
        a.append(x), b.append(y), r.append(x / y)
        ca.append(cx), cb.append(cy), cr.append(cx / cy if cy > 0 else float("nan"))
    med = statistics.median
    return Timing(med(a), med(b), med(r), calls, repeats, med(ca), med(cb), med(cr), a, b)


def matmul_floor(config: BertConfig, T: int, repeats: int = 7) -> float:
    """Seconds that a 1 x T forward's weight matmuls alone take here: each layer's Q/K/V, output
    and two feed-forward products (F.linear, random data of the same shapes), the fastest of the
    repeats, times the layers. No fp32 forward doing the same work runs faster than this (both
    libraries call the same MKL products); attention, softmax, LayerNorm and GELU come on top."""
    C, Fs = config.hidden_size, config.intermediate_size
    x, h = torch.randn(1, T, C), torch.randn(1, T, Fs)
    shapes = [(x, torch.randn(n, k), torch.randn(n)) for n, k in ((3 * C, C), (C, C), (Fs, C))]
    shapes.append((h, torch.randn(C, Fs), torch.randn(C)))

    def layer():
        for a, w, b in shapes:
            F.linear(a, w, b)

    with torch.inference_mode():
        layer()
        times = sorted(time_once(layer, 3) for _ in range(repeats))
    return times[0] * config.num_hidden_layers  # the best: a floor, not a typical time


def matmul_gflops(repeats: int = 10, n: int = 1024) -> dict:
    """The machine's fp32 matmul speed at the current thread count: best and median of
    `repeats` timed n x n @ n x n products (2 n^3 FLOPs each)."""
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(n, n, generator=g), torch.randn(n, n, generator=g)
    out = torch.empty(n, n)
    for _ in range(2):
        torch.mm(a, b, out=out)
    ts = [time_once(lambda: torch.mm(a, b, out=out)) for _ in range(repeats)]
    flops = 2 * n**3
    return {"best": flops / min(ts) / 1e9, "median": flops / statistics.median(ts) / 1e9}


def profile_top(f: Callable[[], object], calls: int = 3, rows: int = 12, title: str = "") -> str:
    """A torch profiler table (self CPU time per op) of `calls` calls of f, after one warm-up."""
    from torch.profiler import ProfilerActivity, profile

    f()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(calls):
            f()
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=rows)
    return f"--- profile: {title} ({calls} calls) ---\n{table}"
