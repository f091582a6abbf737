"""A class can't break it: uploads read with a row bound, reopened runs shared,
a student's runs capped and young runs never evicted for someone else's, the hand-over between
two jobs bounded. Memory is VmHWM and processor time getrusage, both in a subprocess.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from bert.data import labelled
from bert.data.labelled import file_columns, read_labelled
from bert.errors import DataError

ROOT = Path(__file__).resolve().parent.parent

# Run in a fresh interpreter: prints {"peak_mb": VmHWM over the baseline, "cpu_s": processor
# seconds} of what `BODY` does, after `SETUP` (imports, inputs) has set the baseline.
_MEASURED = """
import gc, json, resource
def hwm():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmHWM")) / 1024
{setup}
gc.collect()
base = hwm()
t0 = resource.getrusage(resource.RUSAGE_SELF)
{body}
t1 = resource.getrusage(resource.RUSAGE_SELF)
cpu = t1.ru_utime + t1.ru_stime - t0.ru_utime - t0.ru_stime
print(json.dumps({{"peak_mb": hwm() - base, "cpu_s": cpu, **result}}))
"""


def measured(setup: str, body: str, env: dict | None = None, timeout: float = 300) -> dict:
    """Run `setup` then `body` (which sets a dict `result`) in a subprocess; its figures."""
    code = _MEASURED.format(setup=setup, body=body)
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


# ---- row 3: a labelled file of millions of tiny rows -----------------------------------------------


@pytest.mark.slow
def test_a_file_of_millions_of_tiny_rows_is_read_with_a_bound(tmp_path):
    """The attack: a 49.9 MB CSV of 5.7 M tiny rows (within the upload limit). Before: 37 s of
    processor and +1,442 MB parsed whole; now reading stops at MAX_SCAN_ROWS rows, keeps a random
    MAX_READ_ROWS of them, and says so."""
    path = tmp_path / "tiny_rows.csv"
    with open(path, "w") as f:
        f.write("text,label\n")
        for start in range(0, 5_700_000, 100_000):
            f.write("".join(f"{i:x},{i % 2}\n" for i in range(start, start + 100_000)))
    assert 47 * 2**20 < path.stat().st_size < 50 * 2**20  # within the uploader's 50 MB
    got = measured(
        setup=f"from bert.data.labelled import read_labelled\nimport pandas\ndata = open({str(path)!r}, 'rb').read()",
        body=(
            "d = read_labelled(data, 'tiny_rows.csv')\n"
            "result = dict(n=len(d), rows_read=d.rows_read, notes=d.notes, counts=d.class_counts)"
        ),
    )
    assert got["peak_mb"] <= 300, got
    assert got["cpu_s"] <= 20, got
    assert got["n"] == labelled.DEFAULT_MAX_ROWS and got["rows_read"] == labelled.MAX_SCAN_ROWS
    assert "tiny_rows.csv has more than 1,000,000 rows: only its first 1,000,000 were read" in got["notes"][0]
    assert "200,000 of them drawn at random are used" in got["notes"][0]
    assert abs(got["counts"]["0"] - 25_000) < 1_000  # the random sample keeps the classes' shares


def test_between_the_bounds_a_uniform_sample_in_file_order(monkeypatch):
    monkeypatch.setattr(labelled, "MAX_READ_ROWS", 2_000)
    monkeypatch.setattr(labelled, "MAX_SCAN_ROWS", 10_000)
    # sorted by label: the first half neg, the second pos; a sample of the start would be all neg
    rows = [f"review {i} {'bad' if i < 3_000 else 'good'},{'neg' if i < 3_000 else 'pos'}" for i in range(6_000)]
    d = read_labelled(("text,label\n" + "\n".join(rows) + "\n").encode(), "sorted.csv", max_rows=1_000)
    assert d.rows_read == 6_000 and len(d) == 1_000
    assert "sorted.csv has 6,000 rows: 2,000 of them drawn at random are used" in d.notes[0]
    assert abs(d.class_counts["neg"] - 500) < 60
    numbers = [int(t.split()[1]) for t in d.texts]
    assert numbers == sorted(numbers) and numbers[-1] > 5_000  # file order, the end of the file too


def test_json_lines_and_arrays_stop_at_the_bound_too(monkeypatch):
    monkeypatch.setattr(labelled, "MAX_READ_ROWS", 500)
    monkeypatch.setattr(labelled, "MAX_SCAN_ROWS", 1_000)
    records = [{"text": f"text number {i}", "label": i % 3} for i in range(3_000)]
    lines = "\n".join(map(json.dumps, records)).encode()
    array = json.dumps(records, indent=1).encode()
    for data, name in ((lines, "r.jsonl"), (array, "r.json")):
        d = read_labelled(data, name, max_rows=100)
        assert d.rows_read == 1_000 and len(d) == 100 and d.classes == ["0", "1", "2"], name
        assert "only its first 1,000 were read" in d.notes[0]
    with pytest.raises(DataError, match="looks like a JSON array but is not valid JSON"):
        read_labelled(array[:-3], "cut.json", max_rows=None)  # a cut array is still refused


def test_small_files_are_read_as_before():
    d = read_labelled(b"text,label\na,x\nb,y\nc,x\nd,y\n", "s.csv")
    assert d.rows_read == 4 and d.notes == [] and d.texts == ["a", "b", "c", "d"]
    assert file_columns(b"id;review;stars\n1;good;5\n2;bad;1\n", "s.csv") == ["id", "review", "stars"]
    assert file_columns(b'{"t": "a", "y": 1}\n{"t": "b", "z": 2}\n', "s.jsonl") == ["t", "y", "z"]


# ---- row 4: many sessions reopening run codes ------------------------------------------------------


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    """A private cache folder (runs, jobs) and no reopened model kept from another test."""
    from app.jobs import run_models
    from tests.helpers import use_cache

    use_cache(monkeypatch, tmp_path / "cache")
    run_models.forget_all()
    yield tmp_path / "cache"
    run_models.forget_all()


@pytest.fixture()
def session_state():
    """Streamlit's session_state in bare mode (no script running), emptied around the test."""
    import streamlit as st

    for k in list(st.session_state.keys()):
        del st.session_state[k]
    yield st.session_state
    for k in list(st.session_state.keys()):
        del st.session_state[k]


def save_runs(codes, config=None, kind="pretrain"):
    """Save a run of a tiny (or `config`) model under each code; their bundles."""
    from app.jobs import saved_runs
    from bert.train.events import PretrainDone
    from tests.helpers import tiny_bundle

    bundles = []
    for i, code in enumerate(codes):
        b = tiny_bundle(seed=i, name=f"run {code}", config=config)
        record = {"kind": kind, "name": b.name, "metrics": [], "done": PretrainDone(stopped=False).to_dict()}
        saved_runs.save_run(code, b, record)
        bundles.append(b)
    return bundles


@pytest.mark.slow
def test_eight_sessions_reopening_three_codes_hold_three_models(cache):
    """The attack: 8 sessions each reopen the same 3 run codes. Each code's model is loaded once and
    shared, so the server holds 3 models, not 24 copies."""
    from tests.helpers import REVIEW_WORDS, tiny_config

    config = tiny_config(len(REVIEW_WORDS), hidden_size=256, num_hidden_layers=6, intermediate_size=1024)
    codes = ["RUNAA2", "RUNBB3", "RUNCC4"]
    size_mb = sum(p.numel() for p in save_runs(codes, config)[0].model.parameters()) * 4 / 2**20
    got = measured(
        setup="from app.jobs import saved_runs",
        body=(
            f"sessions = [[saved_runs.open_run(c)[0] for c in {codes!r}] for _ in range(8)]\n"
            "same = all(s[i].model is sessions[0][i].model for s in sessions for i in range(3))\n"
            "own = len({id(b) for s in sessions for b in s}) == 24\n"
            "result = dict(same=same, own=own)"
        ),
        env={"BERT_EXPLORER_CACHE": str(cache)},
    )
    assert got["same"] and got["own"], got  # one model per code, a Bundle of its own per session
    assert got["peak_mb"] < 3 * size_mb + 60, (got, size_mb)  # 24 copies would be 8 times that


def test_a_reopened_model_is_shared_but_each_session_names_its_own(cache, monkeypatch):
    import streamlit as st

    from app import state
    from app.jobs import saved_runs
    from app.run_session import session as ts
    from app.run_session.finished import reopen
    from tests.helpers import tiny_bundle

    save_runs(["SHARE2"])
    for k in list(st.session_state.keys()):
        del st.session_state[k]
    first = reopen("share2")
    for k in list(st.session_state.keys()):  # another session
        del st.session_state[k]
    ts.init_training()
    state.add_user_model("run SHARE2", tiny_bundle(), select=False)  # a name already taken there
    second = reopen("SHARE2")
    assert second["bundle"].model is first["bundle"].model and second["bundle"] is not first["bundle"]
    assert (first["name"], second["name"]) == ("run SHARE2", "run SHARE2-2")
    assert first["bundle"].name == "run SHARE2"  # renaming in one session leaves the other's alone
    bundle, _ = saved_runs.open_run("SHARE2")
    assert bundle.model is first["bundle"].model
    for k in list(st.session_state.keys()):
        del st.session_state[k]


def test_reopened_runs_have_a_server_wide_cap(cache, monkeypatch):
    """The models in use count; the ones nobody uses go first; past the cap: a message."""
    import gc

    from app.jobs import run_models, saved_runs
    from app.jobs.budget import LimitError
    from tests.helpers import REVIEW_WORDS, tiny_config

    config = tiny_config(len(REVIEW_WORDS), hidden_size=128, num_hidden_layers=4, intermediate_size=512)
    codes = ["CAPAA2", "CAPBB3", "CAPCC4", "CAPDD5"]
    save_runs(codes, config)
    one = run_models.model_bytes(saved_runs.open_run(codes[0])[0].model)
    run_models.forget_all()
    gc.collect()
    monkeypatch.setenv("BERT_EXPLORER_OPEN_RUNS_MB", str(int(2.5 * one / 2**20) + 1))  # room for two, not three
    a = saved_runs.open_run(codes[0])[0].model  # two pages are using these right now
    b = saved_runs.open_run(codes[1])[0].model
    with pytest.raises(LimitError, match=r"already holds \d+ MB of saved runs' models.*Try again in a few"):
        saved_runs.open_run(codes[2])
    assert run_models.in_memory()["runs"] == 2
    del a
    gc.collect()  # that page let go: its model is kept for the next one, but makes room
    c = saved_runs.open_run(codes[2])[0]
    assert run_models.in_memory()["runs"] == 2 and c.model is not b
    assert saved_runs.open_run(codes[1])[0].model is b  # still shared while in use


# ---- row 11: filling the disk from fresh cookies ---------------------------------------------------


def weigh(cache, code, mb, hours_ago):
    """Make run `code` weigh about `mb` MB and look `hours_ago` hours old."""
    import time

    (cache / "runs" / code / "model" / "padding.bin").write_bytes(b"\0" * int(mb * 2**20))
    t = time.time() - hours_ago * 3600
    os.utime(cache / "runs" / code, (t, t))


def test_fresh_cookies_filling_the_disk_never_evict_a_classmates_young_run(cache, monkeypatch):
    """The attack: short jobs started and stopped from fresh cookies (a new student each) until the
    disk cap is reached. Before: the oldest runs went, a classmate's too ("There is no run LVCGMX");
    now a run younger than BERT_EXPLORER_RUN_SAFE_HOURS stays, and the new save is refused."""
    from app.jobs import saved_runs
    from app.jobs.budget import LimitError
    from tests.helpers import tiny_bundle

    monkeypatch.setenv("BERT_EXPLORER_MAX_DISK_MB", "2")
    saved_runs.save_run("LVCGMX", tiny_bundle(), {"kind": "finetune"}, student="browser:classmate")
    weigh(cache, "LVCGMX", 0.5, hours_ago=1)
    refused = []
    for i in range(8):
        code = f"ATK{i:03d}"
        try:
            saved_runs.save_run(code, tiny_bundle(), {"kind": "finetune"}, student=f"browser:fresh{i}")
            weigh(cache, code, 0.4, hours_ago=0)
        except LimitError as e:
            refused.append(str(e))
        saved_runs.cleanup()  # the timer's cleanup: it never removes a young run either
    assert saved_runs.is_saved("LVCGMX") and saved_runs.open_run("LVCGMX")[1]["student"] == "browser:classmate"
    assert refused and "disk for saved runs is full" in refused[0], refused
    assert "runs younger than 3 hours are never removed" in refused[0] and "Download the model" in refused[0]
    assert not list((cache / "runs").glob(".*tmp*"))  # a refused save writes nothing
    assert len(refused) >= 4  # once full, every further save is refused
    # hours later the same runs are fair game: the oldest go first, the classmate's with them
    for d in (cache / "runs").iterdir():
        weigh(cache, d.name, 0.4, hours_ago=5 if d.name == "LVCGMX" else 4)
    saved_runs.save_run("LATER2", tiny_bundle(), {"kind": "finetune"}, student="browser:late")
    assert saved_runs.is_saved("LATER2") and not saved_runs.is_saved("LVCGMX")


def test_a_student_keeps_their_last_three_runs(cache, monkeypatch):
    from app.jobs import saved_runs
    from tests.helpers import tiny_bundle

    for i in range(5):
        saved_runs.save_run(f"MINE0{i}", tiny_bundle(), {"kind": "finetune"}, student="browser:me")
        weigh(cache, f"MINE0{i}", 0.01, hours_ago=1 - i / 10)  # young: a student's cap ignores age
    saved_runs.save_run("THEIR1", tiny_bundle(), {"kind": "finetune"}, student="browser:other")
    mine = sorted(c for c in ("MINE00", "MINE01", "MINE02", "MINE03", "MINE04") if saved_runs.is_saved(c))
    assert mine == ["MINE02", "MINE03", "MINE04"] and saved_runs.is_saved("THEIR1")
    monkeypatch.setenv("BERT_EXPLORER_RUNS_PER_STUDENT", "1")
    saved_runs.save_run("MINE05", tiny_bundle(), {"kind": "finetune"}, student="browser:me")
    assert [c for c in mine + ["MINE05"] if saved_runs.is_saved(c)] == ["MINE05"]


def test_a_refused_save_tells_the_student_and_keeps_the_model(cache, monkeypatch):
    """Through the job's own saving step (app.training.keep_run): SaveFailed with the message."""
    import threading

    from app.jobs import saved_runs
    from app.jobs.records import SaveFailed
    from app.jobs.spec import PRETRAIN, JobSpec
    from app.jobs.worker import keep_result
    from bert.train import events as ev
    from tests.helpers import tiny_bundle

    monkeypatch.setenv("BERT_EXPLORER_MAX_DISK_MB", "1")
    saved_runs.save_run("YOUNG2", tiny_bundle(), {"kind": "finetune"}, student="browser:a")
    weigh(cache, "YOUNG2", 0.99, hours_ago=0)
    model = tiny_bundle()

    spec = JobSpec(kind=PRETRAIN, code="NEWRUN", student="browser:b", title="mine", info={"code": "NEWRUN"})
    saved = keep_result(spec, [ev.PretrainDone(stopped=False)], model, threading.Event())
    assert isinstance(saved, SaveFailed)
    assert "could not be saved on the server: its disk for saved runs is full" in saved.message
    assert not saved_runs.is_saved("NEWRUN") and saved_runs.is_saved("YOUNG2")
    assert not list((cache / "runs").glob(".NEWRUN*"))  # nothing half-written left


# ---- the hand-over between two fine-tuning jobs --------------------------------------------------

_TWO_JOBS = """
import torch
import bert
from app.server.memory import release_memory
from app.jobs.spec import FINETUNE
from app.jobs.local import TrainingJobs
from bert.train.finetune_args import FinetuneArgs
from bert.data.labelled import read_labelled, stratified_split
from tests.helpers import REVIEW_WORDS, finetune_fn
torch.set_num_threads(1)
base_model = bert.load("all-minilm-l6-v2")
rows = ["text,label"] + [
    f"{'good' if i % 2 else 'bad'} film {' '.join(REVIEW_WORDS[7:7 + i % 9])} {i},{'pos' if i % 2 else 'neg'}"
    for i in range(160)
]
train, valid = stratified_split(read_labelled(("\\n".join(rows) + "\\n").encode(), "r.csv"), 0.25, seed=0)
jm = TrainingJobs(max_running=1, alive=lambda sid: True)
def run(i):
    args = FinetuneArgs(data="t", batch_size=16, max_length=64, epochs=1, threads=1)
    info = {"code": f"HAND0{i}", "title": f"job {i}", "args": args, "student": f"s{i}"}
    fn = finetune_fn(base_model, train, valid, args, code=f"HAND0{i}", info=info, student=f"s{i}")
    job = jm.submit_for(f"owner{i}", FINETUNE, fn, student=f"s{i}")[0]
    assert jm.wait(job, 300) and job.status == "done", (job.status, job.error)
    job.drain()
    jm.forget(job)  # what the session does when it collects the result: the model is its own now
    return job
release_memory()
"""


@pytest.mark.slow
def test_two_finetuning_jobs_back_to_back_hold_no_more_than_the_first_ones_model(cache):
    """A class's memory peaks when a fine-tuning job starts as another ends. Of the first job only its
    model may stay: a finished model keeps no gradients and the heap it freed is given back, so the
    second job adds at most the first one's model over its peak."""
    got = measured(
        setup=_TWO_JOBS,
        body=(
            "first = run(1)\n"
            "one = hwm() - base\n"
            "second = run(2)\n"
            "model_mb = sum(p.numel() * p.element_size() for p in first.result.model.parameters()) / 2**20\n"
            "grads = [p for j in (first, second) for p in j.result.model.parameters() if p.grad is not None]\n"
            "saved = [m.event for m in first.metrics][-1], [m.event for m in second.metrics][-1]\n"
            "result = dict(one=one, model_mb=model_mb, grads=len(grads), saved=saved)"
        ),
        env={"BERT_EXPLORER_CACHE": str(cache)},
        timeout=600,
    )
    print(f"\nfirst job +{got['one']:.0f} MB, both +{got['peak_mb']:.0f} MB, model {got['model_mb']:.0f} MB")
    assert got["saved"] == ["saved", "saved"] and got["grads"] == 0, got
    assert got["peak_mb"] - got["one"] <= got["model_mb"] + 30, got  # the first one's model, not more


def test_a_finished_jobs_model_is_not_held_by_its_session(cache, session_state):
    """Collected from its job, a saved run's model is the server's one copy: the session holds a
    handle; let go, the model is freed and loaded again from disk when used."""
    import gc
    import weakref

    from app import model_sources, state, students
    from app.jobs import run_models, saved_runs
    from app.jobs.local import TrainingJobs
    from app.jobs.records import Saved
    from app.jobs.spec import PRETRAIN
    from app.run_session import session as ts
    from app.run_session.finished import collect
    from bert.errors import BertExplorerError
    from bert.train import events as ev
    from tests.helpers import tiny_bundle

    ts.init_training()
    state.init()
    made = [tiny_bundle(name="mine")]
    done = ev.PretrainDone(stopped=False).to_dict()
    saved_runs.save_run("DONE22", made[0], {"kind": "pretrain", "metrics": [], "done": done})
    jm = TrainingJobs(max_running=1, alive=lambda sid: True)

    def fn(stop):
        yield ev.PretrainDone(stopped=False, bundle=made.pop())
        yield Saved(code="DONE22")

    model = made[0]
    job, _ = jm.submit_for(students.owner(), PRETRAIN, fn)
    job.info = {"code": "DONE22", "args": None}
    session_state[ts.PT_JOB] = job.id
    assert jm.wait(job, 30)
    res = collect(PRETRAIN, jm)
    held = res["bundle"]
    assert isinstance(held, run_models.SavedBundle) and held.model is model.model and job.result is None
    weights = {k: v.clone() for k, v in model.model.state_dict().items()}
    gone = weakref.ref(model.model)
    del model, job
    run_models.forget_all()
    gc.collect()
    assert gone() is None  # nothing of the session kept it
    again = model_sources.in_hand(state.user_models()[res["name"]])
    assert again.name == res["name"] and again.model is held.model  # loaded again from disk
    back = again.model.state_dict()
    assert all(torch.allclose(back[k], v, atol=1e-2) for k, v in weights.items())  # fp16 on disk
    del again, back
    run_models.forget_all()
    gc.collect()
    shutil.rmtree(cache / "runs" / "DONE22")
    with pytest.raises(BertExplorerError, match="Run DONE22 is no longer on this server"):
        model_sources.in_hand(held)
