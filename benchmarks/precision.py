"""fp32 against bf16, side by side from one run: the same training work in each precision and the
ratio bf16 / fp32 (below 1: bf16 is faster).

    python -m benchmarks.precision                   # finetune-step, pretrain-step, the Quick run
    python -m benchmarks.precision --only finetune,pretrain   # the two steps only (about a minute)
    python -m benchmarks.precision --runs quick,full --json out.json --markdown out.md

Rows:
    finetune-step   minilm-l6 classifier, 32 x 64 tokens: forward, backward, clip, AdamW
    pretrain-step   minilm-l6 MLM + NSP, 16 x 128 tokens: the same
    quick-run, full-run   the Fine-tuning page's run as a student's job (benchmarks/class_queue.py,
                    one student, one job at a time), under BERT_EXPLORER_PRECISION=fp32 then bf16

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

ROWS = ("finetune-step", "pretrain-step", "quick-run", "full-run")


def step_rows(repeats: int) -> list[dict]:
    """finetune-step and pretrain-step, fp32 and bf16 timed in pairs on copies of one model."""
    import copy

    from bert.checkpoint.load import load
    from bert.model import BertForPreTraining, BertForSequenceClassification

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
                "fp32_accuracy": f["accuracy_mean"],
                "bf16_accuracy": b["accuracy_mean"],
                "ran_in": [f["precision"], b["precision"]],  # what the jobs were given
                "errors": f["errors"] + b["errors"],
            }
        )
    return rows


def markdown(rows: list[dict]) -> str:
    lines = [
        "| row | what | fp32 | bf16 | bf16 / fp32 | CPU fp32 | CPU bf16 | CPU bf16 / fp32 |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]

    def fig(x: float, u: str) -> str:
        return f"{x:,.0f} {u}" if x >= 100 else f"{x:.3g} {u}"

    for r in rows:
        u = r["unit"]
        lines.append(
            f"| {r['row']} | {r['what']} | {fig(r['fp32'], u)} | {fig(r['bf16'], u)} | {r['ratio']:.2f} | "
            f"{fig(r['fp32_cpu'], u)} | {fig(r['bf16_cpu'], u)} | {r['ratio_cpu']:.2f} |"
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
