"""A small class led by its teacher against the real server (scripts/class_loadtest.py, only on
127.0.0.1): three students follow the teacher through three page/view changes over Streamlit's
websocket protocol, answer the [MASK] question, the teacher's panel counts the answers, the
reveal reaches each. 0 errors and a latency for every follower and change. The full row (30
students while 2 fine-tuning jobs run) is `python scripts/class_loadtest.py`; its figures are in
docs/DEPLOY.md."""

import json

import pytest

from scripts import class_loadtest

pytestmark = pytest.mark.slow


def test_three_students_follow_three_changes_and_answer(tmp_path):
    out = tmp_path / "class.json"
    rc = class_loadtest.main(
        ["--students", "3", "--jobs", "0", "--changes", "3", "--gap", "3", "--timeout", "90", "--json", str(out)]
    )
    rep = json.loads(out.read_text())
    assert rc == 0 and rep["errors"] == [], rep["errors"]
    assert rep["follow_latency_s"]["n"] == 9
    assert rep["answer_s"]["n"] == 3
    assert rep["server_peak_mb"] > 100
