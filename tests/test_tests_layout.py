"""The tests' own seams: test modules share tests/helpers.py, tests/browser/page_checks.py and the
conftest.py fixtures, never each other; tests and benchmarks take the server helpers from
benchmarks/server.py, never from the load-test script."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"

# Files another branch owned when this test came; each must still break the rule (so the entry
# goes as soon as the file is fixed): their imports of test modules move to tests/helpers.py.
NOT_YET: set[str] = set()


def imported_modules(path: Path) -> set[str]:
    """Every module `path` imports, anywhere in it (also inside functions): `import a.b` gives
    a.b, `from a import b` gives a and a.b (b may be a module)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names}
    return out


def is_test_module(name: str) -> bool:
    """A test module or a conftest, by any of the names pytest imports it under (tests.test_x,
    tests.browser.test_x, or test_x from its own folder)."""
    last = name.rsplit(".", 1)[-1]
    return last.startswith("test_") or last == "conftest"


def test_imported_modules_sees_every_form_of_import(tmp_path):
    f = tmp_path / "t.py"
    f.write_text("import tests.test_a\nfrom tests import test_b\ndef f():\n    from test_c import x\n")
    found = {m for m in imported_modules(f) if is_test_module(m)}
    assert found == {"tests.test_a", "tests.test_b", "test_c"}


def test_no_test_module_imports_another():
    offenders = {}
    for path in sorted(TESTS.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        found = sorted(m for m in imported_modules(path) if is_test_module(m))
        if found and rel not in NOT_YET:
            offenders[rel] = found
        if rel in NOT_YET:
            assert found, f"{rel} no longer imports a test module: take it out of NOT_YET"
    assert not offenders, f"share these through tests/helpers.py or a conftest.py fixture: {offenders}"


def test_tests_and_benchmarks_do_not_import_the_load_test_script():
    users = {}
    for path in sorted([*TESTS.rglob("*.py"), *(ROOT / "benchmarks").rglob("*.py")]):
        found = sorted(m for m in imported_modules(path) if m.split(".")[:2] == ["scripts", "loadtest"])
        if found:
            users[path.relative_to(ROOT).as_posix()] = found
    assert not users, f"import the server helpers from benchmarks.server: {users}"


def test_make_test_runs_every_test_make_soak_repeats_the_soak_ones_and_test_fast_leaves_out_slow_and_browser():
    recipes = {}
    target = None
    for line in (ROOT / "Makefile").read_text(encoding="utf-8").splitlines():
        if line and not line[0].isspace() and ":" in line and "=" not in line.split(":", 1)[0]:
            target = line.split(":", 1)[0].strip()
        elif line.startswith("\t") and "pytest" in line:
            recipes[target] = line.split("pytest", 1)[1]
    assert "-m" not in recipes["test"].split() and "-k" not in recipes["test"].split()  # slow and soak ones too
    assert "--dist loadscope" in recipes["test"]  # in the lanes of tests/lanes.py
    assert not {"-m", "-k", "-n"} & set(recipes["test-serial"].split())  # every test, one process
    assert "-m soak" in recipes["soak"]
    assert '-m "not slow and not browser"' in recipes["test-fast"]


def marks_added_at_collection(path: Path) -> list[str]:
    """The marks `path` adds to items itself (`item.add_marker(...)`), as written."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        ast.unparse(n.args[0]) if n.args else ""
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "add_marker"
    ]


def test_marks_added_at_collection_are_read_as_written(tmp_path):
    f = tmp_path / "conftest.py"
    f.write_text("def hook(items):\n    for i in items:\n        i.add_marker(pytest.mark.slow)\n")
    assert marks_added_at_collection(f) == ["pytest.mark.slow"]


def test_slow_marks_sit_on_the_tests_not_in_a_table():
    """A test is marked slow, browser or soak by its own decorator: nothing adds a mark at
    collection (a renamed test would silently run in test-fast)."""
    for path in sorted(TESTS.rglob("*.py")):
        assert not marks_added_at_collection(path), f"{path.relative_to(ROOT)} marks tests at collection"


RAY_STARTS = re.compile(r"\bray_cluster\b|cluster_local|RayCluster\(|ray\.init\(|\bray start\b")


def test_every_module_that_starts_ray_runs_in_the_one_ray_lane_unit():
    """make test never runs two Ray clusters at once (tests/lanes.py): a new module that
    starts one must join RAY_MODULES."""
    from tests.lanes import RAY_MODULES, RAY_UNIT, unit_of

    starts = {p.relative_to(ROOT).as_posix() for p in TESTS.rglob("test_*.py") if RAY_STARTS.search(p.read_text())}
    starts.discard("tests/test_tests_layout.py")
    assert starts == RAY_MODULES
    assert {unit_of(f"{m}::test_x") for m in RAY_MODULES} == {RAY_UNIT}
    assert unit_of("tests/test_lessons.py::test_x[a::b]") == "tests/test_lessons.py"
    assert unit_of("tests/browser/test_board_browser.py::test_x") == unit_of("tests/browser/test_teach_browser.py::t")


NICENESS_AFTER = """
import os, sys
from pathlib import Path
from types import SimpleNamespace
from benchmarks.server import own_session
from tests.lanes import yield_to_browsers
for nodeid in sys.argv[1:]:
    yield_to_browsers(SimpleNamespace(nodeid=nodeid))
child = own_session(["sleep", "30"])
group = Path(f"/proc/{child.pid}/autogroup")
print(os.nice(0), Path("/proc/self/autogroup").read_text().split()[-1], group.read_text().split()[-1])
child.kill()
"""


def test_in_a_lane_only_the_non_browser_tests_lower_their_session_and_what_it_starts():
    """The lane running the browser unit keeps its priority until it runs anything else; the other
    lane runs at OTHER_LANE_NICE, its session (Linux's scheduling group) too, and so do the servers
    it starts in sessions of their own; without xdist nothing changes."""
    import os
    import subprocess
    import sys

    from tests.lanes import OTHER_LANE_NICE

    if not Path("/proc/self/autogroup").exists():
        import pytest

        pytest.skip("this kernel has no autogroups")

    def niceness(*nodeids, lane="gw0"):
        """(the process's niceness, its session's, a server's it started) after running nodeids."""
        env = {k: v for k, v in os.environ.items() if k != "PYTEST_XDIST_WORKER"}
        if lane:
            env["PYTEST_XDIST_WORKER"] = lane
        out = subprocess.run(
            [sys.executable, "-c", NICENESS_AFTER, *nodeids],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            start_new_session=True,
        )
        assert out.returncode == 0, out.stderr
        return tuple(int(x) for x in out.stdout.split())

    browser = "tests/browser/test_board_browser.py::test_x"
    other = "tests/test_lessons.py::test_x"
    now = os.nice(0)
    lowered = max(now, OTHER_LANE_NICE)
    assert niceness(browser, browser)[0] == now
    assert niceness(browser, other) == (lowered, OTHER_LANE_NICE, lowered)
    assert niceness(other, other, browser) == (lowered, OTHER_LANE_NICE, lowered)
    assert niceness(other, lane=None)[0] == now


LANE_PORTS = """
from benchmarks import server
print(*[server.free_port() for _ in range(50)])
"""


def test_each_lane_picks_its_servers_ports_from_its_own_share_outside_the_kernels_port_0_range():
    """A server's port is never one a process binding port 0 (Ray's agents, the other lane's) may
    take before the server binds it, nor one the other lane picks: benchmarks.server.free_port."""
    import os
    import subprocess
    import sys

    from benchmarks.server import PORTS

    def picked(lane: str | None) -> list[int]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST_WORKER")}
        if lane:
            env |= {"PYTEST_XDIST_WORKER": lane, "PYTEST_XDIST_WORKER_COUNT": "2"}
        out = subprocess.run(
            [sys.executable, "-c", LANE_PORTS], cwd=ROOT, env=env, capture_output=True, text=True, check=True
        )
        return [int(p) for p in out.stdout.split()]

    low, high = (int(n) for n in Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    alone, lane0, lane1 = picked(None), picked("gw0"), picked("gw1")
    for ports in (alone, lane0, lane1):
        assert len(set(ports)) == len(ports) and all(p in PORTS and not low <= p <= high for p in ports)
    assert max(lane0) < min(lane1)
