"""The Causes page's Minimal pairs and Probes notebooks (app/export/causes_notebooks.py) and a
finished tagger's or reader's report (app/export/head_notebooks.py), run headless: no error, the
page's figure builders draw, and the numbers they print equal the app's own computation for the
same inputs (1e-5). Typed text reaches them only as string literals and escaped markdown."""

from __future__ import annotations

import ast
import os

import numpy as np
import pytest

from app.export import causes_notebooks as cnb
from app.export.notebook import ModelRef
from app.export.stamp import Stamp

try:
    import ipykernel  # noqa: F401
    import nbclient  # noqa: F401
    import nbformat
except ImportError as e:  # outside CI a venv without the dev requirements skips; in CI it fails
    if os.environ.get("CI", "").strip().lower() in ("true", "1", "yes"):
        raise
    pytest.skip(f"{e.name} is not installed (pip install -r requirements-dev.txt)", allow_module_level=True)

from tests.notebook_kernel import all_numbers, figures, in_models_folder, minilm_tiny_mlm, run_notebook  # noqa: E402

HOSTILE = "<img src=x onerror=alert(1)> ''' \"\"\" \\ # **bold**"
MINILM = ModelRef("builtin:minilm-l6", "minilm-l6")


def _assigned(code: str, name: str):
    """The literal value assigned to `name` in `code`."""
    for node in ast.parse(code).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == name:
            return ast.literal_eval(node.value)
    raise AssertionError(f"{name} is not assigned a literal")


def test_typed_pairs_are_literals_in_code_and_escaped_in_markdown():
    pairs = [(f"The cats sleep. {HOSTILE}", "The cats sleeps."), ("She left.", f"She leaved. {HOSTILE}")]
    text = cnb.minimal_pairs(MINILM, Stamp(inputs=(("Pairs", HOSTILE),)), None, pairs, True, 1)
    node = nbformat.reads(text, as_version=4)
    nbformat.validate(node)
    code = "".join(node.cells[3].source)
    assert _assigned(code, "pairs") == pairs and _assigned(code, "word_level") is True  # nothing typed runs
    assert _assigned("".join(node.cells[4].source), "pick") == 2  # counted from 1 in the notebook
    md = "".join(node.cells[0].source)
    assert "<img" not in md and "&lt;img src=x onerror=alert\\(1\\)&gt;" in md


@pytest.mark.slow
def test_the_minimal_pairs_notebooks_print_the_apps_scores(tmp_path, monkeypatch):
    import bert
    from bert.analysis.paradigms import PARADIGMS
    from bert.analysis.scoring import score_pairs

    typed = [(f"The cats sleep on the sofa. {HOSTILE}", f"The cats sleeps on the sofa. {HOSTILE}")]
    res = score_pairs(bert.load("minilm-l6"), typed, True)
    node = run_notebook(cnb.minimal_pairs(MINILM, Stamp(), None, typed, True, 0), monkeypatch)
    (got,) = all_numbers(node)
    np.testing.assert_allclose([got["good"][0], got["bad"][0]], [res.good[0].total, res.bad[0].total], atol=1e-5)
    assert (got["good_words"], got["bad_words"]) == (res.good[0].words, res.bad[0].words)
    np.testing.assert_allclose(got["good_word_scores"], res.good[0].word_scores, atol=1e-5)
    np.testing.assert_allclose(got["bad_word_scores"], res.bad[0].word_scores, atol=1e-5)
    assert figures(node) == 1 and any("text/html" in o.get("data", {}) for o in node.cells[3].outputs)  # the table

    tiny = minilm_tiny_mlm()  # every paradigm's 440 pairs: a tiny model on MiniLM's vocabulary
    ref = in_models_folder(tiny, "tiny-mlm", tmp_path / "models", monkeypatch)
    name = "subject-verb agreement"
    res = score_pairs(tiny, PARADIGMS[name].pairs, False)
    node = run_notebook(cnb.minimal_pairs(ref, Stamp(), name, None, False, 3), monkeypatch)
    (got,) = all_numbers(node)
    np.testing.assert_allclose(got["good"], [s.total for s in res.good], atol=1e-5)
    np.testing.assert_allclose(got["bad"], [s.total for s in res.bad], atol=1e-5)
    assert got["accuracy"] == pytest.approx(res.accuracy, abs=1e-12)
    assert (got["good_words"], got["bad_words"]) == (res.good[3].words, res.bad[3].words)
    np.testing.assert_allclose(got["good_word_scores"], res.good[3].word_scores, atol=1e-5)

    every = [score_pairs(tiny, p.pairs, True) for p in PARADIGMS.values()]
    node = run_notebook(cnb.every_paradigm(ref, Stamp(), True), monkeypatch)
    (got,) = all_numbers(node)
    assert got["names"] == list(PARADIGMS)
    np.testing.assert_allclose(got["accuracy"], [s.accuracy for s in every], atol=1e-12)
    for printed, s in zip(got["differences"], every, strict=True):
        np.testing.assert_allclose(printed, s.differences, atol=1e-5)
    assert figures(node) == 1
