"""A real local Ray cluster for tests: a head with no CPU and worker nodes of one CPU each (one
with two fake GPUs), every process on 127.0.0.1, token auth on, in a temp folder of its own.

    cluster = RayCluster(tmp_path)   # tests/conftest.py's `ray_cluster` fixture does this
    cluster.start()                  # `ray start --head` + `ray start --address` per worker
    cluster.connect()                # ray.init() in this process (env has RAY_ADDRESS etc.)
    cluster.kill_node(1)             # worker 1's machine goes away: SIGKILL to all its processes
    cluster.restart_node(1)          # a fresh node in its place (a new node id)
    cluster.stop()                   # every process it started, and nothing else

Ray must never bind the machine's real address: outside a network namespace whose only
interface is loopback, Ray 2.60 binds and dials the machine's own address whatever
`--node-ip-address` says. `isolation_problem()` says why a process is not in such a namespace
(scripts/isolated.sh puts it in one); the fixture refuses to start the cluster otherwise.

Each node is the process group of its `ray start` (which leaves raylet, agents and, on the head,
the GCS behind when it exits); Ray's worker processes start sessions of their own but stay the
raylet's children. `processes()` also finds what carries this cluster's environment mark
(`CLUSTER_MARK`) or names its temp folder, and `stop()` leaves none of them.
`ray stop` is never used: it stops every Ray process of the machine, another user's too.
"""

from __future__ import annotations

import ipaddress
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks.server import HOST, free_port, own_session

CLUSTER_MARK = "BERT_EXPLORER_TEST_RAY_CLUSTER"
# Ray's token of this process's clusters: a process caches the first token it reads
TOKEN = secrets.token_hex(32)
# the least Ray accepts is 75 MB; the tests move a few small objects
OBJECT_STORE_BYTES = 80 * 1024 * 1024
# A dead node is noticed after period x threshold (Ray's defaults: 3 s x 5 = 15 s; here 1.5 s)
FAST_FAILURE_DETECTION = {"RAY_health_check_period_ms": "500", "RAY_health_check_failure_threshold": "3"}
# as scripts/cluster_local.sh and docs/DEPLOY.md set it: a replica (a Ray driver) outlives a lost head
# instead of ending 60 s after it (a cluster setting, which drivers take from the head)
OUTLIVE_THE_HEAD = {"RAY_gcs_rpc_server_reconnect_timeout_s": "86400"}


# ==== the network namespace =========================================================================


def interfaces() -> list[str]:
    """The network interfaces of this process's namespace (/proc/net/dev is per namespace;
    /sys/class/net shows the namespace that mounted /sys, the machine's)."""
    with open("/proc/net/dev") as f:
        return [line.split(":", 1)[0].strip() for line in f.readlines()[2:]]


def isolation_problem() -> str | None:
    """None when this process is in a network namespace whose only interface is `lo`, and it is
    up; otherwise why not."""
    names = interfaces()
    if names != ["lo"]:
        return (
            f"this process's network namespace has interfaces {names}, not only lo: Ray would bind the "
            "machine's real address. Run the tests inside a namespace of their own: "
            "`bash scripts/isolated.sh python -m pytest ...` (as root; `make test` does)"
        )
    try:  # lo is up: 127.0.0.1 answers
        with socket.socket() as server, socket.socket() as client:
            server.bind((HOST, 0))
            server.listen()
            client.settimeout(2)
            client.connect(server.getsockname())
    except OSError:
        return "lo is down in this namespace: `ip link set lo up` first (scripts/isolated.sh does)"
    return None


def require_isolation() -> None:
    """Skip the test (fail it where CI=true) unless this process is in a network namespace of only lo."""
    import pytest

    problem = isolation_problem()
    if problem:
        if os.environ.get("CI") == "true":
            pytest.fail(problem)
        pytest.skip(problem)


def _v4(hex_addr: str) -> ipaddress.IPv4Address:
    return ipaddress.IPv4Address(bytes.fromhex(hex_addr)[::-1])


def _v6(hex_addr: str) -> ipaddress.IPv6Address:
    raw = bytes.fromhex(hex_addr)
    return ipaddress.IPv6Address(b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4)))


def listening_sockets() -> list[tuple[str, int]]:
    """(address, port) of every listening TCP socket of this network namespace (every process in
    it, /proc/net/tcp and tcp6)."""
    out = []
    for name, parse in (("/proc/net/tcp", _v4), ("/proc/net/tcp6", _v6)):
        try:
            with open(name) as f:
                rows = f.readlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if fields[3] == "0A":  # TCP_LISTEN
                addr, port = fields[1].split(":")
                out.append((str(parse(addr)), int(port, 16)))
    return out


def is_loopback(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def is_wildcard(address: str) -> bool:
    return ipaddress.ip_address(address).is_unspecified


# ==== processes =====================================================================================


def _proc_table() -> dict[int, tuple[int, int, int]]:
    """pid -> (parent pid, process group, start time in clock ticks) of every process of the machine."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if fields[0] != "Z":
                out[int(name)] = (int(fields[1]), int(fields[2]), int(fields[19]))
        except (OSError, IndexError, ValueError):
            pass
    return out


def _tree(table: dict[int, tuple[int, int, int]], pgids: set[int]) -> set[int]:
    """The processes of these groups and everything they started."""
    pids = {pid for pid, (_, pgid, _) in table.items() if pgid in pgids}
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    todo = list(pids)
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in pids:
                pids.add(child)
                todo.append(child)
    return pids


def process_tree(pgids: set[int]) -> list[int]:
    """The live processes of these process groups and everything they started."""
    return sorted(_tree(_proc_table(), pgids))


def _has_mark(pid: int, mark: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return mark in f.read().split(b"\0")
    except OSError:
        return False


def _names(pid: int, text: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return text in f.read()
    except OSError:
        return False


def _rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _kill(pids, sig) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def _ray_cli() -> list[str]:
    exe = Path(sys.executable).with_name("ray")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "ray.scripts.scripts"]


# ==== the cluster ===================================================================================


@dataclass
class Node:
    """One `ray start`: its process group, its node manager's port (how `ray.nodes()` names it)."""

    index: int  # 0 the head, then the workers from 1
    cpus: int
    gpus: int
    manager_port: int
    pgid: int = 0
    log: Path | None = None
    alive: bool = False


class RayCluster:
    def __init__(self, root: Path, workers: tuple[tuple[int, int], ...] = ((1, 0), (1, 2))):
        """`workers`: (CPUs, GPUs) of each worker node; the head has none of either."""
        self.root = Path(root)
        self.temp_dir = self.root / "ray"  # sessions, logs, sockets (Ray wants a short path)
        self.cluster_id = secrets.token_hex(6)
        self.token = TOKEN
        self.port = free_port()
        self.address = f"{HOST}:{self.port}"
        self.head = Node(0, 0, 0, free_port())
        self.workers = [Node(i + 1, c, g, free_port()) for i, (c, g) in enumerate(workers)]
        self.start_s = 0.0
        self.stop_s = 0.0
        self._seen: set[tuple[int, int]] = set()  # (pid, start time) of every process found

    # --- what a driver needs
    @property
    def env(self) -> dict[str, str]:
        """Environment of a process that connects to this cluster (a second driver, an app replica)."""
        return {
            "RAY_ADDRESS": self.address,
            "RAY_AUTH_MODE": "token",
            "RAY_AUTH_TOKEN": self.token,
            "RAY_TMPDIR": str(self.root),
            "RAY_USAGE_STATS_ENABLED": "0",
        }

    def _node_env(self) -> dict[str, str]:
        return {**os.environ, **self.env, **FAST_FAILURE_DETECTION, **OUTLIVE_THE_HEAD, CLUSTER_MARK: self.cluster_id}

    def connect(self, namespace: str = "bert-explorer-tests"):
        """ray.init() in this process against this cluster (once); needs `self.env` in os.environ."""
        import ray

        if not ray.is_initialized():
            ray.init(address=self.address, namespace=namespace, log_to_driver=False, configure_logging=False)
        return ray

    # --- nodes
    def _start(self, node: Node, head: bool) -> None:
        args = [
            "start",
            "--node-ip-address",
            HOST,
            "--node-manager-port",
            str(node.manager_port),
            "--num-cpus",
            str(node.cpus),
            "--num-gpus",
            str(node.gpus),
            "--object-store-memory",
            str(OBJECT_STORE_BYTES),
            "--include-log-monitor",
            "false",
            "--disable-usage-stats",
        ]
        if head:
            args += [
                "--head",
                "--port",
                str(self.port),
                "--include-dashboard",
                "false",
                "--temp-dir",
                str(self.temp_dir),
            ]
        else:
            args += ["--address", self.address]
        node.log = self.root / f"node{node.index}.log"
        with open(node.log, "w") as log:
            proc = own_session(_ray_cli() + args, stdout=log, stderr=subprocess.STDOUT, env=self._node_env())
            node.pgid = proc.pid  # the session leader: raylet and the agents stay in its group
            try:
                rc = proc.wait(timeout=90)
            except subprocess.TimeoutExpired:
                proc.kill()
                rc = -1
        if rc != 0:
            raise RuntimeError(f"`ray start` of node {node.index} failed ({rc}): {node.log.read_text()[-2000:]}")
        node.alive = True

    def start(self) -> RayCluster:
        problem = isolation_problem()
        if problem:
            raise RuntimeError(problem)
        self.root.mkdir(parents=True, exist_ok=True)
        t0 = time.monotonic()
        try:
            self._start(self.head, head=True)
            # one after the other: two nodes starting at once in one session folder crash a raylet
            for node in self.workers:
                self._start(node, head=False)
            self.wait_nodes(1 + len(self.workers))
        except BaseException:
            self.stop()
            raise
        self.start_s = time.monotonic() - t0
        return self

    def alive_nodes(self) -> list[dict]:
        """`ray.nodes()` entries that are alive (from a short-lived GCS client, no driver needed)."""
        from ray._raylet import GcsClient

        client = GcsClient(address=self.address)
        return [
            {"node_id": info.node_id.hex(), "manager_port": info.node_manager_port}
            for info in client.get_all_node_info(timeout=10).values()
            if info.state == 0  # GcsNodeInfo.ALIVE
        ]

    def wait_nodes(self, n: int, timeout_s: float = 60) -> None:
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            if len(self.alive_nodes()) == n:
                return
            time.sleep(0.2)
        raise RuntimeError(f"the cluster did not reach {n} alive nodes in {timeout_s:.0f} s")

    def node_id(self, i: int) -> str:
        """Ray's node id (hex) of node i (0 the head, workers from 1)."""
        node = self.head if i == 0 else self.workers[i - 1]
        for info in self.alive_nodes():
            if info["manager_port"] == node.manager_port:
                return info["node_id"]
        raise LookupError(f"node {i} is not alive")

    def node_pids(self, i: int) -> list[int]:
        """Every process of node i: its `ray start`'s group and what those processes started
        (Ray's workers start sessions of their own but stay the raylet's children)."""
        node = self.head if i == 0 else self.workers[i - 1]
        table = _proc_table()
        pids = _tree(table, {node.pgid})
        self._seen |= {(p, table[p][2]) for p in pids}
        return sorted(pids)

    def kill_node(self, i: int) -> None:
        """Worker i's machine goes away: SIGKILL to each of its processes at once (raylet,
        agents, the workers running tasks and actors), no goodbye to the GCS."""
        if i < 1:
            raise ValueError("kill_node takes a worker (1, 2, ...); the head goes with stop()")
        node = self.workers[i - 1]
        for _ in range(3):  # a worker forked while we looked is caught next round
            pids = self.node_pids(i)
            if not pids:
                break
            _kill(pids, signal.SIGKILL)
            time.sleep(0.05)
        node.alive = False

    def kill_head(self) -> None:
        """The head's machine goes away (GCS, its raylet, the registry actor), as kill_node does a worker's."""
        for _ in range(3):
            pids = self.node_pids(0)
            if not pids:
                break
            _kill(pids, signal.SIGKILL)
            time.sleep(0.05)
        self.head.alive = False

    def restart_node(self, i: int) -> None:
        """A fresh worker node in place of a killed one (same resources, a new node id)."""
        node = self.workers[i - 1]
        if node.alive:
            return
        node.manager_port = free_port()
        self._start(node, head=False)
        self.wait_nodes(1 + sum(w.alive for w in self.workers))

    def heal(self) -> None:
        for node in self.workers:
            if not node.alive:
                self.restart_node(node.index)

    # --- what it costs
    def processes(self) -> list[int]:
        """Every live process this cluster started: the nodes' groups and what they started,
        those marked by `CLUSTER_MARK` (Ray's agents overwrite their environment with their
        title, its workers mostly do not), those whose command line names its temp folder (the
        GCS, raylets, agents) and those seen before (a killed node's orphans)."""
        mark = f"{CLUSTER_MARK}={self.cluster_id}".encode()
        table = _proc_table()
        pids = _tree(table, {n.pgid for n in [self.head, *self.workers] if n.pgid})
        folder = str(self.temp_dir).encode()
        pids |= {pid for pid in table if _has_mark(pid, mark) or _names(pid, folder)}
        pids |= {pid for pid, started in self._seen if table.get(pid, (0, 0, -1))[2] == started}
        pids.discard(os.getpid())
        self._seen |= {(p, table[p][2]) for p in pids if p in table}
        return sorted(pids)

    def rss_mb(self) -> float:
        """The VmRSS sum of the cluster's processes (shared pages counted in each)."""
        return sum(_rss_kb(p) for p in self.processes()) / 1024

    def stop(self, grace_s: float = 2) -> None:
        """The workers, then the head: SIGTERM to a node's processes, SIGKILL to those left after
        `grace_s` (the head's GCS, autoscaler monitor and runtime-env agent outlive a SIGTERM by
        15 s and more); raises if any process of the cluster is left."""
        t0 = time.monotonic()
        for i in [*range(len(self.workers), 0, -1), 0]:
            pids = self.node_pids(i)
            _kill(pids, signal.SIGTERM)
            end = time.monotonic() + grace_s
            while pids and time.monotonic() < end:
                time.sleep(0.05)
                pids = self.node_pids(i)
            _kill(pids, signal.SIGKILL)
        end = time.monotonic() + 10
        while (left := self.processes()) and time.monotonic() < end:
            _kill(left, signal.SIGKILL)  # orphans of killed nodes, a worker forked meanwhile
            time.sleep(0.1)
        for node in [self.head, *self.workers]:
            node.alive = False
        self.stop_s = time.monotonic() - t0
        if left:
            raise RuntimeError(f"Ray processes left after stop: {left}")
