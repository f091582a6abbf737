"""How long a pre-training run from random weights takes to leave the unigram plateau.

The Pre-training page exists to show a model learning language from masked words. At first every
[MASK] becomes the most frequent token ("the", ","): the plateau (bert/train/plateau.py says when a run
has left it; the time reported is that of the first of the evaluations that show it).

    python -m benchmarks.plateau                         # the page's default recipe
    python -m benchmarks.plateau --recipe seq32 --recipe lr3e-3 --limit 240 --json out.json

Time is wall-clock from the call (vocabulary training included) on this machine, one torch
thread (as a job in the app: BERT_EXPLORER_JOB_THREADS=1).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import tempfile
import threading
import time

TINY = dict(layers=2, hidden=128, heads=2)  # the page's model size in every recipe unless said
FAST = dict(max_seq_length=32, warmup_steps=100, dropout=0.0, steps=6000)  # what the later trials share
WORDNET = dict(corpora=["wordnet"])

# The Pre-training page's default (pages/pretrain.py): WordNet's short glosses and example
# sentences, a 1,000-piece vocabulary trained on them, sequences of 32, no dropout, LR 3e-3.
DEFAULT = dict(**TINY, **WORDNET, **FAST, vocab="train:1000", batch_size=32, lr=3e-3) | dict(steps=2000, eval_every=25)

# The same page's default with the next-word objective (bert/train/next_word.py): the plateau is
# then "every next word is the most frequent token", left by the same rule (bert/train/plateau.py)
# with the probe's guesses after each of its last prefixes.
NEXT_WORD = DEFAULT | dict(objective="next-word")

RECIPES: dict[str, dict] = {
    "default": DEFAULT,
    "next-word": NEXT_WORD,
    # the Pre-training page's former defaults: the run that never left the plateau
    "old-default": dict(**TINY, vocab="train:4000", max_seq_length=64, batch_size=16, lr=1e-3, warmup_steps=30),
    "wordnet-s32-v2k-b64-lr2e-3": dict(**TINY, **WORDNET, **FAST, vocab="train:2000", batch_size=64, lr=2e-3),
    "wordnet-s32-v2k-b32-lr3e-3": dict(**TINY, **WORDNET, **FAST, vocab="train:2000", batch_size=32, lr=3e-3),
    "wordnet-s32-v1k-b32-lr3e-3": dict(**TINY, **WORDNET, **FAST, vocab="train:1000", batch_size=32, lr=3e-3),
    "wordnet-s32-v1k-b32-lr3e-3-m25": dict(
        **TINY, **WORDNET, **FAST, vocab="train:1000", batch_size=32, lr=3e-3, mlm_probability=0.25
    ),
    "s32-v2k-b64-lr2e-3": dict(**TINY, **FAST, vocab="train:2000", batch_size=64, lr=2e-3),
    "s32-v2k-b64-lr3e-3-m25": dict(**TINY, **FAST, vocab="train:2000", batch_size=64, lr=3e-3, mlm_probability=0.25),
    "4x128-s32-v2k-b32-lr1e-3": dict(**FAST, layers=4, hidden=128, heads=4, vocab="train:2000", batch_size=32, lr=1e-3),
    "2x64-s32-v1k-b64-lr3e-3": dict(**FAST, layers=2, hidden=64, heads=2, vocab="train:1000", batch_size=64, lr=3e-3),
}


def page_args(**changes):
    """The PretrainArgs the page builds, with `changes`."""
    from bert.train.pretrain_args import PretrainArgs

    base = dict(out="", init="scratch", corpora=["wiki"], steps=2000, threads=1, cache_tokens=False)
    cadence = dict(eval_every=25, eval_sequences=256, save_every=100000, log_every=5)
    probe = "the history of the [MASK] is long and [MASK] ."
    return PretrainArgs(**{**base, **cadence, "probe": probe, **changes})


def measure(name: str, args, limit_s: float = 180.0, full: bool = False) -> dict:
    """Run `args` until it leaves the plateau (or, `full`, to its last step) or `limit_s` passes."""
    from bert.train.events import PretrainEval, PretrainStart
    from bert.train.plateau import plateau_exit
    from bert.train.pretrain import pretrain

    stop = threading.Event()
    t0, c0 = time.perf_counter(), time.process_time()
    curve, found, baseline_token, evals, elapsed_at, cpu_at = [], None, None, [], {}, {}
    with tempfile.TemporaryDirectory() as out:
        for m in pretrain(dataclasses.replace(args, out=out), stop=stop):
            elapsed = time.perf_counter() - t0
            if isinstance(m, PretrainStart):
                baseline_token = m.baseline_token
            if isinstance(m, PretrainEval):
                tops = [g[0][0] for g in m.probe if g]
                curve.append((m.step, round(elapsed, 1), round(m.mlm_top1, 4), tops))
                evals.append(m)
                elapsed_at[id(m)] = elapsed
                cpu_at[id(m)] = time.process_time() - c0
                first = plateau_exit(evals, baseline_token)
                if found is None and first is not None:
                    found = (
                        first.step,
                        round(elapsed_at[id(first)], 1),
                        round(first.mlm_top1, 4),
                        round(first.baseline_top1, 4),
                        round(cpu_at[id(first)], 1),
                    )
                    if not full:
                        stop.set()
            if elapsed > limit_s:
                stop.set()
    return {
        "recipe": name,
        "seconds": found[1] if found else None,
        "cpu_seconds": found[4] if found else None,  # the process's CPU time until then: no waits for a core
        "step": found[0] if found else None,
        "top1": found[2] if found else None,
        "baseline": found[3] if found else None,
        "limit_s": limit_s,
        "curve": curve,
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.plateau", description=__doc__.split("\n\n")[0])
    p.add_argument("--recipe", action="append", help=f"one of {', '.join(RECIPES)} (default: default)")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="a PretrainArgs field for an ad-hoc recipe, e.g. --set lr=3e-3 --set max_seq_length=32",
    )
    p.add_argument("--limit", type=float, default=180.0, help="give up after this many seconds")
    p.add_argument("--json", help="append each result as a JSON line here")
    p.add_argument("--full", action="store_true", help="go on after leaving the plateau, to the run's end or --limit")
    a = p.parse_args(argv)
    runs = [(r, RECIPES[r]) for r in (a.recipe or ([] if a.set else ["default"]))]
    if a.set:
        extra = {}
        for item in a.set:
            k, v = item.split("=", 1)
            extra[k] = json.loads(v) if v[:1].isdigit() or v[:1] in "-[{" or v in ("true", "false") else v
        runs.append(("custom " + " ".join(a.set), {**RECIPES.get("default", {}), **extra}))
    for name, changes in runs:
        r = measure(name, page_args(**changes), a.limit, a.full)
        line = f"{name}: " + (
            f"left the plateau at step {r['step']} after {r['seconds']} s (top-1 {r['top1']} vs "
            f"baseline {r['baseline']})"
            if r["seconds"]
            else f"still on the plateau at step {r['curve'][-1][0] if r['curve'] else 0} after {a.limit:.0f} s"
        )
        print(line, flush=True)
        if a.json:
            with open(a.json, "a") as f:
                f.write(json.dumps(r) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
