"""A class can't break the training jobs: every job budgeted, every cap refused with a
message, a closed tab's job stopped within 10 s, finished runs kept on disk under a run code,
the disk kept bounded. Unit-level on app/jobs/local.py, app/jobs/budget.py, app/jobs/saved_runs.py and the pure
helpers of app/training/, with tiny models; two page tests through AppTest at the end.
"""

import dataclasses
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch

from app.jobs import budget, saved_runs
from app.jobs.budget import LimitError
from app.jobs.local import JobManager, TrainingJobs
from app.jobs.spec import FINETUNE, PRETRAIN
from app.jobs.worker import SESSION, TIME, stop_message
from app.run_session.finished import add_result
from app.run_session.uploads import free_uploads
from app.students import browser_id
from app.training.start import check_finetune, check_finetune_settings, check_pretrain
from bert.config import BertConfig
from bert.data.labelled import read_labelled, stratified_split
from bert.errors import DataError, InputError
from bert.train.events import PretrainEval
from bert.train.finetune_args import FinetuneArgs
from bert.train.pretrain_args import PretrainArgs
from tests import helpers
from tests.helpers import REVIEW_WORDS, counting_job, finetune_fn, set_small_pretraining, use_cache

ROOT = Path(__file__).resolve().parent.parent
WORDS = REVIEW_WORDS


def carded_bundle(seed=0, name="tiny"):
    return helpers.tiny_bundle(seed, name, card=f"# {name}\n\nA tiny test model.\n")


def reviews(n=120):
    lines = ["text,label"] + [
        f"{'good' if i % 2 else 'bad'} film {' '.join(WORDS[7 : 7 + i % 9])} {i},{'pos' if i % 2 else 'neg'}"
        for i in range(n)
    ]
    return read_labelled(("\n".join(lines) + "\n").encode(), "r.csv")


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    """A private cache folder: runs, jobs and tokenized files of this test only."""
    use_cache(monkeypatch, tmp_path / "cache")
    return tmp_path / "cache"


@pytest.fixture()
def session():
    """Streamlit's session_state in bare mode (no script running), emptied around each test."""
    import streamlit as st

    for k in list(st.session_state.keys()):
        del st.session_state[k]
    yield st.session_state
    for k in list(st.session_state.keys()):
        del st.session_state[k]


# ---- 1. every job budgeted -----------------------------------------------------------------------


def test_tokens_per_step_and_memory_caps_refuse_with_a_message(monkeypatch):
    budget.check_step(16, 128, 900)  # 2,048 tokens, 900 MB: fine
    with pytest.raises(LimitError, match=r"256 x 128 tokens per text = 32,768 tokens per step.*allows 2,048"):
        budget.check_step(256, 128, 500)
    with pytest.raises(LimitError, match=r"about 5,000 MB of memory.*allows 1,024 MB"):
        budget.check_step(4, 128, 5000)
    monkeypatch.setenv("BERT_EXPLORER_MAX_STEP_TOKENS", "8192")
    budget.check_step(64, 128, 500)
    monkeypatch.setenv("BERT_EXPLORER_MAX_STEP_TOKENS", "nonsense")  # a bad setting: the default
    assert budget.max_step_tokens() == 2048


def test_memory_estimate_grows_with_the_step_and_fits_the_measurements():
    cfg = BertConfig(
        vocab_size=30522, hidden_size=384, num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536
    )
    small, mid, long = (
        budget.finetune_mb(cfg, 16, 64),
        budget.finetune_mb(cfg, 16, 128),
        budget.finetune_mb(cfg, 4, 512),
    )
    # measured once settled (python -m benchmarks.memory_estimate): 627, 1,068, 1,637 MB; never under by more than 5 %
    assert 600 <= small <= 720 and 1015 <= mid <= 1230 and 1555 <= long <= 1880
    assert budget.finetune_mb(cfg, 16, 64, freeze_embeddings=False) > small  # more to train
    assert budget.pretrain_mb(2, 128, 2, 4000, 16, 64) < 200  # the page's default


def test_the_next_word_estimate_counts_the_word_head_at_every_token():
    """The next word reads the word head at every position (the masked-word game at 15 %): at
    6 x 384, 30,522 words, 1 x 512 its logits alone are 512 x 30,522 x 3 floats, 187 MB."""
    mlm = budget.pretrain_mb(6, 384, 6, 30522, 1, 512)
    nw = budget.pretrain_mb(6, 384, 6, 30522, 1, 512, next_word=True)
    logits_mb = 512 * 30522 * budget.MLM_LOGITS * 4 / 2**20
    assert nw - mlm >= 0.85 * logits_mb - 1, (mlm, nw)
    args = PretrainArgs(out="x", init="scratch", layers=6, hidden=384, heads=6, batch_size=1, max_seq_length=512)
    assert check_pretrain(dataclasses.replace(args, objective="next-word")) == nw != check_pretrain(args)
    # measured (python -m benchmarks.memory_estimate: VmHWM, 7 steps then a scoring of 32 sequences,
    # 12 heads): 1,024 MB at 1 x 512, 2,063 MB at 16 x 128; the estimate within 0.8-1.2x
    for batch, tokens, measured in ((1, 512, 1024), (16, 128, 2063)):
        assert 0.8 * measured <= budget.pretrain_mb(6, 384, 12, 30522, batch, tokens, next_word=True) <= 1.2 * measured


def test_the_app_checks_its_settings_before_queuing(cache):
    base = carded_bundle()
    args = FinetuneArgs(data="x", batch_size=256, max_length=64)
    with pytest.raises(LimitError, match="tokens per step"):
        check_finetune(base, args)
    assert not check_finetune_settings(base, 256, 64, True, 0, 2)["ok"]
    ok = check_finetune_settings(base, 16, 64, True, 0, 2)
    assert ok["ok"] and "1,024 tokens" in ok["line"] and "MB of memory" in ok["line"] and "15 minutes" in ok["line"]
    big = PretrainArgs(out="", layers=6, hidden=384, heads=8, vocab="default", batch_size=16, max_seq_length=128)
    with pytest.raises(LimitError, match="MB of memory"):
        check_pretrain(big)  # 2,048 tokens but 1.1 GB


def test_one_job_per_student_across_kinds_and_tabs():
    jm = JobManager(max_running=2)
    a = jm.submit("tab1", "finetune", counting_job(), student="alice")
    assert jm.submit("tab1", "finetune", counting_job(), student="alice") is a  # a second Start click
    with pytest.raises(LimitError, match="already have a fine-tuning job running: one job per student"):
        jm.submit("tab1", "pretrain", counting_job(), student="alice")
    with pytest.raises(LimitError, match="in another tab or window of this browser"):
        jm.submit("tab2", "finetune", counting_job(), student="alice")
    b = jm.submit("tab3", "finetune", counting_job(), student="bob")  # another student: fine
    a.stop()
    with pytest.raises(LimitError, match="is stopping; start again in a few seconds"):
        jm.submit("tab2", "pretrain", counting_job(), student="alice")
    assert jm.wait(a, 5)
    c = jm.submit("tab2", "pretrain", counting_job(), student="alice")  # after it ended: fine
    for j in (b, c):
        j.stop()
        jm.wait(j, 5)


def test_queue_length_is_capped_with_a_message(monkeypatch):
    monkeypatch.setenv("BERT_EXPLORER_MAX_QUEUE", "2")
    jm = JobManager(max_running=1)
    running = jm.submit("s0", "finetune", counting_job())
    waiting = [jm.submit(f"s{i}", "finetune", counting_job()) for i in (1, 2)]
    with pytest.raises(LimitError, match=r"2 jobs are already waiting for a free slot \(at most 2\)"):
        jm.submit("s3", "finetune", counting_job())
    assert jm.counts() == {"running": 1, "queued": 2, "max_running": 1, "max_queue": 2, "max_minutes": 15.0}
    waiting[0].stop()
    jm.reap()  # a stopped waiting job leaves the queue at once
    assert waiting[0].status == "stopped" or jm.wait(waiting[0], 5)
    late = jm.submit("s3", "finetune", counting_job())
    assert late.status == "queued"
    for j in (running, waiting[1], late):
        j.stop()
    for j in (running, waiting[1], late):
        jm.wait(j, 5)


def test_time_cap_stops_a_job_which_keeps_its_model_and_says_why():
    jm = JobManager(max_running=1, max_seconds=0.3)
    job = jm.submit("s", "finetune", counting_job(every=0.01, result="best model"))
    assert jm.wait(job, 5)
    assert job.status == "stopped" and job.stop_reason == TIME and job.result == "best model"
    assert 0.3 <= job.finished - job.started < 1.0
    assert "limit of 0.005 minutes per job" in stop_message(TIME, 0.3)
    assert "15 minutes" in stop_message(TIME) and "best model so far is kept" in stop_message(TIME)


def test_time_cap_reaches_a_job_between_slow_steps():
    """A job that yields rarely is stopped by the watchdog's reap, not only by its own thread."""
    jm = JobManager(max_running=1, max_seconds=0.2)
    stopped = threading.Event()

    def slow(stop):
        stop.wait(5)  # one long "step" that only ends when asked to stop
        stopped.set()
        yield helpers.finetune_done(bundle="m")

    job = jm.submit("s", "finetune", slow)
    time.sleep(0.3)
    jm.reap()
    assert stopped.wait(2) and jm.wait(job, 2) and job.stop_reason == TIME


# ---- the closed tab ------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_closed_tabs_job_stops_and_frees_its_slot(cache):
    """Streamlit drops a closed tab's session from its active ones at once; the watchdog (every
    second) stops its job after a 3 s grace, the job ends after its current step (here 0.5 s,
    like a fine-tuning step) and the next student's waiting job starts. Each state is waited for
    up to 60 s; how soon it comes is printed, not asserted."""
    sessions = {"tab-a": True, "tab-b": True}
    jm = TrainingJobs(max_running=1, alive=lambda sid: sessions.get(sid))
    a, _ = jm.submit_for("a", FINETUNE, counting_job(every=0.5, result="a's model"), session_id="tab-a", student="A")
    b, _ = jm.submit_for("b", FINETUNE, counting_job(every=0.5), session_id="tab-b", student="B")
    jm.start_watchdog(every_s=1.0)
    time.sleep(3.0)
    assert a.status == "running" and b.status == "queued"  # a connected tab keeps its job
    sessions["tab-a"] = False  # the tab is closed
    closed = time.time()
    while a.active and time.time() - closed < 60:
        time.sleep(0.05)
    freed = time.time() - closed
    while b.status != "running" and time.time() - closed < 60:
        time.sleep(0.05)
    started = time.time() - closed
    print(f"\nclosed tab: job stopped and slot freed after {freed:.1f} s; next job running after {started:.1f} s")
    assert a.status == "stopped" and a.stop_reason == SESSION and a.result == "a's model"
    assert b.status == "running", b.status
    b.stop()
    jm.wait(b, 5)
    time.sleep(1.5)
    assert jm.jobs_of("a") == []  # finished, tab gone: forgotten (its run is on disk)


def test_a_network_blip_shorter_than_the_grace_keeps_the_job():
    sessions = {"t": True}
    jm = TrainingJobs(max_running=1, session_grace_s=3.0, alive=lambda sid: sessions.get(sid))
    job, _ = jm.submit_for("o", FINETUNE, counting_job(), session_id="t")
    sessions["t"] = False
    jm.reap()
    time.sleep(1.0)
    sessions["t"] = True  # reconnected (same session id)
    jm.reap()
    sessions["t"] = False
    jm.reap()
    assert job.active and not job.stop_event.is_set()
    job.stop()
    jm.wait(job, 5)


@pytest.mark.slow
def test_a_closed_tabs_finetuning_skips_its_report_and_saves_the_run(cache):
    base = carded_bundle()
    train, valid = stratified_split(reviews(), 0.25, seed=0)
    args = FinetuneArgs(data="t", batch_size=8, lr=1e-3, epochs=50, max_length=32, threads=1)
    info = {"code": "TESTAB", "title": "closed-tab run", "args": args}
    fn = finetune_fn(base, train, valid, args, code="TESTAB", info=info)
    jm = TrainingJobs(max_running=1, alive=lambda sid: False, session_grace_s=0.5)
    job, _ = jm.submit_for("o", FINETUNE, fn, session_id="gone")
    while not job.metrics and not job._queue.qsize():
        time.sleep(0.05)
    t = time.time()
    while job.active and time.time() - t < 15:
        jm.reap()
        time.sleep(0.2)
    job.drain()
    kinds = [m.event for m in job.metrics]
    assert job.stop_reason == SESSION and "report" not in kinds and kinds[-1] == "saved"
    again, record = saved_runs.open_run("TESTAB")
    assert record["stop_reason"] == SESSION and record["status"] == "stopped" and record["report"] is None
    assert again.is_classifier and again.name == "closed-tab run"
    if record["done"]["best_step"] == 0:  # stopped before its first evaluation: not scored
        assert "not measured" in again.card and record["done"]["accuracy"] != record["done"]["accuracy"]


# ---- 3. runs kept on disk -----------------------------------------------------------------------


@pytest.mark.parametrize("typed", ["../../etc", "ABC", "ABCDEFG", "AB/CDE", "ABCDE.", "ÄBCDEF", "", "abc de\x00"])
def test_run_codes_are_checked_strictly(typed):
    with pytest.raises(InputError, match="6 letters and digits"):
        saved_runs.parse_code(typed)


def test_run_code_forgives_case_and_spaces():
    assert saved_runs.parse_code(" k7qx-2m ") == "K7QX2M"
    code = saved_runs.new_code()
    assert saved_runs.CODE.fullmatch(code) and not set(code) & set("01OI")


@pytest.mark.slow
def test_a_run_survives_a_server_restart(cache):
    """Saved by this process, opened by a fresh one (a restarted server): model, card, metrics."""
    b = carded_bundle(name="my run")
    metrics = [{"event": "train", "step": i, "loss": 1.0 / i} for i in range(1, 6)]
    report = {"accuracy": 0.75, "per_class": {"neg": {"f1": 0.7}}, "confusion": [[3, 1], [1, 3]]}
    saved_runs.save_run(
        "K7QX2M",
        b,
        {"kind": "finetune", "metrics": metrics, "report": report, "status": "done", "info": {"args": {"lr": 1e-3}}},
    )
    folder = cache / "runs" / "K7QX2M"
    assert (folder / "run.json").is_file() and (folder / "model" / "model.safetensors").is_file()
    code = (
        "import json, torch, sys; from app.jobs import saved_runs as rs\n"
        "b, r = rs.open_run('k7qx2m')\n"
        "out = b.model.bert(torch.tensor([[2, 5, 7, 3]])).last_hidden_state\n"
        "print(json.dumps({'name': b.name, 'card': b.card, 'loss': r['metrics'][-1]['loss'],"
        " 'acc': r['report']['accuracy'], 'kind': r['kind'], 'x': out[0, 1, :4].tolist()}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "BERT_EXPLORER_CACHE": str(cache)},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    import json

    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["name"] == "my run" and "A tiny test model." in got["card"]
    assert got["loss"] == pytest.approx(0.2) and got["acc"] == 0.75 and got["kind"] == "finetune"
    with torch.inference_mode():
        want = b.model.bert(torch.tensor([[2, 5, 7, 3]])).last_hidden_state[0, 1, :4]
    assert torch.allclose(torch.tensor(got["x"]), want, atol=2e-2)  # saved in fp16
    with pytest.raises(DataError, match="no run ZZZZZZ"):
        saved_runs.open_run("ZZZZZZ")


def test_an_expired_run_is_refused(cache):
    saved_runs.save_run("OLDRUN", carded_bundle(), {"kind": "pretrain"})
    record = cache / "runs" / "OLDRUN" / "run.json"
    import json

    data = json.loads(record.read_text())
    data["saved"] -= 2 * 24 * 3600
    record.write_text(json.dumps(data))
    with pytest.raises(DataError, match="more than a day old"):
        saved_runs.open_run("OLDRUN")


def test_cleanup_removes_old_runs_leftovers_and_uploads_tokenized(cache):
    old = time.time() - 2 * 24 * 3600
    saved_runs.save_run("AAAAAA", carded_bundle(), {"kind": "finetune"})
    saved_runs.save_run("BBBBBB", carded_bundle(), {"kind": "finetune"})
    os.utime(cache / "runs" / "AAAAAA", (old, old))
    half = cache / "runs" / ".CCCCCC.tmpx1"  # a save killed half way
    half.mkdir()
    os.utime(half, (old, old))
    jobs = cache / "jobs"
    (jobs / "job-7-abc").mkdir(parents=True)
    (jobs / "job-8-def").mkdir()
    for d in ("job-7-abc", "job-8-def"):
        os.utime(jobs / d, (old, old))
    tok = cache / "tokenized"
    tok.mkdir()
    for name in ("wiki+brown_train-aaa-bbb.npz", "bbc_valid-aaa-bbb.npz", "my-notes_train-ccc-ddd.npz"):
        (tok / name).write_bytes(b"x" * 100)
        os.utime(tok / name, (old, old))
    done = saved_runs.cleanup(busy={"job-8-def"})
    assert not (cache / "runs" / "AAAAAA").exists() and (cache / "runs" / "BBBBBB").exists()
    assert not half.exists()
    assert not (jobs / "job-7-abc").exists() and (jobs / "job-8-def").exists()  # a job still uses it
    assert sorted(p.name for p in tok.iterdir()) == ["bbc_valid-aaa-bbb.npz", "wiki+brown_train-aaa-bbb.npz"]
    assert (done["expired"], done["leftovers"], done["jobs"], done["tokenized"]) == (1, 1, 1, 1)


def test_disk_cap_removes_the_oldest_runs_first(cache):
    """Six runs of about 0.4 MB each under a 1.5 MB cap: the oldest go until the rest fit."""
    payload = os.urandom(400_000)
    for i, code in enumerate(["RUN001", "RUN002", "RUN003", "RUN004", "RUN005", "RUN006"]):
        saved_runs.save_run(code, carded_bundle(), {"kind": "finetune"})
        (cache / "runs" / code / "model" / "padding.bin").write_bytes(payload)  # make it weigh
        t = time.time() - 10 * 3600 + 60 * i  # older than BERT_EXPLORER_RUN_SAFE_HOURS
        os.utime(cache / "runs" / code, (t, t))
    before = saved_runs.disk_usage()["runs"]
    t = time.perf_counter()
    done = saved_runs.cleanup(max_mb=1.5, keep={"RUN001"})
    took = time.perf_counter() - t
    left = sorted(p.name for p in (cache / "runs").iterdir())
    after = saved_runs.disk_usage()["runs"]
    print(
        f"\ndisk cap 1.5 MB: {before / 2**20:.2f} MB -> {after / 2**20:.2f} MB, removed {done['for_space']} "
        f"runs ({done['freed'] / 2**20:.2f} MB) in {took * 1000:.0f} ms; kept {left}"
    )
    assert after <= 1.5 * 2**20 and done["for_space"] >= 3
    assert "RUN001" in left  # `keep`: the run just saved is never the one to go
    assert left == ["RUN001", "RUN005", "RUN006"]


def test_browser_id_is_the_same_for_every_tab_of_a_browser():
    import binascii

    token = os.urandom(16)

    def cookie():
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(token))
        return f"2|{binascii.b2a_hex(mask).decode()}|{binascii.b2a_hex(masked).decode()}|1700000000"

    c1, c2 = cookie(), cookie()
    assert c1 != c2 and browser_id(c1) == browser_id(c2) is not None
    assert browser_id(None) is None and browser_id("2|zz|yy|1") is None and browser_id("short") is None
    assert token.hex() not in browser_id(c1)


# ---- 2. per-session memory ---------------------------------------------------------------------


def test_a_session_keeps_three_models_the_oldest_stays_on_disk(cache, session):
    from app import state
    from app.run_session import session as ts

    ts.init_training()
    state.init()
    saved_runs.save_run("CODE00", carded_bundle(), {"kind": "finetune"})  # on disk: its code is given
    for i in range(4):
        kind = FINETUNE if i % 2 == 0 else PRETRAIN
        res = {
            "kind": kind,
            "code": f"CODE0{i}",
            "saved": True,
            "metrics": [],
            "report": None,
            "done": {},
            "info": {},
            "status": "done",
            "error": None,
            "job_id": i,
        }
        add_result(kind, res, carded_bundle(name=f"m{i}"), f"m{i}")
        time.sleep(0.01)
    kept = [r["name"] for r in session[ts.FT_RESULTS] + session[ts.PT_RESULTS]]
    assert sorted(kept) == ["m1", "m2", "m3"] and "m0" not in state.user_models()
    kind, message = session[ts.PT_NOTICE]
    assert "m0 (run code CODE00) was removed" in message and "Reopen a run" in message


def test_free_uploads_drops_the_bytes_and_parsed_copies(session):
    from app.run_session import session as ts

    ts.init_training()
    session[ts.FT_UPLOAD] = {"name": "big.csv", "data": b"x" * 1000, "id": "f1"}
    session[ts.FT_PARSED][("f1", None, None, None, 2)] = "parsed"
    key = ts.upload_key("ft_file")
    free_uploads(ts.FT_UPLOAD, ts.FT_VAL_UPLOAD)
    assert session[ts.FT_UPLOAD] is None and session[ts.FT_PARSED] == {}
    assert session[ts.FREED] == {ts.FT_UPLOAD: "big.csv"}
    assert ts.upload_key("ft_file") != key  # a new widget: Streamlit frees its copy of the file


# ---- the pages ---------------------------------------------------------------------------------


def test_pages_show_the_budget_and_refuse_a_setting_over_the_cap():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=60)
    at.run()
    at.switch_page("pages/pretrain.py").run()
    assert not at.exception
    assert any("tokens (this server allows 2,048)" in c.value for c in at.caption), [c.value for c in at.caption]
    at.number_input(key="pt_batch").set_value(128).run()
    assert not at.exception
    assert any("Too big for this server" in e.value for e in at.error), [e.value for e in at.error]
    assert at.button(key="pt_start").disabled


@pytest.mark.slow
def test_finished_run_is_reopened_by_code_in_a_new_session(cache):
    """Train in one session; in a fresh one (a refresh, or after a restart), the code brings it back."""
    from streamlit.testing.v1 import AppTest

    from app import state
    from app.run_session import session as ts

    corpus = "\n\n".join(
        " ".join(f"The {w} sees the {v} ." for w, v in zip(WORDS[5:15], WORDS[6:16])) for _ in range(8)
    ).encode()
    at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=60)
    at.run()
    at.session_state[ts.PT_UPLOAD] = {"name": "story.txt", "data": corpus, "id": "s1"}
    at.switch_page("pages/pretrain.py").run()
    at.radio(key="pt_source").set_value("upload").run()
    set_small_pretraining(at, steps=10, eval_every=5, batch=4)
    at.button(key="pt_start").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state[ts.PT_UPLOAD] is None  # the upload was freed at Start
    end = time.time() + 90
    while at.session_state[ts.PT_JOB] is not None and time.time() < end:
        time.sleep(0.3)
        at.run()
    res = at.session_state[ts.PT_RESULTS][-1]
    assert res["saved"] and saved_runs.CODE.fullmatch(res["code"])
    assert any(res["code"] in c.value for c in at.caption)  # the code is on the results
    assert not list(cache.glob("tokenized/*.npz"))  # the upload was tokenized in memory only

    fresh = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=60)
    fresh.run()
    fresh.switch_page("pages/pretrain.py").run()
    fresh.text_input(key="pt_reopen_code").input(res["code"].lower()).run()
    fresh.button(key="pt_reopen").click().run()
    assert not fresh.exception, [e.value for e in fresh.exception]
    again = fresh.session_state[ts.PT_RESULTS][-1]
    assert again["code"] == res["code"] and again["name"] in fresh.session_state[state.USER_MODELS]
    assert [m.step for m in again["metrics"] if isinstance(m, PretrainEval)] == [5, 10]
    assert {"Masked-LM top-1", "Next-sentence accuracy"} <= {m.label for m in fresh.metric}
    fresh.text_input(key="pt_reopen_code").input("../../x").run()
    fresh.button(key="pt_reopen").click().run()
    assert any("6 letters and digits" in e.value for e in fresh.error), [e.value for e in fresh.error]


def test_status_page_shows_jobs_memory_and_disk(cache, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from bert.train.precision import server_precision

    monkeypatch.setenv("BERT_EXPLORER_TEACHER_KEY", "correct horse battery")
    at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=60)
    at.run()
    at.switch_page("pages/status.py").run()
    at.text_input(key="teacher_key_typed").input("correct horse battery").run()  # the page is the teacher's
    at.button(key="teacher_unlock").click().run()
    assert not at.exception, [e.value for e in at.exception]
    metrics = {m.label: m.value for m in at.metric}
    assert {"Jobs training", "Jobs waiting", "Server memory now (RSS)", "Saved runs + jobs + tokenized"} <= set(metrics)
    assert metrics["Jobs waiting"].endswith("of 10") and metrics["Saved runs + jobs + tokenized"].endswith("2,000 MB")
    assert metrics["Training precision"] == server_precision()  # the arithmetic jobs train in here
