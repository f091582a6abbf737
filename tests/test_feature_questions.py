"""A feature on single words (bert/analysis/dictionary_words.py), the class question "which of these
words makes feature N fire most?" (app/board/questions.py) worked out on the model, and the
lesson step on features for a model that ships no dictionary."""

from __future__ import annotations

import plotly.io as pio
import pytest
import torch

from app.board import questions as Q
from app.lessons import features as fl
from bert.analysis.dictionary_training import train_dictionary
from bert.analysis.dictionary_vectors import state_after
from bert.analysis.dictionary_words import word_activations
from bert.errors import InputError
from tests.helpers import tiny_bundle

TEXTS = ["the film was good", "a very bad plot", "the actor was really good", "it was quite a story and a movie"]


@pytest.fixture(scope="module")
def trained():
    b = tiny_bundle()
    return b, list(train_dictionary(b, 1, TEXTS * 6, 24, 4, 20))[-1].dictionary


@torch.no_grad()
def _alone(b, d, word: str) -> torch.Tensor:
    """(F,) the dictionary's codes at `word`'s one piece, the word read alone: [CLS] word [SEP]."""
    ids = torch.tensor([[b.tokenizer.cls_id, b.tokenizer.vocab[word], b.tokenizer.sep_id]])
    return d.sae.encode(state_after(b, ids, torch.zeros_like(ids), d.layer)[0, 1:2].float())[0]


def test_a_features_words_are_each_read_alone(trained):
    b, d = trained
    words = ["film", "good", "the", "plot"]
    codes = torch.stack([_alone(b, d, w) for w in words])  # (W, F)
    feature = int((codes > 0).sum(0).argmax())
    got = word_activations(b, d, feature, words)
    assert got == pytest.approx(codes[:, feature].tolist(), abs=1e-6)
    with pytest.raises(InputError, match="single words"):
        word_activations(b, d, feature, ["two words"])
    with pytest.raises(InputError, match="feature must be one of"):
        word_activations(b, d, 99, words)


def test_the_fires_question_is_the_word_the_model_sets_highest(trained):
    b, d = trained
    words = ["film", "good", "the", "plot", "bad", "story"]
    codes = torch.stack([_alone(b, d, w) for w in words])
    feature = next(f for f in range(d.n_features) if len(set(codes[:, f].tolist())) == len(words))
    body = Q.fires_question(b, d, feature, ", ".join(words), "tiny")
    assert body["kind"] == "fires" and body["choices"] == words
    assert body["answer"] == words[int(codes[:, feature].argmax())]
    assert f"feature {feature}" in body["prompt"] and f"«{body['answer']}»" in body["why"]
    fig = pio.from_json(body["figure"])
    assert list(fig.data[0].x) == words, "the reveal's bars: one a word"
    for typed, why in (("one", "2 to 6"), ("a, a", "2 to 6"), ("a b, c", "2 to 6")):
        with pytest.raises(InputError, match=why):
            Q.fires_question(b, d, feature, typed, "tiny")
    off = next(
        (f for f in range(d.n_features) if float(codes[:, f].max()) <= 0), None
    )  # a feature none of them sets: refused with why
    if off is not None:
        with pytest.raises(InputError, match="fires on none"):
            Q.fires_question(b, d, off, ", ".join(words), "tiny")


def test_the_lesson_step_on_a_model_without_a_dictionary_says_so():
    b = tiny_bundle(name="no-such-built-in")
    assert fl.STEP.show(b) is None and fl.STEP.none_note == fl.NO_DICTIONARY
    said = fl.one_kind_of_word(b)
    assert not said.holds and said.text == fl.NO_DICTIONARY
