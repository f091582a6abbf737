"""Memory does not pile up between page runs, and the teacher sees what holds it.

1. A page's run leaves nothing big to the cycle collector: once it ran, the names of its
   namespace that hold arrays, tables or figures are deleted (app.server.memory.page_run), so
   what the analysis cache let go is freed at once; callbacks still find the page's functions
   and constants, and a page with a fragment keeps its namespace whole.
2. Students pasting one new long text after another into Attention, against the real server
   (benchmarks/paste_load.py): its peak (VmHWM) stays near the model plus the cache's budget.
3. The Server status page shows the sessions, the analyses running and waiting, and the
   biggest holders of memory (app/server/holders.py).
"""

from __future__ import annotations

import gc
import types
import weakref
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from app.server import holders, memory

ROOT = Path(__file__).resolve().parent.parent


# ---- 1. a page's namespace ------------------------------------------------------------------------


@dataclass
class Result:
    array: np.ndarray


def _page_namespace() -> dict:
    """What a page's module namespace looks like: modules, a function (its __globals__ are the
    namespace: the cycle), small constants, and what holds memory."""
    ns = {"__name__": "__main__", "np": np, "VIEWS": ["Heatmap", "All heads"], "K": 3, "ss": object()}
    exec("def callback():\n    return np.zeros(K), VIEWS\n", ns)
    ns["an"] = Result(np.ones((6, 12, 64, 64), dtype=np.float32))
    ns["att"] = ns["an"].array[0, 0]  # a view: keeps the whole array
    ns["table"] = {"weights": np.ones(10**5)}
    ns["html"] = "x" * memory.BIG
    ns["labels"] = np.array([["broad", "other"]])  # small: a format_func may read it
    return ns


def test_a_page_run_frees_what_its_namespace_held_without_the_cycle_collector(monkeypatch):
    monkeypatch.setattr(memory, "_fragment_ids", lambda: frozenset())
    ns = _page_namespace()
    array = weakref.ref(ns["an"].array)
    gc.disable()
    try:
        with memory.page_run():
            memory.note_page_globals(ns)
        assert array() is None  # freed by reference counting, the namespace still in its cycle
    finally:
        gc.enable()
    assert {"an", "att", "table", "html"}.isdisjoint(ns)
    assert {"np", "VIEWS", "K", "ss", "callback", "labels"} <= set(ns)
    zeros, views = ns["callback"]()  # a callback at the next run still works
    assert list(zeros) == [0, 0, 0] and views == ["Heatmap", "All heads"]


def test_a_page_that_registered_a_fragment_keeps_its_namespace(monkeypatch):
    ids = iter([frozenset(), frozenset({"frag"})])
    monkeypatch.setattr(memory, "_fragment_ids", lambda: next(ids))
    ns = _page_namespace()
    with memory.page_run():
        memory.note_page_globals(ns)
    assert "an" in ns and "att" in ns


def test_outside_page_run_a_page_namespace_is_left_alone():
    ns = _page_namespace()
    memory.note_page_globals(ns)  # a page run alone, or a test importing it
    assert "an" in ns


def test_holds_memory():
    big = np.zeros(memory.BIG // 8)
    assert memory.holds_memory(big) and memory.holds_memory(big[:2]) and memory.holds_memory({"a": [Result(big)]})
    assert not memory.holds_memory(np.zeros(2)) and not memory.holds_memory({"a": [Result(np.zeros(2))]})
    assert not memory.holds_memory(["short", 1, 2.0, None]) and not memory.holds_memory(np)
    assert not memory.holds_memory(types.SimpleNamespace(x=big))  # not walked: kept
    assert not memory.holds_memory(len) and not memory.holds_memory(Result)


@pytest.mark.slow
def test_the_attention_page_leaves_no_analysis_to_the_cycle_collector(monkeypatch):
    """Nothing kept by the cache (budget 0): after two long texts on Attention, no analysis is
    left in a reference cycle (the page's namespace held it through its cached view function)."""
    from streamlit.testing.v1 import AppTest

    from app import analysis_cache
    from benchmarks.paste_load import long_text
    from bert.analysis.full import Analysis

    monkeypatch.setattr(analysis_cache, "_budget_cache", analysis_cache.BudgetCache(0))
    at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=120)
    at.run()
    at.switch_page("pages/attention.py").run()
    gc.collect()
    gc.disable()
    try:
        for seed in (1, 2):
            next(t for t in at.text_area if t.label == "Sentence A").set_value(long_text(seed)).run()
            assert not at.exception and not at.error, [e.value for e in (*at.exception, *at.error)]
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        left = [o for o in gc.garbage if isinstance(o, Analysis)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert left == [], f"{len(left)} analyses were left to the cycle collector"


# ---- 2. a class pasting long texts, against the real server ---------------------------------------


@pytest.mark.slow
def test_students_pasting_long_texts_keep_the_server_near_its_cache():
    """4 students pasting new 2,000-character texts into Attention for 20 s each: every step is
    a new 512-token analysis (about 100 MB with MiniLM) and the cache keeps 256 MB of them. The
    peak (VmHWM) stays within the model, the cache and two analyses in progress, with room."""
    from benchmarks.paste_load import paste_load

    r = paste_load(sessions=4, seconds=20, ramp=0.5)
    assert r["errors"] == [], r
    assert r["steps"] >= 8, r  # enough new analyses to pass the cache's budget several times
    assert r["peak_mb"] < 1100, r
    assert r["end_mb"] < 1000, r


# ---- 3. the Server status page ------------------------------------------------------------------


def test_holders_table_biggest_first():
    snap = {
        "sessions": [5 * 2**20, 2**20],
        "analyses": {"running": 1, "waiting": 3, "places": 2},
        "cache": {"bytes": 0, "reserved": 90 * 2**20, "budget": 256 * 2**20, "by_kind": {"analyze": (2, 200 * 2**20)}},
        "uploads": (1, 3 * 2**20),
    }
    rows = holders.holders_table(snap)
    assert [r["holder"] for r in rows] == [
        "Analysis cache: analyze",
        "Analyses in progress (reserved)",
        "Sessions' own state (all)",
        "Sessions' own state (the biggest one)",
        "Uploads kept",
    ]
    assert rows[0]["count"] == 2 and rows[2]["count"] == 2 and rows[2]["bytes"] == 6 * 2**20


def test_session_sizes_measure_each_state(monkeypatch):
    import torch

    class State(dict):
        @property
        def filtered_state(self):
            return dict(self)

    model = torch.nn.Linear(10, 10)  # 110 parameters
    infos = [
        types.SimpleNamespace(session=types.SimpleNamespace(session_state=State(text="abc"))),
        types.SimpleNamespace(session=types.SimpleNamespace(session_state=State(m=model, a=np.zeros(100)))),
    ]
    monkeypatch.setattr(holders, "_active_sessions", lambda: infos)
    sizes = holders.session_sizes()
    assert sizes == [110 * 4 + 800, 49 + 3]


def test_cache_by_kind_counts_and_sizes():
    from app.analysis_cache import ENTRY_BYTES, BudgetCache

    c = BudgetCache(10**6)
    c.put(("app.analysis_cache", "_analyze", ("text_a", "x")), np.zeros(100))
    c.put(("app.analysis_cache", "_analyze", ("text_a", "y")), np.zeros(100))
    c.put(("app.analysis_cache", "saliency", ("text", "y")), np.zeros(10))
    assert c.by_kind() == {"analyze": (2, 2 * (800 + ENTRY_BYTES)), "saliency": (1, 80 + ENTRY_BYTES)}


@pytest.mark.slow
def test_status_page_shows_sessions_analyses_and_the_biggest_holders(monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("BERT_EXPLORER_TEACHER_KEY", "correct horse battery")
    at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=120)
    at.run()
    at.switch_page("pages/attention.py").run()  # one analysis in the cache
    at.switch_page("pages/status.py").run()
    at.text_input(key="teacher_key_typed").input("correct horse battery").run()
    at.button(key="teacher_unlock").click().run()
    assert not at.exception, [e.value for e in at.exception]
    metrics = {m.label: m.value for m in at.metric}
    assert {"Sessions open", "Analyses running", "Analyses waiting", "Analysis cache"} <= set(metrics), metrics
    assert metrics["Analyses running"] == "0 of 2" and metrics["Analyses waiting"] == "0"
    assert metrics["Analysis cache"].endswith("of 256 MB")
    table = at.dataframe[0].value
    assert list(table.columns) == ["holder", "count", "MB"]
    assert "Analysis cache: analyze" in set(table["holder"]), table
