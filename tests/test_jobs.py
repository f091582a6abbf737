"""Background jobs: queueing, ownership, stop, heartbeat reaping, errors."""

import os
import threading
import time

import pytest

from app.jobs.local import JobManager
from bert.errors import TrainingError
from tests.helpers import counting_job, finetune_done, finetune_step


def test_queue_limits_running_jobs_and_reports_positions():
    jm = JobManager(max_running=1)
    a = jm.submit("s1", "finetune", counting_job(30))
    b = jm.submit("s2", "finetune", counting_job(3))
    c = jm.submit("s3", "finetune", counting_job(3))
    assert a.status == "running"
    assert (jm.queue_position(b), jm.queue_position(c)) == (1, 2)
    assert jm.wait(c, timeout=20)
    assert [j.status for j in (a, b, c)] == ["done", "done", "done"]
    assert a.finished <= b.started and b.finished <= c.started
    assert jm.queue_position(c) == 0


def test_jobs_belong_to_their_session():
    jm = JobManager(max_running=2)
    a = jm.submit("alice", "finetune", counting_job(3, result="alice-model"))
    b = jm.submit("bob", "finetune", counting_job(3, result="bob-model"))
    jm.wait(a)
    jm.wait(b)
    assert jm.jobs_of("alice") == [a] and jm.jobs_of("bob") == [b]
    assert jm.get("bob", a.id) is None and jm.get("alice", a.id) is a
    a.drain()
    b.drain()
    assert a.result == "alice-model" and b.result == "bob-model"
    assert all(getattr(m, "bundle", None) is None for m in a.metrics)  # the model is not in the metrics


def test_stop_is_prompt_keeps_result_and_can_be_pressed_twice():
    jm = JobManager(max_running=1)
    job = jm.submit("s", "finetune", counting_job(10_000, every=0.005))
    time.sleep(0.1)
    before = len(job.drain())
    job.stop()
    job.stop()
    assert jm.wait(job, timeout=5)
    steps = [m for m in job.drain() if m.event == "finetune_step"]
    assert before > 0 and len(steps) <= 3  # prompt: at most the step under way, counted not timed
    assert job.status == "stopped" and job.result == "model"


def test_stop_before_the_first_step_and_second_start_click():
    jm = JobManager(max_running=1)
    first = jm.submit("x", "finetune", counting_job(10_000))
    again = jm.submit("x", "finetune", counting_job(10_000))
    assert again is first  # two Start clicks: one job
    queued = jm.submit("y", "finetune", counting_job(10_000))
    queued.stop()  # stopped while waiting: never starts
    first.stop()
    jm.wait(first)
    jm.wait(queued)
    assert queued.status == "stopped" and queued.started is None


def test_job_of_a_gone_session_is_stopped():
    jm = JobManager(max_running=1, heartbeat_timeout=0.2)
    job = jm.submit("gone", "finetune", counting_job(10_000))
    time.sleep(0.3)
    assert job in jm.reap()
    assert jm.wait(job, timeout=5) and job.status == "stopped"


def test_errors_become_messages():
    def failing(stop):
        yield finetune_step(1)
        raise TrainingError("the loss became nan at step 1")

    jm = JobManager(max_running=1)
    job = jm.submit("s", "pretrain", failing)
    jm.wait(job)
    assert job.status == "error" and "nan" in job.error
    assert job.drain() == [finetune_step(1)]


def test_unexpected_exception_does_not_kill_the_manager():
    def broken(stop):
        raise RuntimeError("boom")
        yield  # pragma: no cover

    jm = JobManager(max_running=1)
    bad = jm.submit("s", "finetune", broken)
    jm.wait(bad)
    assert bad.status == "error" and "boom" in bad.error
    good = jm.submit("s", "finetune", counting_job(2))
    assert jm.wait(good) and good.status == "done"


def test_the_local_backend_answers_by_run_code_as_the_ray_one_does():
    from app.jobs.local import TrainingJobs

    jm = TrainingJobs(max_running=1, alive=lambda sid: True)
    job, _ = jm.submit_for("owner", "finetune", counting_job(10_000, every=0.005), student="browser:z")
    job.info = {"code": "LOCAL1"}
    assert jm.find("browser:z", "finetune") == "LOCAL1" and jm.find("browser:y", "finetune") is None
    time.sleep(0.1)
    events, state = jm.poll("LOCAL1")
    assert state == "running" and events and events[0]["event"] == "train"
    more, _ = jm.poll("LOCAL1", since=len(events))
    assert all(e["step"] > events[-1]["step"] for e in more)
    jm.heartbeat(["LOCAL1"])
    jm.stop("LOCAL1")
    assert jm.wait(job, timeout=5)
    assert jm.poll("LOCAL1")[1] == "stopped" and jm.poll("NOSUCH") == ([], "lost")
    assert jm.find("browser:z", "finetune") is None  # ended: nothing to reattach to


def test_the_local_backend_and_its_jobs_are_what_the_pages_are_given():
    """app/jobs/backend.py's Protocols, checked at run time (the Ray ones: tests/test_ray_jobs.py)."""
    from app.jobs.backend import JobBackend, JobHandle
    from app.jobs.local import TrainingJobs

    jm = TrainingJobs(max_running=1, alive=lambda sid: True)
    job, _ = jm.submit_for("owner", "finetune", counting_job(2))
    assert isinstance(jm, JobBackend) and isinstance(job, JobHandle)
    assert jm.reattach("owner", "NOSUCH", "finetune") is None  # followed by its own session only
    assert jm.wait(job, timeout=5)


@pytest.mark.parametrize("nice", ["10", "0"])
def test_a_job_trains_at_a_lower_priority_than_the_pages_and_leaves_theirs_alone(monkeypatch, nice):
    """BERT_EXPLORER_JOB_NICE raises the niceness of the job's own thread only (Linux)."""
    monkeypatch.setenv("BERT_EXPLORER_JOB_NICE", nice)
    mine = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    seen = []

    def fn(stop):
        seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
        yield finetune_step(1)
        yield finetune_done(bundle="model")

    jm = JobManager(max_running=1)
    job = jm.submit("s", "finetune", fn)
    assert jm.wait(job, timeout=20) and job.status == "done"
    assert seen == [min(19, mine + int(nice))]
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == mine


def test_wait_returns_once_the_jobs_thread_has_ended(monkeypatch):
    """A job's thread frees its memory after the job is done; `wait` returns only once the thread
    has ended, so a command that exits right after does not stop it mid-free (which aborts)."""
    freed = threading.Event()

    def slow_release():
        time.sleep(0.3)
        freed.set()

    monkeypatch.setattr("app.jobs.local.release_memory", slow_release)
    jm = JobManager(max_running=1)
    job = jm.submit("s", "finetune", counting_job(1, every=0))
    assert jm.wait(job, timeout=20)
    assert freed.is_set() and not job._thread.is_alive()
