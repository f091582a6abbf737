"""The dictionary of features (bert/analysis/dictionary*.py) on planted data and the tiny test model:
the published TopK formula, recovery of planted directions, the part-way run against the model's
own forward, splicing, the control, and bad requests refused with why."""

from __future__ import annotations

import threading

import pytest
import torch

import bert
from bert.analysis.cloze import ClozeItem
from bert.analysis.dictionary import Dictionary, SparseDictionary
from bert.analysis.dictionary_features import CardSize, encode_all, feature_card, text_features
from bert.analysis.dictionary_quality import cloze_splice, dictionary_quality, splice_cost
from bert.analysis.dictionary_steering import steer, steered_state
from bert.analysis.dictionary_training import DictionaryDone, fit_dictionary, random_control, train_dictionary
from bert.analysis.dictionary_vectors import CORPORA, corpus_texts, gather_activations
from bert.errors import InputError
from bert.task_models import BertForSequenceClassification
from tests.helpers import REVIEW_WORDS, tiny_bundle, tiny_config

TEXTS = [
    "the film was good",
    "a very bad plot and it really was",
    "the actor was quite good and the story",
    "it was a bad movie",
    "really good",
    "the plot was very bad",
]


def _planted(C=32, K=12, N=4096, seed=1):
    """N vectors, each an offset plus 2 of K unit directions with weights in [1, 3]."""
    g = torch.Generator().manual_seed(seed)
    dirs = torch.randn(K, C, generator=g)
    dirs /= dirs.norm(dim=1, keepdim=True)
    which = torch.stack([torch.randperm(K, generator=g)[:2] for _ in range(N)])  # (N, 2)
    weights = torch.rand(N, 2, generator=g) * 2 + 1
    x = 0.5 + (weights[:, :, None] * dirs[which]).sum(1)  # (N, C)
    return dirs, x


def _fit(x, *args, **kw):
    events = list(fit_dictionary(x, *args, **kw))
    assert isinstance(events[-1], SparseDictionary)
    return events[:-1], events[-1]


def test_forward_is_the_published_topk_formula():
    torch.manual_seed(0)
    sae = SparseDictionary(8, 20, 3, seed=4)
    with torch.no_grad():
        sae.b_enc.normal_()
        sae.b_dec.normal_()
    x = torch.randn(5, 8)
    z = (x - sae.b_dec) @ sae.W_enc.T + sae.b_enc  # written from the formula, not the module
    keep = z >= z.topk(3, dim=1).values[:, -1:]
    f = torch.where(keep, z.clamp_min(0), torch.zeros(()))
    x_hat, got = sae(x)
    torch.testing.assert_close(got, f)
    torch.testing.assert_close(x_hat, sae.b_dec + f @ sae.W_dec.T)
    assert int((got > 0).sum(1).max()) <= 3


def test_a_dictionary_recovers_planted_directions():
    dirs, x = _planted()
    steps, sae = _fit(x, 16, 2, 150, seed=0, batch=256, lr=1e-2, log_every=50)
    cos = dirs @ sae.W_dec  # (K, F): the decoder's columns are unit norm
    torch.testing.assert_close(sae.W_dec.norm(dim=0), torch.ones(16))
    assert cos.max(1).values.min() >= 0.9
    assert steps[-1].variance_explained > 0.95 and steps[-1].l0 <= 2
    assert [s.step for s in steps] == [50, 100, 150]


def test_stop_ends_training_early():
    _, x = _planted(N=512)
    stop = threading.Event()
    stop.set()
    steps, sae = _fit(x, 16, 2, 50, stop=stop)
    assert steps == [] and isinstance(sae, SparseDictionary)


def test_gathered_vectors_are_the_models_hidden_states():
    b = tiny_bundle()
    acts = gather_activations(b, 1, TEXTS, max_tokens=10_000, batch=2)
    rows = 0
    for s, text in enumerate(TEXTS):
        enc = b.tokenizer.encode(text)
        with torch.inference_mode():
            h = b.model.bert(torch.tensor([enc.ids]), output_hidden_states=True).hidden_states[1][0]
        words = list(range(1, len(enc.ids) - 1))  # [CLS] and [SEP] left out
        got = acts.vectors[rows : rows + len(words)]
        torch.testing.assert_close(got, h[words], atol=1e-5, rtol=1e-5)
        assert (acts.text_index[rows : rows + len(words)] == s).all()
        rows += len(words)
    assert rows == len(acts.vectors) and not acts.capped


def test_the_token_cap_stops_reading_and_says_so():
    acts = gather_activations(tiny_bundle(), 1, TEXTS, max_tokens=8)
    assert acts.capped and acts.texts_read < len(TEXTS) and len(acts.vectors) <= 8


def _perfect(b, layer=1) -> Dictionary:
    """A dictionary that reconstructs every vector exactly: features +e_i and -e_i, k = C."""
    C = b.config.hidden_size
    sae = SparseDictionary(C, 2 * C, C)
    eye = torch.eye(C)
    with torch.no_grad():
        sae.W_dec.copy_(torch.cat([eye, -eye], 1))
        sae.W_enc.copy_(torch.cat([eye, -eye], 0))
    return Dictionary(sae, b.name, layer, 2 * C, C, 0, 0, 0, 0, 0.0)


def test_a_perfect_reconstruction_splices_without_changing_a_guess():
    b = tiny_bundle()
    d = _perfect(b)
    s = splice_cost(b, d, TEXTS * 3)
    assert s.agreement == 1.0 and (s.top1, s.top5) == (s.spliced_top1, s.spliced_top5)
    items = [ClozeItem("sense", "the film was [MASK]", ("good", "bad")), ClozeItem("sense", "a [MASK] plot", ("bad",))]
    c = cloze_splice(b, d, items)
    assert c.masked == 2 and c.agreement == 1.0 and (c.top1, c.top5) == (c.spliced_top1, c.spliced_top5)
    with torch.no_grad():
        d.sae.W_dec.zero_()  # now every word piece's vector is replaced by b_dec = 0
    assert splice_cost(b, d, TEXTS * 3).agreement < 1.0


def test_quality_of_a_trained_dictionary_on_held_out_text():
    b = tiny_bundle()
    events = list(train_dictionary(b, 2, TEXTS * 4, 64, 8, 40, log_every=20))
    done = events[-1]
    assert isinstance(done, DictionaryDone) and not done.stopped
    assert [e.step for e in events[:-1]] == [20, 40]
    held = gather_activations(b, 2, TEXTS)
    q = dictionary_quality(b, done.dictionary, held, TEXTS)
    assert 0.5 < q.variance_explained <= 1.0 and q.l0 <= 8 and 0 <= q.dead < 64
    assert q.splice.masked >= len(TEXTS)
    assert all(type(v) is float for v in (q.splice.top1, q.splice.spliced_top5, q.cloze.top1, q.cloze.agreement))


def test_the_control_has_the_shape_and_not_the_weights():
    b = tiny_bundle()
    c = random_control(b, seed=3)
    assert c.config == b.config and c.tokenizer is b.tokenizer and "random" in c.name
    mine, theirs = dict(b.model.named_parameters()), dict(c.model.named_parameters())
    assert mine.keys() == theirs.keys()
    assert not torch.equal(mine["bert.layers.0.ffn_in.weight"], theirs["bert.layers.0.ffn_in.weight"])
    again = random_control(b, seed=3)
    assert torch.equal(
        theirs["bert.layers.0.ffn_in.weight"], dict(again.model.named_parameters())["bert.layers.0.ffn_in.weight"]
    )


def test_bad_requests_are_refused_with_why(monkeypatch):
    b = tiny_bundle()
    with pytest.raises(InputError, match="layer must be one of 1..2"):
        gather_activations(b, 3, TEXTS)
    with pytest.raises(InputError, match="no text"):
        gather_activations(b, 1, [])
    with pytest.raises(InputError, match="no word pieces"):
        gather_activations(b, 1, ["   "])
    monkeypatch.setenv("BERT_EXPLORER_DICT_MAX_FEATURES", "100")
    with pytest.raises(InputError, match="BERT_EXPLORER_DICT_MAX_FEATURES"):
        next(train_dictionary(b, 1, TEXTS, 101, 4, 10))
    monkeypatch.setenv("BERT_EXPLORER_DICT_MAX_TEXTS", "5")
    with pytest.raises(InputError, match="BERT_EXPLORER_DICT_MAX_TEXTS"):
        next(train_dictionary(b, 1, TEXTS, 32, 4, 10))
    with pytest.raises(InputError, match="below the 32 features"):
        next(train_dictionary(b, 1, TEXTS[:2], 32, 32, 10))
    clf = bert.Bundle(
        model=BertForSequenceClassification(tiny_config(len(REVIEW_WORDS), id2label={0: "n", 1: "p"})).eval(),
        tokenizer=bert.Tokenizer(REVIEW_WORDS),
        name="tiny-clf",
    )
    with pytest.raises(InputError, match="masked-language-model head"):
        gather_activations(clf, 1, TEXTS)


@pytest.fixture(scope="module")
def trained():
    b = tiny_bundle()
    done = list(train_dictionary(b, 1, TEXTS * 4, 48, 6, 40))[-1]
    return b, done.dictionary


def test_a_feature_card_reads_the_held_out_text(trained):
    b, d = trained
    acts = gather_activations(b, 1, TEXTS)
    codes = encode_all(d, acts)
    f = d.sae.encode(acts.vectors)  # (N, F): the card must agree with encoding every vector
    feature = int((f > 0).sum(0).argmax())
    card = feature_card(b, d, acts, codes, feature, CardSize(contexts=3, tokens=4))
    assert card.fires == int((f[:, feature] > 0).sum()) and card.frequency == card.fires / len(acts.vectors)
    strongest = f[:, feature].argmax()
    top = card.contexts[0]
    assert top.activation == pytest.approx(float(f[strongest, feature]), rel=1e-5)
    assert top.tokens[top.position] == acts.tokens[acts.text_index[strongest]][acts.position[strongest]]
    assert [c.activation for c in card.contexts] == sorted((c.activation for c in card.contexts), reverse=True)
    assert int(card.histogram[0].sum()) == card.fires
    assert len(card.promoted) == 4 and card.promoted[0][1] >= card.promoted[-1][1] > card.suppressed[0][1]
    with pytest.raises(InputError, match="feature must be one of 0..47"):
        feature_card(b, d, acts, codes, 48)


def test_a_typed_text_shows_each_tokens_strongest_features(trained):
    b, d = trained
    tf = text_features(b, d, "the film was good", k=3)
    assert tf.tokens[0] == "[CLS]" and sorted(tf.features) == [1, 2, 3, 4]
    for feats in tf.features.values():
        assert len(feats) <= 3 and [v for _, v in feats] == sorted((v for _, v in feats), reverse=True)


def test_steering_with_a_feature_at_its_own_value_changes_nothing(trained):
    b, d = trained
    text = "the film was [MASK] and good"
    tf = text_features(b, d, text, k=1)
    feature, own = tf.features[2][0]
    s = steer(b, d, text, feature, own, positions=[2])
    assert s.was == [pytest.approx(own)] and s.masks == [4]
    assert s.after == s.before


def test_zeroing_a_feature_takes_away_its_term(trained):
    b, d = trained
    x = gather_activations(b, 1, ["the film was good"]).vectors  # (4, C)
    f = d.sae.encode(x)
    feature = int(f[1].argmax())
    edited = steered_state(d.sae, x, feature, [1], 0.0)
    x_hat = d.sae.decode(f)
    # the edited vector = its reconstruction without the feature's term + the reconstruction's error
    want = x_hat[1] - f[1, feature] * d.sae.W_dec[:, feature] + (x[1] - x_hat[1])
    torch.testing.assert_close(edited[1], want, atol=1e-5, rtol=0)
    torch.testing.assert_close(edited[[0, 2, 3]], x[[0, 2, 3]])
    s = steer(b, d, "the film was [MASK]", feature, 50.0)
    assert s.after != s.before


def test_steering_refuses_what_it_cannot_do(trained):
    b, d = trained
    with pytest.raises(InputError, match=r"no \[MASK\]"):
        steer(b, d, "the film was good", 0)
    with pytest.raises(InputError, match="word pieces"):
        steer(b, d, "the film was [MASK]", 0, positions=[0])
    with pytest.raises(InputError, match="between"):
        steer(b, d, "the film was [MASK]", 0, float("nan"))
    other = tiny_bundle(config=tiny_config(len(REVIEW_WORDS), hidden_size=16, num_attention_heads=2))
    with pytest.raises(InputError, match="train one on this model"):
        steer(other, d, "the film was [MASK]", 0)


def test_training_text_and_held_out_text_come_from_different_documents():
    from bert.data.corpus.fetch import bert_cache_dir
    from bert.train.pretrain_args import PretrainArgs
    from bert.train.pretrain_setup import training_split

    if not all((bert_cache_dir() / "corpora" / f"{c}.jsonl").is_file() for c in CORPORA):
        pytest.skip("the corpora are not built here (`make data`)")
    train, held = corpus_texts(300, 100, seed=1)
    assert len(train) == 300 and len(held) == 100 and len(set(train)) == 300
    kept_in, held_out = training_split(PretrainArgs(out="", corpora=list(CORPORA)))
    held_docs = {s for doc in held_out.documents for s in doc}
    train_docs = {s for doc in kept_in.documents for s in doc}
    assert set(held) <= held_docs and set(train) <= train_docs
    assert corpus_texts(300, 100, seed=1) == (train, held)


def test_training_reads_every_other_text_with_some_pieces_masked():
    b = tiny_bundle()
    plain = gather_activations(b, 1, TEXTS)
    mixed = gather_activations(b, 1, TEXTS, masked=True, seed=2)
    assert len(plain.vectors) == len(mixed.vectors)
    for s, (p, m) in enumerate(zip(plain.tokens, mixed.tokens, strict=True)):
        changed = [t for t, u in zip(p, m, strict=True) if t != u]
        if s % 2:
            assert changed and set(m) - set(p) == {"[MASK]"}
        else:
            assert not changed
    first = plain.text_index == 0
    torch.testing.assert_close(mixed.vectors[first], plain.vectors[first])
