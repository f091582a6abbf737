"""The Ray backend against a real local Ray cluster (tests/ray_cluster.py: a head, two 1-CPU workers,
the second with two fake GPUs, all on 127.0.0.1 in a network namespace of its own): the same jobs as the
local backend, Stop, a second replica finding a student's job, the caps across replicas, a worker
lost mid-job, GPU jobs routed to the GPU node."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from app.jobs.backend import JobBackend, JobHandle
from app.jobs.budget import LimitError
from app.jobs.spec import FINETUNE, finetune_spec, pretrain_spec
from app.jobs.task_head_job import task_head_spec
from app.jobs.worker import run_job
from app.model_sources import load_model
from bert.checkpoint import load as checkpoint
from bert.data.corpus.base import corpus_from_text
from bert.data.corpus.fetch import downloads_dir
from bert.data.labelled import stratified_split
from bert.data.qa_demo import qa_demo
from bert.data.tagged import read_tagged
from bert.train.attention_snapshots import AttentionSnapshots
from bert.train.pretrain_args import PretrainArgs
from bert.train.task_head_args import TaskHeadArgs, for_task_head
from tests.helpers import fast_args, tiny_bundle, tiny_data

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parent.parent

BASE = "tiny-base"  # a models-folder model: every worker resolves it by this name


@pytest.fixture
def shared(tmp_path, monkeypatch, ray_cluster):
    """One folder every node sees (here: the one machine's disk) with a models folder holding BASE;
    its downloads are this checkout's, so this process and every worker read the same corpora (a
    worker in the tests' network namespace cannot fetch one)."""
    cache, models = tmp_path / "cache", tmp_path / "models"
    cache.mkdir()
    if downloads_dir().is_dir():
        (cache / "downloads").symlink_to(downloads_dir().resolve(), target_is_directory=True)
    checkpoint.save(tiny_bundle(), models / BASE)
    monkeypatch.setenv("BERT_EXPLORER_CACHE", str(cache))
    monkeypatch.setenv("BERT_EXPLORER_MODELS_DIR", str(models))
    monkeypatch.setenv("BERT_EXPLORER_BACKEND", "ray")
    return ray_cluster


@pytest.fixture
def backend(shared):
    from app.jobs import ray_actors, ray_backend

    shared.connect(namespace=ray_actors.NAMESPACE)
    # a connected session; its base models loaded as the page gives them
    jobs = ray_backend.RayJobs(address=shared.address, alive=lambda sid: True, load_base=load_model)
    yield jobs
    for job in list(jobs._jobs.values()):
        if job.active:
            job.stop()
    jobs.wait_all(timeout=30)
    jobs.close()


def ft_spec(code: str, student: str, **kw):
    train, valid = stratified_split(tiny_data(80), 0.25, seed=0)
    args = fast_args(seed=3, **kw)
    return finetune_spec(code, BASE, train, valid, args, student=student, title=code, info={"code": code})


def pt_spec(code: str, student: str, **kw):
    text = " ".join(f"The cat number {i} sat on the mat." for i in range(60))
    corpus = corpus_from_text("\n\n".join([text] * 6))
    base = dict(out="", init="scratch", vocab="default", layers=1, hidden=32, heads=2, max_seq_length=32)
    more = dict(batch_size=4, steps=6, lr=1e-3, warmup_steps=1, log_every=2, eval_every=3, save_every=3)
    args = PretrainArgs(**{**base, **more, "eval_sequences": 8, "threads": 1, "seed": 1, "corpora": ["upload"], **kw})
    return pretrain_spec(code, args, corpus, code, "a test text", student=student, info={"code": code}), corpus


def finals(events) -> dict:
    done = [e for e in events if e.event == "done"][-1].to_dict()
    timing = ("seconds", "_per_s")  # how fast, not what: differs from machine to machine
    return {k: v for k, v in done.items() if isinstance(v, (int, float)) and not any(t in k for t in timing)}


def recorder():
    return AttentionSnapshots.pending("the good film was bad", every=2, max_snapshots=100, max_length=16)


def same_snapshots(remote: AttentionSnapshots, local: AttentionSnapshots) -> None:
    """Attention over training recorded on a worker reaches the page's recorder as it is here."""
    steps, atts = remote.view()
    assert len(steps) >= 3 and steps == local.view()[0]
    assert remote.tokens == local.tokens and remote.ids == local.ids
    np.testing.assert_allclose(atts, local.view()[1], atol=2e-3)  # float16, the same weights


def test_the_same_jobs_give_the_same_events_metrics_and_attention_on_both_backends(backend):
    spec = ft_spec("RAYFT1", "browser:a")
    here = recorder()
    local = list(run_job(ft_spec("", "x"), threading.Event(), recorder=here, load_base=load_model))
    there = recorder()
    job, new = backend.submit_spec("owner-a", spec, recorder=there)
    assert new and backend.wait(job, 120), job.status
    assert job.status == "done", job.error
    assert [e.event for e in job.metrics if e.event != "saved"] == [e.event for e in local]
    assert finals(job.metrics) == pytest.approx(finals(local), rel=1e-5)
    assert job.result is not None and job.result.name  # from the shared run store, by run code
    same_snapshots(there, here)

    pspec, corpus = pt_spec("RAYPT1", "browser:b")
    here = recorder()
    plocal = list(run_job(pt_spec("", "y")[0], threading.Event(), corpus=corpus, recorder=here))
    there = recorder()
    pjob, _ = backend.submit_spec("owner-b", pspec, recorder=there)
    assert backend.wait(pjob, 180) and pjob.status == "done", pjob.error
    assert [e.event for e in pjob.metrics if e.event != "saved"] == [e.event for e in plocal]
    assert finals(pjob.metrics) == pytest.approx(finals(plocal), rel=1e-4)
    same_snapshots(there, here)  # the tokens of a vocabulary trained on the worker, too


def test_the_next_word_game_and_a_decoder_run_on_the_workers(backend):
    """A 30-step next-word run on a worker gives the events it gives here and comes back from the
    run store as a left-to-right model that writes; a 30-step Decoder on top run comes back by its
    code as an encoder-decoder that decodes (its events read back as that trainer's)."""
    from app.jobs.seq2seq_job import seq2seq_spec
    from bert.analysis.generate import continue_text
    from bert.attention_masks import CAUSAL, trained_mask_kind
    from bert.train.seq2seq import Seq2SeqArgs, Seq2SeqDone, Seq2SeqEval

    nw = dict(objective="next-word", steps=30, eval_every=15, save_every=1000)
    spec, corpus = pt_spec("RAYNW1", "browser:n", **nw)
    local = list(run_job(pt_spec("", "z", **nw)[0], threading.Event(), corpus=corpus))
    job, _ = backend.submit_spec("owner-n", spec)
    assert backend.wait(job, 180) and job.status == "done", job.error
    assert [e.event for e in job.metrics if e.event != "saved"] == [e.event for e in local]
    assert finals(job.metrics) == pytest.approx(finals(local), rel=1e-4)
    assert [e for e in job.metrics if e.event == "start"][0].objective == "next-word"
    model = job.result.loaded()
    assert trained_mask_kind(model.config) == CAUSAL
    assert len(continue_text(model, "the cat", n=4).steps) >= 1

    args = Seq2SeqArgs(steps=30, eval_every=15, train_pairs=200, valid_pairs=20, threads=1)
    sjob, _ = backend.submit_spec("owner-n", seq2seq_spec("RAYS2S", args, None, student="browser:n", title="t"))
    assert backend.wait(sjob, 180) and sjob.status == "done", sjob.error
    assert isinstance(sjob.metrics[-2], Seq2SeqDone) and sjob.metrics[-1].event == "saved"
    assert any(isinstance(e, Seq2SeqEval) for e in sjob.metrics)
    decoder = sjob.result.loaded()
    assert decoder.trace("cat moon egg").outputs


def test_stop_keeps_and_saves_the_model(backend, monkeypatch):
    from app.jobs import saved_runs

    job, _ = backend.submit_spec("o", ft_spec("RAYSTP", "browser:s", epochs=400))
    deadline = time.time() + 90
    while not any(e.event == "train" for e in job.metrics) and time.time() < deadline:
        time.sleep(0.2)
    assert backend.find("browser:s", FINETUNE) == "RAYSTP"  # the interface by run code
    assert isinstance(backend, JobBackend) and isinstance(job, JobHandle)  # app/jobs/backend.py's
    events, state = backend.poll("RAYSTP")
    assert state == "running" and events[0]["event"] == "start"
    assert backend.counts()["running"] >= 1
    backend.heartbeat(["RAYSTP"])
    import ray

    from app.jobs.ray_actors import NAMESPACE

    held = ray.get_actor("RAYSTP", namespace=NAMESPACE)  # a handle a poll took just before the actor went
    backend.stop("RAYSTP")
    assert backend.wait(job, 60) and job.status == "stopped"
    assert backend.find("browser:s", FINETUNE) is None
    assert backend.poll("RAYSTP")[1] == "stopped"
    deadline = time.time() + 60  # its follower has every event: the actor is let go
    while time.time() < deadline:
        try:
            ray.get(held.poll.remote(0), timeout=10)
        except ray.exceptions.RayActorError:
            break
        time.sleep(0.2)
    else:
        pytest.fail("the stopped job's actor was not let go")
    monkeypatch.setattr(ray, "get_actor", lambda *a, **k: held)  # the poll that races the let-go
    assert backend.poll("RAYSTP")[1] == "stopped"  # its end state, not "lost"
    assert any(e.event == "saved" for e in job.metrics), (
        [e.event for e in job.metrics][-5:],
        job.error,
        job.stop_reason,
    )
    assert saved_runs.is_saved("RAYSTP") and job.result is not None


SECOND_REPLICA = """
import json, sys
from app.jobs.budget import LimitError
from app.jobs.task_head_job import task_head_spec
from app.jobs.spec import FINETUNE
from app.jobs import ray_backend
from app.jobs.spec import JobSpec
from app.model_sources import load_model
jobs = ray_backend.RayJobs(alive=lambda sid: True, load_base=load_model)
code = jobs.find("browser:r", "finetune")
out = {"found": code}
try:
    jobs.submit_spec("replica-2-owner", JobSpec.from_dict(json.loads(sys.argv[1])))
    out["second"] = "admitted"
except LimitError as e:
    out["second"] = str(e)
job = jobs.reattach("replica-2-owner", code, "finetune")
jobs.wait(job, 120)
out["status"] = job.status
out["name"] = job.result.name if job.result is not None else None
print(json.dumps(out))
"""


def test_a_second_replica_finds_the_students_job_and_the_caps_hold_across_replicas(backend, shared):
    job, _ = backend.submit_spec("replica-1-owner", ft_spec("RAYREP", "browser:r", epochs=6))
    with pytest.raises(LimitError, match="one job per student"):  # another tab of the browser, here
        backend.submit_spec("replica-1-owner-tab-2", ft_spec("RAYDU1", "browser:r"))
    env = {**os.environ, **shared.env, "PYTHONPATH": str(ROOT)}
    again = json.dumps(ft_spec("RAYDU2", "browser:r").to_dict())
    out = subprocess.run(
        [sys.executable, "-c", SECOND_REPLICA, again], env=env, cwd=ROOT, capture_output=True, text=True, timeout=240
    )
    assert out.returncode == 0, out.stderr[-3000:]
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["found"] == "RAYREP"
    assert "one job per student" in seen["second"]  # refused on the other replica too
    assert seen["status"] == "done" and seen["name"] == "RAYREP"


def test_a_worker_lost_mid_job_ends_as_lost_and_the_next_job_runs_on_the_other_node(backend, shared):
    from app.jobs.ray_backend import LOST, LOST_MESSAGE

    first, _ = backend.submit_spec("o1", ft_spec("RAYLS1", "browser:l1", epochs=400))
    deadline = time.time() + 90
    while first.status != "running" and time.time() < deadline:
        time.sleep(0.2)
    node = backend.node_of(first)
    victim = next(i for i in (1, 2) if shared.node_id(i) == node)
    shared.kill_node(victim)
    t = time.time()
    assert backend.wait(first, 60), "a page must not hang on a lost job"
    lost_after = time.time() - t
    assert first.status == LOST and first.error == LOST_MESSAGE, (first.status, first.error)
    second, _ = backend.submit_spec("o2", ft_spec("RAYLS2", "browser:l2"))
    assert backend.wait(second, 120) and second.status == "done", second.error
    assert backend.node_of(second) == shared.node_id(3 - victim)
    print(f"lost noticed after {lost_after:.1f} s")


def test_a_job_asking_for_a_gpu_goes_to_the_gpu_node(backend, shared):
    spec = ft_spec("RAYGPU", "browser:g")
    spec.gpu = True  # args.device stays auto: the fake GPU's node trains on its CPU
    job, _ = backend.submit_spec("og", spec)
    assert backend.wait(job, 120) and job.status == "done", job.error
    assert backend.node_of(job) == shared.node_id(2)  # the worker with the (fake) GPU


def test_pretraining_on_a_gpu_node_runs_under_torchrun_a_process_a_gpu_and_stops_keeping_its_model(
    backend, shared, monkeypatch
):
    monkeypatch.setenv("BERT_EXPLORER_GPUS_PER_PRETRAIN", "2")
    spec, _ = pt_spec("RAYTRN", "browser:t")
    spec.gpu = True  # args.device stays auto: the fake GPUs' node trains on its CPU, gloo between processes
    spec.args |= {"steps": 5000, "eval_every": 5000, "save_every": 5000}
    job, _ = backend.submit_spec("ot", spec)
    deadline = time.time() + 120
    while not any(e.event == "train" for e in job.metrics) and job.active and time.time() < deadline:
        time.sleep(0.2)
    start = next(e for e in job.metrics if e.event == "start")
    assert start.world_size == 2, start  # torchrun: two processes, one per GPU the actor holds
    backend.stop("RAYTRN")
    assert backend.wait(job, 120) and job.status == "stopped", (job.status, job.error)
    done = next(e for e in job.metrics if e.event == "done")
    assert done.stopped and 0 < done.step < 5000, done  # every rank stopped after the same step
    assert any(e.event == "saved" for e in job.metrics) and job.result is not None
    assert backend.node_of(job) == shared.node_id(2)


def test_the_course_bench_runs_every_students_default_run_on_the_workers(shared, monkeypatch, tmp_path):
    """benchmarks/course_queue.py's measurement on the test cluster, with the page's run on a tiny
    model and data set: three runs queued at once through RayJobs all end done, on both worker
    nodes, and the figures the projection uses come back (no time asserted)."""
    from app.jobs import ray_backend
    from app.training import data as training_data
    from benchmarks import course_queue

    monkeypatch.setenv("BERT_EXPLORER_FINETUNE_BASE", str(tmp_path / "models" / BASE))  # the workers: by name
    monkeypatch.setattr(training_data, "builtin_data", lambda name: tiny_data(80))
    shared.connect(namespace=ray_backend.NAMESPACE)
    res = course_queue.measure(3)
    assert res["errors"] == [] and res["done"] == 3 and res["workers"] == 2, res
    assert res["nodes"] == 2 and len(res["run_seconds"]) == 3, res  # two at once, one a worker
    assert 0 < res["run_seconds_mean"] <= 60 * res["minutes_until_last"] and res["runs_per_minute"] > 0, res


def test_a_per_token_head_job_runs_on_a_worker_as_it_does_here(backend):
    """A tagger's job (kind HEAD) on an uploaded CoNLL file: its spec travels to a worker, its events
    come back read as the head trainer's, the same as in this process, and the run is kept by code."""
    data = read_tagged(b"".join(f"the O\n{w} B-THING\nwas O\n\n".encode() for w in ("film", "plot") * 8))
    args = TaskHeadArgs(threads=1, lr=2e-3, epochs=2, evals=1, max_length=16, freeze_embeddings=False)
    local = list(run_job(task_head_spec("", BASE, args, data), threading.Event(), load_base=load_model))
    job, new = backend.submit_spec("owner-h", task_head_spec("RAYHD1", BASE, args, data, student="browser:h"))
    assert new and backend.wait(job, 120), job.status
    assert job.status == "done", job.error
    assert [e.event for e in job.metrics if e.event != "saved"] == [e.event for e in local]
    assert job.metrics[-2].scores == pytest.approx(local[-1].scores)  # the TaskHeadDone, before "saved"
    assert job.result is not None and job.result.is_tagger


def test_a_reader_job_runs_on_a_worker_as_it_does_here(backend):
    """A reader's job (kind HEAD) on a few questions sent with it: its windows are made on the worker,
    its events come back read as the head trainer's with the same exact match and F1 as in this
    process, and the run is kept by code."""
    from app.jobs import saved_runs

    data = qa_demo(passages=4)
    args = for_task_head("reader", threads=1, epochs=1, evals=1, max_length=48, stride=8, max_valid=3)
    local = list(run_job(task_head_spec("", BASE, args, data), threading.Event(), load_base=load_model))
    job, new = backend.submit_spec("owner-r", task_head_spec("RAYRD1", BASE, args, data, student="browser:r"))
    assert new and backend.wait(job, 120), job.status
    assert job.status == "done", job.error
    assert [e.event for e in job.metrics if e.event != "saved"] == [e.event for e in local]
    assert set(local[-1].scores) == {"exact_match", "f1"}
    assert job.metrics[-2].scores == pytest.approx(local[-1].scores)  # the TaskHeadDone, before "saved"
    assert job.result is not None and job.result.is_reader
    assert saved_runs.is_saved("RAYRD1")


def test_a_dictionary_job_runs_on_a_worker_as_it_does_here(backend):
    """A dictionary job (kind DICTIONARY) with its sentences in the spec: the model resolved on a worker
    by its name, the same curves and qualities as in this process, the dictionaries reopened by code."""
    from app.jobs.dictionary_events import CONTROL, TRAINED, DictionaryQuality
    from app.jobs.dictionary_job import DictionaryArgs, dictionary_spec, open_dictionaries

    texts = ["the film was good", "a very bad plot", "the actor was really good", "it was quite a story"]
    args = DictionaryArgs(layer=1, n_features=16, sparsity=4, steps=20, log_every=10, threads=1)
    local = list(run_job(dictionary_spec("", BASE, args, (texts * 4, texts)), threading.Event(), load_base=load_model))
    job, new = backend.submit_spec("owner-d", dictionary_spec("RAYDC1", BASE, args, (texts * 4, texts), "browser:d"))
    assert new and backend.wait(job, 120), job.status
    assert job.status == "done", job.error
    assert [e.event for e in job.metrics if e.event != "saved"] == [e.event for e in local]
    quality = [e.quality["variance_explained"] for e in job.metrics if isinstance(e, DictionaryQuality)]
    assert quality == pytest.approx([e.quality["variance_explained"] for e in local if e.event == "quality"])
    assert job.result is None and list(open_dictionaries("RAYDC1").dictionaries) == [TRAINED, CONTROL]
