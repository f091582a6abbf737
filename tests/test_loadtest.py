"""A small class at once against the real server (scripts/loadtest.py, only on 127.0.0.1):
4 students (one in Chromium, three over Streamlit's websocket protocol) go through the Attention
and Masked LM pages while two fine-tuning jobs are submitted with BERT_EXPLORER_MAX_JOBS=1.

0 errors, each student sees only its own word, the second job waits with its place shown and
starts when the first is stopped, and the report has page times and the server's peak memory.
The full run (20 students) is `python scripts/loadtest.py`; its figures are in docs/DEPLOY.md.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.live_server import loadtest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent


def _unavailable(reason: str):
    if os.environ.get("CI", "").strip().lower() in ("true", "1", "yes"):
        pytest.fail(f"CI=true but {reason}", pytrace=False)
    pytest.skip(reason)


def test_small_class_at_once(tmp_path):
    lt = loadtest()
    try:
        import playwright  # noqa: F401
        import websockets  # noqa: F401
    except ImportError as e:
        _unavailable(f"{e.name} is not installed (pip install -r requirements-dev.txt)")
    if lt.chromium_path() is None:
        _unavailable("Chromium is not installed (apt-get install chromium, or `make browser`)")
    artifacts = ROOT / "tests" / "artifacts"
    rep = lt.run(
        sessions=4,
        browser_sessions=1,
        jobs=2,
        max_jobs=1,
        ramp=1.0,
        max_seconds=420,
        step_timeout=300,
        job_wait=240,
        log_dir=artifacts,
        baseline_s=2.0,  # the job's processor use is reported, not checked here
    )
    text = lt.markdown(rep)
    (artifacts / "loadtest-small.md").write_text(text + "\n")
    assert rep.errors == [], text
    assert rep.completed_sessions == 4 and rep.isolation_ok, text
    # the queue: one job trains, the other waits and shows its place, then starts in its turn
    assert rep.queue["after start"] == ["running", "queued #1"], text
    assert rep.queue["job2 ran"] == "running" and rep.queue["job2 after Stop"] == "finished", text
    # the figures docs/DEPLOY.md reports
    assert rep.all_steps["n"] == 20 and 0 < rep.all_steps["p50"] <= rep.all_steps["p95"], text
    assert rep.browser_steps["n"] == 5 and rep.protocol_steps["n"] == 15, text
    assert 300 < rep.server_peak_rss_mb <= rep.server_hwm_mb + 1, text
    assert rep.server_hwm_mb < 1600, text  # the model + one fine-tuning job + 4 sessions
