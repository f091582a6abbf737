"""bert/train/events.py: the trainers' typed events, their dicts (the command line's JSON lines, saved
runs), and reading them back."""

import dataclasses
import json
import math

import pytest

import bert
from bert.__main__ import main
from bert.data.labelled import stratified_split
from bert.train import events as ev
from bert.train.finetune import finetune
from bert.train.finetune_args import FinetuneArgs
from bert.train.precision import server_precision
from bert.train.pretrain_args import PretrainArgs
from tests import helpers
from tests.helpers import synthetic, tiny_bundle, tiny_cli_argv

# The keys each JSON line had when the trainers yielded dicts: they must not change.
SCORES = "mlm_loss mlm_top1 mlm_top5 nsp_loss nsp_acc masked_tokens sequences baseline_top1"
PRETRAIN_KEYS = {
    "start": set("step train_documents valid_documents train_tokens parameters world_size baseline_token".split())
    | {"precision"},  # added since: the arithmetic it trains in
    "train": set("step epoch lr mlm_loss mlm_acc nsp_loss nsp_acc grad_norm tokens_per_s seconds".split()),
    "eval": set(f"step {SCORES} probe".split()),
    "done": set(f"step stopped path {SCORES}".split()),
}
FINETUNE_KEYS = {
    "start": set("steps steps_per_epoch train_examples valid_examples classes parameters trainable truncated".split())
    | {"prep_seconds", "precision"},
    "train": set("step epoch loss loss_smooth lr grad_norm examples_per_s progress eta_s".split()),
    "eval": set("step epoch val_loss accuracy best_accuracy eval_seconds".split()),
    "error": {"step", "message"},
    "done": set("step steps best_step stopped error accuracy val_loss seconds train_seconds examples_per_s".split())
    | {"train_examples", "valid_examples", "classes"},
}
CLI_DONE_EXTRA = {"out", "labels", "notes"}  # what `python -m bert finetune` adds to its last line

SAMPLES = [
    (ev.PRETRAIN, ev.Resumed(step=10)),
    (ev.PRETRAIN, helpers.pretrain_start()),
    (ev.PRETRAIN, helpers.pretrain_step(5)),
    (ev.PRETRAIN, helpers.pretrain_eval(10, baseline_top1=0.05, probe=[[("the", 0.2), ("a", 0.1)], [(".", 0.5)]])),
    (ev.PRETRAIN, helpers.pretrain_eval(10)),  # no baseline measured
    (ev.PRETRAIN, ev.PretrainDone(step=20, stopped=False, path="runs/x/final", mlm_loss=5.0, mlm_top1=0.1)),
    (ev.PRETRAIN, ev.PretrainDone(stopped=True, from_checkpoint=True)),
    (ev.PRETRAIN, ev.Error(message="the loss became nan")),
    (ev.FINETUNE, helpers.finetune_start()),
    (ev.FINETUNE, helpers.finetune_step(3)),
    (ev.FINETUNE, helpers.finetune_eval(10, accuracy=0.8)),
    (ev.FINETUNE, ev.Error(message="the loss became inf at step 4", step=3)),
    (ev.FINETUNE, helpers.finetune_done()),
    (ev.FINETUNE, helpers.finetune_done(error="diverged", out="runs/clf", labels=["neg", "pos"], notes=["a note"])),
]


@pytest.mark.parametrize("trainer,event", SAMPLES, ids=lambda x: getattr(x, "event", x))
def test_round_trip_through_a_dict_and_json(trainer, event):
    d = event.to_dict()
    assert d["event"] == event.event and list(d)[0] == "event"
    assert ev.from_dict(d, trainer) == event
    assert ev.from_dict(json.loads(json.dumps(d)), trainer) == event  # tuples come back as tuples


def test_optional_fields_are_left_out_and_the_model_never_goes_in():
    done = ev.PretrainDone(stopped=True, from_checkpoint=True, bundle=object())
    assert done.to_dict() == {"event": "done", "stopped": True, "from_checkpoint": True}
    assert "bundle" not in helpers.finetune_done(bundle=object()).to_dict()
    assert helpers.finetune_done(bundle="a model") == helpers.finetune_done()  # the model is not compared
    assert helpers.finetune_done().to_dict()["error"] is None  # always there, null when none
    assert "baseline_top1" not in helpers.pretrain_eval(1).to_dict()
    assert ev.Error(message="x").to_dict() == {"event": "error", "message": "x"}


def test_reading_back_needs_the_trainer_and_the_fields():
    ft_done = helpers.finetune_done().to_dict()
    assert isinstance(ev.from_dict(ft_done, ev.FINETUNE), ev.FinetuneDone)
    assert isinstance(ev.from_dict(ft_done | {"path": "x"}, ev.PRETRAIN), ev.PretrainDone)  # same name, other fields
    with pytest.raises(ValueError, match="without"):
        ev.from_dict({"event": "train", "step": 1}, ev.FINETUNE)
    with pytest.raises(ValueError, match="not a pretrain event"):
        ev.from_dict({"event": "report"}, ev.PRETRAIN)
    extra = {**helpers.finetune_step(1).to_dict(), "added_later": 1}  # a newer writer's key is ignored
    assert ev.from_dict(extra, ev.FINETUNE) == helpers.finetune_step(1)


def test_of_type_and_last():
    events = [helpers.finetune_start(), helpers.finetune_step(1), helpers.finetune_eval(1), helpers.finetune_step(2)]
    assert ev.of_type(events, ev.TrainStep) == [events[1], events[3]]
    assert ev.last(events, ev.FinetuneStep).step == 2 and ev.last(events, ev.Done) is None
    assert ev.last(events, ev.Start) is events[0]


def _keys_by_kind(lines):
    out = {}
    for line in lines:
        out.setdefault(line["event"], set()).update(k for k in line if k != "event")
    return out


@pytest.mark.slow
def test_pretrain_cli_lines_keep_their_keys(tmp_path, capsys):
    argv = tiny_cli_argv(tmp_path)
    assert main([*argv, "--device", "cpu", "--threads", "1"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    assert [x["event"] for x in lines] == ["start", "train", "train", "eval", "done"]
    assert _keys_by_kind(lines) == PRETRAIN_KEYS
    assert lines[0]["precision"] == server_precision("cpu")  # the setting's, as the server's jobs
    probe = lines[3]["probe"]
    assert probe and all(isinstance(t, str) and isinstance(p, float) for t, p in probe[0])
    assert main([*argv, "--steps", "3", "--device", "cpu", "--threads", "1"]) == 0  # resumes at step 2
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    assert lines[0] == {"event": "resumed", "step": 2}


def test_finetune_events_and_cli_lines_keep_their_keys(tmp_path, capsys):
    train, valid = stratified_split(synthetic(60), 0.25, seed=0)
    args = FinetuneArgs(data="s", batch_size=16, max_length=32, threads=1, epochs=2, eval_every=2)
    events = list(finetune(tiny_bundle(source="test"), train, valid, args))
    got = _keys_by_kind([e.to_dict() for e in events])
    assert got == {k: FINETUNE_KEYS[k] for k in ("start", "train", "eval", "done")}
    assert set(ev.Error(message="m", step=3).to_dict()) - {"event"} == FINETUNE_KEYS["error"]

    ckpt, data = tmp_path / "tiny-model", synthetic(60, seed=1)
    bert.save(tiny_bundle(source="test"), ckpt)
    rows = ["text;label"] + [f"{t};{data.classes[y]}" for t, y in zip(data.texts, data.labels)]
    (tmp_path / "d.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    argv = ["finetune", "--data", str(tmp_path / "d.csv"), "--checkpoint", str(ckpt), "--out", str(tmp_path / "o")]
    assert main([*argv, "--max-length", "32", "--eval-every", "2", "--threads", "1"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    assert {x["event"] for x in lines[:-1]} == {"eval"} and lines[-1]["event"] == "done"
    assert all(set(x) - {"event"} == FINETUNE_KEYS["eval"] for x in lines[:-1])
    assert set(lines[-1]) - {"event"} == FINETUNE_KEYS["done"] | CLI_DONE_EXTRA
    assert lines[-1]["out"] == str(tmp_path / "o") and math.isfinite(lines[-1]["accuracy"])


def test_saved_runs_keep_their_format_and_older_ones_still_open():
    """A run's record goes to run.json with its events as dicts (as before typed events) and comes
    back typed; a run.json written before (literal dicts) opens the same way."""
    from app.jobs.records import Report, Saved, loaded_record, run_record, stored_record

    events = [helpers.finetune_start(2), helpers.finetune_step(1), helpers.finetune_eval(2, accuracy=0.75)]
    events += [helpers.finetune_done(2), Report(seconds=1.0, report={"accuracy": 0.75}), Saved(code="K7QX2M")]
    record = run_record("finetune", events, {"args": FinetuneArgs(data="d.csv", lr=1e-3)}, "done", None, None)
    assert record["metrics"] == events[:4] and record["done"] == events[3]  # done is among the metrics too
    assert record["report"] == {"event": "report", "seconds": 1.0, "accuracy": 0.75}
    on_disk = json.loads(json.dumps(stored_record(record)))
    assert on_disk["metrics"][1] == events[1].to_dict() and on_disk["done"]["event"] == "done"
    assert on_disk["info"]["args"] == dataclasses.asdict(FinetuneArgs(data="d.csv", lr=1e-3))
    assert loaded_record(on_disk) == record
    older = {
        "kind": "pretrain",
        "metrics": [
            {"event": "start", "step": 0, "train_documents": 9, "valid_documents": 1, "train_tokens": 900}
            | {"parameters": 5000, "world_size": 1, "baseline_token": "the"},
            {"event": "eval", "step": 5, "mlm_loss": 6.0, "mlm_top1": 0.1, "mlm_top5": 0.2, "nsp_loss": 0.7}
            | {"nsp_acc": 0.5, "masked_tokens": 40, "sequences": 8, "probe": [[["the", 0.3]]]},
            {"event": "someday", "step": 6},  # an event this version does not know: left out
        ],
        "done": {"event": "done", "stopped": True, "from_checkpoint": True},
        "report": None,
        "info": {"args": {"out": "/tmp/x", "steps": 40, "probe": "a [MASK] .", "removed_since": 1}},
    }
    back = loaded_record(older)
    assert [type(m) for m in back["metrics"]] == [ev.PretrainStart, ev.PretrainEval]
    assert back["metrics"][1].probe == [[("the", 0.3)]] and back["done"].from_checkpoint
    assert back["info"]["args"] == PretrainArgs(out="/tmp/x", steps=40, probe="a [MASK] .")
    with pytest.raises(bert.DataError, match="cannot read"):
        loaded_record({**older, "done": None})
