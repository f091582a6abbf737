"""fp32 against bf16, side by side from one run: the same training work in each precision and the
ratio bf16 / fp32 (below 1: bf16 is faster).

    python -m benchmarks.precision                   # every row below (the Quick run, not the Full one)
    python -m benchmarks.precision --only finetune,pretrain   # the two steps only (about a minute)
    python -m benchmarks.precision --only tagger,probe,patch,class-pairs --json out.json
    python -m benchmarks.precision --runs quick,full --json out.json --markdown out.md

Rows:
    finetune-step   minilm-l6 classifier, 32 x 64 tokens: forward, backward, clip, AdamW
    pretrain-step   minilm-l6 MLM + NSP, 16 x 128 tokens: the same
    quick-run, full-run   the Fine-tuning page's run as a student's job (benchmarks/class_queue.py,
                    one student, one job at a time), under BERT_EXPLORER_PRECISION=fp32 then bf16
    tagger-pos, reader-demo, plateau-default, plateau-next-word, seq2seq-exact   the class rows of `python -m
                    benchmarks` (benchmarks/class_rows.py) with the run's precision set: the page's
                    default runs to their end, or until they leave the plateau / reach exact match 0.9
    probe-run, patch-all-sites, class-pairs-100   the causal-evidence rows (benchmarks/causes_rows.py)
                    on minilm-l6 with `precision=` passed to the analysis

Every row but the steps has a target in seconds (the rows' own, from class_rows.py and
causes_rows.py; the Quick run's, 10 s, from the issue that set it): the table says whether fp32 and
bf16 each meet it in CPU seconds, so one run shows both that bf16 pays and that fp32 forced still
passes.

A step in bf16 is what the trainers do there (bert/train/precision.py): autocast around the forward,
fp32 weights, the fused AdamW. Steps are timed in back-to-back pairs (benchmarks/timing.py: medians
of paired ratios, on the wall clock and in CPU seconds of the process: on a loaded machine the CPU
figures are the steadier). One torch thread unless --threads. Where torch reports no native bf16
the bf16 column is skipped (emulated bf16 takes minutes a step and says nothing about the design).
"""

from __future__ import annotations

import argparse
import json
import time

import torch

JOB_ROWS = (
    "tagger-pos",
    "reader-demo",
    "plateau-default",
    "plateau-next-word",
    "seq2seq-exact",
    "probe-run",
    "patch-all-sites",
    "class-pairs-100",
)
ROWS = ("finetune-step", "pretrain-step", "quick-run", "full-run", *JOB_ROWS)
QUICK_TARGET_S = 10.0
LIMIT_S = 3600.0  # on the wall clock, for a run that never gets there: generous, as a loaded machine's core waits count


def step_rows(repeats: int) -> list[dict]:
    """finetune-step and pretrain-step, fp32 and bf16 timed in pairs on copies of one model."""
    import copy

    from bert.checkpoint.load import load
    from bert.model import BertForPreTraining
    from bert.task_models import BertForSequenceClassification

    from .models import LABELS, finetune_batch, finetune_step, pretrain_batch, pretrain_step
    from .timing import paired

    bundle = load("minilm-l6")
    rows = []
    for name in ("finetune-step", "pretrain-step"):
        pretrain = name == "pretrain-step"
        config = copy.deepcopy(bundle.model.config)
        if pretrain:
            model = BertForPreTraining(config)
            model.load_state_dict(bundle.model.state_dict())
            batch = pretrain_batch(config, bundle.tokenizer)
        else:
            config.id2label = dict(LABELS)
            torch.manual_seed(0)
            model = BertForSequenceClassification(config)
            model.bert.load_state_dict(bundle.model.bert.state_dict())
            batch = finetune_batch(config, bundle.tokenizer)
        fp32, bf16 = model.train(), copy.deepcopy(model).train()
        step = pretrain_step if pretrain else finetune_step
        tm = paired(step(fp32, batch, True, "fp32"), step(bf16, batch, True, "bf16"), repeats, warmup=2)
        shape = "16x128 MLM+NSP" if pretrain else "32x64 classifier"
        rows.append(
            {
                "row": name,
                "what": f"minilm-l6 {shape}: fwd+bwd+clip+AdamW",
                "unit": "ms",
                "fp32": tm.ours * 1e3,
                "bf16": tm.theirs * 1e3,
                "ratio": 1.0 / tm.ratio,
                "fp32_cpu": tm.ours_cpu * 1e3,
                "bf16_cpu": tm.theirs_cpu * 1e3,
                "ratio_cpu": 1.0 / tm.cpu_ratio,
            }
        )
    return rows


def run_rows(sizes: list[str], threads: int) -> list[dict]:
    """The page's run of each size as one student's job, in fp32 then in bf16: its seconds and accuracy."""
    from .class_queue import class_turn, environment

    rows = []
    for size in sizes:
        got = {}
        for precision in ("fp32", "bf16"):
            with environment("BERT_EXPLORER_PRECISION", precision):
                c0 = time.process_time()
                res = class_turn(1, size, max_jobs=1, threads=threads)
                got[precision] = (res, time.process_time() - c0)
        (f, fc), (b, bc) = got["fp32"], got["bf16"]
        rows.append(
            {
                "row": f"{size}-run",
                "what": f"the Fine-tuning page's {size} run, one student's job (accuracy {f['accuracy_mean']} / "
                f"{b['accuracy_mean']})",
                "unit": "s",
                "fp32": f["run_seconds_max"],
                "bf16": b["run_seconds_max"],
                "ratio": b["run_seconds_max"] / f["run_seconds_max"],
                "fp32_cpu": fc,
                "bf16_cpu": bc,
                "ratio_cpu": bc / fc,
                "target": QUICK_TARGET_S if size == "quick" else None,
                "fp32_accuracy": f["accuracy_mean"],
                "bf16_accuracy": b["accuracy_mean"],
                "ran_in": [f["precision"], b["precision"]],  # what the jobs were given
                "errors": f["errors"] + b["errors"],
            }
        )
    return rows


def _timed(fn) -> tuple[object, float, float]:
    """(fn(), wall seconds, CPU seconds of the process)."""
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - t0, time.process_time() - c0


def _head(head: str):
    def one(precision: str, bundle) -> tuple[float, float, str]:
        from . import task_head_runs

        r = task_head_runs.measure(head, precision=precision)
        scores = ", ".join(f"{k.replace('_', ' ')} {v:.3f}" for k, v in r["scores"].items() if v is not None)
        return r["seconds"], r["cpu_seconds"], scores

    return one


def _plateau(recipe: str):
    def one(precision: str, bundle) -> tuple[float, float, str]:
        from . import plateau

        r = plateau.measure(recipe, plateau.page_args(**plateau.RECIPES[recipe], precision=precision), LIMIT_S)
        if r["seconds"] is None:
            return float("inf"), float("inf"), f"still on the plateau after {LIMIT_S:g} s"
        return r["seconds"], r["cpu_seconds"], f"left at step {r['step']}, top-1 {r['top1']} vs {r['baseline']}"

    return one


def _seq2seq(precision: str, bundle) -> tuple[float, float, str]:
    from . import seq2seq_run

    r = seq2seq_run.measure(LIMIT_S, precision=precision)
    if r["seconds"] is None:
        return float("inf"), float("inf"), f"exact match {r['exact_match']} after {LIMIT_S:g} s"
    return r["seconds"], r["cpu_seconds"], f"exact match {r['exact_match']:.2f} at step {r['step']}"


def _probe(precision: str, bundle) -> tuple[float, float, str]:
    from bert.analysis.probes import probe_model

    c, wall, cpu = _timed(lambda: probe_model(bundle, "pos", 300, precision=precision))
    best = int(c.selectivity.argmax())
    return wall, cpu, f"best selectivity at {c.rows[best]}: accuracy {c.accuracy[best]:.3f}"


def _patching(precision: str, bundle) -> tuple[float, float, str]:
    from bert.analysis.patching import PRESETS, SITES, activation_patching

    pair = PRESETS["Number agreement"]
    activation_patching(bundle, *pair, "heads", precision=precision)  # warm-up
    runs, wall, cpu = _timed(lambda: [activation_patching(bundle, *pair, s, precision=precision) for s in SITES])
    return wall, cpu, f"residual: best restored share {float(runs[0].effect.max()):.2f}"


def _class_pairs(precision: str, bundle) -> tuple[float, float, str]:
    from app.class_store.class_pairs import MAX_PAIRS
    from bert.analysis.paradigms import PARADIGMS
    from bert.analysis.scoring import score_pairs

    pairs = [p for paradigm in PARADIGMS.values() for p in paradigm.pairs][:MAX_PAIRS]
    score_pairs(bundle, pairs[:2], precision=precision)  # warm-up
    hits, wall, cpu = _timed(lambda: [bool(score_pairs(bundle, [p], precision=precision).correct[0]) for p in pairs])
    return wall, cpu, f"{len(pairs)} pairs, hit rate {sum(hits) / len(hits):.2f}"


JOBS = {
    "tagger-pos": ("the Fine-tuning page's part-of-speech run, loaded to scored", _head("tagger")),
    "reader-demo": ("the Fine-tuning page's question-answering run, loaded to scored", _head("reader")),
    "plateau-default": ("the Pre-training page's default run leaves the plateau", _plateau("default")),
    "plateau-next-word": ("the Pre-training page's next-word run leaves the plateau", _plateau("next-word")),
    "seq2seq-exact": ("the Decoder page's default run reaches held-out exact match 0.9", _seq2seq),
    "probe-run": ("minilm-l6 part-of-speech probes at every layer (300 sentences)", _probe),
    "patch-all-sites": ("minilm-l6 patching one pair at every site", _patching),
    "class-pairs-100": ("minilm-l6 scoring a full board's minimal pairs, one at a time", _class_pairs),
}


def job_rows(names: list[str]) -> list[dict]:
    """Each row's work in fp32 then in bf16, one torch thread: seconds on the wall and of CPU, and
    what it reached in each (accuracy, step, hit rate)."""
    from .causes_rows import TARGETS as CAUSES_TARGETS
    from .class_rows import TARGETS as CLASS_TARGETS

    bundle = None
    if any(n in ("probe-run", "patch-all-sites", "class-pairs-100") for n in names):
        from bert.checkpoint.load import load

        bundle = load("minilm-l6")
    rows = []
    for name in names:
        what, fn = JOBS[name]
        got = {p: fn(p, bundle) for p in ("fp32", "bf16")}
        (fw, fc, fq), (bw, bc, bq) = got["fp32"], got["bf16"]
        rows.append(
            {
                "row": name,
                "what": f"{what} (fp32: {fq}; bf16: {bq})",
                "unit": "s",
                "fp32": fw,
                "bf16": bw,
                "ratio": bw / fw,
                "fp32_cpu": fc,
                "bf16_cpu": bc,
                "ratio_cpu": bc / fc,
                "target": {**CLASS_TARGETS, **CAUSES_TARGETS}[name],
            }
        )
        print(markdown(rows[-1:]).splitlines()[-1], flush=True)
    return rows


def markdown(rows: list[dict]) -> str:
    lines = [
        "| row | what | fp32 | bf16 | bf16 / fp32 | CPU fp32 | CPU bf16 | CPU bf16 / fp32 | target: CPU fp32, bf16 |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]

    def met(r: dict) -> str:
        t = r.get("target")
        if not t:
            return ""
        return f"<= {t:g} {r['unit']}: " + " ".join("✓" if r[f"{p}_cpu"] <= t else "✗" for p in ("fp32", "bf16"))

    def fig(x: float, u: str) -> str:
        return f"{x:,.0f} {u}" if x >= 100 else f"{x:.3g} {u}"

    for r in rows:
        u = r["unit"]
        lines.append(
            f"| {r['row']} | {r['what']} | {fig(r['fp32'], u)} | {fig(r['bf16'], u)} | {r['ratio']:.2f} | "
            f"{fig(r['fp32_cpu'], u)} | {fig(r['bf16_cpu'], u)} | {r['ratio_cpu']:.2f} | {met(r)} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> list[dict]:
    p = argparse.ArgumentParser(prog="python -m benchmarks.precision", description=__doc__.split("\n\n")[0])
    p.add_argument("--only", default="", help="comma-separated prefixes of " + ", ".join(ROWS))
    p.add_argument("--runs", default="quick", help="run sizes for the *-run rows: quick, full or quick,full")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeats", type=int, default=5, help="paired samples of each step")
    p.add_argument("--json", default=None)
    p.add_argument("--markdown", default=None)
    a = p.parse_args(argv)
    from bert.train.precision import cpu_has_bf16

    torch.set_num_threads(a.threads)
    if not cpu_has_bf16():
        print("torch reports no native bf16 on this CPU (no AMX or AVX-512 BF16): nothing to compare")
        return []
    wanted = [r for r in ROWS if not a.only or any(r.startswith(x) for x in a.only.split(","))]
    rows = []
    if any(r.endswith("-step") for r in wanted):
        rows += [r for r in step_rows(a.repeats) if r["row"] in wanted]
    sizes = [s for s in a.runs.split(",") if f"{s}-run" in wanted]
    if sizes:
        rows += run_rows(sizes, a.threads)
    jobs = [r for r in JOB_ROWS if r in wanted]
    if jobs:
        rows += job_rows(jobs)
    table = markdown(rows)
    print(table)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(table + "\n")
    return rows


if __name__ == "__main__":
    main()
