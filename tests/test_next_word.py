"""The next-word objective (bert/train/next_word.py) and continuing a text (bert/analysis/generate.py):
the loss is the causal LM loss, a model trained on a repeating text predicts its next token, greedy
is deterministic, sampling reproducible with a seed and inside its top-k, bad settings refused."""

import random
import threading

import pytest
import torch
import torch.nn.functional as F

from bert.analysis.generate import MAX_NEW, TOP, continue_text, next_distribution
from bert.data.corpus.base import Corpus
from bert.errors import InputError, TrainingError
from bert.train.events import PretrainDone, PretrainEval, PretrainStart, PretrainStep
from bert.train.examples import collate
from bert.train.next_word import (
    NextWordDataset,
    next_word_batch,
    next_word_forward,
    next_word_labels,
    next_word_probe,
    stream_windows,
)
from bert.train.pretrain import pretrain
from tests.helpers import pretrain_args, tiny_pretrain_bundle

CYCLE = "red green blue cat dog bird runs sits sleeps".split()  # each word has one next word


def cycle_corpus(docs: int = 12) -> Corpus:
    """Documents of the CYCLE repeated: after each word comes always the same word."""
    return Corpus(name="cycle", documents=[[" ".join(CYCLE * 3) + " ."] for _ in range(docs)])


def test_labels_are_the_next_tokens_and_ignore_padding():
    ids = torch.tensor([[2, 10, 11, 12], [2, 13, 0, 0]])
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]])
    assert next_word_labels(ids, mask).tolist() == [[10, 11, 12, -100], [13, -100, -100, -100]]


def test_windows_join_the_documents_and_start_with_cls():
    docs = [[[5, 6], [7]], [[8, 9, 10]]]
    ex = stream_windows(docs, 4, cls_id=2, sep_id=3, rng=random.Random(0))
    assert all(e.input_ids[0] == 2 and len(e.input_ids) <= 4 for e in ex)
    joined = sorted(t for e in ex for t in e.input_ids[1:])
    assert joined == sorted([5, 6, 7, 3, 8, 9, 10, 3])  # every token once, each document ended by [SEP]


def test_the_loss_is_the_causal_lm_loss_by_hand():
    """The training forward's loss equals cross-entropy of the full causal pass's logits at t
    against the token at t+1, padding left out."""
    b = tiny_pretrain_bundle()
    model = b.model.eval()
    ds = NextWordDataset([[[5, 6, 7, 8, 9], [10, 11]], [[12, 13, 14]]], cls_id=2, sep_id=3, max_seq_length=6)
    batch = next_word_batch(collate(ds.examples(0), pad_id=0))
    assert (batch["attention_mask"] == 0).any()  # the test covers padding
    res = next_word_forward(model, batch)
    logits = model(batch["input_ids"], mask_kind="causal").mlm_logits  # (B, T, V)
    ids, mask = batch["input_ids"], batch["attention_mask"]
    total, count = 0.0, 0
    for i in range(ids.shape[0]):
        for t in range(ids.shape[1] - 1):
            if mask[i, t + 1]:
                total += F.cross_entropy(logits[i, t][None], ids[i, t + 1][None]).item()
                count += 1
    assert res.loss.item() == pytest.approx(total / count, rel=1e-4)
    assert res.nsp_loss is None


def test_causal_means_the_future_does_not_change_the_prediction():
    model = tiny_pretrain_bundle().model.eval()
    a = torch.tensor([[2, 5, 6, 7, 8]])
    b = torch.tensor([[2, 5, 6, 9, 10]])
    la = model(a, mask_kind="causal").mlm_logits[0, :3]
    lb = model(b, mask_kind="causal").mlm_logits[0, :3]
    assert torch.allclose(la, lb, atol=1e-5)


def train_cycle(tmp_path, steps=300):
    events = list(
        pretrain(
            pretrain_args(
                tmp_path / "r", objective="next-word", steps=steps, eval_every=100, probe="red green [MASK]", lr=3e-3
            ),
            stop=threading.Event(),
            bundle=tiny_pretrain_bundle(),
            corpus=cycle_corpus(),
        )
    )
    return events


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    return train_cycle(tmp_path_factory.mktemp("nw"))


def test_a_few_hundred_steps_on_a_repeating_text_predict_the_next_token(trained):
    start = next(e for e in trained if isinstance(e, PretrainStart))
    assert start.objective == "next-word"
    steps = [e for e in trained if isinstance(e, PretrainStep)]
    assert all(s.nsp_loss is None and s.nsp_acc is None for s in steps)
    assert steps[-1].mlm_loss < 0.3 * steps[0].mlm_loss
    done = trained[-1]
    assert isinstance(done, PretrainDone) and done.nsp_acc is None
    assert done.mlm_top1 > 0.9 and done.mlm_top1 > 2 * done.baseline_top1
    probe = [e for e in trained if isinstance(e, PretrainEval)][-1].probe
    assert probe and probe[-1][0][0] == "blue"  # after "red green" comes "blue"
    bundle = done.bundle if done.bundle is not None else __import__("bert").load(done.path)
    cont = continue_text(bundle, "red green", n=5)
    assert [s.token for s in cont.steps] == ["blue", "cat", "dog", "bird", "runs"]


def test_next_word_probe_is_the_text_before_the_mask():
    assert next_word_probe("the capital of france is [MASK] .") == "the capital of france is"
    assert next_word_probe("[MASK] starts it") == "a piece of"


def test_an_unknown_objective_is_refused(tmp_path):
    with pytest.raises(TrainingError, match="objective"):
        list(pretrain(pretrain_args(tmp_path / "r", objective="both"), bundle=tiny_pretrain_bundle()))


# ---- continuing a text ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bundle():
    return tiny_pretrain_bundle()


def test_greedy_is_deterministic_and_takes_the_likeliest(bundle):
    a = continue_text(bundle, "the red cat", n=6)
    b = continue_text(bundle, "the red cat", n=6)
    assert [s.token_id for s in a.steps] == [s.token_id for s in b.steps]
    for s in a.steps:
        assert s.top[0][0] == s.token and len(s.top) == TOP
        assert s.prob == pytest.approx(s.top[0][1])
        assert all(p1 >= p2 for (_, p1), (_, p2) in zip(s.top, s.top[1:]))
    assert a.prompt[0] == "[CLS]" and a.prompt[1:] == ["the", "red", "cat"]


def test_sampling_with_a_seed_is_reproducible_and_seeds_differ(bundle):
    kw = dict(n=12, greedy=False, temperature=2.0)
    one = [s.token_id for s in continue_text(bundle, "the dog", seed=3, **kw).steps]
    again = [s.token_id for s in continue_text(bundle, "the dog", seed=3, **kw).steps]
    others = {tuple(s.token_id for s in continue_text(bundle, "the dog", seed=k, **kw).steps) for k in range(4, 9)}
    assert one == again
    assert len(others | {tuple(one)}) > 1


def test_sampling_stays_in_the_top_k(bundle):
    for seed in range(5):
        for s in continue_text(bundle, "a big bird", n=8, greedy=False, temperature=5.0, top_k=3, seed=seed).steps:
            allowed = [t for t, p in s.top if p > 0]
            assert len(allowed) <= 3 and s.token in allowed


def test_probabilities_sum_to_one_and_zero_outside_top_k():
    logits = torch.randn(50)
    for temperature, k in ((1.0, None), (0.3, None), (2.0, 7), (1.0, 1)):
        p = next_distribution(logits, temperature, k)
        assert p.sum().item() == pytest.approx(1.0, abs=1e-5)
        if k is not None:
            assert int((p > 0).sum()) == k
            assert set(p.nonzero().flatten().tolist()) == set(logits.topk(k).indices.tolist())


def test_attention_is_the_causal_row_of_the_position_that_chose_it(bundle):
    cont = continue_text(bundle, "the cat sits", n=3)
    L, H = bundle.config.num_hidden_layers, bundle.config.num_attention_heads
    for i, s in enumerate(cont.steps):
        assert s.attention.shape == (L, H, len(cont.prompt) + i)
        assert torch.allclose(s.attention.sum(-1), torch.ones(L, H), atol=1e-4)


def test_specials_are_never_written(bundle):
    tok = bundle.tokenizer
    for seed in range(3):
        ids = [s.token_id for s in continue_text(bundle, "the", n=20, greedy=False, temperature=50.0, seed=seed).steps]
        assert not {tok.pad_id, tok.cls_id, tok.mask_id} & set(ids)


@pytest.mark.parametrize(
    "text, kw, match",
    [
        ("", {}, "type some text"),
        ("   \n", {}, "type some text"),
        ("the cat", dict(greedy=False, temperature=0.0), "temperature must be above 0"),
        ("the cat", dict(greedy=False, temperature=-1.0), "temperature must be above 0"),
        ("the cat", dict(greedy=False, temperature=float("nan")), "temperature must be above 0"),
        ("the cat", dict(greedy=False, top_k=0), "top-k must be 1 or more"),
        ("the cat", dict(n=0), "from 1 to"),
        ("the cat", dict(n=MAX_NEW + 1), "from 1 to"),
    ],
)
def test_bad_input_is_refused_with_a_message(bundle, text, kw, match):
    with pytest.raises(InputError, match=match):
        continue_text(bundle, text, **kw)


def test_a_too_long_prompt_keeps_its_last_tokens_and_says_how_many_were_cut(bundle):
    words = " ".join(["the cat sits"] * 40) + " red"  # 121 tokens; the tiny model reads 64
    cont = continue_text(bundle, words, n=10)
    room = bundle.config.max_tokens
    assert cont.cut == 121 - (room - 1 - 10)
    assert len(cont.prompt) + len(cont.steps) <= room
    assert cont.prompt[-1] == "red"


def test_evaluation_reads_no_more_sequences_at_once_than_a_training_step(tmp_path):
    """Next-word evaluation builds logits over the vocabulary at every position: its batches are the
    training batch's size (the review: 32 x 512 positions at batch 1, +6,556 MB)."""
    from bert.train import next_word

    sizes = []
    real = next_word.evaluate

    def recording(model, batches, baseline_id=None, **kw):
        sizes.extend(len(b["input_ids"]) for b in batches)
        return real(model, batches, baseline_id, **kw)

    args = pretrain_args(tmp_path / "r", objective="next-word", steps=4, eval_every=2, batch_size=2, eval_sequences=8)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(next_word, "evaluate", recording)
        events = list(pretrain(args, stop=threading.Event(), bundle=tiny_pretrain_bundle(), corpus=cycle_corpus(100)))
    assert isinstance(events[-1], PretrainDone) and sizes[:4] == [2, 2, 2, 2] and max(sizes) == 2, sizes
