"""bert.analysis on hand-made attention maps and tiny random models with known answers."""

import math

import numpy as np
import pytest
import torch

import bert
from bert.analysis import ablation, attention_heads, common, compare, explain, full, mlm, vectors, words
from bert.bundle import Bundle
from bert.config import BertConfig
from bert.task_models import BertForSequenceClassification
from tests import helpers
from tests.helpers import SPECIALS, TINY_SIZES

WORDS = "the cat sat on mat a dog bank river money we went to open account by water big red , . ! ? ##s".split()
VOCAB = SPECIALS + WORDS
TINY = dict(vocab_size=len(VOCAB), **TINY_SIZES, type_vocab_size=2)


def _perturb(model, seed):
    """Non-trivial LayerNorm and bias values, so every parameter matters (as in test_parity)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name or name.endswith("bias"):
                p.add_(0.1 * torch.randn(p.shape, generator=g))
            elif p.dim() == 2:
                p.mul_(5.0)  # sharper attention than 0.02-std weights give
    return model.eval()


def sharp_bundle(seed=0, **overrides):
    """helpers.tiny_bundle on VOCAB, perturbed: sharper attention, every parameter matters."""
    bundle = helpers.tiny_bundle(seed, f"tiny-{seed}", VOCAB, BertConfig(**{**TINY, **overrides}))
    _perturb(bundle.model, seed)
    return bundle


def tiny_classifier(seed=0, pooling="cls"):
    torch.manual_seed(seed)
    config = BertConfig(**TINY, id2label={0: "negative", 1: "positive"}, classifier_pooling=pooling)
    model = _perturb(BertForSequenceClassification(config), seed)
    return Bundle(model=model, tokenizer=bert.Tokenizer(VOCAB), name="tiny-clf")


@pytest.fixture(scope="module")
def tiny():
    return sharp_bundle()


@pytest.fixture(scope="module")
def clf():
    return tiny_classifier()


TEXT = "the cat sat on the [MASK] , by the river ."


# ---- 1. head patterns ------------------------------------------------------------------------

TOKENS = ["[CLS]", "the", "cat", ",", "sat", "down", ".", "[SEP]"]
T = len(TOKENS)


def pattern(kind):
    """(T, T) attention whose every row does one thing."""
    a = np.zeros((T, T))
    for i in range(T):
        if kind == "previous":
            a[i, max(i - 1, 0)] = 1
        elif kind == "next":
            a[i, min(i + 1, T - 1)] = 1
        elif kind == "self":
            a[i, i] = 1
        elif kind == "[CLS]":
            a[i, 0] = 1
        elif kind == "[SEP]":
            a[i, T - 1] = 1
        elif kind == "punctuation":
            a[i, [3, 6]] = 0.5
        elif kind == "broad":
            a[i] = 1 / T
        elif kind == "other":  # focused, three tokens ahead: no simple pattern
            a[i, (i + 3) % T] = 1
    return a


@pytest.mark.parametrize("kind", attention_heads.LABELS)
def test_synthetic_heads_are_labelled(kind):
    att = pattern(kind)[None, None]  # (1, 1, T, T)
    stats = attention_heads.head_pattern_stats(att, TOKENS)
    assert set(stats) == set(attention_heads.PATTERNS) | {"entropy"}
    assert all(v.shape == (1, 1) for v in stats.values())
    assert attention_heads.label_heads(stats)[0, 0] == kind


def test_pattern_stats_hand_values():
    stats = attention_heads.head_pattern_stats(pattern("previous")[None, None], TOKENS)
    assert stats["previous"][0, 0] == pytest.approx(1.0)
    assert stats["next"][0, 0] == pytest.approx(0.0)
    assert stats["[CLS]"][0, 0] == pytest.approx(2 / T)  # rows 0 and 1 land on [CLS]
    assert stats["entropy"][0, 0] == pytest.approx(0.0, abs=1e-9)
    uniform = attention_heads.head_pattern_stats(pattern("broad")[None, None], TOKENS)
    assert uniform["entropy"][0, 0] == pytest.approx(1.0)
    assert uniform["punctuation"][0, 0] == pytest.approx(2 / T)


def test_pattern_stats_accepts_model_tuple_and_checks_tokens():
    att = torch.tensor(np.stack([pattern("self"), pattern("next")]))[None]  # (1, 2, T, T)
    stats = attention_heads.head_pattern_stats((att, att), TOKENS)  # L=2 tuple of (1,H,T,T)
    assert attention_heads.label_heads(stats).tolist() == [["self", "next"], ["self", "next"]]
    with pytest.raises(bert.InputError):
        attention_heads.head_pattern_stats(att, TOKENS[:-1])


def test_head_patterns_over_probe_set(tiny):
    assert 10 <= len(attention_heads.probe_sentences()) <= 15
    hp = attention_heads.head_patterns_over(tiny, ["the cat sat .", "a big red dog went to the bank , by the water !"])
    assert hp.labels.shape == (2, 4)
    assert set(hp.labels.ravel()) <= set(attention_heads.LABELS)
    assert sum(hp.counts().values()) == 8
    # equal-weight mean of the per-sentence statistics, each computed without padding
    per = []
    for s in hp.sentences:
        tokens, att = compare.attentions_of(tiny, s)
        per.append(attention_heads.head_pattern_stats(att, tokens))
    for k in hp.stats:
        np.testing.assert_allclose(hp.stats[k], (per[0][k] + per[1][k]) / 2, atol=1e-5)


def test_find_a_head_ranks_heads_by_the_word_to_word_weight(tiny):
    """A word's pieces are one word; a head's weight from word to word is the target's pieces
    summed, averaged over the source's pieces; the heads come largest first."""
    an = full.analyze(tiny, "the cats sat by the river")
    words = attention_heads.input_words(an.tokens, an.word_ids, an.sequence_ids)
    assert [w.text for w in words] == ["[CLS]", "the", "cats", "sat", "by", "the", "river", "[SEP]"]
    cats, river = words[2], words[6]
    assert len(cats.positions) == 2  # cat ##s
    a = an.attentions  # (L, H, T, T)
    ranked = attention_heads.heads_by_link(a, cats.positions, river.positions, top=8)
    by_hand = {
        (l, h): np.mean([a[l, h, i, river.positions[0]] for i in cats.positions])
        for l in range(a.shape[0])
        for h in range(a.shape[1])
    }
    assert [(l, h) for l, h, _ in ranked] == sorted(by_hand, key=lambda lh: -by_hand[lh])
    for l, h, w in ranked:
        assert w == pytest.approx(by_hand[l, h], abs=1e-6)
    # the other way round reads other rows: the weight from river to cats sums both pieces
    back = attention_heads.link_weights(a, river.positions, cats.positions)
    np.testing.assert_allclose(back, a[:, :, river.positions[0]][..., list(cats.positions)].sum(-1), atol=1e-6)


def test_find_a_head_on_a_hand_made_map():
    """One head of four sends word 2 to word 5: it comes first, with its weight."""
    att = np.tile(pattern("self"), (2, 2, 1, 1))
    att[1, 0, 2] = 0.0
    att[1, 0, 2, 5] = 1.0
    assert attention_heads.heads_by_link(att, [2], [5], top=2) == [(1, 0, 1.0), (0, 0, 0.0)]
    with pytest.raises(bert.InputError):
        attention_heads.heads_by_link(att, [2], [T])


# ---- 2. rollout, saliency, spearman ----------------------------------------------------------


def test_rollout_of_identity_is_identity():
    att = np.broadcast_to(np.eye(5), (3, 2, 5, 5))
    np.testing.assert_allclose(explain.attention_rollout(att), np.eye(5), atol=1e-12)


def test_rollout_rows_sum_to_one_and_one_layer_by_hand():
    rng = np.random.default_rng(0)
    att = rng.random((3, 4, 6, 6))
    att /= att.sum(-1, keepdims=True)
    r = explain.attention_rollout(att)
    assert r.shape == (6, 6) and (r >= 0).all()
    np.testing.assert_allclose(r.sum(-1), 1.0, atol=1e-12)
    one = 0.5 * att[0].mean(0) + 0.5 * np.eye(6)
    np.testing.assert_allclose(explain.attention_rollout(att, upto=1), one, atol=1e-12)
    two = (0.5 * att[1].mean(0) + 0.5 * np.eye(6)) @ one
    np.testing.assert_allclose(explain.attention_rollout(att, upto=2), two, atol=1e-12)


def test_spearman_known_values():
    assert explain.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert explain.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert explain.spearman([1, 2, 3, 4], [1, 4, 9, 16]) == pytest.approx(1.0)  # monotone, not linear
    assert explain.spearman([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(4.5 / math.sqrt(22.5))  # ties
    assert math.isnan(explain.spearman([1, 1, 1], [1, 2, 3]))
    with pytest.raises(bert.InputError):
        explain.spearman([1, 2], [1, 2, 3])


def _no_grads(bundle):
    return all(p.grad is None for p in bundle.model.parameters())


def test_saliency_mlm_shapes_and_no_parameter_grads(tiny):
    s = explain.saliency_mlm(tiny, TEXT)
    n = len(s.tokens)
    assert s.tokens[s.position] == "[MASK]"
    assert s.saliency.shape == s.signed.shape == s.rollout.shape == (n,)
    assert s.saliency.sum() == pytest.approx(1.0) and (s.saliency >= 0).all()
    assert s.rollout.sum() == pytest.approx(1.0)
    assert -1.0 <= s.correlation <= 1.0
    assert 0.0 < s.target_prob <= 1.0
    assert _no_grads(tiny)
    # the explained word is the top prediction, and works from inside inference mode too
    top = mlm.mlm_topk(tiny, TEXT, k=1)
    assert s.target == top.top_tokens[0][0]
    with torch.inference_mode():
        again = explain.saliency_mlm(tiny, TEXT, target="dog")
    assert again.target == "dog" and _no_grads(tiny)


def test_saliency_signed_is_first_order_effect(tiny):
    """sum of x*grad over tokens ~ the change in log-prob when the input is scaled by (1 + eps)."""
    s = explain.saliency_mlm(tiny, TEXT)
    enc, ids, types = common.encode_tensors(tiny, TEXT)
    m = tiny.model
    with torch.inference_mode():
        x = m.bert.run(ids, stop=0, token_type_ids=types).state

        def logp(scale):
            h = m.bert.run(x * scale, 0).state
            return torch.log_softmax(m.mlm(h[0, s.position]), -1)[s.target_index].item()

        eps = 1e-3
        fd = (logp(1 + eps) - logp(1 - eps)) / (2 * eps)
    assert s.signed.sum() == pytest.approx(fd, rel=1e-2, abs=1e-4)


def test_saliency_classifier(clf):
    s = explain.saliency_classifier(clf, "the big dog sat on the mat .")
    probs = mlm.classifier_probs(clf, "the big dog sat on the mat .")
    assert s.target == clf.labels[int(probs.argmax())]
    assert s.target_prob == pytest.approx(float(probs.max()), abs=1e-5)
    assert s.position == 0 and s.saliency.shape == (len(s.tokens),)
    assert _no_grads(clf)
    s1 = explain.saliency_classifier(clf, "the big dog sat on the mat .", class_index="negative")
    assert s1.target == "negative"


def test_saliency_works_on_frozen_parameters():
    b = sharp_bundle(seed=3)
    for p in b.model.parameters():
        p.requires_grad_(False)
    s = explain.saliency_mlm(b, TEXT)
    assert np.isfinite(s.saliency).all() and s.saliency.sum() == pytest.approx(1.0)


def test_mlm_functions_refuse_classifier_and_missing_mask(tiny, clf):
    with pytest.raises(bert.InputError, match="MASK"):
        explain.logit_lens(tiny, "the cat sat .")
    with pytest.raises(bert.InputError):
        explain.saliency_mlm(clf, TEXT)
    with pytest.raises(bert.InputError):
        explain.saliency_classifier(tiny, TEXT)


# ---- 3. logit lens ---------------------------------------------------------------------------


def test_logit_lens_last_layer_equals_mlm_output(tiny):
    text = "the [MASK] sat on the [MASK] ."
    lens = explain.logit_lens(tiny, text, k=4)
    enc, ids, types = common.encode_tensors(tiny, text)
    where = ids == tiny.tokenizer.mask_id
    with torch.inference_mode():
        probs = torch.softmax(tiny.model(ids, types, mlm_positions=where).mlm_logits, -1)
    top_p, top_i = probs.topk(4, -1)
    L = tiny.config.num_hidden_layers
    assert lens.positions == where[0].nonzero()[:, 0].tolist()
    assert lens.top_ids.shape == (2, L + 1, 4) and lens.answer_prob.shape == (2, L + 1)
    assert np.array_equal(lens.top_ids[:, -1], top_i.numpy())
    assert np.array_equal(lens.top_probs[:, -1], top_p.numpy().astype(np.float64))  # exact
    assert (lens.answer_rank[:, -1] == 1).all()
    assert lens.top_tokens[0][-1] == tiny.tokenizer.convert_ids_to_tokens(top_i[0].tolist())


# ---- 4. ablation -----------------------------------------------------------------------------


@pytest.mark.slow
def test_ablating_all_heads_of_a_layer_leaves_only_the_residual(tiny):
    m, L, H = tiny.model, tiny.config.num_hidden_layers, tiny.config.num_attention_heads
    _, ids, types = common.encode_tensors(tiny, TEXT)
    for l in range(L):
        hm = torch.ones(L, H)
        hm[l] = 0
        with torch.inference_mode():
            hs = m.bert(ids, types, head_mask=hm, output_hidden_states=True).hidden_states
            layer, x = m.bert.layers[l], hs[l]
            y = layer.attn_norm(x + layer.attn.out.bias)  # attention adds only its bias
            y = layer.ffn_norm(y + layer.ffn_out(layer.act(layer.ffn_in(y))))
        torch.testing.assert_close(hs[l + 1], y, atol=1e-5, rtol=1e-5)


def test_ablate_changes_predictions_and_checks_shape(tiny, clf):
    on = mlm.mlm_topk(tiny, TEXT, k=3)
    same = ablation.ablate(tiny, TEXT, np.ones((2, 4)), k=3)
    np.testing.assert_allclose(same.top_probs, on.top_probs, atol=1e-6)
    off = ablation.ablate(tiny, TEXT, np.zeros((2, 4)), k=3)
    assert not np.allclose(off.top_probs, on.top_probs)
    with pytest.raises(bert.InputError, match=r"\(2, 4\)"):
        ablation.ablate(tiny, TEXT, np.ones((4, 2)))
    p = ablation.ablate_classifier(clf, "the dog sat .", np.zeros((2, 4)))
    assert p.shape == (2,) and p.sum() == pytest.approx(1.0)


def _importance_by_hand(bundle, text, value):
    L, H = bundle.config.num_hidden_layers, bundle.config.num_attention_heads
    out = np.zeros((L, H))
    for l in range(L):
        for h in range(H):
            hm = np.ones((L, H))
            hm[l, h] = 0
            out[l, h] = value(hm)
    return out


def test_head_importance_mlm_matches_one_ablation_at_a_time(tiny):
    imp = ablation.head_importance(tiny, TEXT)
    assert imp.scores.shape == (2, 4) and np.isfinite(imp.scores).all()
    assert imp.kind == "mlm" and imp.unit == "log-probability"
    tid = tiny.tokenizer.vocab[imp.target]
    pos = imp.position

    def logp(hm):
        _, ids, types = common.encode_tensors(tiny, TEXT)
        with torch.inference_mode():
            logits = tiny.model(ids, types, head_mask=torch.tensor(hm, dtype=torch.float32)).mlm_logits
        return torch.log_softmax(logits[0, pos], -1)[tid].item()

    assert imp.baseline == pytest.approx(logp(np.ones((2, 4))), abs=1e-5)
    np.testing.assert_allclose(imp.ablated, _importance_by_hand(tiny, TEXT, logp), atol=1e-4)
    ranked = imp.ranking()
    assert len(ranked) == 8 and ranked[0][2] == imp.scores.max()


def test_head_importance_classifier(clf):
    text = "we went to the bank ."
    probs = mlm.classifier_probs(clf, text)
    imp = ablation.head_importance(clf, text)
    assert imp.kind == "classifier" and imp.target == clf.labels[int(probs.argmax())]
    assert imp.baseline == pytest.approx(float(probs.max()), abs=1e-5)
    k = int(probs.argmax())
    by_hand = _importance_by_hand(clf, text, lambda hm: ablation.ablate_classifier(clf, text, hm)[k])
    np.testing.assert_allclose(imp.ablated, by_hand, atol=1e-5)


# ---- 6. side by side -------------------------------------------------------------------------


def test_compare_attention():
    a = np.stack([np.stack([pattern("self"), pattern("previous")])])  # (1, 2, T, T)
    b = np.stack([np.stack([pattern("self"), pattern("next")])])
    d = compare.compare_attention(a, b)
    assert d.diff.shape == a.shape
    assert d.moved[0, 0] == 0.0
    assert d.moved[0, 1] == pytest.approx(1.0)  # previous vs next: every row moved entirely
    with pytest.raises(bert.InputError, match="layers"):
        compare.compare_attention(a, np.concatenate([b, b]))
    with pytest.raises(bert.InputError, match="tokens"):
        compare.compare_attention(a, b, TOKENS, TOKENS[::-1])


def test_compare_outputs_and_shape_mismatch(tiny, clf):
    other = sharp_bundle(seed=1)
    sbs = compare.compare_outputs(tiny, other, TEXT, k=3)
    assert sbs.same_tokens and sbs.a.kind == sbs.b.kind == "mlm"
    assert sbs.a.mlm.top_ids.shape == (1, 3)
    mixed = compare.compare_outputs(tiny, clf, TEXT)
    assert mixed.b.kind == "classifier" and mixed.b.probs.shape == (2,)
    assert mixed.b.labels == ["negative", "positive"]
    deeper = sharp_bundle(seed=2, num_hidden_layers=3)
    ta, aa = compare.attentions_of(tiny, TEXT)
    tb, ab = compare.attentions_of(deeper, TEXT)
    with pytest.raises(bert.InputError, match="different"):
        compare.compare_attention(aa, ab, ta, tb)
    assert compare.compare_attention(aa, aa, ta, ta).max_abs == 0.0


# ---- 7. contextual embedding map --------------------------------------------------------------

SENTS = ["we went to the bank .", "the dog sat by the river bank !", "a Bank , the money ."]


def test_word_vectors_by_layer(tiny):
    v = words.word_vectors_by_layer(tiny, SENTS, "bank")
    L, C = tiny.config.num_hidden_layers, tiny.config.hidden_size
    assert v.shape == (L + 1, 3, C)
    # the padded batch gives each sentence's own vectors
    for n, s in enumerate(SENTS):
        pos = words.find_word(tiny.tokenizer, s, "bank")
        enc, ids, types = common.encode_tensors(tiny, s)
        assert enc.tokens[pos] == "bank"
        with torch.inference_mode():
            hs = tiny.model.bert(ids, types, output_hidden_states=True).hidden_states
        for l in range(L + 1):
            np.testing.assert_allclose(v[l, n], hs[l][0, pos].numpy(), atol=1e-5)
    with pytest.raises(bert.InputError, match="not in the sentence"):
        words.word_vectors_by_layer(tiny, SENTS + ["the cat sat ."], "bank")
    with pytest.raises(bert.InputError):
        words.word_vectors_by_layer(tiny, SENTS, "banks")  # whole words only


def test_first_piece_of_a_split_word(tiny):
    assert words.find_word(tiny.tokenizer, "the cats sat .", "cats") == 2  # [CLS] the cat ##s
    assert tiny.tokenizer.encode("the cats sat .").tokens[2:4] == ["cat", "##s"]


def test_pca_2d_and_separation():
    x = np.array([[0.0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0.1, 0]])
    p = vectors.pca_2d(x)
    assert p.shape == (4, 2)
    np.testing.assert_allclose(np.abs(p[:, 0]), np.abs(x[:, 0] - 1.5), atol=0.05)
    assert np.abs(p[:, 0]).argmax() == 3 and p[3, 0] > 0  # sign convention
    rng = np.random.default_rng(0)
    a = np.array([1.0, 0, 0, 0]) + 0.01 * rng.standard_normal((5, 4))
    b = np.array([0.0, 1, 0, 0]) + 0.01 * rng.standard_normal((5, 4))
    labels = ["river"] * 5 + ["money"] * 5
    assert vectors.separation(np.concatenate([a, b]), labels) > 0.9
    mixed = 0.01 * rng.standard_normal((10, 4)) + 1.0
    layers = np.stack([mixed, np.concatenate([a, b])])  # (2, N, C)
    s = vectors.separation(layers, labels)
    assert s.shape == (2,) and s[0] < 0.5 < s[1]
    assert vectors.pca_by_layer(layers).shape == (2, 10, 2)
    with pytest.raises(bert.InputError):
        vectors.separation(np.concatenate([a, b]), ["x"] * 10)


# ---- the real model ---------------------------------------------------------------------------


@pytest.mark.slow
def test_minilm_patterns_and_senses():
    b = bert.load("minilm-l6")
    hp = attention_heads.head_patterns_over(b, attention_heads.probe_sentences()[:4])
    assert hp.labels.shape == (6, 12)
    word, sentences, labels = words.sense_examples()
    sep = vectors.separation(words.word_vectors_by_layer(b, sentences, word), labels)
    assert sep.shape == (7,) and sep[1:].max() > sep[0]  # senses separate with depth
