"""Part-of-speech purity of a dictionary's features (bert/analysis/dictionary_purity.py): planted
codes with known answers, chance, and the whole reading on the tiny model against a brute-force
count from encoding every word's first piece; and the built-in dictionary file read back."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from bert.analysis import dictionary_purity as P
from bert.analysis.dictionary_builtin import CONTROLS_FILE, builtin_path, read_builtin, rounded, save_builtin
from bert.analysis.dictionary_quality import Quality, Splice
from bert.analysis.dictionary_training import train_dictionary
from bert.analysis.dictionary_vectors import gather_activations, state_after
from bert.data.tagged import TaggedData
from bert.errors import DataError, InputError
from tests.helpers import tiny_bundle


def _codes(active: dict[int, list[tuple[int, float]]], n: int, k: int = 3):
    """(indices, values) (n, k) from {word: [(feature, value)]}, unused slots feature 0 at 0."""
    idx, val = np.zeros((n, k), dtype=np.int64), np.zeros((n, k))
    for w, feats in active.items():
        for j, (f, v) in enumerate(feats):
            idx[w, j], val[w, j] = f, v
    return idx, val


def test_purity_of_planted_features():
    n, top = 200, 10
    tags = np.array([w % 4 for w in range(n)])  # word w has tag w % 4
    active = {}
    for w in range(n):
        feats = []
        if tags[w] == 1:
            feats.append((0, 5.0 + w / n))  # feature 0: every tag-1 word, strongly
        elif w % 7 == 0:
            feats.append((0, 1.0))  # ... and some others, weakly (below its top 10)
        if w < 2 * top:
            feats.append((1, 1.0 + w))  # feature 1: the first 20 words, stronger later: its top 10 are words 10..19
        if w < top - 1:
            feats.append((2, 2.0))  # feature 2: nine words, too few to judge
        active[w] = feats
    idx, val = _codes(active, n)
    purity, commonest = P.feature_purity(idx, val, tags, n_features=4, n_tags=4, top=top)
    assert purity[0] == 1.0 and commonest[0] == 1
    assert purity[1] == pytest.approx(3 / 10)  # words 10..19: tags 2,3,0,1,2,3,0,1,2,3 -> three 2s or 3s
    assert commonest[1] == 2  # a tie goes to the first tag
    assert np.isnan(purity[2]) and commonest[2] == -1
    assert np.isnan(purity[3]), "a feature never active is not counted"
    with pytest.raises(InputError, match="one shape"):
        P.feature_purity(idx, val[:, :1], tags, 4, 4)


def test_chance_is_the_commonest_share_of_random_words():
    assert P.chance_purity(np.zeros(100, dtype=int), 3, top=10) == 1.0
    even = P.chance_purity(np.arange(4000) % 4, 4, top=50)
    assert 0.25 < even < 0.45  # four even tags: a little over a quarter
    assert np.isnan(P.chance_purity(np.zeros(5, dtype=int), 1, top=10))


WORDS = "the film was good a very bad plot and it really actor movie quite story".split()
TAG_OF = {"the": 0, "a": 0, "film": 1, "plot": 1, "actor": 1, "movie": 1, "story": 1, "good": 2, "bad": 2}


def _tagged(n=60, seed=0):
    rng = np.random.default_rng(seed)
    sentences = [[str(w) for w in rng.choice(WORDS, size=rng.integers(3, 9))] for _ in range(n)]
    tags = [[TAG_OF.get(w, 3) for w in s] for s in sentences]
    return TaggedData(sentences, tags, ["DET", "NOUN", "ADJ", "OTHER"])


@pytest.fixture(scope="module")
def trained():
    b = tiny_bundle()
    texts = [" ".join(s) for s in _tagged(40, seed=1).sentences]
    return b, list(train_dictionary(b, 1, texts, 24, 4, 30))[-1].dictionary


def test_purity_on_the_model_is_the_count_over_each_words_first_piece(trained):
    b, d = trained
    tagged = _tagged()
    p = P.pos_purity(b, d, tagged, top=5)
    # brute force: each sentence alone through the model, every word one piece (the tiny vocabulary)
    rows, tags = [], []
    for s, t in zip(tagged.sentences, tagged.tags, strict=True):
        enc = b.tokenizer.encode(" ".join(s), max_length=b.config.max_tokens)
        x = state_after(b, torch.tensor([enc.ids]), torch.tensor([enc.type_ids]), d.layer)[0]
        rows.append(d.sae.encode(x[1 : 1 + len(s)].float()))
        tags += t
    f, tags = torch.cat(rows).detach().numpy(), np.array(tags)
    assert p.words == len(tags)
    for feature in range(d.n_features):
        on = np.nonzero(f[:, feature] > 0)[0]
        if len(on) < 5:
            assert np.isnan(p.per_feature[feature])
            continue
        best = on[np.argsort(-f[on, feature], kind="stable")[:5]]
        counts = np.bincount(tags[best], minlength=4)
        assert p.per_feature[feature] == pytest.approx(counts.max() / 5), feature
        assert p.tag_of(feature) == tagged.tag_names[int(counts.argmax())]
    assert p.counted == int(np.isfinite(p.per_feature).sum()) > 0
    assert p.mean == pytest.approx(float(np.nanmean(p.per_feature)))


def test_the_built_in_file_reads_back_as_saved(trained, tmp_path):
    b, d = trained
    rounded(d.sae)
    acts = gather_activations(b, d.layer, [" ".join(s) for s in _tagged(10).sentences])
    q = Quality(0.5, 4.0, 1, d.n_features, len(acts.vectors), Splice(3, 1, 1, 0, 1, 0.5), Splice(2, 1, 1, 1, 1, 1))
    path = tmp_path / "m" / "dictionary.safetensors"
    save_builtin(path, d, q, {"this model": {"mean": 0.7}}, "make it", {"layers": []})
    got = read_builtin(path)
    for name in ("W_enc", "b_enc", "W_dec", "b_dec"):
        assert torch.equal(getattr(got.dictionary.sae, name), getattr(d.sae, name)), "fp16-rounded weights survive"
    assert got.quality == q and got.purity == {"this model": {"mean": 0.7}} and got.command == "make it"
    assert got.dictionary.layer == d.layer and got.dictionary.curve == d.curve
    (tmp_path / "bad.safetensors").write_bytes(b"not one")
    with pytest.raises(DataError, match="not a dictionary"):
        read_builtin(tmp_path / "bad.safetensors")


def test_the_controls_file_beside_the_built_in_takes_the_place_of_its_controls(trained, tmp_path):
    _, d = trained
    q = Quality(0.5, 4.0, 1, d.n_features, 10, Splice(3, 1, 1, 0, 1, 0.5), Splice(2, 1, 1, 1, 1, 1))
    path = tmp_path / "m" / "dictionary.safetensors"
    own = {"this model": {"mean": 0.7, "layer": 2}, "random-weights control": {"mean": 0.6, "layer": 3}}
    save_builtin(path, d, q, own, "make it", {"layers": []})
    assert read_builtin(path).controls_command == "make it"  # no controls file: the file's own
    controls = {"random-weights control": {"mean": 0.5, "layer": 2}, "mini-scratch": {"mean": 0.4, "layer": 1}}
    path.with_name(CONTROLS_FILE).write_text(json.dumps({**controls, "command": "measure them"}))
    got = read_builtin(path)
    assert got.purity == {"this model": own["this model"], **controls}
    assert got.command == "make it" and got.controls_command == "measure them"
    path.with_name(CONTROLS_FILE).write_text("[1, 2]")
    with pytest.raises(DataError, match="not a dictionary's controls"):
        read_builtin(path)


def test_the_shipped_dictionarys_controls_are_at_its_layer_with_its_recipe():
    """minilm-l6's built-in dictionary: the random-weights control beside it was trained at the same
    layer with as many features (like for like), and every dictionary is judged by the same rule."""
    shipped = read_builtin(builtin_path("minilm-l6"))
    d, purity = shipped.dictionary, shipped.purity
    control = purity["random-weights control"]
    assert control["layer"] == d.layer and control["n_features"] == d.n_features
    assert {p["top"] for p in purity.values()} == {P.TOP}
    assert "scripts/dictionary_controls.py" in shipped.controls_command
