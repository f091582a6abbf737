"""The local Ray cluster the distributed tests stand on (tests/ray_cluster.py, the `ray_cluster`
fixture): three nodes, work placed by CPU and GPU, a detached actor seen by a second driver,
a worker that dies, token auth, and nothing listening beyond loopback."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import time

import pytest

from tests.ray_cluster import interfaces, is_loopback, is_wildcard, listening_sockets

pytestmark = pytest.mark.slow


def running(pid: int) -> bool:
    """A live process (not gone, not a zombie its new parent has yet to reap)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _driver(env: dict[str, str], code: str) -> subprocess.CompletedProcess:
    """`code` in a second driver process (what a second app replica is) with `env`."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_three_nodes_a_task_on_each_worker_and_the_gpu_actor_on_the_gpu_node(ray_cluster):
    ray = ray_cluster.connect()
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    assert len(ray.nodes()) == 3 and all(n["Alive"] for n in ray.nodes())
    assert ray.cluster_resources()["CPU"] == 2 and ray.cluster_resources()["GPU"] == 2
    head = next(n for n in ray.nodes() if n["NodeID"] == ray_cluster.node_id(0))
    assert head["Resources"].get("CPU", 0) == 0  # jobs never run on the head

    @ray.remote(num_cpus=1)
    def where():
        return ray.get_runtime_context().get_node_id()

    workers = [ray_cluster.node_id(1), ray_cluster.node_id(2)]
    ran_on = ray.get(
        [where.options(scheduling_strategy=NodeAffinitySchedulingStrategy(w, soft=False)).remote() for w in workers]
    )
    assert ran_on == workers

    @ray.remote(num_gpus=1, num_cpus=0)
    class OnGpu:
        def where(self):
            return ray.get_runtime_context().get_node_id(), ray.get_gpu_ids()

    actor = OnGpu.remote()
    node, gpus = ray.get(actor.where.remote(), timeout=60)
    assert node == ray_cluster.node_id(2) and len(gpus) == 1
    ray.kill(actor)


def test_a_detached_actor_is_found_by_a_second_driver_and_a_wrong_token_is_refused(ray_cluster):
    ray = ray_cluster.connect()

    @ray.remote(num_cpus=0)
    class Counter:
        def __init__(self):
            self.n = 0

        def incr(self):
            self.n += 1
            return self.n

    counter = Counter.options(name="shared-counter", namespace="replicas", lifetime="detached").remote()
    assert ray.get(counter.incr.remote()) == 1
    found = _driver(
        ray_cluster.env,
        """
        import ray
        ray.init(log_to_driver=False)  # RAY_ADDRESS and the token from the environment
        print("COUNT", ray.get(ray.get_actor("shared-counter", namespace="replicas").incr.remote()))
        """,
    )
    assert "COUNT 2" in found.stdout, found.stderr[-2000:]
    refused = _driver(
        # two tries, a second apart (Ray's default: 20, for a GCS still starting)
        {**ray_cluster.env, "RAY_AUTH_TOKEN": "0" * 64, "RAY_gcs_server_port_wait_time_s": "2"},
        """
        import ray
        ray.init(log_to_driver=False)
        print("CONNECTED")
        """,
    )
    assert refused.returncode != 0 and "CONNECTED" not in refused.stdout
    assert "auth" in refused.stderr.lower(), refused.stderr[-2000:]
    ray.kill(counter)


def test_a_worker_that_dies_ends_its_actors_call_with_actor_died(ray_cluster):
    ray = ray_cluster.connect()
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    @ray.remote(num_cpus=1)
    class Job:
        def pid(self):
            return os.getpid()

        def train(self, seconds):
            time.sleep(seconds)
            return "done"

    job = Job.options(scheduling_strategy=NodeAffinitySchedulingStrategy(ray_cluster.node_id(1), soft=False)).remote()
    pid = ray.get(job.pid.remote(), timeout=60)
    call = job.train.remote(120)
    time.sleep(0.5)  # the call is running
    t0 = time.monotonic()
    ray_cluster.kill_node(1)
    # bounded: a hung call would end in GetTimeoutError and fail the test. The running call may first end
    # as "unavailable" (its node's socket closed before the GCS marked the node dead); a call after that
    # ends as died, which is what the backend waits for before it says "lost"
    with pytest.raises(ray.exceptions.RayActorError):
        ray.get(call, timeout=30)
    with pytest.raises(ray.exceptions.ActorDiedError):
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                ray.get(job.pid.remote(), timeout=30)
                break  # it answered: it did not die, and pytest.raises fails
            except ray.exceptions.ActorUnavailableError:
                time.sleep(0.5)
    print(f"actor-died after {time.monotonic() - t0:.2f} s")
    assert ray_cluster.node_pids(1) == [] and not running(pid)  # the actor's process went with it
    # the other worker takes the next job
    other = Job.remote()
    assert ray.get(other.train.remote(0), timeout=60) == "done"
    ray.kill(other)


def test_every_listening_socket_is_on_loopback_in_a_namespace_of_only_lo(ray_cluster):
    ray_cluster.connect()
    assert interfaces() == ["lo"]  # so even a wildcard socket is reachable only through lo
    sockets = listening_sockets()
    assert any(port == ray_cluster.port for _, port in sockets)  # the GCS is among them
    assert len(sockets) >= 6, sockets  # GCS, three raylets, object managers, agents
    elsewhere = [(a, p) for a, p in sockets if not (is_loopback(a) or is_wildcard(a))]
    assert not elsewhere, elsewhere


def test_listening_sockets_reads_both_tables_and_addresses_are_classified():
    with socket.socket(socket.AF_INET) as v4, socket.socket(socket.AF_INET6) as v6:
        v4.bind(("127.0.0.1", 0))
        v6.bind(("::1", 0))
        v4.listen()
        v6.listen()
        found = set(listening_sockets())
        assert ("127.0.0.1", v4.getsockname()[1]) in found and ("::1", v6.getsockname()[1]) in found
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("::ffff:127.0.0.1")
    assert is_wildcard("0.0.0.0") and is_wildcard("::")
    assert not is_loopback("10.0.0.5") and not is_wildcard("10.0.0.5") and not is_loopback("::ffff:10.0.0.5")
