"""The causal-evidence rows on minilm-l6, each against its target (theirs: the target, so the ratio
says how far under (< 1) or over it the run was):

- patch-all-sites: activation patching of the number-agreement preset at every site (residual
  stream, attention, feed-forward, heads), seconds for all four, target 10 s;
- probe-run: one probe run as the Probes view trains it (part of speech, 300 Brown sentences:
  the vectors, then a probe and a control per layer) on ONE torch thread, seconds, target 60 s;
- class-pairs-100: a full class board's minimal pairs (MAX_PAIRS, taken from the paradigms)
  scored as the Class board page scores them, one pair at a time, seconds, target 20 s.

Not in --tiny: a tiny random model has no agreement to restore (patching refuses a pair whose
answer does not move) and no Brown words in its vocabulary.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import torch

from .report import Row, check

if TYPE_CHECKING:
    from .bench import Bench
    from .models import Setup

CAUSES_ROWS = ["patch-all-sites", "probe-run", "class-pairs-100"]
TARGETS = {"patch-all-sites": 10.0, "probe-run": 60.0, "class-pairs-100": 20.0}


def _row(name: str, what: str, seconds: float, note: str, extra: dict) -> Row:
    target = TARGETS[name]
    row = Row(name, f"{what} (theirs: the target)", "s", seconds, target, seconds / target, note=note, extra=extra)
    return check(row, 1.0)


def _patching(b: Bench, setup: Setup) -> None:
    from bert.analysis.patching import PRESETS, SITES, activation_patching

    pair = PRESETS["Number agreement"]
    activation_patching(setup.bundle, *pair, "heads")  # warm-up
    times, shapes = {}, {}
    cpu0 = time.process_time()
    for site in SITES:
        t0 = time.perf_counter()
        r = activation_patching(setup.bundle, *pair, site)
        times[site] = time.perf_counter() - t0
        shapes[site] = list(r.effect.shape)
    total, cpu = sum(times.values()), time.process_time() - cpu0
    note = ", ".join(f"{s} {shapes[s][0]}x{shapes[s][1]} {times[s]:.2f} s" for s in SITES)
    note += f"; {cpu:.1f} s of CPU; {b.args.threads} thread(s)"
    b.add(
        _row(
            "patch-all-sites",
            f"{setup.label} patching one pair at every site",
            total,
            note,
            {"seconds": times, "cpu_s": cpu},
        )
    )


def _probe(b: Bench, setup: Setup) -> None:
    from bert.analysis.probes import probe_model

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        t0, cpu0 = time.perf_counter(), time.process_time()
        c = probe_model(setup.bundle, "pos", 300)
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    finally:
        torch.set_num_threads(threads)
    best = int(c.selectivity.argmax())
    note = (
        f"{c.n_train} train / {c.n_test} test words, {len(c.classes)} tags; best selectivity at {c.rows[best]}: "
        f"accuracy {c.accuracy[best]:.3f}, control {c.control[best]:.3f}; one thread, {cpu:.1f} s of CPU"
    )
    extra = {"accuracy": c.accuracy.tolist(), "control": c.control.tolist(), "majority": c.majority, "cpu_s": cpu}
    b.add(_row("probe-run", f"{setup.label} part-of-speech probes at every layer", wall, note, extra))


def _class_pairs(b: Bench, setup: Setup) -> None:
    from app.class_store.class_pairs import MAX_PAIRS
    from bert.analysis.paradigms import PARADIGMS
    from bert.analysis.scoring import score_pairs

    pairs = [p for paradigm in PARADIGMS.values() for p in paradigm.pairs][:MAX_PAIRS]
    score_pairs(setup.bundle, pairs[:2])  # warm-up
    t0, cpu0 = time.perf_counter(), time.process_time()
    hits = [bool(score_pairs(setup.bundle, [p]).correct[0]) for p in pairs]
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    note = (
        f"{len(pairs)} pairs, {1000 * wall / len(pairs):.0f} ms a pair, hit rate {sum(hits) / len(hits):.2f}; "
        f"{cpu:.1f} s of CPU; {b.args.threads} thread(s)"
    )
    extra = {"pairs": len(pairs), "hit_rate": sum(hits) / len(hits), "cpu_s": cpu}
    b.add(_row("class-pairs-100", f"{setup.label} scoring a full board's minimal pairs", wall, note, extra))


def causes(b: Bench, setup: Setup) -> None:
    if not b.wants_any(CAUSES_ROWS):
        return
    if setup.tiny:
        for name in CAUSES_ROWS:
            b.skip(name, "a tiny random model: nothing to patch, no Brown words, no English to score")
        return
    if b.wants("patch-all-sites"):
        _patching(b, setup)
    if b.wants("probe-run"):
        _probe(b, setup)
    if b.wants("class-pairs-100"):
        _class_pairs(b, setup)
