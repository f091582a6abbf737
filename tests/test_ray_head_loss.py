"""The Ray head goes away while a replica is connected (a cluster of its own: a head and one worker,
on 127.0.0.1 in the tests' network namespace): the replica's pages get the one clear message
(app.jobs.ray_backend.UNREACHABLE), each call within its bound, never Ray's own exceptions or a
hung call, and the replica process lives on.

Ray ends a driver RAY_gcs_rpc_server_reconnect_timeout_s after it lost its head (60 s by default);
the app sets it long for itself, the cluster's nodes have it as scripts/cluster_local.sh sets it.
Rather than outwait Ray's 60 s, a second replica is the control: the same program with the variable
set short (RAY_ENDS_IT_S) must end soon after the head went, while the replica left to the app's own
value runs with it long and still answers, with the message, WINDOW_S after the head went."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.ray_cluster import RayCluster, require_isolation

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parent.parent
RECONNECT = "RAY_gcs_rpc_server_reconnect_timeout_s"
RAY_ENDS_IT_S = 5  # the control's setting: Ray ends it this long after the head went
WINDOW_S = 15  # the replicas ask this long after the head went (3x the control's limit): the control is gone
LONG_S = 3600  # the app's own setting is at least this long (Ray's default: 60)

REPLICA = """
import json, os, sys, time
from app.jobs.backend import job_backend
from app.jobs import ray_backend
jobs = job_backend()  # as a replica makes it (it sets what Ray reads first)
print(json.dumps({"ready": time.time(), "reconnect_s": os.environ.get(sys.argv[1])}), flush=True)
end = float(sys.stdin.readline())  # the head is gone; ask until `end`
while time.time() < end:
    for call in ("counts", "find"):
        t = time.time()
        try:
            jobs.counts() if call == "counts" else jobs.find("browser:x", "finetune")
            said = "answered"
        except ray_backend.ClusterNotReady as e:
            said = str(e)
        except Exception as e:  # what a page must never get
            said = f"{type(e).__name__}: {e}"
        print(json.dumps({"call": call, "said": said, "took": time.time() - t}), flush=True)
    time.sleep(2)
print(json.dumps({"alive": time.time()}), flush=True)
"""


def _lines(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def test_a_lost_head_gives_the_pages_one_clear_message_and_the_replica_lives_on(monkeypatch):
    require_isolation()
    cluster = RayCluster(Path(tempfile.mkdtemp(prefix="ray-")), workers=((1, 0),))
    for name, value in cluster.env.items():
        monkeypatch.setenv(name, value)
    from app.jobs.ray_backend import ASK_TIMEOUT_S, UNREACHABLE  # imports ray: after its auth settings

    cluster.start()
    cache = cluster.root / "cache"
    cache.mkdir()
    env = {**os.environ, **cluster.env, "PYTHONPATH": str(ROOT), "BERT_EXPLORER_CACHE": str(cache)}
    env |= {"BERT_EXPLORER_BACKEND": "ray"}
    env.pop(RECONNECT, None)  # the app sets it for itself
    replicas = {
        kind: subprocess.Popen(
            [sys.executable, "-c", REPLICA, RECONNECT],
            env=env | extra,
            cwd=ROOT,
            text=True,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        for kind, extra in (("replica", {}), ("control", {RECONNECT: str(RAY_ENDS_IT_S)}))
    }
    out = {}
    try:
        first = {kind: json.loads(p.stdout.readline() or "{}") for kind, p in replicas.items()}
        assert all("ready" in f for f in first.values()), f"a replica did not connect: {first}"
        cluster.kill_head()
        gone = time.time()
        for p in replicas.values():
            p.stdin.write(f"{gone + WINDOW_S}\n")
            p.stdin.flush()
        for kind, p in replicas.items():
            out[kind] = _lines(p.communicate(timeout=WINDOW_S + 120)[0])
    finally:
        for p in replicas.values():
            if p.poll() is None:
                p.kill()
        cluster.stop()
    assert float(first["replica"]["reconnect_s"] or 0) >= LONG_S, first  # the app's own, not Ray's 60 s
    control = replicas["control"]
    assert control.returncode != 0 and not any("alive" in d for d in out["control"]), (
        f"the control (Ray's limit at {RAY_ENDS_IT_S} s) outlived {WINDOW_S} s without its head: {out['control'][-3:]}"
    )
    lines = out["replica"]
    calls = [d for d in lines if "call" in d]
    assert calls and {d["said"] for d in calls} == {UNREACHABLE}, {d["said"] for d in calls}
    assert max(d["took"] for d in calls) < 2 * ASK_TIMEOUT_S, calls  # ended by its own limit: never a hung page
    assert replicas["replica"].returncode == 0 and lines[-1].get("alive", 0) > gone + WINDOW_S - 5, lines[-3:]
