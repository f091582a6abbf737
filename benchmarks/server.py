"""The real app's server on 127.0.0.1, for the load test (scripts/loadtest.py), the browser tests
and the bench: start it, wait for /_stcore/health, stop its process group; HAProxy in front of
several (deploy/haproxy.cfg filled in, scripts/proxy_config.py); its memory and
processor time; a local headless Chromium and which URLs count as local; the labelled CSV a
class's fine-tuning jobs upload."""

from __future__ import annotations

import contextlib
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"
LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "[::1]"}
LOCAL_SCHEMES = {"data", "blob", "about", "file"}
# a quiet, offline, headless Chromium (the browser tests' arguments, tests/browser/conftest.py)
QUIET_CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


# ==== the app's messages, read as its browser reads them ==========================================


def forward_message(raw: bytes):
    """(a ForwardMsg the server sent, its kind: "new_session", "delta", "script_finished"...)."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    fm = ForwardMsg()
    fm.ParseFromString(raw)
    return fm, fm.WhichOneof("type")


def app_pages(fm) -> dict[str, str]:
    """A navigation message's pages: {url path: page script hash}."""
    return {p.url_pathname: p.page_script_hash for p in fm.navigation.app_pages}


def drawn_element(fm) -> tuple[str, object] | None:
    """(its kind, the element) a delta message draws, or None when it draws none."""
    if fm.WhichOneof("type") != "delta" or fm.delta.WhichOneof("type") != "new_element":
        return None
    kind = fm.delta.new_element.WhichOneof("type")
    return kind, getattr(fm.delta.new_element, kind)


# ==== asyncio beside Playwright ====================================================================


def run_async(coro):
    """asyncio.run(coro) in a thread of its own, its result returned and what it raised re-raised.
    asyncio.run() refuses a thread whose event loop is running, as the main thread's is once
    Playwright's sync API started there (a pytest process that ran the browser tests first)."""
    import asyncio

    out: dict = {}

    def target():
        try:
            out["value"] = asyncio.run(coro)
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            out["error"] = e

    t = threading.Thread(target=target, name="asyncio-driver")
    t.start()
    t.join()
    if "error" in out:
        raise out["error"]
    return out["value"]


# ==== the server ===================================================================================


# The ports servers started here listen on: above Ray's worker ports (10002-19999) and below the
# kernel's range for port 0 (from 32768), so nothing that binds port 0 (Ray's agents, a browser) can
# take one between its pick and the server's bind. Each pytest-xdist lane (tests/lanes.py) picks
# from its own share, so two lanes never pick the same one.
PORTS = range(20000, 32768)


def _lane_ports() -> range:
    lane, lanes = os.environ.get("PYTEST_XDIST_WORKER", ""), os.environ.get("PYTEST_XDIST_WORKER_COUNT", "")
    if not (lane.startswith("gw") and lane[2:].isdigit() and lanes.isdigit() and int(lanes) > 1):
        return PORTS
    share = len(PORTS) // int(lanes)
    return PORTS[int(lane[2:]) * share : (int(lane[2:]) + 1) * share]


_next_ports = None  # this process's ports in a shuffled order: a port is handed out once


def free_port() -> int:
    """A port on HOST that nothing listens on, from PORTS (this lane's share)."""
    global _next_ports
    if _next_ports is None:
        ports = list(_lane_ports())
        random.Random(os.urandom(8)).shuffle(ports)
        _next_ports = iter(ports)
    for port in _next_ports:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((HOST, port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port left in {_lane_ports()}")


def streamlit_cmd(script: str, port: int, host: str = HOST) -> list[str]:
    """`python -m streamlit run script` on host:port, headless, without usage stats or a file watcher."""
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        script,
        "--server.port",
        str(port),
        "--server.address",
        host,
        "--server.headless",
        "true",
        "--browser.gatherUsageStats",
        "false",
        "--server.fileWatcherType",
        "none",
    ]


def own_session(cmd: list[str], **popen) -> subprocess.Popen:
    """`cmd` in a session (and process group) of its own, so stopping it stops all it started, at
    the caller's niceness: Linux schedules each session as a group (its autogroup) of niceness 0
    whatever its processes' niceness, so a lowered caller's servers would otherwise stand level
    with everything else."""
    proc = subprocess.Popen(cmd, start_new_session=True, **popen)
    if os.nice(0) > 0:
        with contextlib.suppress(OSError):  # no autogroups on this kernel: nothing to carry over
            Path(f"/proc/{proc.pid}/autogroup").write_text(str(os.nice(0)))
    return proc


def start_server(port: int, log_path: Path, env_extra: dict[str, str]) -> subprocess.Popen:
    cmd = streamlit_cmd("streamlit_app.py", port)
    env = {**os.environ, **env_extra}
    log = open(log_path, "w")
    return own_session(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env)


def wait_healthy(proc: subprocess.Popen, url: str, timeout_s: float = 120) -> None:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.read().decode().strip() == "ok":
                    return
        except OSError:
            pass
        time.sleep(0.3)
    raise RuntimeError(f"the server did not answer /_stcore/health within {timeout_s:.0f} s")


@contextlib.contextmanager
def running(log_path: Path, env_extra: dict[str, str]):
    """(the process, its URL) of a server started on a free port and healthy; stopped on the way out."""
    port = free_port()
    proc = start_server(port, log_path, env_extra)
    try:
        url = f"http://{HOST}:{port}"
        wait_healthy(proc, url)
        yield proc, url
    finally:
        stop_server(proc)


def stop_server(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)  # the group we started, nothing else
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)


# ==== HAProxy in front of replicas ================================================================

HAPROXY_TEMPLATE = ROOT / "deploy" / "haproxy.cfg"
_ADDRESS = re.compile(r"^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$")


def haproxy_config(listen: str, replicas: list[str], template: Path = HAPROXY_TEMPLATE) -> str:
    """deploy/haproxy.cfg with its bind address and one `server` line a replica: replica i is
    server `r<i>`, its SERVERID cookie value and the X-Replica header of its responses."""
    for address in [listen, *replicas]:
        if not _ADDRESS.match(address):
            raise ValueError(f"not a HOST:PORT address: {address!r}")
    if not replicas:
        raise ValueError("at least one replica HOST:PORT")
    servers = "\n    ".join(f"server r{i} {a} check cookie r{i}" for i, a in enumerate(replicas, 1))
    return template.read_text().replace("@LISTEN@", listen).replace("@REPLICAS@", servers)


def start_proxy(port: int, replica_ports: list[int], folder: Path) -> subprocess.Popen:
    """HAProxy on HOST:port in the foreground (`-db`: its log, server UP/DOWN lines included, in
    folder/haproxy.log) in front of the replicas on HOST:replica_ports."""
    cfg = folder / "haproxy.cfg"
    cfg.write_text(haproxy_config(f"{HOST}:{port}", [f"{HOST}:{p}" for p in replica_ports]))
    log = open(folder / "haproxy.log", "w")
    exe = shutil.which("haproxy") or "/usr/sbin/haproxy"
    return own_session([exe, "-db", "-f", str(cfg)], stdout=log, stderr=subprocess.STDOUT)


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except OSError:
            pass
    return out


def _status_kb(pid: int, field_name: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field_name + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class MemoryWatch:
    """Samples the VmRSS sum of a process tree; `hwm_mb()` reads VmHWM (the kernel's own peak)."""

    def __init__(self, pid: int, every_s: float = 0.25):
        self.pid, self.every_s = pid, every_s
        self.peak_kb = 0
        self.samples: list[tuple[float, int]] = []
        self.hwm_kb: dict[int, int] = {}
        self.marks: list[tuple[str, float]] = []
        self._t0 = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self):
        t0 = self._t0
        while not self._stop.is_set():
            pids = _descendants(self.pid)
            kb = sum(_status_kb(p, "VmRSS") for p in pids)
            for p in pids:
                self.hwm_kb[p] = max(self.hwm_kb.get(p, 0), _status_kb(p, "VmHWM"))
            self.peak_kb = max(self.peak_kb, kb)
            self.samples.append((time.monotonic() - t0, kb))
            self._stop.wait(self.every_s)

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._thread.join(timeout=5)

    def mark(self, name: str) -> None:
        """Start a phase: `phases()` gives each phase's peak and last sampled RSS."""
        self.marks.append((name, time.monotonic() - self._t0))

    def phases(self) -> dict[str, dict]:
        out = {}
        for i, (name, t) in enumerate(self.marks):
            end = self.marks[i + 1][1] if i + 1 < len(self.marks) else float("inf")
            kbs = [kb for ts, kb in self.samples if t <= ts < end]
            if kbs:
                out[name] = {"peak_mb": round(max(kbs) / 1024, 1), "last_mb": round(kbs[-1] / 1024, 1)}
        return out

    def cpu_s(self) -> float:
        """User + system processor seconds of the process tree so far (all threads)."""
        tick = os.sysconf("SC_CLK_TCK")
        total = 0
        for p in _descendants(self.pid):
            try:
                with open(f"/proc/{p}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                total += int(fields[11]) + int(fields[12])  # utime, stime (clock ticks)
            except (OSError, IndexError, ValueError):
                pass
        return total / tick

    def thread_cpu(self) -> dict[int, float]:
        """Processor seconds of each live thread of the server process (by thread id)."""
        tick = os.sysconf("SC_CLK_TCK")
        out = {}
        try:
            tids = os.listdir(f"/proc/{self.pid}/task")
        except OSError:
            return out
        for tid in tids:
            try:
                with open(f"/proc/{self.pid}/task/{tid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                out[int(tid)] = (int(fields[11]) + int(fields[12])) / tick
            except (OSError, IndexError, ValueError):
                pass
        return out

    def rss_mb(self) -> float:
        return sum(_status_kb(p, "VmRSS") for p in _descendants(self.pid)) / 1024

    def hwm_mb(self) -> float:
        for p in _descendants(self.pid):
            self.hwm_kb[p] = max(self.hwm_kb.get(p, 0), _status_kb(p, "VmHWM"))
        return sum(self.hwm_kb.values()) / 1024


# ==== the browser ===================================================================================


def chromium_path() -> str | None:
    explicit = os.environ.get("BERT_EXPLORER_CHROMIUM")
    if explicit:
        return explicit if Path(explicit).exists() else None
    for candidate in ("/usr/bin/chromium", "/usr/bin/chromium-browser"):
        if Path(candidate).exists():
            return candidate
    return shutil.which("chromium") or shutil.which("chromium-browser")


def is_local(url: str) -> bool:
    parsed = urlparse(url)
    if parsed.scheme in LOCAL_SCHEMES:
        return True
    return parsed.scheme in ("http", "https", "ws", "wss") and (parsed.hostname or "") in LOCAL_HOSTS


# ==== what a class uploads ==========================================================================


def reviews_csv(n: int = 400, seed: int = 0) -> bytes:
    """Synthetic reviews, "text,label": a label's word (good or bad) among 4 to 9 filler words."""
    pos = "good great wonderful moving funny brilliant charming superb".split()
    neg = "bad boring dull awful weak tedious clumsy terrible".split()
    filler = "the film was a very plot actor movie really quite and it story ending cast script music with".split()
    r = random.Random(seed)
    lines = ["text,label"]
    for i in range(n):
        good = i % 2 == 0
        ws = [r.choice(filler) for _ in range(r.randint(4, 9))]
        ws.insert(r.randrange(len(ws) + 1), r.choice(pos if good else neg))
        lines.append(f"{' '.join(ws)} number {i},{'good' if good else 'bad'}")
    return ("\n".join(lines) + "\n").encode()
