"""The per-token heads as jobs: a JobSpec of kind HEAD (its wire form too) runs the tagger's or the
reader's fine-tuning through run_job, the run is saved under its code and reopens with its events."""

import threading

from app.jobs import saved_runs
from app.jobs.head_job import head_spec
from app.jobs.records import Saved, loaded_record
from app.jobs.spec import HEAD, JobSpec
from app.jobs.worker import run_job
from bert.data.qa_demo import qa_demo
from bert.data.tagged import read_tagged
from bert.train import events as ev
from bert.train.head_args import HeadArgs, for_head
from tests.helpers import tiny_bundle, use_cache

CONLL = b"".join(f"the O\n{w} B-THING\nwas O\ngood O\n\n".encode() for w in ("film", "movie", "plot", "story") * 6)


def _run(spec, base):
    return list(run_job(JobSpec.from_dict(spec.to_dict()), threading.Event(), base=base))  # its wire form


def test_a_tagger_job_on_an_upload_is_saved_under_its_code_and_reopens(tmp_path, monkeypatch):
    use_cache(monkeypatch, tmp_path / "cache")
    data = read_tagged(CONLL, "things.conll")
    args = HeadArgs(threads=1, lr=2e-3, epochs=2, evals=1, max_length=16, freeze_embeddings=False)
    code = saved_runs.new_code()
    spec = head_spec(code, "tiny", args, data, student="s1", title="things")
    assert spec.kind == HEAD and spec.examples["tag_names"] == ["O", "B-THING"]
    events = _run(spec, tiny_bundle())
    assert isinstance(events[0], ev.HeadStart) and events[0].train_examples == 19
    assert isinstance(events[-1], Saved) and events[-1].code == code
    done = next(e for e in events if isinstance(e, ev.HeadDone))
    assert done.bundle.is_tagger and done.scores["f1"] is not None
    bundle, record = saved_runs.open_run(code)
    assert bundle.is_tagger and bundle.labels == ["O", "B-THING"] and record["name"] == "things"
    back = loaded_record(record)
    assert isinstance(back["done"], ev.HeadDone) and back["done"].scores == done.scores
    assert back["info"]["args"].head == "tagger" and len(ev.of_type(back["metrics"], ev.HeadEval)) == 2


def test_a_reader_job_carries_its_uploaded_questions(tmp_path, monkeypatch):
    use_cache(monkeypatch, tmp_path / "cache")
    data = qa_demo(passages=8)
    args = for_head("reader", threads=1, epochs=1, evals=1, max_length=64, stride=16, max_valid=4)
    spec = head_spec("", "tiny", args, data)
    events = _run(spec, tiny_bundle())
    done = events[-1]
    assert isinstance(done, ev.HeadDone) and done.bundle.is_reader and set(done.scores) == {"exact_match", "f1"}
    assert events[0].train_examples == 30 and events[0].valid_examples == 4  # split by passage: 2 of 8 held out
