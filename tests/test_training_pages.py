"""The Fine-tuning and Pre-training pages (AppTest) and their helpers (app/training/,
app/figures/training.py), with a tiny model so that training takes a second or two.

AppTest cannot upload a file: the tests put the file's bytes where the page keeps an upload
(app.run_session.session FT_UPLOAD / PT_UPLOAD), which is exactly what the page does with a real upload.
Plotly charts are UnknownElements in AppTest: the figures are checked in the app.figures.training tests.
"""

import io
import random
import re
import threading
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

import bert  # noqa: E402
from app import state, students
from app.figures import training as training_figures  # noqa: E402
from app.formatting import md_escape
from app.jobs.local import TrainingJobs, manager
from app.jobs.records import Report
from app.jobs.spec import FINETUNE
from app.jobs.worker import StopEvent, jobs_dir
from app.run_session import run_size
from app.run_session import session as ts  # noqa: E402
from app.run_session.names import display_name, safe_filename
from app.run_session.progress import finetune_progress, finetune_start_line, fmt_seconds, pretrain_progress, probe_frame
from app.run_session.reports import cls_attention
from app.run_session.run_size import (
    DEFAULT_SIZE,
    EVAL_SAMPLE,
    PAGE_EVALS,
    RUN_SIZES,
    eval_every_for,
    floored_epochs,
    page_finetune_args,
)
from app.run_session.snapshots import SNAPSHOTS  # noqa: E402
from app.training.data import class_table, dropped_text, split_data
from app.training.downloads import model_zip
from app.training.next_word_view import continued_text
from app.training.start import few_steps_message
from bert.data.labelled import read_labelled, stratified_split  # noqa: E402
from bert.tokenizer.tokenizer import Tokenizer  # noqa: E402
from bert.train.events import Error, FinetuneDone, PretrainDone, PretrainStart  # noqa: E402
from bert.train.pretrain import pretrain
from bert.train.pretrain_args import PretrainArgs
from tests.helpers import (  # noqa: E402
    APP_TIMEOUT,
    ENTRY,
    REVIEW_WORDS,
    SPECIALS,
    fast_args,
    finetune_done,
    finetune_eval,
    finetune_fn,
    finetune_start,
    finetune_step,
    finished_result,
    pretrain_eval,
    pretrain_fn,
    pretrain_start,
    pretrain_step,
    reviews_csv,
    run_fn,
    set_small_pretraining,
    tiny_bundle,
    tiny_data,
)

WORDS = REVIEW_WORDS
FILLER = WORDS[7:]


# ---- things the tests build -----------------------------------------------------------------------


def _ok(at):
    assert not at.exception, [e.value for e in at.exception]


def _errors(at):
    return [e.value for e in at.error]


def settle(at, job_key, timeout=90):
    """Rerun the page (as the live fragment would) until the session's job is collected."""
    end = time.time() + timeout
    while at.session_state[job_key] is not None and time.time() < end:
        time.sleep(0.3)
        at.run()
        _ok(at)
    assert at.session_state[job_key] is None, "the job did not finish in time"


def with_tiny_model(at, name="tiny"):
    at.session_state[state.USER_MODELS][name] = tiny_bundle(name=name)
    at.session_state[state.USER_MODEL_IDS][name] = f"session:{name}:test"
    return f"session:{name}"


def open_upload(at, data: bytes, name="reviews.csv", fid="f1"):
    at.session_state[ts.FT_UPLOAD] = {"name": name, "data": data, "id": fid}
    at.switch_page("pages/finetune.py").run()
    at.radio(key="ft_source").set_value("upload").run()
    _ok(at)
    return at


# ---- pages render ------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("page, heading", [("pages/finetune.py", "4. Train"), ("pages/pretrain.py", "3. Training")])
def test_page_renders_with_defaults(fresh_at, page, heading):
    fresh_at.switch_page(page).run()
    _ok(fresh_at)
    assert not _errors(fresh_at), _errors(fresh_at)
    assert heading in [h.value for h in fresh_at.header]
    assert any("parameters" in c.value for c in fresh_at.sidebar.caption)  # ran through streamlit_app.py


@pytest.mark.slow
@pytest.mark.parametrize("env, expect", [(None, "all-minilm-l6-v2"), ("minilm-l6", "minilm-l6")])
def test_finetuning_starts_from_the_published_encoder_unless_the_server_says(fresh_at, monkeypatch, env, expect):
    """The default base is the published sentence encoder (better classifiers); a server short of
    memory sets BERT_EXPLORER_FINETUNE_BASE to the pages' model instead."""
    if env is None:
        monkeypatch.delenv("BERT_EXPLORER_FINETUNE_BASE", raising=False)
    else:
        monkeypatch.setenv("BERT_EXPLORER_FINETUNE_BASE", env)
    open_upload(fresh_at, reviews_csv(60))
    _ok(fresh_at)
    assert fresh_at.selectbox(key="ft_base").value == expect


def test_upload_is_read_columns_detected_and_changeable(fresh_at):
    csv = reviews_csv(120, sep=";") + b"dup bad film;neg\ndup bad film;neg\n;pos\n"
    original = bytes(csv)
    open_upload(fresh_at, csv, "semi.csv")
    assert not _errors(fresh_at), _errors(fresh_at)
    metrics = {m.label: m.value for m in fresh_at.metric}
    assert metrics["Usable texts"] == "121" and metrics["Classes"] == "2"
    assert metrics["Rows dropped"] == "2"  # one duplicate, one empty text
    boxes = [s for s in fresh_at.selectbox if s.key and s.key.startswith("ft_text_col_")]
    assert boxes and boxes[0].value == "review"
    label_box = next(s for s in fresh_at.selectbox if s.key.startswith("ft_label_col_"))
    assert label_box.value == "sentiment"
    label_box.set_value("review").run()  # the same column twice
    _ok(fresh_at)
    assert any("different columns" in e for e in _errors(fresh_at)), _errors(fresh_at)
    assert fresh_at.session_state[ts.FT_UPLOAD]["data"] == original  # never modified


@pytest.mark.slow
@pytest.mark.parametrize(
    "data, expect",
    [
        (b"", "empty"),
        (b"text,label\n", "no data rows"),
        (b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4, "not a text file"),
        (b"text,label\n" + b"".join(f"a text {i},same\n".encode() for i in range(20)), "two classes"),
    ],
)
def test_bad_uploads_give_a_message_not_a_traceback(fresh_at, data, expect):
    open_upload(fresh_at, data, "bad.csv", fid=expect)
    assert any(expect in e for e in _errors(fresh_at)), _errors(fresh_at)
    assert fresh_at.button(key="ft_start").disabled  # nothing to train on


@pytest.mark.slow
def test_validation_file_with_other_column_names(fresh_at):
    open_upload(fresh_at, reviews_csv(120))
    fresh_at.radio(key="ft_valid_mode").set_value("upload").run()
    _ok(fresh_at)
    fresh_at.button(key="ft_start").click().run()  # no validation file yet
    _ok(fresh_at)
    assert any("validation file" in e for e in _errors(fresh_at)), _errors(fresh_at)
    fresh_at.session_state[ts.FT_VAL_UPLOAD] = {
        "name": "val.csv",
        "id": "v1",
        "data": reviews_csv(40, seed=5, header=("sentence", "class")),
    }
    fresh_at.run()
    _ok(fresh_at)
    assert any("40 texts in 2 classes" in c.value for c in fresh_at.caption), [c.value for c in fresh_at.caption]
    fresh_at.session_state[ts.FT_VAL_UPLOAD] = {
        "name": "val2.csv",
        "id": "v2",
        "data": b"text,label\nfine film,pos\nmeh,neutral\n",
    }
    fresh_at.run()
    _ok(fresh_at)
    assert any("neutral" in e for e in _errors(fresh_at)), _errors(fresh_at)  # a class training does not have


@pytest.mark.slow
def test_huge_file_is_sampled_and_says_so(fresh_at):
    open_upload(fresh_at, reviews_csv(60_000), "big.csv", fid="big")
    assert not _errors(fresh_at), _errors(fresh_at)
    assert {m.label: m.value for m in fresh_at.metric}["Usable texts"] == "50,000"
    assert any("stratified sample of 50,000" in i.value for i in fresh_at.info), [i.value for i in fresh_at.info]


def test_helpers_parse_upload_memo_and_split():
    data = read_labelled(reviews_csv(100), "r.csv")
    train, valid = split_data(data, None, 0.2, seed=0, max_train=30, max_valid=10)
    assert len(train) == 30 and len(valid) == 10
    assert set(train.class_counts.values()) == {15} and set(valid.class_counts.values()) == {5}
    assert "stratified sample" in train.notes[-1]
    assert class_table(data)["texts"].sum() == len(data)
    assert "no rows dropped" == dropped_text(data)


# ---- a whole run in the page ------------------------------------------------------------------


@pytest.mark.slow
def test_finetune_run_in_the_page_registers_the_model(fresh_at, monkeypatch):
    monkeypatch.setattr(run_size, "_measured", type(run_size._measured)())  # no run measured on this server yet
    src = with_tiny_model(fresh_at)
    open_upload(fresh_at, reviews_csv(200))
    fresh_at.selectbox(key="ft_base").set_value(src)
    fresh_at.number_input(key="ft_freeze_layers").set_value(0)  # the tiny model has 2 layers: train them
    fresh_at.number_input(key="ft_epochs").set_value(3)
    fresh_at.number_input(key="ft_lr").set_value(1e-3).run()
    _ok(fresh_at)
    assert any(c.value.startswith("No run like this one has finished on this server yet") for c in fresh_at.caption)
    assert not any("half a minute" in e.label for e in fresh_at.expander), "no time promised from another machine"
    fresh_at.button(key="ft_start").click().run()
    _ok(fresh_at)
    assert fresh_at.session_state[ts.FT_JOB] is not None or fresh_at.session_state[ts.FT_RESULTS]
    settle(fresh_at, ts.FT_JOB)
    assert not _errors(fresh_at), _errors(fresh_at)
    res = fresh_at.session_state[ts.FT_RESULTS][-1]
    assert res["status"] == "done" and res["report"]["accuracy"] > 0.8
    # the next run like it: a time from this run's measured speed (160 texts, 3 epochs)
    speed = res["done"].examples_per_s
    open_upload(fresh_at, reviews_csv(200), fid="f2")  # the same settings again
    fresh_at.selectbox(key="ft_base").set_value(src)
    fresh_at.number_input(key="ft_freeze_layers").set_value(0)
    fresh_at.number_input(key="ft_epochs").set_value(3).run()
    said = [c.value for c in fresh_at.caption if c.value.startswith("The last run like this one on this server")]
    want = f"trained {speed:.1f} texts a second: 160 texts × 3 epochs is about {fmt_seconds(480 / speed)}"
    assert said and want in said[0], [c.value for c in fresh_at.caption]
    assert res["name"] in fresh_at.session_state[state.USER_MODELS]  # selectable on the other pages
    assert res["bundle"].is_classifier and res["bundle"].labels == ["neg", "pos"]
    # attention over training: recorded every 5 steps from step 0, replayed on the Compare page
    runs = fresh_at.session_state[SNAPSHOTS]
    ((label, rec),) = runs.items()
    assert "(fine-tuning, job" in label and rec.steps[:3] == [0, 5, 10] and len(rec) >= 4
    metrics = {m.label: m.value for m in fresh_at.metric}
    assert metrics["Validation accuracy"].endswith("%")
    assert "5. Results" in [h.value for h in fresh_at.header]
    # the result survives a rerun and a page switch, and the picker offers it
    fresh_at.switch_page("pages/attention.py").run()
    _ok(fresh_at)
    fresh_at.switch_page("pages/finetune.py").run()
    _ok(fresh_at)
    assert fresh_at.session_state[ts.FT_RESULTS][-1] is res
    assert f"session:{res['name']}" in fresh_at.sidebar.selectbox[0].options or any(
        res["name"] in o for o in fresh_at.sidebar.selectbox[0].options
    )
    fresh_at.button(key=f"ft_use_{res['job_id']}").click().run()
    _ok(fresh_at)
    assert fresh_at.session_state[state.MODEL_SOURCE] == res["key"]


@pytest.mark.slow
def test_run_size_quick_by_default_full_on_request(fresh_at):
    open_upload(fresh_at, reviews_csv(200))
    quick, full = RUN_SIZES["quick"], RUN_SIZES["full"]
    assert fresh_at.radio(key="ft_size").value == "quick" == DEFAULT_SIZE
    assert (fresh_at.number_input(key="ft_max_train").value, fresh_at.number_input(key="ft_max_valid").value) == (
        quick.max_train,
        quick.max_valid,
    )
    assert fresh_at.number_input(key="ft_freeze_layers").value == quick.freeze_layers
    assert any(c.value == quick.note for c in fresh_at.caption)
    fresh_at.radio(key="ft_size").set_value("full").run()
    _ok(fresh_at)
    assert fresh_at.number_input(key="ft_max_train").value == full.max_train
    assert fresh_at.number_input(key="ft_max_valid").value == full.max_valid
    assert fresh_at.number_input(key="ft_freeze_layers").value == full.freeze_layers == 0
    assert any(c.value == full.note for c in fresh_at.caption)


def test_a_time_before_start_comes_from_this_servers_measured_speed(monkeypatch):
    monkeypatch.setattr(run_size, "_measured", type(run_size._measured)())
    monkeypatch.setattr(run_size, "MAX_MEASURED", 2)
    key = run_size.speed_key("minilm-l6", 16, 128, 2, False)
    assert run_size.training_time_line(key, 1000, 1).startswith("No run like this one has finished on this server")
    run_size.record_speed(key, 20.0)
    assert run_size.training_time_line(key, 1000, 3) == (
        "The last run like this one on this server trained 20.0 texts a second: 1,000 texts × 3 epochs is about "
        "2 min 30 s of training steps, plus the checks on the validation texts (more when other runs share the server)."
    )
    assert run_size.measured_speed(run_size.speed_key("minilm-l6", 32, 128, 2, False)) is None, "another batch"
    run_size.record_speed(run_size.speed_key("a", 1, 1, 0, False), 1.0)
    run_size.record_speed(run_size.speed_key("b", 1, 1, 0, False), 1.0)
    assert run_size.measured_speed(key) is None, "the oldest forgotten past MAX_MEASURED"
    for size in RUN_SIZES.values():  # a time or an accuracy on screen is this server's, measured: never a fixed one
        assert not re.search(r"accuracy|\d+ s\b|minute", size.note), size.note


def test_page_run_arguments_give_ten_points_an_epoch_on_a_sample():
    args = page_finetune_args("base", 1000, "builtin:rotten_tomatoes", "rt", PAGE_EVALS, 1, batch_size=16)
    assert args.eval_every == 6 and args.eval_sample == EVAL_SAMPLE == 100  # 63 steps: 10 points + the end
    assert args.checkpoint == "base" and args.name == "base-rt" and args.data == "builtin:rotten_tomatoes"
    assert page_finetune_args("b", 20, None, "x", PAGE_EVALS, 1).eval_every == 1  # 2 steps: every step
    assert eval_every_for(63, 1) == 0  # one evaluation an epoch: at its end


@pytest.mark.slow
def test_injected_finished_job_renders_results(fresh_at):
    base, res = finished_result()
    fresh_at.session_state[state.USER_MODELS]["tiny"] = base
    fresh_at.session_state[state.USER_MODEL_IDS]["tiny"] = "session:tiny:t"
    fresh_at.session_state[ts.FT_RESULTS] = [res]
    fresh_at.switch_page("pages/finetune.py").run()
    _ok(fresh_at)
    assert not _errors(fresh_at), _errors(fresh_at)
    labels = {m.label for m in fresh_at.metric}
    assert {"Validation accuracy", "Macro F1", "Validation texts"} <= labels
    dfs = [d.value for d in fresh_at.dataframe]
    assert any(list(d.columns) == ["class", "precision", "recall", "F1", "texts"] for d in dfs)
    # try it, with hostile text: shown as data, never run
    fresh_at.text_area(key=f"ft_try_{res['job_id']}").input("</script><img src=x onerror=alert(1)> good film").run()
    _ok(fresh_at)
    assert not _errors(fresh_at), _errors(fresh_at)
    fresh_at.text_area(key=f"ft_try_{res['job_id']}").input("   ").run()
    _ok(fresh_at)


@pytest.mark.slow
def test_learning_rate_10_shows_the_error_and_keeps_the_last_good_model(fresh_at):
    base, res = finished_result(lr=10.0, name="diverged")
    assert res["error"] and "learning rate" in res["error"]
    assert res["bundle"].is_classifier  # the last good model is kept
    fresh_at.session_state[state.USER_MODELS]["tiny"] = base
    fresh_at.session_state[state.USER_MODEL_IDS]["tiny"] = "session:tiny:t"
    fresh_at.session_state[ts.FT_RESULTS] = [res]
    fresh_at.switch_page("pages/finetune.py").run()
    _ok(fresh_at)
    assert any("learning rate" in e for e in _errors(fresh_at)), _errors(fresh_at)


# ---- jobs: sessions, stop, start twice, closed tab ------------------------------------------------


def blocker():
    def fn(stop):
        while not stop.is_set():
            time.sleep(0.01)
            yield finetune_step(1)

    return fn


@pytest.mark.slow
def test_two_sessions_jobs_do_not_mix():
    jm = TrainingJobs(max_running=2)
    base = tiny_bundle()
    train, valid = stratified_split(tiny_data(80), 0.25, seed=0)
    a, new_a = jm.submit_for("alice", FINETUNE, finetune_fn(base, train, valid, fast_args(name="a")), "a")
    b, new_b = jm.submit_for("bob", FINETUNE, finetune_fn(base, train, valid, fast_args(name="b")), "b")
    assert new_a and new_b and a is not b
    assert jm.wait(a, 60) and jm.wait(b, 60)
    assert jm.jobs_of("alice") == [a] and jm.jobs_of("bob") == [b]
    assert jm.get("alice", b.id) is None and jm.get("bob", a.id) is None
    assert a.result is not b.result and a.result.model is not b.result.model
    # the shared base model was never changed
    fresh = tiny_bundle()
    for k, v in base.model.state_dict().items():
        assert torch.equal(v, fresh.model.state_dict()[k]), k


@pytest.mark.slow
def test_other_session_never_sees_a_job_even_with_its_id():
    a_app = AppTest.from_file(ENTRY, default_timeout=APP_TIMEOUT)
    a_app.run()
    a_app.switch_page("pages/finetune.py").run()
    b_app = AppTest.from_file(ENTRY, default_timeout=APP_TIMEOUT)
    b_app.run()
    b_app.switch_page("pages/finetune.py").run()
    assert a_app.session_state[students.OWNER] != b_app.session_state[students.OWNER]
    jm = manager()
    job, _ = jm.submit_for(a_app.session_state[students.OWNER], FINETUNE, blocker(), "a's job")
    try:
        b_app.session_state[ts.FT_JOB] = job.id  # b guesses a's job id
        b_app.run()
        _ok(b_app)
        assert b_app.session_state[ts.FT_JOB] is None  # not found for b: dropped
        assert not [b for b in b_app.button if b.key == "ft_stop"]  # no live panel for b
        assert job.active and not job.stop_event.is_set()  # and a's job is untouched
        a_app.session_state[ts.FT_JOB] = job.id
        a_app.run()
        _ok(a_app)
        assert a_app.button(key="ft_start").disabled  # a sees its running job
        a_app.button(key="ft_stop").click().run()  # Stop ...
        _ok(a_app)
        assert job.stop_event.is_set()
    finally:
        job.stop()
        jm.wait(job, 10)


def test_second_start_returns_the_running_job_and_stop_twice_is_fine():
    jm = TrainingJobs(max_running=1)
    first, new1 = jm.submit_for("s", FINETUNE, blocker())
    again, new2 = jm.submit_for("s", FINETUNE, blocker())
    assert new1 and not new2 and again is first
    first.stop()
    first.stop()
    assert jm.wait(first, 5) and first.status == "stopped"


def test_stop_while_queued_ends_at_once():
    jm = TrainingJobs(max_running=1)
    running, _ = jm.submit_for("other", FINETUNE, blocker())
    waiting, _ = jm.submit_for("me", FINETUNE, blocker())
    assert waiting.status == "queued" and jm.queue_position(waiting) == 1
    waiting.stop()
    jm.reap()
    assert waiting.status == "stopped" and waiting.started is None and waiting.result is None
    assert running.status == "running"
    running.stop()
    jm.wait(running, 5)


@pytest.mark.slow
def test_stop_before_the_first_step_keeps_a_model():
    base = tiny_bundle()
    train, valid = stratified_split(tiny_data(80), 0.25, seed=0)
    stop = threading.Event()
    stop.set()
    events = run_fn(finetune_fn(base, train, valid, fast_args()), stop)
    done = next(e for e in events if isinstance(e, FinetuneDone))
    assert done.stopped and done.step == 0 and done.bundle.is_classifier
    assert isinstance(events[-1], Report)


@pytest.mark.slow
def test_closed_tab_job_is_stopped_and_connected_session_kept_alive():
    sessions = {"open": True, "closed": False}
    jm = TrainingJobs(max_running=2, heartbeat_timeout=0.2, keep_finished_s=0.5, alive=lambda sid: sessions.get(sid))
    kept, _ = jm.submit_for("a", FINETUNE, blocker(), session_id="open")
    gone, _ = jm.submit_for("b", FINETUNE, blocker(), session_id="closed")
    time.sleep(0.4)
    stopped = jm.reap()
    assert gone in stopped and kept not in stopped
    assert jm.wait(gone, 5) and gone.status == "stopped"
    assert kept.active
    kept.stop()
    jm.wait(kept, 5)
    time.sleep(0.6)
    jm.reap()
    assert jm.jobs_of("b") == []  # finished, session gone: forgotten (model freed)
    assert jm.jobs_of("a") == [kept]  # finished, session connected: waits for its user
    sessions["open"] = False
    time.sleep(0.6)
    jm.reap()
    assert jm.jobs_of("a") == []


@pytest.mark.slow
def test_queued_stopped_job_in_the_page_says_so(fresh_at):
    jm = manager()
    others = [jm.submit_for(f"someone-else-{i}", FINETUNE, blocker())[0] for i in range(jm.max_running)]
    try:
        if any(o.status != "running" for o in others):
            pytest.skip("another job holds a slot")
        fresh_at.switch_page("pages/finetune.py").run()
        mine, _ = jm.submit_for(fresh_at.session_state[students.OWNER], FINETUNE, blocker())
        fresh_at.session_state[ts.FT_JOB] = mine.id
        fresh_at.run()
        _ok(fresh_at)
        assert any("queue" in i.value for i in fresh_at.info), [i.value for i in fresh_at.info]
        fresh_at.button(key="ft_stop").click().run()
        _ok(fresh_at)
        fresh_at.run()
        _ok(fresh_at)
        assert mine.status == "stopped" and fresh_at.session_state[ts.FT_JOB] is None
        assert any("before it started" in i.value for i in fresh_at.info), [i.value for i in fresh_at.info]
    finally:
        for o in others:
            o.stop()
            jm.wait(o, 5)


# ---- pre-training ----------------------------------------------------------------------------


def story(n_docs=10, per_doc=15, seed=0) -> bytes:
    r = random.Random(seed)
    nouns = ["cat", "dog", "king", "queen", "river", "city", "teacher", "child", "house", "garden"]
    verbs = ["sees", "likes", "finds", "builds", "paints", "leaves", "visits", "helps"]
    paras = [
        " ".join(f"The {r.choice(nouns)} {r.choice(verbs)} the {r.choice(nouns)}." for _ in range(per_doc))
        for _ in range(n_docs)
    ]
    return "\n\n".join(paras).encode()


@pytest.mark.slow
def test_pretrain_job_loads_the_model_and_cleans_its_folder(monkeypatch):
    from bert.data.corpus.base import corpus_from_text

    corpus = corpus_from_text(story())
    args = PretrainArgs(
        out="",
        init="scratch",
        vocab="train:300",
        layers=1,
        hidden=32,
        heads=2,
        max_seq_length=32,
        batch_size=4,
        steps=6,
        lr=1e-3,
        warmup_steps=1,
        log_every=2,
        eval_every=3,
        save_every=3,
        eval_sequences=8,
        threads=1,
        probe="the [MASK] sees the dog .",
    )
    seen = []
    real_pretrain = pretrain

    def spy(run, *a, **kw):
        seen.append(Path(run.out))
        yield from real_pretrain(run, *a, **kw)

    monkeypatch.setattr("app.jobs.worker.pretrain", spy)
    events = run_fn(pretrain_fn(args, corpus, "tiny-pre", "a story"), StopEvent(job_id=4242))
    kinds = [e.event for e in events]
    assert kinds[0] == "start" and kinds[-1] == "done" and "eval" in kinds
    done = events[-1]
    assert isinstance(done, PretrainDone) and done.path is None and "path" not in done.to_dict()
    assert done.bundle.has_mlm and done.bundle.name == "tiny-pre"
    assert "a story" in done.bundle.card
    folder = seen[0]
    assert folder.parent == jobs_dir() and folder.name.startswith("job-4242-")
    assert not folder.exists()  # removed when the job ended
    probes = probe_frame(events)
    assert list(probes.columns) == ["step", "[MASK] 1"] and len(probes) == 2


@pytest.mark.slow
def test_pretrain_job_that_diverges_keeps_the_last_checkpoint(monkeypatch):
    def diverging(run, stop=None, corpus=None, resume=True, **hooks):
        yield pretrain_start(step=0)
        bert.save(tiny_bundle(), Path(run.out) / "checkpoint" / "model")
        raise bert.TrainingError("the loss became nan at step 3: the learning rate 10 is too high")

    monkeypatch.setattr("app.jobs.worker.pretrain", diverging)
    args = PretrainArgs(out="", init="scratch", steps=10, lr=10.0)
    events = run_fn(pretrain_fn(args, None, "nan-run", "nothing"), StopEvent(job_id=1))
    assert [type(e) for e in events] == [PretrainStart, Error, PretrainDone]
    assert "learning rate" in events[1].message
    assert events[2].from_checkpoint and events[2].bundle.name == "nan-run"


@pytest.mark.slow
def test_pretrain_run_in_the_page(fresh_at):
    fresh_at.session_state[ts.PT_UPLOAD] = {"name": "../../story.txt", "data": story(), "id": "s1"}
    fresh_at.switch_page("pages/pretrain.py").run()
    fresh_at.radio(key="pt_source").set_value("upload").run()
    _ok(fresh_at)
    assert {m.label: m.value for m in fresh_at.metric}["Documents"] == "10"
    set_small_pretraining(fresh_at, steps=20, eval_every=10, batch=8)
    fresh_at.button(key="pt_start").click().run()
    _ok(fresh_at)
    settle(fresh_at, ts.PT_JOB)
    assert not _errors(fresh_at), _errors(fresh_at)
    res = fresh_at.session_state[ts.PT_RESULTS][-1]
    assert res["name"] == "pretrained-story-1x64" and res["name"] in fresh_at.session_state[state.USER_MODELS]
    assert {"Masked-LM top-1", "Next-sentence accuracy"} <= {m.label for m in fresh_at.metric}
    fresh_at.text_input(key=f"pt_try_{res['job_id']}").input("no gap here").run()
    _ok(fresh_at)
    assert any("[MASK]" in i.value for i in fresh_at.info)
    # attention over training: every 10 steps from step 0, with the vocabulary trained on the story
    ((label, rec),) = fresh_at.session_state[SNAPSHOTS].items()
    assert label.startswith("pretrained-story-1x64 (pre-training") and rec.steps == [0, 10, 20]
    assert rec.tokens[:3] == ["[CLS]", "the", "cat"]
    fresh_at.button(key="pt_replay").click().run()  # opens Compare on "Attention over training"
    _ok(fresh_at)
    assert fresh_at.session_state["cmp_view"] == "Attention over training"
    assert fresh_at.select_slider(key=f"snap_step_{label}").value == 2


@pytest.mark.slow
def test_next_word_run_in_the_page_writes_text(fresh_at):
    """The next-word game through the job runner: its results continue a text step by step, with
    each step's ten likeliest tokens and its causal attention; bad settings get a message."""
    fresh_at.session_state[ts.PT_UPLOAD] = {"name": "story.txt", "data": story(), "id": "s3"}
    fresh_at.switch_page("pages/pretrain.py").run()
    fresh_at.radio(key="pt_source").set_value("upload").run()
    fresh_at.radio(key="pt_objective").set_value("next-word").run()
    fresh_at.text_input(key="pt_probe").set_value("the cat sees the [MASK] .")
    set_small_pretraining(fresh_at, steps=20, eval_every=10, batch=8)
    fresh_at.button(key="pt_start").click().run()
    _ok(fresh_at)
    settle(fresh_at, ts.PT_JOB)
    assert not _errors(fresh_at), _errors(fresh_at)
    res = fresh_at.session_state[ts.PT_RESULTS][-1]
    assert res["name"] == "pretrained-next-word-story-1x64" and res["info"]["args"].objective == "next-word"
    assert {"Next-word top-1", "Most frequent token"} <= {m.label for m in fresh_at.metric}
    assert "left to right" in fresh_at.session_state[state.USER_MODELS][res["name"]].notes[0]
    assert "Next-sentence accuracy" not in {m.label for m in fresh_at.metric}
    k = f"pt_cont_{res['job_id']}"
    assert fresh_at.text_area(key=f"{k}_text").value == "the cat sees the"  # the probe up to its [MASK]
    # the step's table of likeliest next tokens (the figures' "Show as a table" come with their own)
    steps = next(d.value for d in fresh_at.dataframe if "next token" in list(d.value.columns))
    assert list(steps.columns) == ["next token", "probability", "chosen"] and len(steps) == 10
    assert steps["probability"].is_monotonic_decreasing and (steps["chosen"] == "✓").sum() == 1
    assert fresh_at.slider(key=f"{k}_step").value == 20  # 20 tokens written (the box's default)
    written = [m.value for m in fresh_at.markdown if m.value.startswith("the cat sees the **")]
    assert written, [m.value for m in fresh_at.markdown]
    # sampling with a seed writes the same text twice
    fresh_at.radio(key=f"{k}_how").set_value("sample").run()
    first = [m.value for m in fresh_at.markdown if m.value.startswith("the cat sees the **")]
    fresh_at.run()
    assert [m.value for m in fresh_at.markdown if m.value.startswith("the cat sees the **")] == first
    # attention over training was recorded with the causal mask: nothing above the diagonal
    ((_, rec),) = fresh_at.session_state[SNAPSHOTS].items()
    assert rec.pattern == "causal" and abs(float(rec.attentions[-1][0, 0, 0, 1:].sum())) < 1e-3
    # bad input: a message each, never a traceback
    for key, value, says in (
        ("temp", 0.0, "temperature must be above 0"),
        ("temp", -1.0, "temperature must be above 0"),
        ("topk", 0, "must be 1 or more"),
    ):
        fresh_at.number_input(key=f"{k}_{key}").set_value(value).run()
        _ok(fresh_at)
        assert any(says in e for e in _errors(fresh_at)), _errors(fresh_at)
        fresh_at.number_input(key=f"{k}_{key}").set_value(1.0 if key == "temp" else 5).run()
    assert not _errors(fresh_at), _errors(fresh_at)
    fresh_at.text_area(key=f"{k}_text").input("the cat sees the dog. " * 60).run()
    _ok(fresh_at)
    assert any("too long for this model" in i.value for i in fresh_at.info), [i.value for i in fresh_at.info]
    fresh_at.text_area(key=f"{k}_text").input("   ").run()
    _ok(fresh_at)
    assert any("Type the start of a text" in i.value for i in fresh_at.info)


@pytest.mark.slow
def test_too_small_text_for_pretraining_is_refused(fresh_at):
    fresh_at.session_state[ts.PT_UPLOAD] = {"name": "one.txt", "data": b"Just one sentence here.", "id": "s2"}
    fresh_at.switch_page("pages/pretrain.py").run()
    fresh_at.radio(key="pt_source").set_value("upload").run()
    _ok(fresh_at)
    assert any("at least 2" in e for e in _errors(fresh_at)), _errors(fresh_at)
    assert fresh_at.button(key="pt_start").disabled


# ---- downloads and names --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["../../etc/passwd", "..", "a/b\\c", "<script>x</script>", "ünï cödé", "", ".hidden", "x" * 300]
)
def test_safe_filename(name):
    out = safe_filename(name)
    assert out and "/" not in out and "\\" not in out and ".." not in out and not out.startswith(".")
    assert len(out) <= 80 and all(c.isalnum() or c in "._-" for c in out)


def test_model_zips_unpack_into_loadable_folders(tmp_path):
    b = tiny_bundle(name="../evil name")
    for fmt in ("ours", "hf"):
        data = model_zip(b, b.name, fmt)
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            names = z.namelist()
            assert all(not n.startswith(("/", "..")) and ".." not in n.split("/") for n in names)
            roots = {n.split("/")[0] for n in names}
            assert len(roots) == 1
            z.extractall(tmp_path / fmt)
        folder = tmp_path / fmt / roots.pop()
        assert (folder / "config.json").is_file() and (folder / "vocab.txt").is_file()
        again = bert.load(folder)
        ids = torch.tensor([[2, 7, 8, 5, 3]])
        with torch.inference_mode():
            assert torch.allclose(
                again.model.bert(ids).last_hidden_state, b.model.bert(ids).last_hidden_state, atol=1e-5
            )


def test_display_name_drops_control_characters():
    assert display_name("a\x00b\u202ec") == "abc"
    assert display_name("x" * 100) == "x" * 60 and display_name("\x01") == "model"


# ---- figures ------------------------------------------------------------------------------------


def _ft_metrics(n=30, nan_at=None):
    out = [finetune_start(n)]
    for s in range(1, n + 1):
        loss = float("nan") if s == nan_at else 1.0 / s
        out.append(finetune_step(s, loss))
        if s % 10 == 0:
            out.append(finetune_eval(s, accuracy=0.5 + s / 100, val_loss=0.7 - s / 100))
    return out


def test_finetune_curves_grow_and_survive_nan():
    empty = training_figures.finetune_curves([])
    assert all(len(t.x) == 0 for t in empty.data)
    assert "first evaluation pending…" in [a.text for a in empty.layout.annotations]
    no_eval = training_figures.finetune_curves(_ft_metrics(5))
    assert [len(t.x) for t in no_eval.data] == [5, 5, 0]  # the right panel still drawn
    fig = training_figures.finetune_curves(_ft_metrics(30), total_steps=30)
    assert [t.name for t in fig.data] == ["loss per step", "smoothed loss", "validation accuracy", "validation loss"]
    assert len(fig.data[0].x) == 30 and list(fig.data[2].y) == pytest.approx([0.6, 0.7, 0.8])
    assert fig.data[1].y[-1] < fig.data[1].y[0]
    nan = training_figures.finetune_curves(_ft_metrics(30, nan_at=5))
    assert len(nan.data[0].x) == 29 and np.all(np.isfinite(nan.data[1].y))
    long = training_figures.finetune_curves(_ft_metrics(10_000))
    assert len(long.data[0].x) <= training_figures.MAX_POINTS + 1 and long.data[0].x[-1] == 10_000


def test_pretrain_curves_and_probe_frame():
    ms = [pretrain_start()]
    for s in range(5, 55, 5):
        ms.append(pretrain_step(s, mlm_loss=8 - s / 10, mlm_acc=s / 100, nsp_acc=0.5))
        if s % 25 == 0:
            ms.append(
                pretrain_eval(
                    s,
                    mlm_loss=7.0,
                    mlm_top1=0.1,
                    mlm_top5=0.3,
                    nsp_acc=0.6,
                    baseline_top1=0.05,
                    probe=[[("the", 0.2), ("a", 0.1)], [(".", 0.5)]],
                )
            )
    fig = training_figures.pretrain_curves(ms, total_steps=50)
    assert len(fig.data) == 3 + 4 + 1
    df = probe_frame(ms)
    assert list(df["step"]) == [25, 50] and df.iloc[0]["[MASK] 1"] == "the (20%)  a (10%)"
    # a next-word run: two panels (loss, top-1 with its baseline), no next-sentence one
    nw = [pretrain_start(objective="next-word")]
    nw += [pretrain_step(s, nsp_loss=None, nsp_acc=None) for s in (5, 10)]
    nw += [pretrain_eval(10, nsp_loss=None, nsp_acc=None, baseline_top1=0.05, probe=[[("a", 0.2)], [("b", 0.1)]])]
    fig = training_figures.pretrain_curves(nw, total_steps=10)
    assert [a.text for a in fig.layout.annotations][:2] == ["next-word loss", "next-word accuracy"]
    assert len(fig.data) == 2 + 3 + 1  # training loss, top-1; validation loss, top-1, top-5; baseline
    assert list(probe_frame(nw, next_word=True).columns) == ["step", "after all but 1", "after it all"]


def test_result_figures_escape_labels():
    classes = ["<b>pos</b>", "neg", "neg"]
    conf = training_figures.confusion_matrix([[5, 1, 0], [2, 3, 0], [0, 0, 1]], classes)
    assert "&lt;b&gt;pos&lt;/b&gt;" in conf.data[0].x and len(set(conf.data[0].y)) == 3
    probs = training_figures.class_probs(["a", "</script>"], [0.25, 0.75])
    assert probs.data[0].y[0] == "&lt;/script&gt;"
    att = training_figures.cls_attention(["[CLS]", "good", "[SEP]"], [0.5, 0.3, 0.2], [0.1, 0.8, 0.1])
    assert len(att.data) == 2
    counts = training_figures.class_counts({"<i>x</i>": 3, "y": 4})
    assert counts.data[0].x[0] == "&lt;i&gt;x&lt;/i&gt;"
    assert training_figures.ema([1, 2, 3], 0.5).tolist() == [1.0, 1.5, 2.25]


@pytest.mark.slow
def test_cls_attention_before_after():
    base = tiny_bundle()
    _, res = finished_result()
    toks, before, after = cls_attention(base, res["bundle"], "the film was good")
    assert toks[0] == "[CLS]" and before.shape == after.shape == (len(toks),)
    assert abs(before.sum() - 1) < 1e-4 and abs(after.sum() - 1) < 1e-4
    with pytest.raises(bert.InputError):
        cls_attention(base, res["bundle"], "  ")


def test_progress_lines():
    assert "Preparing" in finetune_progress([])[1]
    ms = [finetune_start(10), finetune_step(4, progress=0.4, examples_per_s=12.5, eta_s=75)]
    frac, line = finetune_progress(ms)
    assert frac == 0.4 and "Step 4 of 10" in line and "12.5 examples/s" in line and "1 min 15 s" in line
    frac, line = finetune_progress(ms + [finetune_done(4, stopped=True)])
    assert "Stopped at step 4" in line
    frac, line = pretrain_progress([pretrain_start(), pretrain_step(50, seconds=2.0, tokens_per_s=900)], 100, 10)
    assert frac == 0.5 and "about 10 s left" in line and "in bf16" not in line
    _, line = pretrain_progress([pretrain_start(precision="bf16"), pretrain_step(50, seconds=2.0)], 100, 10)
    assert line.endswith("left · in bf16")  # the arithmetic the run said it trains in
    assert finetune_start_line(finetune_start(10, precision="fp32")).endswith(" · in fp32")
    assert fmt_seconds(float("nan")) == "?" and fmt_seconds(3725) == "1 h 02 min"


def test_a_tiny_upload_gets_a_hint_with_enough_epochs():
    """40 rows, 20 % held out, batch 16, 1 epoch: 2 steps; with the floor off the page suggests 15
    epochs (30 steps), with it on (the default) it says the run trains them."""
    msg = few_steps_message(32, 2000, 16, 1, floor=False)
    assert msg and "Only about 2 training step(s)" in msg and "try 15 epochs (about 30 steps)" in msg
    assert few_steps_message(1600, 2000, 16, 1, floor=False) is None  # the built-in default: 100 steps
    assert few_steps_message(1600, 2000, 16, 1, floor=True) is None
    assert few_steps_message(5, 2000, 16, 1, floor=False).startswith("Only about 1 training step(s)")
    assert "try 20 epochs" in few_steps_message(5, 2000, 16, 1, floor=False)  # capped at the page's maximum
    assert "this run trains 15 epochs (about 30 steps) instead of 1" in few_steps_message(32, 2000, 16, 1, floor=True)
    assert floored_epochs(20, 16, 1) == 15 and floored_epochs(20, 16, 18) == 18 and floored_epochs(5, 16, 1) == 20
    assert floored_epochs(1600, 16, 1) == 1


def test_a_40_row_upload_trains_30_steps_and_the_file_stays_until_removed(fresh_at):
    """At the defaults with half held out, 40 rows make 2 steps an epoch: the run trains 15 epochs,
    the page says so, and the file is still there after Start (for a run with other settings)
    until "Remove file"."""
    src = with_tiny_model(fresh_at)
    open_upload(fresh_at, reviews_csv(40), "small.csv")
    fresh_at.selectbox(key="ft_base").set_value(src)
    fresh_at.number_input(key="ft_freeze_layers").set_value(0)
    fresh_at.slider(key="ft_valid_frac").set_value(0.5).run()
    _ok(fresh_at)
    assert any("this run trains 15 epochs (about 30 steps) instead of 1" in i.value for i in fresh_at.info)
    fresh_at.button(key="ft_start").click().run()
    _ok(fresh_at)
    settle(fresh_at, ts.FT_JOB)
    res = fresh_at.session_state[ts.FT_RESULTS][-1]
    assert res["info"]["args"].epochs == 15 and res["done"].steps == 30
    assert fresh_at.session_state[ts.FT_UPLOAD]["name"] == "small.csv"  # kept for the next run
    assert any("small" in c.value and "until you remove it" in c.value for c in fresh_at.caption)
    fresh_at.button(key=f"{ts.FT_UPLOAD}_remove").click().run()
    _ok(fresh_at)
    assert fresh_at.session_state[ts.FT_UPLOAD] is None
    assert any("Upload a file with a text column" in i.value for i in fresh_at.info)


def test_continued_text_joins_a_written_piece_to_the_word_it_continues():
    tok = Tokenizer(SPECIALS + ["the", "cat", "##re", "is", "<b>"])
    ids = tok.convert_tokens_to_ids
    assert continued_text(tok, ids(["the"]), ids(["##re", "is"])) == "the**re is**"  # not "the ##re"
    assert continued_text(tok, ids(["the"]), ids(["cat", "##re"])) == "the **catre**"
    assert continued_text(tok, ids(["<b>"]), ids(["cat"])) == f"{md_escape('<b>')} **cat**", "escaped"
