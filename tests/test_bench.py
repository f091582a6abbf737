"""`python -m benchmarks` keeps working: its quick mode on a tiny config, in a subprocess.

No time is asserted (the machine is shared); every row must be there with numbers and a ratio.
"""

import json
import math
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from benchmarks import cli, report
from benchmarks.flops import encoder_matmul_params, forward_flops, training_flops
from benchmarks.model_rows import generated_lines
from benchmarks.timing import paired
from bert.config import BertConfig

ROOT = Path(__file__).resolve().parent.parent
pytest.importorskip("transformers")


@pytest.mark.slow
def test_tiny_quick_bench_has_every_row(tmp_path):
    out = tmp_path / "bench.json"
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--tiny", "--quick", "--threads", "1", "--json", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(out.read_text())
    rows = {r["name"]: r for r in result["rows"]}
    skipped = {s["name"] for s in result["skipped"]}
    assert set(rows) == set(report.TINY_ROWS), (set(report.TINY_ROWS) - set(rows), skipped)
    assert skipped == set(report.ALL_ROWS) - set(report.TINY_ROWS)
    for name, r in rows.items():
        for key in ("ours", "theirs", "ratio"):
            assert isinstance(r[key], (int, float)) and math.isfinite(r[key]) and r[key] > 0, (name, key, r)
        if r["target"]:
            assert isinstance(r["ok"], bool), name
    for name in rows:
        assert name in proc.stdout  # the table is printed
    assert rows["tokenize"]["extra"]["mismatches"] == 0
    assert all(rows[n]["extra"]["max_abs_diff"] <= 1e-4 for n in rows if n.startswith("infer-") and "floor" not in n)
    assert result["meta"]["threads"] == 1 and result["meta"]["tiny"] is True


def test_only_rejects_unknown_rows():
    with pytest.raises(SystemExit):
        cli.main(["--only", "no-such-row"])


def test_flops_formula_by_hand():
    c = BertConfig(
        vocab_size=10,
        hidden_size=4,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=8,
        max_position_embeddings=16,
    )
    n = 2 * (4 * 4 * 4 + 2 * 4 * 8)  # L * (4 C^2 + 2 C F)
    assert encoder_matmul_params(c) == n
    B, T = 3, 5
    expected = 2 * n * B * T + 4 * 2 * B * T * T * 4 + 2 * 4 * 4 * B  # encoder, attention, pooler
    assert forward_flops(c, B, T) == expected
    assert forward_flops(c, B, T, num_labels=2) == expected + 2 * 4 * 2 * B
    assert forward_flops(c, B, T, mlm_positions=7, nsp=True) == expected + 2 * (4 * 4 + 4 * 10) * 7 + 2 * 4 * 2 * B
    assert training_flops(c, B, T) == 3 * expected
    # the last layer at R rows only: K, V for every token; Q, output, feed-forward, attention at R
    R = 4
    last_full = 2 * (4 * 4 * 4 + 2 * 4 * 8) * B * T + 4 * B * T * T * 4
    last_rows = 2 * (2 * 4 * 4 * B * T + (2 * 4 * 4 + 2 * 4 * 8) * R) + 4 * R * T * 4
    assert forward_flops(c, B, T, last_layer_rows=R) == expected - last_full + last_rows
    assert forward_flops(c, B, T, last_layer_rows=B * T) == expected  # all rows: the full layer


def test_paired_timing_alternates_and_takes_medians():
    calls = []
    timing = paired(lambda: calls.append("a"), lambda: calls.append("b"), repeats=4, warmup=1)
    assert calls[:2] == ["a", "b"]  # warm-up
    assert calls[2:] == ["a", "b", "b", "a", "a", "b", "b", "a"]
    assert timing.repeats == 4 and timing.ratio > 0


def test_generated_lines_are_deterministic():
    assert generated_lines(20) == generated_lines(20)
    assert len(set(generated_lines(200))) > 150


@pytest.mark.slow
def test_class_queue_runs_every_students_job_and_reports_when_the_last_ended(tmp_path, monkeypatch):
    """benchmarks.class_queue with three students on a tiny run size: every job finishes, two
    run at once, and the figures come back (no time asserted)."""
    from app.run_session.run_size import RUN_SIZES, RunSize
    from app.training import data as training_data
    from benchmarks import class_queue

    rt = training_data.builtin_data("rotten_tomatoes")  # from the usual cache, before the runs' own
    monkeypatch.setattr(training_data, "builtin_data", lambda name: rt)
    monkeypatch.setenv("BERT_EXPLORER_CACHE", str(tmp_path))
    monkeypatch.setitem(RUN_SIZES, "quick", RunSize("Quick", 40, 20, 2, "tiny"))
    res = class_queue.class_turn(students=3, max_jobs=2, threads=1)
    assert res["errors"] == [] and res["students"] == 3 and res["max_jobs"] == 2
    assert 0 < res["run_seconds_mean"] <= res["run_seconds_max"] <= 60 * res["minutes_until_last"]
    assert 0 <= res["accuracy_mean"] <= 1


@pytest.mark.slow
def test_precision_rows_run_the_page_run_in_fp32_then_in_bf16(tmp_path, monkeypatch):
    """benchmarks.precision's run rows on a tiny run size: the jobs were given fp32, then bf16, and
    the row has both figures and their ratio (no time asserted)."""
    from app.run_session.run_size import RUN_SIZES, RunSize
    from app.training import data as training_data
    from benchmarks import precision
    from bert.train.precision import cpu_has_bf16

    if not cpu_has_bf16():
        pytest.skip("this CPU has no native bf16")
    rt = training_data.builtin_data("rotten_tomatoes")
    monkeypatch.setattr(training_data, "builtin_data", lambda name: rt)
    monkeypatch.setenv("BERT_EXPLORER_CACHE", str(tmp_path))
    monkeypatch.setitem(RUN_SIZES, "quick", RunSize("Quick", 40, 20, 2, "tiny"))
    (row,) = precision.run_rows(["quick"], threads=1)
    assert row["row"] == "quick-run" and row["errors"] == [] and row["ran_in"] == ["fp32", "bf16"]
    assert row["ratio"] == pytest.approx(row["bf16"] / row["fp32"]) and row["fp32_cpu"] > 0
    assert 0 <= row["fp32_accuracy"] <= 1 and 0 <= row["bf16_accuracy"] <= 1
    assert precision.markdown([row]).splitlines()[2].startswith("| quick-run | the Fine-tuning page's quick run")


def test_a_precision_job_row_runs_the_analysis_in_fp32_then_in_bf16_against_its_target():
    """benchmarks.precision's patch-all-sites row: both columns in seconds of CPU and of the wall, their
    ratios, what each reached, and the row's target checked for each (no time asserted)."""
    from benchmarks import precision
    from bert.train.precision import cpu_has_bf16

    if not cpu_has_bf16():
        pytest.skip("this CPU has no native bf16")
    (row,) = precision.job_rows(["patch-all-sites"])
    assert row["row"] == "patch-all-sites" and row["target"] == 10.0 and row["unit"] == "s"
    assert row["ratio_cpu"] == pytest.approx(row["bf16_cpu"] / row["fp32_cpu"]) and row["fp32_cpu"] > 0
    assert "(fp32: residual: best restored share" in row["what"] and "; bf16: residual:" in row["what"]
    line = precision.markdown([row]).splitlines()[2]
    assert line.startswith("| patch-all-sites | minilm-l6 patching") and "| <= 10 s: " in line


def test_run_async_works_inside_a_running_event_loop_and_re_raises():
    """The server tests drive websockets with asyncio after the browser tests started Playwright's
    sync API, whose event loop runs in the main thread: run_async must work there too."""
    import asyncio

    from benchmarks.server import run_async

    async def answer():
        await asyncio.sleep(0)
        return 42

    async def fails():
        raise ValueError("from the coroutine")

    async def inside_a_loop():
        refused = answer()
        with pytest.raises(RuntimeError):
            asyncio.run(refused)  # what the tests did before
        refused.close()
        assert run_async(answer()) == 42
        with pytest.raises(ValueError, match="from the coroutine"):
            run_async(fails())

    failed: list[BaseException] = []

    def in_a_thread():  # a loop of its own: the main thread's may already run one (Playwright's)
        try:
            asyncio.run(inside_a_loop())
        except BaseException as e:  # noqa: BLE001 - re-raised below
            failed.append(e)

    t = threading.Thread(target=in_a_thread)
    t.start()
    t.join()
    if failed:
        raise failed[0]
