"""`make test` runs the suite in two lanes (pytest-xdist, `-n 2 --dist loadscope`): most of
its time is spent waiting on servers, browsers and Ray, so two lanes keep the two cores busy.

Rules of the lanes:
- a module's tests stay in one lane, in order, so its module fixtures (the `at` app) start once;
- the modules that start a Ray cluster (`RAY_MODULES`) are one unit, so two clusters never run at
  once in the one network namespace (Ray's own ports would collide);
- the browser modules (tests/browser/) are one unit: one Chromium and one app server at a time,
  as a class on one machine would load it, while the other lane runs the rest;
- units are handed out longest first, by a rough cost per test (`COST_S`), so neither lane is
  left with a long unit alone at the end;
- the lane that runs anything but the browser unit runs at a lower priority (`OTHER_LANE_NICE`,
  with the servers and Ray processes it starts): a browser scenario waits on a page drawn in
  time, the rest only on its results, so when both lanes want the processor the browser unit
  gets about twice the other's share;
- a session-wide log file carries the lane's name (`worker_suffix`), so two lanes' servers never
  write one file.
Without xdist (a single file, `make test-fast`) nothing here applies.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest
from xdist.scheduler import LoadScopeScheduling

RAY_UNIT = "ray"
BROWSER_UNIT = "browser"
BROWSER_FOLDER = "tests/browser/"
# Modules that start a Ray cluster (the `ray_cluster` fixture or scripts/cluster_local.sh).
RAY_MODULES = {
    "tests/test_cluster_e2e.py",
    "tests/test_cluster_local.py",
    "tests/test_ray_cluster.py",
    "tests/test_ray_head_loss.py",
    "tests/test_ray_jobs.py",
}
OTHER_LANE_NICE = 3  # half the weight of a browser-side session: it yields, it is not starved
# Rough seconds a test of each kind takes: enough to order the units, not a measurement.
COST_S = {"browser": 30.0, RAY_UNIT: 20.0, "slow": 5.0, "other": 0.2}


def in_a_lane() -> bool:
    return "PYTEST_XDIST_WORKER" in os.environ


def worker_suffix() -> str:
    """'-gw0', '-gw1', ... in a lane; '' in a single process."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    return f"-{worker}" if worker else ""


def unit_of(nodeid: str) -> str:
    """The lane's unit of a test: its module's path, RAY_UNIT for the Ray modules, BROWSER_UNIT
    for the browser modules."""
    path = nodeid.split("::", 1)[0]
    if path in RAY_MODULES:
        return RAY_UNIT
    return BROWSER_UNIT if path.startswith(BROWSER_FOLDER) else path


_lowered = False  # whether this process has lowered itself (yield_to_browsers)


def yield_to_browsers(item: pytest.Item) -> None:
    """In a lane, a test outside the browser unit runs (and starts its processes) at
    OTHER_LANE_NICE. Linux weighs sessions against each other (autogroups) before it weighs
    processes, so the lane first takes a session of its own and lowers it as a whole; the servers
    it starts in sessions of their own take its niceness (benchmarks.server.own_session)."""
    global _lowered
    if _lowered or not in_a_lane() or unit_of(item.nodeid) == BROWSER_UNIT:
        return
    _lowered = True
    with contextlib.suppress(OSError):  # already a group's leader: it keeps the session it has
        os.setsid()
    os.nice(max(0, OTHER_LANE_NICE - os.nice(0)))
    if os.getsid(0) == os.getpid():  # the session is the lane's own, never the other lane's too
        with contextlib.suppress(OSError):  # no autogroups on this kernel: niceness alone counts
            Path("/proc/self/autogroup").write_text(str(OTHER_LANE_NICE))


class ByModule(LoadScopeScheduling):
    """xdist's scope scheduler with `unit_of` as the scope."""

    def _split_scope(self, nodeid: str) -> str:
        return unit_of(nodeid)


def cost_of(item: pytest.Item) -> float:
    if item.get_closest_marker("browser"):
        return COST_S["browser"]
    if unit_of(item.nodeid) == RAY_UNIT:
        return COST_S[RAY_UNIT]
    return COST_S["slow"] if item.get_closest_marker("slow") else COST_S["other"]


def longest_first(items: list[pytest.Item]) -> list[pytest.Item]:
    """The units longest first, each unit's items in their collected order (every lane collects
    the same order, as xdist requires)."""
    units: dict[str, list[pytest.Item]] = {}
    for item in items:
        units.setdefault(unit_of(item.nodeid), []).append(item)
    order = sorted(units, key=lambda u: -sum(cost_of(i) for i in units[u]))
    return [item for u in order for item in units[u]]
