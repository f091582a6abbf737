"""The distributed mode end to end, as a class uses it: scripts/cluster_local.sh (a Ray head + two
1-CPU workers, PostgreSQL, two app replicas in ray mode, HAProxy) inside the tests' network
namespace, and students speaking Streamlit's websocket protocol through HAProxy (a cookie picks
their replica, as a browser's does). The teacher starts a class board on one replica; a student
there joins it, fine-tunes (the default run on fewer texts), watches the live panel count steps,
sees the result with its run code and posts it; the job ran in a Ray worker process under a
worker node, never in a replica. A student on the other replica sees the post, reopens the run
by its code, and pre-trains a small model from the Pre-training page (live steps, result, run
code). No replica logs a traceback."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks.server import free_port, run_async
from bert.data.corpus.fetch import bert_cache_dir
from tests.helpers import link_built_data
from tests.live_server import loadtest
from tests.ray_cluster import process_tree, require_isolation

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "cluster_local.sh"
pytestmark = pytest.mark.slow
T = 240  # bound on one page run, and on the job
SMALL = {"Use at most this many training texts": 320, "…and validation texts": 100}  # 20 steps
# 200 steps take seconds on a worker, so the live panel is seen moving (30 ended between two polls)
SMALL_PRETRAIN = {"Steps": 200, "Evaluate every N steps": 50, "Warm-up steps": 5, "Batch size": 8}


def cluster(env: dict[str, str], *args: str, timeout: float = 400) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=timeout)


def job_actors(head: int, workers: set[int]) -> dict[int, str]:
    """The processes this cluster's Ray runs a JobActor in (their title is ray::JobActor), each
    with the node it runs under: "head" or "worker"."""
    under = {p: "worker" for p in process_tree(workers)} | {p: "head" for p in process_tree({head})}
    found = {}
    for p in under:
        try:
            if Path(f"/proc/{p}/cmdline").read_bytes().startswith(b"ray::JobActor"):
                found[p] = under[p]
        except OSError:
            pass
    return found


async def course(url: str, teacher_key: str, head: int, workers: set[int]) -> dict:
    lt = loadtest()
    on = {r: {"Cookie": f"SERVERID={r}"} for r in ("r1", "r2")}
    out: dict = {"actors": {}}
    teacher, alice, bob = lt.ProtocolPage(url, on["r1"]), lt.ProtocolPage(url, on["r1"]), lt.ProtocolPage(url, on["r2"])
    try:
        for pg in (teacher, alice, bob):
            await pg.connect()
            await pg.run(T, page="board")
        await teacher.type("Teacher key", teacher_key, T)
        await teacher.click("Unlock", T)
        await teacher.click("Start a board", T)
        out["board"] = re.search(r"Board \*\*(\w+)\*\* is started", teacher.state()["body"]).group(1)
        for pg in (alice, bob):
            await pg.type("Class code", out["board"], T)
            await pg.click("Join a board", T)

        job = out["job"] = lt.JobRun("alice")
        task = asyncio.create_task(lt.protocol_training(url, job, T, settings=SMALL, every_s=1.0, pg=alice))
        while not task.done():
            out["actors"] |= job_actors(head, workers)
            await asyncio.sleep(0.5)
        await task
        await alice.type("Your nickname on the board", "alice", T)
        await alice.click("Post this run to the class board", T)
        out["posted"] = alice.state()

        await bob.run(T)  # the board page again
        out["bob_board"] = bob.state()
        await bob.run(T, page="finetune")
        await bob.type("Run code", job.code or "", T)
        await bob.click("Reopen", T)
        out["bob_reopened"] = bob.state()

        # bob pre-trains a small model from scratch (its vocabulary trained on the worker), on his replica
        pre = out["pretrain"] = lt.JobRun("bob")
        task = asyncio.create_task(
            lt.protocol_training(url, pre, T, settings=SMALL_PRETRAIN, every_s=0.5, pg=bob, page="pretrain")
        )
        while not task.done():
            out["actors"] |= job_actors(head, workers)
            await asyncio.sleep(0.5)
        await task
    finally:
        for pg in (teacher, alice, bob):
            await pg.close()
    return out


def test_a_class_fine_tunes_on_ray_workers_through_haproxy(tmp_path):
    require_isolation()
    data = bert_cache_dir() / "datasets"
    if not (data / "rotten_tomatoes.csv").is_file():
        pytest.skip(f"the built-in data set rotten_tomatoes is not in {data} (the cluster has no network)")
    corpora = bert_cache_dir() / "corpora"
    if not (corpora / "wordnet.jsonl").is_file():
        pytest.skip(f"the pre-training page's default corpus (wordnet) is not in {corpora}")
    cache = link_built_data(tmp_path / "cache")  # read only; runs and job folders go to the test's own folder
    state = tmp_path / "state"
    env = {
        **os.environ,
        "PYTHON": os.environ.get("PYTHON", sys.executable),
        "BERT_EXPLORER_CACHE": str(cache),
        "CLUSTER_STATE": str(state),
        "CLUSTER_BACKEND": "ray",
        "CLUSTER_PROXY_PORT": str(free_port()),
        "CLUSTER_RAY_PORT": str(free_port()),
        "CLUSTER_PG_PORT": str(free_port()),
        "CLUSTER_REPLICA_PORTS": f"{free_port()} {free_port()}",
    }
    started = cluster(env, "start")
    try:
        assert started.returncode == 0, started.stderr[-3000:]
        st = dict(line.split("=", 1) for line in (state / "state.env").read_text().splitlines() if "=" in line)
        head, *workers = (int(g) for g in st["RAY_PGIDS"].strip('"').split())
        t0 = time.monotonic()
        out = run_async(course(st["PROXY_URL"], st["TEACHER_KEY"], head, set(workers)))
        took = time.monotonic() - t0
        job = out["job"]
        assert job.errors == [] and job.state == "done", (job, took)
        assert re.fullmatch(r"[A-Z0-9]{6}", job.code or ""), job
        assert len(job.steps) >= 2 and job.steps == sorted(job.steps), job  # the live panel moved
        # it trained in a Ray worker process of a worker node (the head has no CPUs): a replica is a
        # Ray driver, which never runs an actor
        assert out["actors"], "no ray::JobActor process of this cluster was seen while the job trained"
        assert set(out["actors"].values()) == {"worker"}, out["actors"]
        assert "Posted to board" in out["posted"]["body"], out["posted"]
        # the other replica: the post on the board (PostgreSQL), the run reopened by its code
        assert "1 run(s) posted" in out["bob_board"]["body"], out["bob_board"]
        reopened = out["bob_reopened"]
        assert f"Run {job.code} is open" in reopened["body"] and not reopened["errors"], reopened
        assert loadtest().SAVED.search(reopened["body"]).group(1) == job.code
        # pre-training from the page, on the other replica: live steps, the result and its run code
        pre = out["pretrain"]
        assert pre.errors == [] and pre.state == "done", pre
        assert len(pre.steps) >= 2 and pre.steps == sorted(pre.steps) and pre.code != job.code, pre
        logs = [(state / "logs" / f"replica{i}.log").read_text(errors="replace") for i in (1, 2)]
        assert not any("Traceback" in log for log in logs), logs
    finally:
        stopped = cluster(env, "stop", timeout=120)
    assert stopped.returncode == 0, stopped.stderr
