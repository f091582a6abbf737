"""Fine-tuning (bert/train/finetune.py) on a tiny model and a synthetic "good"/"bad" task."""

import json
import threading
from dataclasses import replace

import pytest
import torch

import bert
from bert import TrainingError
from bert.data.labelled import LabelledData, stratified_split
from bert.train.events import FinetuneDone, FinetuneEval, FinetuneStart, FinetuneStep
from bert.train.finetune import finetune
from bert.train.finetune_args import FinetuneArgs
from bert.train.finetune_classifier import build_classifier, freeze, frozen_bottom
from bert.train.finetune_eval import FrozenStates, evaluate_classifier, predict, tokenize_texts
from tests import helpers
from tests.helpers import FAST_FINETUNE, REVIEW_WORDS, TINY_SIZES, synthetic

WORDS = REVIEW_WORDS
FILLER = WORDS[7:]
TINY = dict(vocab_size=len(WORDS), **TINY_SIZES)
FAST = FAST_FINETUNE


def base_bundle(seed=0):
    return helpers.tiny_bundle(seed, source="test")


def run(base, train, valid, stop=None, **kw):
    return list(finetune(base, train, valid, FinetuneArgs(data="synthetic", **{**FAST, **kw}), stop))


@pytest.fixture(scope="module")
def split():
    return stratified_split(synthetic(), 0.25, seed=0)


def test_classifier_copies_the_encoder_and_leaves_the_base_alone():
    base = base_bundle()
    clf = build_classifier(base, ["neg", "pos"], "mean")
    for k, v in base.model.bert.state_dict().items():
        assert torch.equal(v, clf.bert.state_dict()[k])
        assert v.data_ptr() != clf.bert.state_dict()[k].data_ptr()  # a copy, not shared
    assert clf.config is not base.model.config and base.model.config.id2label == {}
    assert clf.config.labels == ["neg", "pos"] and clf.pooling == "mean"


@pytest.mark.slow
def test_validation_accuracy_rises_and_base_is_untouched(split):
    train, valid = split
    base = base_bundle()
    before = {k: v.clone() for k, v in base.model.state_dict().items()}
    events = run(base, train, valid, epochs=6, eval_every=10)
    kinds = [e.event for e in events]
    assert kinds[0] == "start" and kinds[-1] == "done" and "error" not in kinds
    evals = [e for e in events if isinstance(e, FinetuneEval)]
    assert len(evals) >= 4
    assert evals[0].accuracy < 0.75 and max(e.accuracy for e in evals) >= 0.85
    trains = [e for e in events if isinstance(e, FinetuneStep)]
    assert trains[-1].progress == 1.0 and trains[-1].examples_per_s > 0
    assert {"step", "loss", "lr", "examples_per_s", "progress", "eta_s"} <= set(trains[0].to_dict())
    assert trains[-1].loss_smooth < trains[0].loss_smooth
    done = events[-1]
    assert done.accuracy == max(e.accuracy for e in evals)  # the best one is kept
    clf = done.bundle
    assert clf.is_classifier and clf.labels == ["neg", "pos"]
    p = clf.classify(["the film was good really", "the film was bad really"])
    assert p.shape == (2, 2) and p[0, 1] > 0.5 > p[1, 1]
    assert "tiny" in clf.card and "Validation accuracy" in clf.card
    for k, v in base.model.state_dict().items():
        assert torch.equal(v, before[k]), k
    res = evaluate_classifier(clf, valid)
    assert abs(res["accuracy"] - done.accuracy) < 1e-6
    assert sum(map(sum, res["confusion"])) == len(valid)
    assert set(res["per_class"]) == {"neg", "pos"} and 0 <= res["per_class"]["pos"]["f1"] <= 1
    assert all(m["true"] != m["predicted"] for m in res["mistakes"])
    probs = [m["prob"] for m in res["mistakes"]]
    assert probs == sorted(probs, reverse=True)


@pytest.mark.slow
@pytest.mark.parametrize("pooling", ["cls", "max"])
def test_other_poolings_and_freezing_run(split, pooling):
    train, valid = split
    base = base_bundle()
    events = run(base, train, valid, pooling=pooling, freeze_embeddings=True, freeze_layers=1)
    done = events[-1]
    assert isinstance(done, FinetuneDone) and done.bundle.model.pooling == pooling
    start = events[0]
    assert start.trainable < start.parameters
    clf = done.bundle.model
    emb = base.model.bert.embeddings.word_embeddings.weight
    assert torch.equal(clf.bert.embeddings.word_embeddings.weight, emb)  # frozen: unchanged


def test_frozen_parameters_are_the_bases_tensors_and_no_run_writes_them(split):
    """A run keeps only what it trains: its frozen parameters are the base's own tensors. A second
    run from the kept model, training everything, changes neither the first's nor the base's."""
    train, valid = split
    base = base_bundle()
    before = {k: v.clone() for k, v in base.model.state_dict().items()}
    first = run(base, train, valid, epochs=1, freeze_embeddings=True, freeze_layers=1)[-1].bundle
    theirs = dict(base.model.bert.named_parameters())
    shared = {n for n, p in first.model.bert.named_parameters() if p.data_ptr() == theirs[n].data_ptr()}
    frozen = {n for n in theirs if n.startswith(("embeddings.", "layers.0."))}
    assert shared == frozen, shared ^ frozen
    kept = {k: v.clone() for k, v in first.model.state_dict().items()}
    second = run(first, train, valid, epochs=1, freeze_embeddings=False, lr=1e-2)[-1].bundle
    assert not torch.equal(
        second.model.bert.embeddings.word_embeddings.weight, kept["bert.embeddings.word_embeddings.weight"]
    )
    for k, v in first.model.state_dict().items():
        assert torch.equal(v, kept[k]), k
    for k, v in base.model.state_dict().items():
        assert torch.equal(v, before[k]), k


def test_stop_ends_promptly_and_keeps_the_model(split):
    train, valid = split
    stop = threading.Event()
    events = []
    for e in finetune(base_bundle(), train, valid, FinetuneArgs(data="s", epochs=50, **FAST), stop):
        events.append(e)
        if isinstance(e, FinetuneStep) and e.step == 3:
            stop.set()
    done = events[-1]
    assert isinstance(done, FinetuneDone) and done.stopped and done.step == 3
    assert done.bundle.classify(["good"]).shape == (1, 2)
    assert [e.event for e in events].count("eval") == 1  # scored once, at the stop


def test_stop_before_the_first_step():
    train, valid = stratified_split(synthetic(40), 0.25)
    stop = threading.Event()
    stop.set()
    events = list(finetune(base_bundle(), train, valid, FinetuneArgs(data="s", **FAST), stop))
    assert isinstance(events[-1], FinetuneDone) and events[-1].step == 0 and events[-1].stopped
    assert events[-1].bundle.is_classifier


def test_huge_learning_rate_stops_with_an_error_and_keeps_the_last_good_model(split):
    train, valid = split
    events = run(base_bundle(), train, valid, lr=10.0, epochs=5, eval_every=50)
    kinds = [e.event for e in events]
    assert "error" in kinds and kinds[-1] == "done"
    err = events[kinds.index("error")]
    assert "learning rate 10 is too high" in err.message and "diverged" in err.message
    done = events[-1]
    assert done.error == err.message and done.step < 5 * 19
    p = done.bundle.classify(["good film", "bad film"])
    assert torch.isfinite(p).all()
    assert all(torch.isfinite(v).all() for v in done.bundle.model.state_dict().values() if v.is_floating_point())


def test_bad_settings_are_refused(split):
    train, valid = split
    for kw, msg in [
        ({"pooling": "sum"}, "pooling"),
        ({"lr": float("nan")}, "learning rate"),
        ({"max_length": 1000}, "positions"),
        ({"freeze_layers": 9}, "freeze_layers"),
        ({"batch_size": 0}, "batch size"),
    ]:
        with pytest.raises(TrainingError, match=msg):
            run(base_bundle(), train, valid, **kw)
    other = LabelledData(texts=["a", "b"], labels=[0, 1], classes=["x", "y"])
    with pytest.raises(TrainingError, match="classes"):
        run(base_bundle(), train, other)


def test_threads_setting_is_restored(split):
    train, valid = stratified_split(synthetic(40), 0.25)
    before = torch.get_num_threads()
    run(base_bundle(), train, valid, threads=1)
    assert torch.get_num_threads() == before


@pytest.mark.slow
def test_cli_end_to_end(tmp_path, capsys):
    from bert.__main__ import main

    ckpt = tmp_path / "tiny-model"
    bert.save(base_bundle(), ckpt)
    data = synthetic(300, seed=1)
    lines = ["review;sentiment"] + [f"{t};{data.classes[y]}" for t, y in zip(data.texts, data.labels)]
    csv_path = tmp_path / "reviews.csv"
    csv_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "clf"
    rc = main(
        [
            "finetune",
            "--data",
            str(csv_path),
            "--checkpoint",
            str(ckpt),
            "--out",
            str(out),
            "--epochs",
            "3",
            "--max-length",
            "32",
            "--batch-size",
            "16",
            "--lr",
            "1e-3",
            "--eval-every",
            "20",
            "--threads",
            "1",
            "--no-freeze-embeddings",
        ]
    )
    assert rc == 0
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert all(p["event"] in ("eval", "done") for p in printed)
    assert sum(p["event"] == "eval" for p in printed) >= 3
    last = printed[-1]
    assert {"accuracy", "seconds", "examples_per_s"} <= set(last) and last["accuracy"] >= 0.8
    assert last["out"] == str(out)
    clf = bert.load(out)
    assert clf.is_classifier and clf.labels == ["neg", "pos"]
    p = clf.classify(["the film was good", "the film was bad"])
    assert p.shape == (2, 2) and torch.allclose(p.sum(-1), torch.ones(2)) and p[0, 1] > p[1, 1]
    assert "Validation accuracy" in clf.card


def test_cli_with_validation_file_and_bad_data(tmp_path, capsys):
    from bert.__main__ import main

    ckpt = tmp_path / "tiny-model"
    bert.save(base_bundle(), ckpt)
    data = synthetic(120, seed=2)
    rows = [{"text": t, "label": data.classes[y]} for t, y in zip(data.texts, data.labels)]
    (tmp_path / "train.jsonl").write_text("\n".join(json.dumps(r) for r in rows[:90]))
    (tmp_path / "valid.jsonl").write_text("\n".join(json.dumps(r) for r in rows[90:]))
    rc = main(
        [
            "finetune",
            "--data",
            str(tmp_path / "train.jsonl"),
            "--val-data",
            str(tmp_path / "valid.jsonl"),
            "--checkpoint",
            str(ckpt),
            "--out",
            str(tmp_path / "o"),
            "--threads",
            "1",
        ]
    )
    assert rc == 0
    last = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert last["event"] == "done" and last["valid_examples"] == 30 and last["train_examples"] == 90
    (tmp_path / "empty.csv").write_bytes(b"")
    rc = main(
        [
            "finetune",
            "--data",
            str(tmp_path / "empty.csv"),
            "--checkpoint",
            str(ckpt),
            "--out",
            str(tmp_path / "o2"),
            "--threads",
            "1",
        ]
    )
    assert rc == 2 and "empty" in capsys.readouterr().err
    assert not (tmp_path / "o2").exists()


def test_layer_decay_and_encoder_dropout(split):
    from bert.train.finetune_classifier import lr_scales

    train, valid = split
    events = run(base_bundle(), train, valid, layer_decay=0.5, encoder_dropout=0.0)
    assert isinstance(events[-1], FinetuneDone) and events[-1].bundle.config.hidden_dropout_prob == 0.0
    clf = build_classifier(base_bundle(), ["a", "b"])
    scales = lr_scales(clf, FinetuneArgs(data="x", layer_decay=0.5, head_lr_scale=10.0))
    assert scales == {"bert.embeddings.": 0.25, "bert.layers.0.": 0.5, "bert.layers.1.": 1.0, "classifier.": 10.0}


def test_on_step_sees_the_start_and_every_update_and_records_attention(split):
    """on_step(step, model) runs at step 0 (before any update) and after each optimizer step;
    an AttentionSnapshots recorder there keeps the probe's attention as it changes."""
    from bert.train.attention_snapshots import AttentionSnapshots

    base = base_bundle()
    seen = []
    rec = AttentionSnapshots.for_tokenizer(base.tokenizer, "the film was good", every=4)

    def on_step(step, model):
        seen.append((step, model.training))
        rec(step, model)

    train, valid = split
    events = list(
        finetune(base, train, valid, FinetuneArgs(data="synthetic", **{**FAST, "epochs": 1}), on_step=on_step)
    )
    total = next(e for e in events if isinstance(e, FinetuneStart)).steps
    assert [s for s, _ in seen] == list(range(total + 1))
    assert all(training for _, training in seen), "the recorder leaves the model in training mode"
    steps, atts = rec.view()
    assert steps == list(range(0, total + 1, 4)) and atts.shape[1:3] == (2, 4)
    change = rec.change_since_start(atts)
    assert change[0].max() == 0 and change[-1].mean() > 0  # the attention moved


def test_a_run_feeds_the_model_lengths_in_multiples_of_8_up_to_max_length(split):
    """Training and evaluation batches are padded to a multiple of 8 tokens (one bf16 kernel a
    shape on the CPU), never past max_length; rounding does not change what the model predicts."""
    from bert.train.batching import LENGTH_MULTIPLE
    from bert.train.finetune_eval import predict, tokenize_texts

    base = base_bundle()
    lengths = set()

    def on_step(step, model):
        if step == 0:
            model.bert.register_forward_pre_hook(lambda m, args: lengths.add(args[0].shape[1]))

    train, valid = split
    max_length = 14
    args = FinetuneArgs(data="synthetic", **{**FAST, "epochs": 1, "max_length": max_length})
    done = list(finetune(base, train, valid, args, on_step=on_step))[-1]
    texts = {len(s) for s in tokenize_texts(base.tokenizer, train.texts + valid.texts, max_length)}
    assert texts == set(range(7, 15)), texts  # the synthetic texts: 7 to 16 tokens, cut at 14
    assert LENGTH_MULTIPLE == 8 and lengths == {8, max_length}, lengths  # 7-8 -> 8, 9-14 -> 16 capped at 14
    model, pad = done.bundle.model, base.tokenizer.pad_id
    seqs = tokenize_texts(base.tokenizer, valid.texts, max_length)
    rounded, exact = predict(model, seqs, pad, max_length=max_length), predict(model, seqs, pad)
    torch.testing.assert_close(rounded, exact, rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_mid_run_evaluations_score_a_sample_and_the_kept_model_is_scored_on_all(split):
    """eval_sample: the curve's mid-run points score a fixed sample (their size in the event), the
    run's last evaluation scores every text, the best is chosen on the sample, and the result's
    accuracy is the kept model's on every validation text."""
    train, valid = split
    events = run(base_bundle(), train, valid, epochs=3, eval_every=3, eval_sample=30)
    evals = [e for e in events if isinstance(e, FinetuneEval)]
    assert len(evals) >= 8
    assert {e.texts for e in evals[:-1]} == {30} and evals[-1].texts is None
    assert "texts" not in evals[-1].to_dict() and evals[0].to_dict()["texts"] == 30
    done = events[-1]
    full = evaluate_classifier(done.bundle, valid)
    assert abs(full["accuracy"] - done.accuracy) < 1e-6
    best = max(evals[:-1], key=lambda e: e.accuracy)  # the sample's measure picks the step
    assert done.best_step in {best.step, evals[-1].step}
    same = run(base_bundle(), train, valid, epochs=3, eval_every=3, eval_sample=30)
    assert [e.accuracy for e in same if isinstance(e, FinetuneEval)] == [e.accuracy for e in evals]
    given = evaluate_classifier(done.bundle, valid, logits=done.valid_logits)  # the report reuses them
    assert done.valid_logits is not None and "valid_logits" not in done.to_dict()
    assert given["confusion"] == full["confusion"] and abs(given["accuracy"] - full["accuracy"]) < 1e-6
    with pytest.raises(TrainingError, match="eval_sample"):
        run(base_bundle(), train, valid, eval_sample=-1)


def test_the_frozen_bottom_is_the_embeddings_and_the_frozen_layers_below_the_last():
    model = build_classifier(base_bundle(), ["neg", "pos"])
    assert frozen_bottom(model) == 0  # everything trains
    freeze(model, embeddings=False, layers=1)
    assert frozen_bottom(model) == 1  # freezing a layer freezes the embeddings too
    freeze(model, embeddings=True, layers=2)
    assert frozen_bottom(model) == 1  # never the last layer: forward may run it at [CLS] only
    thawed = build_classifier(base_bundle(), ["neg", "pos"])
    freeze(thawed, embeddings=True, layers=0)
    assert frozen_bottom(thawed) == 0


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_kept_frozen_states_give_a_whole_passes_logits_bit_for_bit(split, pooling, precision):
    """An evaluation that reads the frozen bottom's kept states scores exactly as a whole pass, after
    the layers above have changed; it runs the embeddings only for texts it has not kept."""
    _, valid = split
    base = base_bundle()
    model = build_classifier(base, ["neg", "pos"], pooling)
    freeze(model, embeddings=True, layers=1)
    seqs = tokenize_texts(base.tokenizer, valid.texts, 14)
    pad = base.tokenizer.pad_id
    embedded = []
    model.bert.embeddings.register_forward_hook(lambda m, args, out: embedded.append(args[0].shape[0]))
    frozen = FrozenStates(1)
    for trained in range(3):
        embedded.clear()
        kept = predict(model, seqs, pad, batch_size=32, precision=precision, max_length=14, frozen=frozen)
        assert embedded == ([] if trained else [32, 32, 32, 4]), embedded
        whole = predict(model, seqs, pad, batch_size=32, precision=precision, max_length=14)
        assert torch.equal(kept, whole)
        with torch.no_grad():  # a training step's change to the layer above
            model.bert.layers[1].ffn_out.weight.add_(0.05 * torch.randn_like(model.bert.layers[1].ffn_out.weight))
            model.classifier.bias.add_(0.1)
    other = seqs[::-1]  # other texts in the same batches: their states are computed, not read
    assert torch.equal(predict(model, other, pad, 32, frozen=frozen), predict(model, other, pad, 32))


@pytest.mark.slow
def test_mid_run_evaluations_run_the_frozen_bottom_of_their_sample_once(split):
    train, valid = split
    calls = []

    def on_step(step, model):
        if step == 0:
            model.bert.embeddings.register_forward_hook(lambda m, args, out: calls.append(m.training))

    args = FinetuneArgs(data="synthetic", **{**FAST, "epochs": 3, "eval_every": 3, "eval_sample": 30})
    events = list(finetune(base_bundle(), train, valid, replace(args, freeze_layers=1), on_step=on_step))
    sample_evals = sum(1 for e in events if isinstance(e, FinetuneEval) and e.texts == 30)
    whole_batches = -(-len(valid) // 64)  # the last evaluation's, and maybe a rescoring of the best
    assert sample_evals >= 8 and calls.count(False) <= 1 + 2 * whole_batches < sample_evals


@pytest.mark.slow
def test_runs_in_parallel_threads_give_what_each_gives_alone(split):
    """Dropout draws from a generator of the run's own thread: two runs at once (the app's jobs)
    give the same losses and accuracies as each alone."""
    train, valid = split

    def losses(events):
        return [e.loss for e in events if isinstance(e, FinetuneStep)], events[-1].accuracy

    # threads=None: neither run sets torch's (process-wide) thread count, which would change the
    # other's float sums when it restores its own at the end
    kw = dict(epochs=2, eval_every=10, encoder_dropout=0.1, dropout=0.3, threads=None)
    alone = [losses(run(base_bundle(), train, valid, seed=s, **kw)) for s in (0, 1)]
    together, bases = [None, None], [base_bundle(), base_bundle()]  # built here: they draw their weights

    def job(i):
        together[i] = losses(run(bases[i], train, valid, seed=i, **kw))

    threads = [threading.Thread(target=job, args=(i,)) for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert together == alone and alone[0] != alone[1]
