"""The fine-tuning path, from the page's Start button to the live curve, stays short: the project
files on the call stack at each moment that carries the click to a training step and the step back
to the curve, traced in a real run (AppTest, a tiny model)."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

from app import state
from app.run_session import session as ts
from tests.helpers import reviews_csv, started_app, tiny_bundle

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tuple(str(ROOT / d) + os.sep for d in ("app", "bert", "pages")) + (str(ROOT / "streamlit_app.py"),)
MOMENTS = {  # moment: (file, function) whose first call is the moment
    "submit": ("app/jobs/local.py", "submit"),
    "train step": ("bert/model.py", "forward"),  # under the training loop, not the attention snapshot
    "page drains events": ("app/jobs/local.py", "drain"),
    "curve built": ("app/figures/training.py", "finetune_curves"),
    "curve drawn": ("app/ui/show_figure.py", "show"),
}


def project_stack(frame) -> list[str]:
    """The project files on the stack, outermost first, each once per run of frames."""
    out: list[str] = []
    while frame is not None:
        f = frame.f_code.co_filename
        if f.startswith(PROJECT):
            rel = Path(f).relative_to(ROOT).as_posix()
            if not out or out[-1] != rel:
                out.append(rel)
        frame = frame.f_back
    return out[::-1]


def trace_finetune_run() -> dict[str, list[str] | None]:
    seen: dict[str, list[str] | None] = dict.fromkeys(MOMENTS)

    def profile(frame, event, arg):
        if event != "call":
            return
        code = frame.f_code
        for moment, (path, name) in MOMENTS.items():
            if seen[moment] is None and code.co_name == name and code.co_filename.endswith(path):
                stack = project_stack(frame)
                if moment == "train step" and "bert/train/attention_snapshots.py" in stack:
                    continue
                seen[moment] = stack

    at = started_app(60)
    at.session_state[state.USER_MODELS]["tiny"] = tiny_bundle(name="tiny")
    at.session_state[state.USER_MODEL_IDS]["tiny"] = "session:tiny:test"
    at.session_state[ts.FT_UPLOAD] = {"name": "r.csv", "data": reviews_csv(200), "id": "f1"}
    at.switch_page("pages/finetune.py").run()
    at.radio(key="ft_source").set_value(ts.UPLOAD).run()
    at.selectbox(key="ft_base").set_value("session:tiny")
    at.number_input(key="ft_freeze_layers").set_value(0)
    at.number_input(key="ft_epochs").set_value(3).run()
    assert not at.exception, at.exception
    sys.setprofile(profile)
    threading.setprofile(profile)
    try:
        at.button(key="ft_start").click().run()
        end = time.time() + 90
        while at.session_state[ts.FT_JOB] is not None and time.time() < end and None in seen.values():
            time.sleep(0.3)
            at.run()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    assert not at.exception, at.exception
    return seen


def test_start_to_live_curve_touches_at_most_eleven_project_files():
    seen = trace_finetune_run()
    missing = [m for m, stack in seen.items() if stack is None]
    assert not missing, f"not reached: {missing}"
    # frames that only pass a call through: a figure builder's `fitted` wrapper, a bf16 step's call_with
    wrappers = {"app/figures/core.py", "bert/train/precision.py"}
    path = list(dict.fromkeys(f for stack in seen.values() for f in stack if f not in wrappers))
    print("\n".join(f"{m}: {' -> '.join(s)}" for m, s in seen.items()))
    # the click reaches the job manager from the Start callback; the step runs in the job's thread
    assert seen["submit"][0] == "app/training/start.py"
    step = [f for f in seen["train step"] if f not in wrappers]
    assert step[-2:] == ["bert/train/finetune.py", "bert/model.py"]
    assert "pages/finetune.py" in seen["curve built"]
    assert len(path) <= 11, path  # the live panel's curves drawn by the fine-tuning view module
