"""Training precision (bert/train/precision.py): the setting, torch's report, the start-up refusal, and
what a bf16 run keeps in fp32 and says about itself."""

import pytest
import torch

from bert.data.labelled import stratified_split
from bert.errors import TrainingError
from bert.train import precision as pr
from bert.train.events import FinetuneStart
from bert.train.finetune import finetune
from bert.train.finetune_args import FinetuneArgs
from tests import helpers
from tests.helpers import FAST_FINETUNE, synthetic

CPU = torch.device("cpu")


@pytest.fixture
def cpu_bf16(monkeypatch):
    """Set what torch is taken to report about this CPU (bf16 autocast itself runs on any CPU)."""

    def say(has: bool):
        monkeypatch.setattr(pr, "cpu_has_bf16", lambda: has)

    return say


def test_auto_follows_torchs_report_and_other_names_are_refused(cpu_bf16):
    cpu_bf16(True)
    assert pr.resolve_precision("auto", CPU) == pr.resolve_precision(None, CPU) == "bf16"
    assert pr.resolve_precision(" BF16 ", CPU) == "bf16" and pr.resolve_precision("fp32", CPU) == "fp32"
    cpu_bf16(False)
    assert pr.resolve_precision("auto", CPU) == "fp32"
    with pytest.raises(TrainingError, match="no native bf16"):
        pr.resolve_precision("bf16", CPU)
    with pytest.raises(TrainingError, match="unknown precision 'fp16'"):
        pr.resolve_precision("fp16", CPU)
    with pytest.raises(TrainingError, match="unknown precision"):
        FinetuneArgs(data="x", precision="half").check()


def test_the_torch_report_is_a_bool_asked_once():
    assert isinstance(pr.cpu_has_bf16(), bool)
    assert pr.cpu_has_bf16.cache_info().currsize == 1


def test_the_server_setting_is_resolved_and_a_bad_one_stops_the_app_at_start_up(monkeypatch, cpu_bf16):
    from app.jobs.backend import ready

    cpu_bf16(True)
    monkeypatch.delenv("BERT_EXPLORER_PRECISION", raising=False)
    monkeypatch.setenv("BERT_EXPLORER_DEVICE", "cpu")
    assert pr.server_precision() == "bf16" and ready() is None
    monkeypatch.setenv("BERT_EXPLORER_PRECISION", "fp32")
    assert pr.server_precision() == "fp32" and ready() is None
    monkeypatch.setenv("BERT_EXPLORER_PRECISION", "<b>fast</b>")
    refused = ready()
    assert refused.startswith("the setting BERT_EXPLORER_PRECISION (<b>fast</b>): unknown precision")
    assert "auto, fp32, bf16" in refused
    cpu_bf16(False)
    monkeypatch.setenv("BERT_EXPLORER_PRECISION", "bf16")
    assert "no native bf16" in ready() and "fp32" in ready()
    with pytest.raises(TrainingError):
        pr.server_precision()


def test_bf16_autocast_runs_matmuls_in_bf16_and_fp32_changes_nothing():
    a = torch.randn(8, 16)
    with pr.autocast(CPU, "fp32"):
        assert (a @ a.T).dtype == torch.float32
    with pr.autocast(CPU, "bf16"):
        assert (a @ a.T).dtype == torch.bfloat16
        assert torch.nn.functional.cross_entropy((a @ a.T).float(), torch.zeros(8, dtype=torch.long)).dtype == (
            torch.float32
        )


def test_pretraining_from_random_weights_keeps_the_vocabularys_logits_in_fp32_under_bf16(tmp_path):
    from bert.model import BertForPreTraining
    from bert.train.pretrain import pretrain

    bundle = helpers.tiny_pretrain_bundle()
    list(pretrain(helpers.pretrain_args(tmp_path, steps=5, eval_every=5), bundle=bundle, corpus=helpers.tiny_corpus()))
    scratch = bundle.model.eval()  # as the trainer of a run from random weights left it
    built = BertForPreTraining(scratch.config).eval()  # a model built or loaded elsewhere: bf16 logits
    ids = torch.randint(5, scratch.config.vocab_size, (2, 12))
    with torch.no_grad():
        exact = scratch(ids).mlm_logits
        with pr.autocast(CPU, "bf16"):
            logits = scratch(ids).mlm_logits
            assert built(ids).mlm_logits.dtype == torch.bfloat16
    assert logits.dtype == torch.float32
    assert torch.allclose(logits, exact, atol=0.1)  # the encoder below still ran in bf16


def _run(precision: str, **kw):
    train, valid = stratified_split(synthetic(), 0.25, seed=0)
    args = FinetuneArgs(data="synthetic", precision=precision, **{**FAST_FINETUNE, **kw})
    return list(finetune(helpers.tiny_bundle(0, source="test"), train, valid, args))


def test_a_bf16_run_keeps_fp32_weights_and_says_it_ran_in_bf16(cpu_bf16):
    cpu_bf16(True)  # forced: the tiny model costs little even where bf16 is emulated
    events = _run("bf16")
    start, done = events[0], events[-1]
    assert isinstance(start, FinetuneStart) and start.precision == "bf16" and start.to_dict()["precision"] == "bf16"
    assert done.error is None and done.val_loss == pytest.approx(done.val_loss)  # scored, finite
    assert all(p.dtype == torch.float32 for p in done.bundle.model.parameters())
    assert "on cpu in bf16 (autocast, fp32 weights)" in done.bundle.card
    assert "in fp32" in _run("fp32", epochs=1, max_train=32)[-1].bundle.card


def test_a_bf16_run_whose_loss_is_not_finite_says_how_to_rerun_in_fp32(cpu_bf16):
    cpu_bf16(True)
    events = _run("bf16", lr=10.0, epochs=5, eval_every=50)
    err = next(e for e in events if e.event == "error")
    assert "too high" in err.message and "It ran in bf16" in err.message
    assert "BERT_EXPLORER_PRECISION=fp32" in err.message
    assert events[-1].bundle is not None and events[-1].error == err.message


def test_bf16_copies_made_once_give_what_autocast_casting_every_call_gives():
    from bert.train.finetune_classifier import build_classifier

    model = build_classifier(helpers.tiny_bundle(0, source="test"), ["neg", "pos"]).eval()
    model.bert.layers[0].requires_grad_(False)  # the lowest layer frozen
    frozen = pr.bf16_copies(model, frozen_only=True)
    assert frozen and all(k.startswith("bert.layers.0.") and v.dtype == torch.bfloat16 for k, v in frozen.items())
    every = pr.bf16_copies(model, frozen_only=False)
    assert set(frozen) < set(every) and "classifier.weight" in every
    ids = torch.randint(5, 20, (3, 9))
    with pr.autocast(CPU, "bf16"):
        cast_each_call = model(ids).logits
        for weights in (frozen, every):
            assert torch.equal(pr.call_with(model, weights, ids).logits, cast_each_call)
    assert all(p.dtype == torch.float32 for p in model.parameters())  # its own weights are back
    assert pr.call_with(model, {}, ids).logits.dtype == torch.float32


LOSS_BAND = 0.02  # per training step, on a cross-entropy that starts near ln 2 = 0.69 (measured gap: 0.001)
VAL_LOSS_BAND = 0.01  # per evaluation (measured gap: 0.0004)


@pytest.mark.slow
@pytest.mark.skipif(not pr.cpu_has_bf16(), reason="this CPU has no native bf16 (emulated, it would take many minutes)")
def test_a_smaller_quick_run_in_bf16_learns_what_it_learns_in_fp32():
    """The Fine-tuning page's Quick run (MiniLM, lowest 2 layers frozen, the page's evaluations) on 400
    Rotten Tomatoes reviews from one seed, in fp32 and in bf16: the same accuracy to 0.015 and the
    same loss curves to the bands above."""
    from app.run_session.run_size import PAGE_EVALS, VALID_FRACTION, page_finetune_args
    from app.training.data import split_data
    from bert import load
    from bert.data.datasets import load_dataset
    from bert.errors import BertExplorerError

    try:
        data = load_dataset("rotten_tomatoes")
    except BertExplorerError:
        pytest.skip("built-in data sets not fetched (python -m bert.data.datasets)")
    base = load("all-minilm-l6-v2")
    train, valid = split_data(data, None, VALID_FRACTION, 0, 400, 300)
    runs = {}
    for precision in ("fp32", "bf16"):
        args = page_finetune_args(
            base.name, len(train), data.source, "rt", PAGE_EVALS, 1, freeze_layers=2, seed=0, precision=precision
        )
        runs[precision] = list(finetune(base, train, valid, args))
    fp32, bf16 = runs["fp32"], runs["bf16"]
    assert fp32[0].precision == "fp32" and bf16[0].precision == "bf16"
    assert fp32[-1].error is None and bf16[-1].error is None
    assert fp32[-1].accuracy > 0.65  # it learned something, so the comparison means something
    assert abs(fp32[-1].accuracy - bf16[-1].accuracy) <= 0.015
    steps = [(a.loss, b.loss) for a, b in zip(fp32, bf16) if a.event == "train"]
    assert len(steps) == fp32[-1].steps and all(abs(a - b) <= LOSS_BAND for a, b in steps)
    evals = [(a.val_loss, b.val_loss) for a, b in zip(fp32, bf16) if a.event == "eval"]
    assert len(evals) >= PAGE_EVALS and all(abs(a - b) <= VAL_LOSS_BAND for a, b in evals)


def _pretrain_events(tmp_path, objective: str):
    from bert.train.pretrain import pretrain
    from tests.helpers import pretrain_args, tiny_corpus

    args = pretrain_args(tmp_path / objective, steps=4, log_every=2, eval_every=4, objective=objective)
    args.precision = "bf16"
    return list(pretrain(args, corpus=tiny_corpus()))


def _head_events(tmp_path, head: str):
    from bert.data.tagged import TaggedData
    from bert.train.tagger_task import TaggerTask
    from bert.train.task_head_args import TaskHeadArgs
    from bert.train.task_head_train import train_task_head

    sentences = [["good", "film"], ["bad", "plot"], ["the", "actor"], ["a", "story"]] * 8
    data = TaggedData(sentences, [[0, 1]] * len(sentences), ["O", "B-THING"], source="synthetic")
    args = TaskHeadArgs(threads=1, batch_size=8, epochs=1, evals=1, max_length=16, max_valid=8, precision="bf16")
    return list(train_task_head(helpers.tiny_bundle(), TaggerTask(data, data, args), args))


def _seq2seq_events(tmp_path, task: str):
    from bert.seq2seq.tasks import task_pairs
    from bert.train.seq2seq import Seq2SeqArgs, train_seq2seq

    args = Seq2SeqArgs(task=task, steps=4, eval_every=4, threads=1, train_pairs=64, valid_pairs=8, precision="bf16")
    return list(train_seq2seq(args, *task_pairs(task, args.train_pairs, args.valid_pairs)))


@pytest.mark.parametrize(
    "run, what",
    [
        (_pretrain_events, "mlm+nsp"),
        (_pretrain_events, "next-word"),
        (_head_events, "tagger"),
        (_seq2seq_events, "reverse"),
    ],
)
def test_every_trainer_runs_in_bf16_says_so_and_keeps_fp32_weights(run, what, tmp_path, cpu_bf16):
    cpu_bf16(True)  # forced: tiny models, cheap even where bf16 is emulated
    events = run(tmp_path, what)
    start = next(e for e in events if e.event == "start")
    assert start.precision == "bf16" and not any(e.event == "error" for e in events)
    done = events[-1]
    assert done.event == "done"
    model = done.bundle.model if getattr(done, "bundle", None) is not None else None
    if model is not None:
        assert all(p.dtype == torch.float32 and torch.isfinite(p).all() for p in model.parameters())


def test_a_pretrained_models_card_says_which_precision_it_trained_in():
    from app.jobs.records import pretrain_card
    from bert.train.events import PretrainDone
    from bert.train.pretrain_args import PretrainArgs

    done = PretrainDone(stopped=False, step=10)
    for precision in ("fp32", "bf16"):
        args = PretrainArgs(out="", init="scratch", steps=10, precision=precision)
        steps_line = next(line for line in pretrain_card("m", args, "wiki", done).splitlines() if "Steps" in line)
        assert steps_line.endswith(f", in {precision}.")
