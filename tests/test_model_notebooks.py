"""The notebooks of Compare's "One word in many sentences" (app/export/model_notebooks.py) run
headless in the venv's kernel with no error, draw with the app's figure builders and print the
app's numbers for the same inputs (1e-5). Typed text reaches them only as string literals."""

from __future__ import annotations

import ast

import numpy as np
import pytest

from app.export.notebook import ModelRef
from app.export.stamp import Stamp
from tests import notebook_run as nbr

nbr.require_kernel()

MINILM = ModelRef("builtin:minilm-l6", "minilm-l6")
HOSTILE = "<img src=x onerror=alert(1)> ''' \"\"\" \\ # **bold**"


def _assigned(node, name: str):
    """The literal value the notebook's code assigns to `name`."""
    for cell in node.cells:
        if cell.cell_type != "code":
            continue
        for stmt in ast.parse("".join(cell.source)).body:
            if isinstance(stmt, ast.Assign) and getattr(stmt.targets[0], "id", None) == name:
                return ast.literal_eval(stmt.value)
    raise AssertionError(f"no cell assigns {name}")


def test_the_word_notebook_holds_the_typed_sentences_and_word_as_literals():
    from app.export.model_notebooks import word_in_sentences

    sentences = [f"the bank {HOSTILE}", "a bank '''\"\"\" of the river"]
    node = nbr.read(word_in_sentences(MINILM, Stamp(), "bank", sentences, [HOSTILE, ""], 2))
    assert _assigned(node, "sentences") == sentences and _assigned(node, "senses") == [HOSTILE, ""]
    assert _assigned(node, "word") == "bank" and _assigned(node, "layer") == 2


@pytest.mark.slow
def test_the_word_notebook_prints_the_apps_map_and_separation(monkeypatch):
    import bert
    from app.export.model_notebooks import word_in_sentences
    from bert.analysis.vectors import separation
    from bert.analysis.words import sense_examples, word_map

    bundle = bert.load("minilm-l6")
    word, sentences, senses = sense_examples()
    res = word_map(bundle, sentences, word)
    node = nbr.run(word_in_sentences(MINILM, Stamp(), word, sentences, senses, 3), monkeypatch)
    got = nbr.numbers(node)
    np.testing.assert_allclose(got["coords"], res.coords, atol=1e-5)
    np.testing.assert_allclose(got["separation"], separation(res.vectors, senses), atol=1e-5)
    assert nbr.figures(node) == 2


@pytest.mark.slow
def test_the_pages_offer_their_notebooks_with_their_inputs(monkeypatch):
    """In AppTest (no server to click): Compare's "One word in many sentences" offers its notebook,
    built from the page's word, sentences, senses and layer."""

    import streamlit as st
    from streamlit.delta_generator import DeltaGenerator
    from streamlit.testing.v1 import AppTest

    from bert.analysis.words import sense_examples
    from tests.helpers import ENTRY

    offered = {}

    def spy(real):
        def download_button(*args, **kwargs):
            if args[-2] == "Open as a notebook":
                offered[kwargs.get("key")] = args[-1]
            return real(*args, **kwargs)

        return download_button

    monkeypatch.setattr(DeltaGenerator, "download_button", spy(DeltaGenerator.download_button))
    monkeypatch.setattr(st, "download_button", spy(st.download_button))
    at = AppTest.from_file(ENTRY, default_timeout=180)
    at.switch_page("pages/compare.py").run()
    at.radio(key="cmp_view").set_value("One word in many sentences").run()
    at.slider(key="sense_layer_6").set_value(2).run()
    assert not at.exception, [e.value for e in at.exception]
    node = nbr.read(offered["sense_map_ipynb"]().decode("utf-8"))
    word, sentences, senses = sense_examples()
    assert (_assigned(node, "word"), _assigned(node, "sentences")) == (word, sentences)
    assert (_assigned(node, "senses"), _assigned(node, "layer")) == (senses, 2)
    assert "bundle = bert.load('minilm-l6')" in "".join(node.cells[1].source)
