"""The examples the pages offer come out right with the shipped default model: a new
checkpoint that gets one wrong fails here."""

import pytest

import bert
from app import state
from app.formatting import mask_words
from bert.analysis.mlm import mlm_topk


@pytest.fixture(scope="module")
def default_model():
    return bert.load(state.DEFAULT_MODEL)


@pytest.mark.slow
@pytest.mark.parametrize(
    "text, answers",
    [
        (state.DEFAULT_MLM_TEXT, state.DEFAULT_MLM_ANSWERS),
        (state.HINT_MLM_TEXT, state.HINT_MLM_ANSWERS),
    ],
)
def test_typed_examples_are_guessed_first(default_model, text, answers):
    p = mlm_topk(default_model, text, k=1)
    assert [t[0] for t in p.top_tokens] == list(answers)


def test_picked_word_of_the_default_sentence_is_guessed_first(default_model):
    words = default_model.tokenizer.words_with_offsets(state.DEFAULT_TEXT_A)
    i = state.default_pick(words)
    assert words[i][0] == state.PICK_WORD_DEFAULT
    p = mlm_topk(default_model, mask_words(state.DEFAULT_TEXT_A, words, [i]), k=1)
    assert p.top_tokens[0][0] == state.PICK_WORD_DEFAULT


def test_default_pick_falls_back_to_the_middle():
    words = [("a", (0, 1)), ("b", (2, 3)), ("c", (4, 5))]
    assert state.default_pick(words) == 1
