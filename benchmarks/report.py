"""The rows a run can have, one result row, its target, and the table printed or written."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from pathlib import Path

# The rows of a class's runs (benchmarks/class_rows.py) and of the causes' (benchmarks/causes_rows.py)
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
CAUSES_ROWS = ["patch-all-sites", "probe-run", "class-pairs-100"]
FEATURES_ROWS = [
    "dictionary-run",
    "dictionary-purity",
    "dictionary-2048",
    "dictionary-splice",
    "feature-card",
    "feature-steer",
]
ALL_ROWS = [
    f"infer-{m}-{k}-{t}{floor}"
    for m in ("minilm", "base")
    for k in ("attn", "fast")
    for t in (32, 128)
    for floor in (("", "-floor") if k == "attn" else ("",))
] + [
    "finetune-step",
    "finetune-throughput",
    "finetune-gflops",
    "pretrain-step",
    "pretrain-throughput",
    "pretrain-gflops",
    "tokenize",
    "analysis-64",
    "bertviz-head-64",
    "bertviz-model-64",
    "startup-health",
    "startup-home",
    "mem-app",
    "mem-load",
    "mem-finetune",
    "mem-pretrain",
    *CLASS_ROWS,
    *CAUSES_ROWS,
    *FEATURES_ROWS,
    "save-attention-file",
    "save-at-once",
]
# what --tiny leaves out: the server's start and memory, and the runs that train or serve a class
SLOW_ROWS = ("startup-health", "startup-home", "mem-app", *CLASS_ROWS, *CAUSES_ROWS, *FEATURES_ROWS)
TINY_ROWS = [r for r in ALL_ROWS if r not in SLOW_ROWS]


@dataclass
class Row:
    name: str
    what: str
    unit: str
    ours: float
    theirs: float
    ratio: float  # ours / theirs (for timings: median of paired ratios)
    better: str = "lower"  # which way is better, for ours and the ratio
    target: str = ""  # e.g. "ratio <= 0.8" or "ours <= 40 ms"
    ok: bool | None = None
    note: str = ""
    extra: dict = field(default_factory=dict)


def timed_row(name: str, what: str, tm, clock: str, note: str, **kw) -> Row:
    """A row in ms from a paired Timing `tm` on `clock`; its note starts with the other clock's figures."""
    o, th, ra = tm.on(clock)
    return Row(name, what, "ms", o * 1e3, th * 1e3, ra, note=f"{tm.note(clock)}; {note}", **kw)


def check(row: Row, limit: float, on: str = "ratio") -> Row:
    """Give the row its target (`ratio <= limit`, or `ours <= limit unit`) and whether it is met."""
    value = row.ratio if on == "ratio" else row.ours
    row.ok = bool(value <= limit)
    if on == "ratio":
        row.target = f"ratio <= {limit:g}"
    else:
        row.target = f"ours <= {limit:g} {row.unit}"
    return row


def header(meta: dict) -> str:
    load = meta["loadavg"]
    return (
        f"BERT Explorer bench: ours vs transformers {meta['transformers']}, torch {meta['torch']}, "
        f"{meta['threads']} thread(s) ({meta.get('threads_reason') or 'given'})\n"
        f"CPU: {meta['cpu']}, {meta['cores']} cores, load average {load[0]:.1f} at start; "
        f"fp32 matmul 1024^2: {meta['matmul_gflops_best']:.0f} GFLOP/s best, "
        f"{meta['matmul_gflops_median']:.0f} median\n"
        f"timings on the {meta.get('clock', 'wall')} clock; ratio = ours/theirs "
        f"(timings: median of back-to-back paired ratios)\n"
        f"  {'row':<22} {'ours':>10} {'theirs':>10} {'unit':<8} {'ratio':>7}  {'target':<18}  what / note"
    )


def _fmt(x: float | None) -> str:
    if x is None:
        return "-"
    if x == 0 or abs(x) >= 100:
        return f"{x:,.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    return f"{x:.3g}"


def format_row(r: Row) -> str:
    mark = "" if r.ok is None else (" ✓" if r.ok else " ✗")
    target = (r.target + mark) if r.target else ""
    ratio = f"{r.ratio:.2f}x" if r.ratio is not None else "-"
    text = f"  {r.name:<22} {_fmt(r.ours):>10} {_fmt(r.theirs):>10} {r.unit:<8} {ratio:>7}  {target:<18}  {r.what}"
    if r.note:
        text += f"\n  {'':<22} {'':>10} {'':>10} {'':<8} {'':>7}  {'':<18}  {r.note}"
    return text


def format_table(result: dict) -> str:
    rows = [Row(**r) for r in result["rows"]]
    lines = [header(result["meta"])] + [format_row(r) for r in rows]
    lines += [f"  {s['name']:<22} skipped: {s['reason']}" for s in result["skipped"]]
    misses = [r.name for r in rows if r.ok is False]
    secs = result["meta"].get("section_seconds")
    if secs:
        lines.append("seconds per section: " + ", ".join(f"{k} {v:.0f}" for k, v in secs.items()))
    lines.append(
        f"targets met: {sum(1 for r in rows if r.ok)}/{sum(1 for r in rows if r.ok is not None)}"
        + (f"; missed: {', '.join(misses)}" if misses else "")
        + f"; {result['meta']['seconds']:.0f} s"
    )
    return "\n".join(lines)


def format_markdown(result: dict) -> str:
    """The table as Markdown, as in docs/PERFORMANCE.md."""
    out = ["| row | what | ours | theirs | unit | ours/theirs | target |", "|---|---|---:|---:|---|---:|---|"]
    for r in result["rows"]:
        mark = "" if r["ok"] is None else (" ✓" if r["ok"] else " ✗")
        out.append(
            f"| {r['name']} | {r['what']} | {_fmt(r['ours'])} | {_fmt(r['theirs'])} | {r['unit']} | "
            f"{r['ratio']:.2f} | {r['target']}{mark} |"
        )
    return "\n".join(out)


def script_parser(prog: str, doc: str) -> argparse.ArgumentParser:
    """A measuring script's parser: its docstring's first paragraph as the description, and --json."""
    p = argparse.ArgumentParser(prog=prog, description=doc.split("\n\n")[0])
    p.add_argument("--json", type=Path, help="write the figures here too")
    return p


def write_json(path: Path | None, figures: dict) -> None:
    """The figures as JSON at `path` (nothing without one)."""
    if path is not None:
        path.write_text(json.dumps(figures, indent=2) + "\n")
