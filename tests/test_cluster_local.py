"""scripts/cluster_local.sh on this machine, inside the tests' network namespace: start brings up
a Ray head + two workers, PostgreSQL, two replicas (the local backend: CLUSTER_BACKEND=local) and
HAProxy; status sees them; stop leaves no process and no folder behind."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from benchmarks.server import free_port
from tests.ray_cluster import is_loopback, listening_sockets, process_tree, require_isolation

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "cluster_local.sh"
pytestmark = pytest.mark.slow


def run(env: dict[str, str], *args: str, timeout: float = 400) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=timeout)


def read_state(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


def test_cluster_local_starts_everything_on_loopback_and_stops_it_all(tmp_path):
    require_isolation()
    state = tmp_path / "state"
    ports = {name: str(free_port()) for name in ("PROXY", "RAY", "PG")}
    env = {
        **os.environ,
        "PYTHON": os.environ.get("PYTHON", sys.executable),
        "CLUSTER_STATE": str(state),
        "CLUSTER_BACKEND": "local",
        "CLUSTER_PROXY_PORT": ports["PROXY"],
        "CLUSTER_RAY_PORT": ports["RAY"],
        "CLUSTER_PG_PORT": ports["PG"],
        "CLUSTER_REPLICA_PORTS": f"{free_port()} {free_port()}",
    }
    started = run(env, "start")
    try:
        assert started.returncode == 0, started.stderr[-3000:]
        st = read_state(state / "state.env")
        postmaster = int((Path(st["PG_DATA"]) / "postmaster.pid").read_text().split()[0])
        assert (state / "state.env").stat().st_mode & 0o077 == 0  # the token and the database password
        status = run(env, "status", timeout=60)
        assert status.returncode == 0, status.stdout + status.stderr
        assert status.stdout.count(": ok") == 3 and "postgresql: running" in status.stdout
        seen = set()
        for _ in range(4):
            with urllib.request.urlopen(f"http://127.0.0.1:{ports['PROXY']}/_stcore/health", timeout=10) as r:
                assert r.read() == b"ok"
                seen.add(r.headers["X-Replica"])
        assert seen == {"r1", "r2"}
        probe = run(
            env,
            "exec",
            os.environ.get("PYTHON", sys.executable),
            "-c",
            "import os, psycopg, ray\n"
            "ray.init(log_to_driver=False)\n"
            "print('NODES', len([n for n in ray.nodes() if n['Alive']]), ray.cluster_resources()['CPU'])\n"
            "db = psycopg.connect(os.environ['BERT_EXPLORER_DATABASE_URL'])\n"
            "print('DB', db.execute('select 1').fetchone()[0])\n",
            timeout=120,
        )
        assert "NODES 3 2.0" in probe.stdout and "DB 1" in probe.stdout, probe.stderr[-3000:]
        assert all(is_loopback(a) for a, _ in listening_sockets())
    finally:
        stopped = run(env, "stop", timeout=120)
    assert stopped.returncode == 0, stopped.stderr
    groups = {int(p) for key in ("REPLICA_PIDS", "RAY_PGIDS", "HAPROXY_PID") for p in st[key].strip('"').split()}
    groups.add(os.getpgid(postmaster) if os.path.exists(f"/proc/{postmaster}") else postmaster)
    assert process_tree(groups) == []  # Ray's nodes, the replicas, HAProxy, PostgreSQL
    assert not Path(st["RUN_DIR"]).exists() and not (state / "state.env").exists()
    assert run(env, "status", timeout=30).returncode == 3
