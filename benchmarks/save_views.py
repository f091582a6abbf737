"""Saved views (app/export/view_file.py): each page kind's file on minilm-l6 for a 20-token
sentence, its size and the time to build it; then `sessions` students saving the heaviest view
(the Attention map with every layer and head) at once, each in a thread as the server builds a
deferred download (asyncio.to_thread): each a view of its own, then all the one view a teacher
leads. Meanwhile a probe thread measures how late a 10 ms sleep wakes (what another session's
page or the server's event loop waits for the interpreter).

    python -m benchmarks.save_views                  # 10 sessions
    python -m benchmarks.save_views --sessions 4 --json out.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor

SENTENCE = "The quick brown fox jumps over the lazy dog while the children watch from the bridge."
MASKED = "The quick brown fox jumps over the [MASK] dog while the children watch from the bridge."
PROBE_S = 0.010


def _views():
    """{kind: (panels)} for each page kind, on minilm-l6 (the fine-tuning curves: made-up steps)."""
    import bert
    from app.export.view_file import Choice, Panel
    from app.figures import core, explain, training
    from bert.analysis import explain as explain_analysis
    from bert.analysis import full, mlm
    from bert.train import events as ev

    b = bert.load("minilm-l6")
    an = full.analyze(b, SENTENCE)
    L, H = an.attentions.shape[:2]
    draw = core.head_maps(an.attentions, an.tokens)
    masked = mlm.mlm_topk(b, MASKED, k=5)
    lens = explain_analysis.logit_lens(b, MASKED, k=3)
    steps = [
        ev.FinetuneStep(
            step=s,
            epoch=0,
            loss=1 / s,
            loss_smooth=1 / s,
            lr=1e-4,
            grad_norm=1.0,
            examples_per_s=50.0,
            progress=s / 300,
            eta_s=300.0 - s,
        )
        for s in range(1, 301)
    ]
    return (
        b,
        an.n_tokens,
        {
            "attention-map (every layer and head)": [
                Panel(draw(0, 0), "", Choice((("Layer", L), ("Head", H)), draw, (0, 0)))
            ],
            "attention-all-heads": [Panel(core.attention_grid(an.attentions, selected=(0, 0)))],
            "embeddings-parts": [Panel(core.embedding_parts_heatmaps(an.parts, an.tokens))],
            "masked-lm-bar": [Panel(core.mlm_topk_bar(masked.top_tokens[0], masked.top_probs[0], "gap 1"))],
            "explanations-lens": [Panel(explain.logit_lens_heatmap(lens.top_tokens[0], lens.top_probs[0]))],
            "finetune-curves (300 steps)": [Panel(training.finetune_curves(steps, 300))],
        },
    )


def _probe(stop: threading.Event, lags: list[float]) -> None:
    while not stop.is_set():
        t = time.perf_counter()
        time.sleep(PROBE_S)
        lags.append(time.perf_counter() - t - PROBE_S)


def _lags(seconds_or_work, *args) -> list[float]:
    lags: list[float] = []
    stop = threading.Event()
    probe = threading.Thread(target=_probe, args=(stop, lags), daemon=True)
    probe.start()
    try:
        seconds_or_work(*args)
    finally:
        stop.set()
        probe.join()
    return lags


def save_views(sessions: int = 10) -> dict:
    from app.export.stamp import Stamp, weights_hash
    from app.export.view_file import view_html

    b, n_tokens, views = _views()
    from app.export.view_file import plotly_packed

    plotly_packed()  # packed once per process, before any file is timed
    t = time.perf_counter()
    stamp = Stamp(model=b.name, weights=weights_hash(b.model), inputs=(("Sentence A", SENTENCE),))
    hash_s = time.perf_counter() - t
    kinds = {}
    for kind, panels in views.items():
        t = time.perf_counter()
        text = view_html(kind, panels, stamp)
        kinds[kind] = {"mb": round(len(text.encode()) / 1e6, 2), "build_s": round(time.perf_counter() - t, 2)}
    (heavy,) = views["attention-map (every layer and head)"]

    def q(xs, p):
        return round(sorted(xs)[min(len(xs) - 1, int(p * len(xs)))] * 1000, 1) if xs else None

    def at_once(shared: bool) -> dict:
        """`sessions` saves at once: each of another view (no key), or all of the view a teacher leads."""
        times: list[float] = []

        def one(n):
            key = ("teacher's view",) if shared else None
            panel = dataclasses.replace(heavy, choice=dataclasses.replace(heavy.choice, key=key))
            t0 = time.perf_counter()
            view_html("attention", [panel], stamp)
            times.append(time.perf_counter() - t0)

        def run():
            with ThreadPoolExecutor(max_workers=sessions) as pool:
                list(pool.map(one, range(sessions)))

        t = time.perf_counter()
        busy = _lags(run)
        return {
            "all_saved_s": round(time.perf_counter() - t, 2),
            "save_p50_s": round(statistics.median(times), 2),
            "save_max_s": round(max(times), 2),
            "probe_busy_ms": {"p95": q(busy, 0.95), "max": q(busy, 1.0)},
        }

    idle = _lags(time.sleep, 2.0)
    return {
        "tokens": n_tokens,
        "weights_hash_s": round(hash_s, 2),
        "kinds": kinds,
        "sessions": sessions,
        "probe_idle_ms": {"p95": q(idle, 0.95), "max": q(idle, 1.0)},
        "different_views": at_once(shared=False),
        "same_view": at_once(shared=True),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.save_views", description=__doc__.split("\n\n")[0])
    p.add_argument("--sessions", type=int, default=10)
    p.add_argument("--json", metavar="PATH", help="also write the result as JSON")
    args = p.parse_args(argv)
    r = save_views(max(1, args.sessions))
    for kind, v in r["kinds"].items():
        print(f"{kind:40s} {v['mb']:6.2f} MB  built in {v['build_s']:.2f} s")
    for how in ("different_views", "same_view"):
        v = r[how]
        print(
            f"{r['sessions']} sessions saving the attention map at once ({how.replace('_', ' ')}): all done in "
            f"{v['all_saved_s']} s (one: {v['save_p50_s']} s median, {v['save_max_s']} s at most); a 10 ms sleep "
            f"elsewhere wakes late by {v['probe_busy_ms']['p95']} ms (p95), {v['probe_busy_ms']['max']} ms at most"
        )
    print(f"idle, the same sleep wakes late by {r['probe_idle_ms']['p95']} ms (p95), {r['probe_idle_ms']['max']} ms")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(r, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
