"""Pre-training loop: learning happens, resume continues the same run, DDP with 2 processes."""

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch

import bert
from bert.train.events import PretrainDone, PretrainStep, Resumed
from bert.train.next_word import MLM_NSP, NEXT_WORD
from bert.train.pretrain import pretrain
from tests.helpers import pretrain_args, tiny_corpus, tiny_pretrain_bundle

ROOT = Path(__file__).resolve().parent.parent


def run(args, bundle=None, corpus=None, stop_at=None, resume=True):
    stop = threading.Event()
    events = []
    for m in pretrain(args, stop=stop, bundle=bundle, corpus=corpus, resume=resume):
        events.append(m)
        if stop_at is not None and isinstance(m, PretrainStep) and m.step >= stop_at:
            stop.set()
    return events


@pytest.mark.slow
def test_mlm_loss_falls_on_tiny_corpus(tmp_path):
    events = run(
        pretrain_args(tmp_path / "r", steps=150, eval_every=150), bundle=tiny_pretrain_bundle(), corpus=tiny_corpus()
    )
    train = [e for e in events if isinstance(e, PretrainStep)]
    assert train[0].step == 5 and train[-1].step == 150
    first, last = train[0].mlm_loss, train[-1].mlm_loss
    assert last < 0.8 * first, (first, last)
    done = events[-1]
    assert isinstance(done, PretrainDone) and not done.stopped
    assert done.mlm_top1 > done.baseline_top1
    again = bert.load(done.path)  # the final model is a loadable folder
    assert again.has_mlm


@pytest.mark.slow
def test_on_start_binds_a_trained_vocabulary_and_on_step_records(tmp_path):
    """From scratch with a vocabulary trained on the corpus: on_start hands over the bundle (and so
    the new tokenizer) before the first step, on_step sees step 0 and every update."""
    from bert.train.attention_snapshots import AttentionSnapshots

    rec = AttentionSnapshots.pending("the red cat sits on the blue dog .", every=5)
    started, steps = [], []

    def on_start(bundle):
        started.append(len(bundle.tokenizer))
        rec.bind(bundle.tokenizer)

    def on_step(step, model):
        steps.append(step)
        rec(step, model)

    args = pretrain_args(tmp_path / "r", steps=12, vocab="train:60", eval_every=12)
    list(pretrain(args, corpus=tiny_corpus(), on_start=on_start, on_step=on_step))
    assert len(started) == 1 and started[0] <= 60 and steps == list(range(13))
    assert "[UNK]" not in rec.tokens and rec.tokens[0] == "[CLS]"
    got, atts = rec.view()
    assert got == [0, 5, 10] and atts.shape[:3] == (3, args.layers, args.heads)


@pytest.mark.slow
def test_resume_after_stop_continues_the_same_run(tmp_path):
    straight = run(
        pretrain_args(tmp_path / "a", steps=20, save_every=5), bundle=tiny_pretrain_bundle(), corpus=tiny_corpus()
    )
    first = run(
        pretrain_args(tmp_path / "b", steps=20, save_every=5),
        bundle=tiny_pretrain_bundle(),
        corpus=tiny_corpus(),
        stop_at=10,
    )
    assert first[-1].stopped and first[-1].step == 10
    second = run(pretrain_args(tmp_path / "b", steps=20, save_every=5), corpus=tiny_corpus())
    assert second[0] == Resumed(step=10)
    assert second[-1].step == 20 and not second[-1].stopped
    a = bert.load(tmp_path / "a" / "final").model.state_dict()
    b = bert.load(tmp_path / "b" / "final").model.state_dict()
    for k in a:
        assert torch.allclose(a[k], b[k], atol=1e-5), k
    losses_a = [e.mlm_loss for e in straight if isinstance(e, PretrainStep) and e.step > 10]
    losses_b = [e.mlm_loss for e in second if isinstance(e, PretrainStep)]
    assert losses_a == pytest.approx(losses_b, abs=1e-4)


def test_nan_loss_stops_with_a_message(tmp_path):
    with pytest.raises(bert.TrainingError, match="learning rate"):
        run(pretrain_args(tmp_path / "n", lr=1e6, steps=40), bundle=tiny_pretrain_bundle(), corpus=tiny_corpus())


@pytest.mark.slow
def test_torchrun_two_processes(tmp_path):
    text = "\n\n".join(" ".join(doc) for doc in tiny_corpus(12).documents)
    (tmp_path / "corpus.txt").write_text(text)
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node=2",
        "--master_port=29517",
        "-m",
        "bert",
        "pretrain",
        "--out",
        str(tmp_path / "ddp"),
        "--init",
        "scratch",
        "--text-file",
        str(tmp_path / "corpus.txt"),
        "--layers",
        "1",
        "--hidden",
        "32",
        "--heads",
        "2",
        "--max-seq-length",
        "32",
        "--batch-size",
        "4",
        "--steps",
        "6",
        "--log-every",
        "2",
        "--eval-every",
        "6",
        "--eval-sequences",
        "8",
        "--valid-fraction",
        "0.2",
        "--threads",
        "1",
    ]
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = [json.loads(x) for x in proc.stdout.splitlines() if x.startswith("{")]
    start = next(x for x in lines if x["event"] == "start")
    assert start["world_size"] == 2
    assert lines[-1]["event"] == "done" and lines[-1]["step"] == 6
    assert sum(1 for x in lines if x["event"] == "start") == 1  # only rank 0 reports
    assert bert.load(tmp_path / "ddp" / "final").has_mlm


def test_freeze_word_embeddings_keeps_them_and_trains_the_rest(tmp_path):
    bundle = tiny_pretrain_bundle()
    words = bundle.model.bert.embeddings.word_embeddings.weight.detach().clone()
    layer = bundle.model.bert.layers[0].ffn_in.weight.detach().clone()
    events = run(
        pretrain_args(tmp_path / "f", steps=10, eval_every=10, freeze_word_embeddings=True),
        bundle=bundle,
        corpus=tiny_corpus(),
    )
    assert isinstance(events[-1], PretrainDone)
    again = bert.load(events[-1].path).model
    assert torch.equal(again.bert.embeddings.word_embeddings.weight, words)  # = the MLM decoder
    assert not torch.equal(again.bert.layers[0].ffn_in.weight, layer)


def test_snapshots_keep_the_model_every_n_steps(tmp_path):
    events = run(
        pretrain_args(tmp_path / "s", steps=9, eval_every=9, snapshot_every=4),
        bundle=tiny_pretrain_bundle(),
        corpus=tiny_corpus(),
    )
    snaps = sorted(p.name for p in (tmp_path / "s" / "snapshots").iterdir())
    assert snaps == ["step-000004", "step-000008"]
    a, b = (bert.load(tmp_path / "s" / "snapshots" / n).model for n in snaps)
    final = bert.load(events[-1].path).model
    w = lambda m: m.bert.layers[0].ffn_in.weight  # noqa: E731
    assert not torch.equal(w(a), w(b)) and not torch.equal(w(b), w(final))


def test_held_out_documents_do_not_follow_the_seed(tmp_path):
    """Another --seed changes data order and masking, never which documents are held out."""
    from bert.train.pretrain_setup import training_split

    corpus = tiny_corpus(n_docs=60)
    splits = [training_split(pretrain_args(tmp_path, seed=s), corpus) for s in (0, 1, 7)]
    held_out = [{tuple(d) for d in valid.documents} for _, valid in splits]
    assert held_out[0] == held_out[1] == held_out[2] and held_out[0]
    train_0 = {tuple(d) for d in splits[0][0].documents}
    assert not train_0 & held_out[0]


@pytest.mark.parametrize("objective", [MLM_NSP, NEXT_WORD])
def test_stop_as_a_scoring_begins_ends_the_run_without_scoring(tmp_path, objective):
    """A Stop pressed as step 10's scoring begins (and so before the end-of-run one): the run ends
    stopped at step 10 with no scoring at all, neither that one nor a last one (neither runs whole after
    a Stop, the next-word one least of all: full-vocabulary logits)."""
    from bert.train.events import PretrainEval

    stop = threading.Event()

    def on_step(step, model):
        if step == 10:
            stop.set()  # the step is done; its scoring is due next

    args = pretrain_args(tmp_path / "r", steps=20, eval_every=5, save_every=1000, objective=objective)
    events = list(pretrain(args, stop=stop, bundle=tiny_pretrain_bundle(), corpus=tiny_corpus(), on_step=on_step))
    assert [e.step for e in events if isinstance(e, PretrainEval)] == [5]
    done = events[-1]
    assert isinstance(done, PretrainDone) and done.stopped and done.step == 10
    assert done.mlm_loss is None, "no last scoring after a Stop"
