"""The Features page's notebook (app/export/features_notebooks.py), run headless in the venv's
kernel: the built-in dictionary's card and a sentence's features print the app's numbers for the
same inputs; typed text reaches it only as a string literal."""

from __future__ import annotations

import ast

import numpy as np
import pytest

from app.export.features_notebooks import feature_card
from app.export.notebook import ModelRef
from app.export.stamp import Stamp
from tests import notebook_run as nbr

nbr.require_kernel()

MINILM = ModelRef("builtin:minilm-l6", "minilm-l6")
HOSTILE = "<img src=x onerror=alert(1)> ''' \"\"\" \\ # **bold**"


def test_the_typed_sentence_is_a_literal():
    node = nbr.read(feature_card(MINILM, Stamp(), 3, HOSTILE, 300))
    assigned = {}
    for cell in node.cells:
        if cell.cell_type == "code":
            for s in ast.parse("".join(cell.source)).body:
                if isinstance(s, ast.Assign) and getattr(s.targets[0], "id", None) in ("sentence", "feature"):
                    assigned[s.targets[0].id] = ast.literal_eval(s.value)
    assert assigned == {"sentence": HOSTILE, "feature": 3}


@pytest.mark.slow
def test_the_notebook_prints_the_apps_card_and_sentence_features(monkeypatch):
    import bert
    from bert.analysis import dictionary_features
    from bert.analysis.dictionary_builtin import builtin_dictionary
    from bert.analysis.dictionary_features import encode_all, text_features
    from bert.analysis.dictionary_vectors import corpus_texts, gather_activations

    shipped = builtin_dictionary("minilm-l6")
    if shipped is None:
        pytest.skip("minilm-l6 ships no dictionary here")
    b, d = bert.load("minilm-l6"), shipped.dictionary
    _, held = corpus_texts(0, 300)  # what the page reads (app/features/builtin_view.py)
    acts = gather_activations(b, d.layer, held)
    card = dictionary_features.feature_card(b, d, acts, encode_all(d, acts), 5)
    sentence = "The cat sat on the mat."
    tf = text_features(b, d, sentence, k=3)
    got = nbr.numbers(nbr.run(feature_card(MINILM, Stamp(), 5, sentence, 300), monkeypatch))
    assert (got["fires"], got["tokens"]) == (card.fires, card.tokens)
    np.testing.assert_allclose(got["contexts"], [c.activation for c in card.contexts], atol=1e-5)
    assert got["context_tokens"] == [c.tokens[c.position] for c in card.contexts]
    assert got["promoted"] == [w for w, _ in card.promoted] and got["suppressed"] == [w for w, _ in card.suppressed]
    assert got["sentence"] == [[tf.tokens[p], [f for f, _ in feats]] for p, feats in tf.features.items()]
