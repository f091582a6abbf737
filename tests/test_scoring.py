"""Pseudo-log-likelihood (bert/analysis/scoring.py) against transformers' BertForMaskedLM on the
same weights, token by token (1e-4), in both variants, and against minicons' MaskedLMScorer loading
that folder; minimal pairs and the built-in paradigms; typed pairs and their refusals."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import bert
from bert.analysis.paradigms import PAIRS_EACH, PARADIGMS, parse_pairs
from bert.analysis.scoring import pseudo_log_likelihood, score_pairs, split_pair
from bert.errors import InputError
from bert.train.precision import cpu_has_bf16
from tests.helpers import SPECIALS, minilm_tiny_classifier, tiny_bundle

transformers = pytest.importorskip("transformers")

WORDS = SPECIALS + ["the", "film", "was", "is", "good", "bad", "act", "##or", "##s", "very", "."]
SENTENCE = "the actors was very good."  # act ##or ##s: one word of three pieces


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """Our bundle and the transformers folder of the same weights."""
    bundle = tiny_bundle(seed=5, words=WORDS)
    with torch.no_grad():  # larger weights than BERT's start: the scores then differ from token to token
        for p in bundle.model.parameters():
            p.add_(0.2 * torch.randn_like(p))
    return bundle, bert.export_hf(bundle, tmp_path_factory.mktemp("hf"))


@pytest.fixture(scope="module")
def pair(saved):
    bundle, folder = saved
    theirs = transformers.BertForMaskedLM.from_pretrained(folder, attn_implementation="eager").eval()
    return bundle, theirs


def _hf_scores(theirs, enc, mask_id: int, word_level: bool) -> np.ndarray:
    """log P(token) with it masked (and, word_level, its word's later pieces), one run per token."""
    ids = torch.tensor([enc.ids])
    out = np.full(len(enc.ids), np.nan)
    for i, s in enumerate(enc.sequence_ids):
        if s is None:
            continue
        masked = ids.clone()
        masked[0, i] = mask_id
        if word_level:
            for j in range(i + 1, len(enc.ids)):
                if enc.sequence_ids[j] is not None and enc.word_ids[j] == enc.word_ids[i]:
                    masked[0, j] = mask_id
        with torch.no_grad():
            logits = theirs(input_ids=masked).logits[0, i].double()
        out[i] = float(torch.log_softmax(logits, -1)[enc.ids[i]])
    return out


@pytest.mark.parametrize("word_level", [False, True])
def test_pll_matches_transformers(pair, word_level):
    bundle, theirs = pair
    enc = bundle.tokenizer.encode(SENTENCE)
    assert enc.tokens[2:5] == ["act", "##or", "##s"]
    ref = _hf_scores(theirs, enc, bundle.tokenizer.mask_id, word_level)
    ours = pseudo_log_likelihood(bundle, SENTENCE, word_level)
    assert np.isnan(ours.scores[0]) and np.isnan(ours.scores[-1]), "[CLS] and [SEP] are not scored"
    assert np.nanmax(np.abs(ours.scores - ref)) <= 1e-4
    assert abs(ours.total - np.nansum(ref)) <= 1e-4
    assert ours.words == ["the", "actors", "was", "very", "good", "."]
    assert np.allclose(ours.word_scores[1], ref[2:5].sum(), atol=1e-4)


class _MiniconsTokenizer(transformers.BertTokenizer):
    """The folder's tokenizer with the batch_encode_plus that minicons calls and transformers 5 dropped."""

    def batch_encode_plus(self, texts, **kwargs):
        return self(texts, **kwargs)


@pytest.mark.parametrize("word_level", [False, True])
def test_pll_matches_minicons(saved, word_level):
    """minicons reads the local folder (a path: no hub); its "within_word_l2r" is our word level."""
    scorer_module = pytest.importorskip("minicons.scorer")
    bundle, folder = saved
    tokenizer = _MiniconsTokenizer.from_pretrained(folder)
    scorer = scorer_module.MaskedLMScorer(str(folder), "cpu", tokenizer, local_files_only=True)
    metric = "within_word_l2r" if word_level else "original"
    theirs = scorer.token_score([SENTENCE], PLL_metric=metric)[0]  # [(token, log P)] without [CLS]/[SEP]
    total = scorer.sequence_score([SENTENCE], reduction=lambda x: x.sum(0).item(), PLL_metric=metric)[0]
    ours = pseudo_log_likelihood(bundle, SENTENCE, word_level)
    scored = ~np.isnan(ours.scores)
    assert [t for t, _ in theirs] == [t for t, keep in zip(ours.tokens, scored, strict=True) if keep]
    assert np.max(np.abs(ours.scores[scored] - np.array([s for _, s in theirs]))) <= 1e-4
    assert abs(ours.total - total) <= 1e-4


def test_word_level_differs_only_on_a_word_of_pieces(pair):
    bundle, _ = pair
    tok, word = pseudo_log_likelihood(bundle, SENTENCE), pseudo_log_likelihood(bundle, SENTENCE, word_level=True)
    differ = np.flatnonzero(np.abs(np.nan_to_num(tok.scores - word.scores)) > 1e-9).tolist()
    assert differ == [2, 3], "the first two pieces of act##or##s see fewer of their own pieces; the last is the same"


def test_pairs_and_refusals(pair):
    bundle, _ = pair
    res = score_pairs(bundle, [("the film was good.", "the film is good."), ("the film was bad.", "film the was bad.")])
    assert res.differences.shape == (2,) and res.correct.dtype == bool
    assert res.differences[0] == pytest.approx(res.good[0].total - res.bad[0].total)
    assert res.accuracy == float(res.correct.mean())
    with pytest.raises(InputError, match="no \\[MASK\\]"):
        pseudo_log_likelihood(bundle, "the [MASK] was good")
    with pytest.raises(InputError, match="at most 64 tokens"):
        pseudo_log_likelihood(bundle, "the film " * 40)
    with pytest.raises(InputError, match="no pairs"):
        score_pairs(bundle, [])
    with pytest.raises(InputError, match="masked-language-model head, and .* has none"):
        pseudo_log_likelihood(minilm_tiny_classifier(), "a film")


def test_a_pairs_difference_splits_into_its_differing_and_its_shared_words(pair):
    bundle, _ = pair
    good, bad = (pseudo_log_likelihood(bundle, t) for t in ("the actors was very good.", "the film is good."))
    split = split_pair(good, bad)
    assert [w for w, _ in split.good_words] == ["actors", "was", "very"] and [w for w, _ in split.bad_words] == [
        "film",
        "is",
    ]
    assert [w for w, _, _ in split.shared_words] == ["the", "good", "."]
    assert split.shared_words[1] == ("good", good.word_scores[4], bad.word_scores[3])
    assert split.changed + split.shared == pytest.approx(good.total - bad.total, abs=1e-4)  # word scores: float32


def test_paradigms_are_minimal_pairs_of_twenty():
    assert len(PARADIGMS) >= 10
    for p in PARADIGMS.values():
        assert len(p.pairs) == PAIRS_EACH == 20, p.name
        assert len(set(p.pairs)) == len(p.pairs)
        for good, bad in p.pairs:
            g, b = good.split(), bad.split()
            assert len(g) == len(b) and sum(x != y for x, y in zip(g, b)) == 1, (good, bad)


def test_parse_pairs_reads_lines_and_names_the_bad_one():
    assert parse_pairs("# mine\nA cat sleeps. | A cat sleep.\n\n  B | C  \n", 10) == [
        ("A cat sleeps.", "A cat sleep."),
        ("B", "C"),
    ]
    for text, said in [
        ("A | B\nno bar here", "line 2 is not"),
        ("A | B | C", "line 1 is not"),
        ("A | A", "same sentence twice"),
        ("", "no pairs yet"),
        ("A | B\n" * 3, "more than 2 pairs"),
        ("x" * 1300 + " | y", "longer than 1200"),
    ]:
        with pytest.raises(InputError, match=said):
            parse_pairs(text, 2)


BF16_PLL_BAND = 0.25  # a pair's PLL difference in bf16 against fp32, in nats (measured: at most 0.11 on every paradigm)


@pytest.mark.skipif(not cpu_has_bf16(), reason="this CPU has no native bf16")
@pytest.mark.parametrize("name", ["agreement across a prepositional phrase", "anaphor number"])
def test_a_paradigm_scored_in_bf16_agrees_with_fp32_within_one_pair(name):
    """Two built-in paradigms with close calls, on minilm-l6: in bf16 each pair's PLL difference is
    within the band of fp32's, so only a pair fp32 itself scores within the band can change sides,
    and the paradigm's accuracy moves by at most one pair. A close pair can change sides (measured:
    2 of 20 here), so the pages score in fp32."""
    bundle = bert.load("minilm-l6")
    fp32 = score_pairs(bundle, PARADIGMS[name].pairs)
    bf16 = score_pairs(bundle, PARADIGMS[name].pairs, precision="bf16")
    assert np.abs(bf16.differences - fp32.differences).max() <= BF16_PLL_BAND
    assert not np.array_equal(bf16.differences, fp32.differences), "bf16 was not switched on"
    sure = np.abs(fp32.differences) > BF16_PLL_BAND
    assert sure.sum() >= len(sure) // 2 and np.array_equal(bf16.correct[sure], fp32.correct[sure])
    assert abs(int(bf16.correct.sum()) - int(fp32.correct.sum())) <= 1
