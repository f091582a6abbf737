"""A course's turn at fine-tuning on a Ray cluster: every student's default run (the Fine-tuning
page's, as benchmarks/class_queue.py starts them) queued at once through the app's Ray backend
(app/jobs/ray_backend.py: one 1-CPU actor a run, the registry's caps) on W one-CPU worker nodes.

    python -m benchmarks.course_queue                          # W = 1 and W = 2, 6 runs each
    python -m benchmarks.course_queue --workers 1,2 --runs 6 --json out.json

A course is 300 runs: too long to run here, so a bounded number of runs is measured on each W
(scripts/cluster_local.sh: a Ray head and W workers, no app replicas, in a network namespace of
its own) and the 300 are projected from it:
  - measured: each run's seconds on its worker (the actor's start to its end), and the minutes
    from submitting all `runs` to the last one's end (so the throughput, runs a minute);
  - projected: 300 runs on W workers = 300 / that throughput; the W a course needs for 300 runs
    in `target_min` minutes = ceil(300 x the mean run's seconds / (60 x target_min)), one core
    each (a worker node's run does not slow the others' only when each has a core of its own).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COURSE = 300
TARGET_MIN = 10.0


def measure(runs: int, size: str = "quick", threads: int = 1, seed: int = 0) -> dict:
    """On the cluster at RAY_ADDRESS (run inside its namespace): `runs` default runs queued at once."""
    import ray

    from app.jobs.ray_backend import RayJobs
    from app.model_sources import load_model

    from .class_queue import default_specs, runs_saved_in_a_temporary_cache

    _, specs = default_specs(runs, size, threads, seed)
    with runs_saved_in_a_temporary_cache():
        jm = RayJobs(alive=lambda _session: True, max_queue=runs, check_marker=True, load_base=load_model)
        try:
            workers = sum(1 for n in ray.nodes() if n["Alive"] and n["Resources"].get("CPU", 0) > 0)
            t0 = time.time()
            jobs = [jm.submit_spec(f"owner{i}", spec)[0] for i, spec in enumerate(specs)]
            jm.wait_all(timeout=3600)
            end = time.time()
        finally:
            jm.close()
    done = [j for j in jobs if j.status == "done"]
    seconds = [j.finished - j.started for j in done if j.started and j.finished]
    wall = max((j.finished for j in done if j.finished), default=end) - t0
    return {
        "workers": workers,
        "runs": runs,
        "size": size,
        "done": len(done),
        "errors": [f"{j.id}: {j.status} {j.error or ''}".strip() for j in jobs if j.status != "done"],
        "run_seconds": [round(s, 1) for s in seconds],
        "run_seconds_mean": round(statistics.mean(seconds), 1) if seconds else None,
        "minutes_until_last": round(wall / 60, 2),
        "runs_per_minute": round(len(done) / (wall / 60), 3) if wall > 0 else None,
        "nodes": len({j.node for j in done}),
        "loadavg_end": list(os.getloadavg()),
    }


def on_cluster(workers: int, runs: int, size: str = "quick") -> dict:
    """Start a cluster of `workers` 1-CPU nodes (scripts/cluster_local.sh, no replicas), measure, stop it."""
    script = ROOT / "scripts" / "cluster_local.sh"
    with tempfile.TemporaryDirectory(prefix="bert-course-") as d:
        env = {
            **os.environ,
            "PYTHON": sys.executable,
            "CLUSTER_STATE": str(Path(d) / "state"),
            "CLUSTER_REPLICA_PORTS": "none",
            "CLUSTER_WORKER_GPUS": " ".join(["0"] * workers),
        }
        out = Path(d) / "out.json"
        started = subprocess.run(["bash", str(script), "start"], env=env, capture_output=True, text=True, timeout=600)
        try:
            if started.returncode != 0:
                raise RuntimeError(f"the cluster did not start: {started.stderr[-2000:]}")
            cmd = [sys.executable, "-m", "benchmarks.course_queue", "--measure", str(runs), "--size", size]
            ran = subprocess.run(
                ["bash", str(script), "exec", *cmd, "--json", str(out)],
                env=env,
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=7200,
            )
            if ran.returncode != 0 or not out.is_file():
                raise RuntimeError(f"the measurement failed: {ran.stderr[-2000:]}")
            return json.loads(out.read_text())
        finally:
            subprocess.run(["bash", str(script), "stop"], env=env, capture_output=True, timeout=300)


def course(workers: list[int], runs: int, size: str = "quick", target_min: float = TARGET_MIN) -> dict:
    """Measured on each W, and the course of COURSE runs projected from it."""
    measured = {w: on_cluster(w, runs, size) for w in workers}
    one = measured.get(min(workers))
    per_run = one["run_seconds_mean"] if one else None
    projected = {
        w: round(COURSE / m["runs_per_minute"], 1) if m["runs_per_minute"] else None for w, m in measured.items()
    }
    return {
        "course": COURSE,
        "measured": measured,
        "run_seconds": per_run,
        "projected_minutes": projected,  # COURSE runs at the throughput measured on W workers
        "ideal_minutes": {w: round(math.ceil(COURSE / w) * per_run / 60, 1) for w in workers} if per_run else {},
        "workers_for_target": math.ceil(COURSE * per_run / (60 * target_min)) if per_run else None,
        "target_min": target_min,
    }


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(prog="python -m benchmarks.course_queue", description=__doc__.split("\n\n")[0])
    p.add_argument("--workers", default="1,2", help="comma-separated numbers of 1-CPU worker nodes (default 1,2)")
    p.add_argument("--runs", type=int, default=6, help="runs measured on each (default 6)")
    p.add_argument("--size", default="quick", help="the page's run size: quick (the default) or full")
    p.add_argument("--measure", type=int, default=None, help=argparse.SUPPRESS)  # inside the cluster's namespace
    p.add_argument("--json", default=None, help="also write the result here")
    a = p.parse_args(argv)
    if a.measure:
        res = measure(a.measure, a.size)
    else:
        res = course([int(w) for w in a.workers.split(",")], a.runs, a.size)
    print(json.dumps(res))
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=1) + "\n")
    return res


if __name__ == "__main__":
    main()
