"""The toy tasks' pairs, the checks on uploaded pairs, and training: a tiny encoder-decoder learns
the reversal, as the trainer and as the app's job (app.jobs.worker.run_job of a SEQ2SEQ spec)."""

import threading

import pytest
import torch

from app.jobs.seq2seq_job import seq2seq_spec
from bert.config import BertConfig
from bert.errors import DataError
from bert.seq2seq.tasks import CODE, MAX_WORDS, TASKS, WORDS, read_pairs_csv, split_pairs, task_pairs
from bert.train.seq2seq import Seq2SeqArgs, Seq2SeqDone, Seq2SeqEval, Seq2SeqStart, train_seq2seq
from tests.helpers import run_fn, tiny_bundle


@pytest.mark.parametrize("task", list(TASKS))
def test_a_task_makes_distinct_held_out_sources_and_right_targets(task):
    train, valid = task_pairs(task, 300, 50, seed=3)
    assert (len(train), len(valid)) == (300, 50)
    assert not set(train.sources) & set(valid.sources)
    for s, t in zip(train.sources + valid.sources, train.targets + valid.targets):
        ws = s.split()
        assert 3 <= len(ws) <= 8 and set(ws) <= set(WORDS)
        want = {"reverse": ws[::-1], "sort": sorted(ws), "cipher": [CODE[w] for w in ws]}[task]
        assert t.split() == want
    assert task_pairs(task, 300, 50, seed=3)[0].sources == train.sources  # deterministic


def test_uploaded_pairs_are_read_and_split_by_source():
    data = b"source,target\n" + b"".join(f"a{i} b,b a{i}\n".encode() for i in range(20)) + b"a0 b,b a0\n"
    pairs = read_pairs_csv(data, "p.csv")
    assert len(pairs) == 21 and pairs.sources[0] == "a0 b" and pairs.targets[0] == "b a0"
    train, valid = split_pairs(pairs, 0.2, seed=0)
    assert len(train) + len(valid) == 21 and not set(train.sources) & set(valid.sources)


@pytest.mark.parametrize(
    "data, said",
    [
        (b"a b,b a\n" * 11 + b"c d, \n", "row 12 of p.csv has an empty target"),
        (b"a b,b a\n" * 11 + b",x\n", "empty source"),
        (b"a b,b a\n" + ("w " * 10_000).encode() + b",x\n", f"10,000 words: at most {MAX_WORDS}"),
        (b"a b,b a\n", "1 pair: at least 10"),
        (b"a b,b a,c\n" * 12, "3 columns"),
        (b"\xff\xfe\x00", "not UTF-8"),
    ],
)
def test_bad_pairs_say_why(data, said):
    with pytest.raises(DataError, match=said):
        read_pairs_csv(data, "p.csv")


def test_a_tiny_encoder_decoder_learns_the_reversal():
    """A few hundred steps on one thread: held-out exact match well above chance (which is 0)."""
    args = Seq2SeqArgs(task="reverse", steps=400, eval_every=100, threads=1, train_pairs=2000, valid_pairs=100)
    train, valid = task_pairs(args.task, args.train_pairs, args.valid_pairs)
    events = list(train_seq2seq(args, train, valid))
    evals = [e for e in events if isinstance(e, Seq2SeqEval)]
    done = events[-1]
    assert isinstance(done, Seq2SeqDone) and done.bundle is not None
    assert evals[-1].exact_match >= 0.8, [e.exact_match for e in evals]
    assert done.exact_match == max(e.exact_match for e in evals)  # the best model is kept
    src, tgt = valid.sources[0], valid.targets[0]
    assert done.bundle.generate([src]) == [tgt] or evals[-1].exact_match < 1.0
    tr = done.bundle.trace(src)
    T, S = len(tr.outputs), len(tr.source)
    assert tr.cross.shape[2:] == (T, S) and tr.selfs.shape[2:] == (T, T)
    assert float(torch.triu(tr.selfs, 1).abs().max()) == 0.0  # causal: no step sees a later one
    assert tr.unknown == []
    assert done.bundle.trace(f"{src} Zebra ! zebra").unknown == ["Zebra", "!", "zebra"]  # each once, in order


def test_the_job_trains_from_a_session_encoder_and_leaves_it_untouched():
    """The app's job on a pre-made encoder (copied, never changed), its decoder started from it."""
    base = tiny_bundle(words=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS])
    before = {k: v.clone() for k, v in base.model.state_dict().items()}
    args = Seq2SeqArgs(encoder="session:tiny", steps=30, eval_every=10, train_pairs=200, valid_pairs=20)
    spec = seq2seq_spec("", args, None, title="t")
    from app.jobs.worker import run_job

    stop = threading.Event()
    events = run_fn(lambda s: run_job(spec, s, base=base), stop)
    start = next(e for e in events if isinstance(e, Seq2SeqStart))
    assert any("copied from the encoder" in m for m in start.made)
    assert isinstance(events[-1], Seq2SeqDone) and events[-1].step == 30
    for k, v in base.model.state_dict().items():
        torch.testing.assert_close(v, before[k])


def test_held_out_scoring_runs_in_training_batches_without_a_graph_and_stops_between_them(monkeypatch):
    """Scoring decodes the held-out pairs a training batch at a time under inference mode; a Stop
    during a scoring ends it at the next batch, and the run ends without another (nan: unscored)."""
    from bert.train import seq2seq as s2s

    stop, sizes, modes = threading.Event(), [], []
    real = s2s.greedy

    def recording(model, ids, mask, n):
        if not modes:
            model.decoder.register_forward_hook(lambda *_: modes.append(torch.is_inference_mode_enabled()))
        sizes.append(ids.shape[0])
        stop.set()  # a Stop pressed while the first batch decodes
        return real(model, ids, mask, n)

    monkeypatch.setattr(s2s, "greedy", recording)
    args = Seq2SeqArgs(task="reverse", steps=6, eval_every=2, batch_size=3, threads=1, train_pairs=60, valid_pairs=20)
    events = list(train_seq2seq(args, *task_pairs(args.task, 60, 20), stop=stop))
    done = events[-1]
    assert isinstance(done, Seq2SeqDone) and done.stopped and done.step == 2
    assert sizes[0] == 3 and max(sizes) == 3, sizes  # never all 20 at once
    assert len(sizes) == 1, "the stopped scoring ended after its first batch, and no other ran"
    assert done.exact_match != done.exact_match and "not measured" in done.bundle.card
    assert modes and all(modes), "no graph kept while decoding"


def test_the_decoder_estimate_counts_the_model_the_scoring_and_the_pairs():
    """The Decoder on top's budget: the encoder-decoder's numbers exactly as the model built holds
    them, and an estimate that grows with the pairs held (held-out ones too), the decoder's
    layers, a step's tokens, and falls when the encoder is frozen."""
    from app.jobs.budget import seq2seq_mb, seq2seq_parameters
    from bert.model import BertForPreTraining
    from bert.seq2seq.model import build_encoder_decoder

    base = tiny_bundle(words=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS])
    for layers in (1, 3):
        model, _ = build_encoder_decoder(BertForPreTraining(base.config), 2, 3, 0, layers)
        held = sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())
        assert seq2seq_parameters(base.config, layers) == held
    cfg = BertConfig(
        vocab_size=30522, hidden_size=384, num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536
    )
    one = seq2seq_mb(cfg, 2, 2, 500, 500)
    assert seq2seq_mb(cfg, 2, 2, 500, 500, pair_tokens=10_000_000) > one + 300  # ten million ids: 400 MB
    assert seq2seq_mb(cfg, 6, 2, 500, 500) > one > seq2seq_mb(cfg, 2, 2, 500, 500, freeze_encoder=True)
    # measured (python -m benchmarks.memory_estimate: VmHWM, 7 steps and a scoring, 2 decoder layers):
    # 1,612 MB at 16 pairs of 64 + 64 tokens, 1,536 MB at 4 of 200 + 200; the estimate within 0.8-1.2x
    for batch, side, measured in ((16, 64, 1612), (4, 200, 1536)):
        assert 0.8 * measured <= seq2seq_mb(cfg, 2, batch, side, side, pair_tokens=50_000) <= 1.2 * measured
    assert one > 1024, "the review's long pairs on all-MiniLM-L6-v2 are past the default cap"
    assert seq2seq_mb(cfg, 2, 16, 40, 40, freeze_encoder=True) < 1024, "short pairs on its frozen encoder fit"


def test_the_job_refuses_a_run_past_the_servers_memory_before_building_a_model(monkeypatch):
    """The job itself checks the budget (a spec that reached a worker without the page's check):
    LimitError naming the estimate, before any model is built or any step runs."""
    from app.jobs import seq2seq_job
    from app.jobs.budget import LimitError
    from app.jobs.worker import run_job

    built = []
    monkeypatch.setattr(seq2seq_job, "train_seq2seq", lambda *a, **k: built.append(a) or iter(()))
    monkeypatch.setenv("BERT_EXPLORER_MAX_JOB_MB", "10")
    spec = seq2seq_spec("", Seq2SeqArgs(steps=5, train_pairs=50, valid_pairs=10), None, title="t")
    with pytest.raises(LimitError, match=r"this job would take about [\d,]+ MB of memory"):
        list(run_job(spec, threading.Event()))
    assert not built
    monkeypatch.setenv("BERT_EXPLORER_MAX_JOB_MB", "1024")
    list(run_job(spec, threading.Event()))
    assert built, "within the cap it trains"
