"""The Ray head goes away while a replica is connected (a cluster of its own: a head and one worker,
on 127.0.0.1 in the tests' network namespace): the replica's pages get the one clear message
(app.jobs.ray_backend.UNREACHABLE), each call within its bound, never Ray's own exceptions or a
hung call, and the replica process lives on past the 60 s after which Ray ends a driver by default
(RAY_gcs_rpc_server_reconnect_timeout_s, set on the cluster as scripts/cluster_local.sh does)."""

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
PAST_RAYS_DEFAULT_S = 75  # the replica must still answer this long after the head went (Ray's default: 60)

REPLICA = """
import json, sys, time
from app.jobs.backend import job_backend
from app.jobs import ray_backend
jobs = job_backend()  # as a replica makes it (it sets what Ray reads first)
print(json.dumps({"ready": time.time()}), flush=True)
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
    env.pop("RAY_gcs_rpc_server_reconnect_timeout_s", None)  # the app sets it for itself
    replica = subprocess.Popen(
        [sys.executable, "-c", REPLICA], env=env, cwd=ROOT, text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        first = json.loads(replica.stdout.readline() or "{}")
        assert "ready" in first, "the replica did not connect"
        cluster.kill_head()
        gone = time.time()
        replica.stdin.write(f"{gone + PAST_RAYS_DEFAULT_S}\n")
        replica.stdin.flush()
        out, _ = replica.communicate(timeout=PAST_RAYS_DEFAULT_S + 120)
    finally:
        if replica.poll() is None:
            replica.kill()
        cluster.stop()
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    calls = [d for d in lines if "call" in d]
    assert calls and {d["said"] for d in calls} == {UNREACHABLE}, {d["said"] for d in calls}
    assert max(d["took"] for d in calls) < ASK_TIMEOUT_S + 5, calls  # bounded: never a hung page
    assert replica.returncode == 0 and lines[-1].get("alive", 0) > gone + PAST_RAYS_DEFAULT_S - 5, lines[-3:]
