"""A view's notebook (app/export/notebook.py, analysis_notebooks.py) run headless (nbclient, the
venv's python3 kernel): the Attention, Masked LM, fine-tuning-report, Tokenization, Embeddings,
Explanations, Patching, Head ablation, Head patterns and Compare notebooks run with no error, draw
with the app's figure builders, keep the app's numbers for the same inputs (1e-5) in `numbers` and
print sentences a student reads, never a raw dump of them. Typed text reaches them only as string
literals and escaped markdown."""

from __future__ import annotations

import ast
import re

import numpy as np
import pytest

from app.export import notebook as nb
from app.export.stamp import Stamp
from tests import notebook_run as nbr

nbr.require_kernel()

HOSTILE = "<img src=x onerror=alert(1)> ''' \"\"\" \\ # **bold**"
MINILM = nb.ModelRef("builtin:minilm-l6", "minilm-l6")


def test_typed_text_is_a_literal_in_code_and_escaped_in_markdown():
    text = nb.attention(MINILM, Stamp(inputs=(("Sentence A", HOSTILE),)), HOSTILE, None, 0, 0)
    node = nbr.read(text)
    code = "".join(node.cells[4].source)
    (text_a,) = [t.value for t in ast.parse(code).body if isinstance(t, ast.Assign) and t.targets[0].id == "text_a"]
    assert ast.literal_eval(text_a) == HOSTILE  # a literal: nothing typed runs
    md = "".join(node.cells[0].source)
    assert "<img" not in md and "&lt;img src=x onerror=alert\\(1\\)&gt;" in md and "\\*\\*bold\\*\\*" in md


def test_a_session_model_gets_a_note_instead_of_a_name():
    ref = nb.ModelRef("session:mine:3", "mine (yours)")
    assert "bert.load('path/to/the/saved/model/folder')" in ref.code() and "trained in a session" in ref.note()
    assert "'tiny'" in nb.ModelRef("path:/srv/models/tiny", "tiny").code()
    assert "/srv" not in nb.ModelRef("path:/srv/models/tiny", "tiny").code()  # no server path in the file


def test_compares_notebook_loads_both_models_and_draws_no_difference_of_a_model_with_itself():
    from app.export.analysis_notebooks import compare_models

    mine = nb.ModelRef("session:mine:3", "mine (yours)")
    node = nbr.read(compare_models(MINILM, Stamp(), "a [MASK] .", 0, 0, mine, MINILM, 5))
    code = nbr.code_of(node)
    assert (
        "bundle_a = bert.load('path/to/the/saved/model/folder')" in code and "bundle_b = bert.load('minilm-l6')" in code
    )
    assert "same_model = False" in code and "Model A was trained in a session" in "".join(node.cells[3].source)
    same = compare_models(MINILM, Stamp(), "a [MASK] .", 0, 0, MINILM, MINILM, 5)
    assert "same_model = True" in same


@pytest.mark.slow
def test_the_attention_and_masked_lm_notebooks_print_the_apps_numbers(monkeypatch):
    import bert
    from bert.analysis import full, mlm

    bundle = bert.load("minilm-l6")
    sentence = "the teacher read the book because she loved it ."
    an = full.analyze(bundle, sentence)
    node = nbr.run(nb.attention(MINILM, Stamp(), sentence, None, 3, 5), monkeypatch)
    got = nbr.numbers(node)
    assert got["tokens"] == an.tokens
    np.testing.assert_allclose(np.array(got["attention"]), an.attentions[3, 5], atol=1e-5)
    assert nbr.figures(node) == 2
    att = an.attentions[3, 5]
    j = int(att[2].argmax())  # "teacher": where it looks most, in a sentence of its own
    assert "Layer 4, head 6: where each token looks most" in nbr.printed(node)
    assert f"{'teacher':>12} → {an.tokens[j]:<12} {att[2, j]:.0%}" in nbr.printed(node)
    _no_dump(nbr.printed(node))

    masked = "the capital of france is [MASK] . she [MASK] the book ."
    pred = mlm.mlm_topk(bundle, masked, k=5)
    node = nbr.run(nb.masked_lm(MINILM, Stamp(), masked, 5), monkeypatch)
    got = nbr.numbers(node)
    assert got["tokens"] == pred.top_tokens
    np.testing.assert_allclose(np.array(got["probs"]), pred.top_probs, atol=1e-5)
    first = ", ".join(f"{t} {p:.1%}" for t, p in zip(pred.top_tokens[0], pred.top_probs[0]))
    assert f"[MASK] 1 (token {pred.positions[0]}): {first}" in nbr.printed(node)
    _no_dump(nbr.printed(node))


def _no_dump(printed: str) -> None:
    """Nothing printed is a raw list or dict of numbers (a JSON dump)."""
    assert not re.search(r"[\[{]\s*[\[{'\"]?-?\d", printed) and "NUMBERS" not in printed, printed


@pytest.mark.slow
def test_the_finetune_report_notebook_redraws_the_run_and_its_numbers(monkeypatch):
    from tests.helpers import finished_result

    _, res = finished_result()
    text = nb.finetune_report(
        MINILM, Stamp(), res["name"], res["key"], res["metrics"], res["report"], res["done"].steps
    )
    assert "bert.load" not in text  # the run's curves and report need no model
    node = nbr.run(text, monkeypatch)
    got = nbr.numbers(node)
    assert got["accuracy"] == pytest.approx(res["report"]["accuracy"], abs=1e-5)
    assert got["macro_f1"] == pytest.approx(res["report"]["macro_f1"], abs=1e-5)
    assert nbr.figures(node) == 2


@pytest.mark.slow
def test_the_tokenization_embeddings_explanations_and_patching_notebooks_print_the_apps_numbers(monkeypatch):
    import bert
    from bert.analysis import explain, full, mlm
    from bert.analysis.common import encode
    from bert.analysis.patching import PRESETS, activation_patching

    bundle = bert.load("minilm-l6")
    a, b = "the teacher read the book .", f"she loved it {HOSTILE}"
    enc = encode(bundle, a, b)
    node = nbr.run(nb.tokenization(MINILM, Stamp(), a, b), monkeypatch)
    assert nbr.numbers(node) == {"tokens": enc.tokens, "ids": [int(i) for i in enc.ids]}
    assert any("text/html" in o.get("data", {}) for c in node.cells for o in c.get("outputs", []))  # the table

    an = full.analyze(bundle, a, b)
    node = nbr.run(nb.embeddings(MINILM, Stamp(), a, b, "position", 6), monkeypatch)
    got = nbr.numbers(node)
    for part in ("token", "segment", "position", "normed"):
        np.testing.assert_allclose(got[part], np.linalg.norm(an.parts[part][:6], axis=1), atol=1e-5, rtol=1e-6)
    assert nbr.figures(node) == 2

    text = "the capital of france is [MASK] . she [MASK] the book ."
    guesses = mlm.mlm_topk(bundle, text, k=8)
    word = guesses.top_tokens[1][2]  # the second [MASK]'s third guess, as picked on the page
    sal = explain.saliency_mlm(bundle, text, position=guesses.positions[1], target=word)
    lens = explain.logit_lens(bundle, text, k=5)
    node = nbr.run(nb.explanations(MINILM, Stamp(), text, 1, word), monkeypatch)
    got = nbr.numbers(node)
    np.testing.assert_allclose(got["rollout"], sal.rollout, atol=1e-5)
    np.testing.assert_allclose(got["saliency"], sal.saliency, atol=1e-5)
    np.testing.assert_allclose(got["lens"], lens.top_probs[lens.positions.index(guesses.positions[1])], atol=1e-5)
    assert nbr.figures(node) == 3

    pair = PRESETS["Number agreement"]
    r = activation_patching(bundle, *pair, "attention")
    node = nbr.run(nb.patching(MINILM, Stamp(), *pair, "attention"), monkeypatch)
    got = nbr.numbers(node)
    assert (got["rows"], got["columns"]) == (r.rows, r.columns)
    np.testing.assert_allclose(got["effect"], r.effect, atol=1e-5)
    assert nbr.figures(node) == 1


@pytest.mark.slow
def test_the_ablation_head_patterns_and_compare_notebooks_print_the_apps_numbers(monkeypatch):
    import bert
    from app.export import analysis_notebooks as anb
    from bert.analysis import full, mlm
    from bert.analysis.ablation import head_importance, head_mask
    from bert.analysis.attention_heads import head_pattern_stats, label_heads
    from bert.analysis.compare import attentions_of, compare_attention, model_outputs

    bundle = bert.load("minilm-l6")
    text, off = "the capital of france is [MASK] .", [(0, 3), (2, 5), (5, 11)]
    full_, cut = mlm.mlm_topk(bundle, text, k=5), mlm.mlm_topk(bundle, text, k=5, head_mask=head_mask(6, 12, off))
    imp = head_importance(bundle, text)
    node = nbr.run(anb.ablation(MINILM, Stamp(), text, off, 5), monkeypatch)
    got = nbr.numbers(node)
    assert (got["before_tokens"], got["after_tokens"]) == (full_.top_tokens, cut.top_tokens)
    np.testing.assert_allclose(got["before"], full_.top_probs, atol=1e-5)
    np.testing.assert_allclose(got["after"], cut.top_probs, atol=1e-5)
    # a gradient summed over every weight of a head: float32 sums in another order (the kernel's
    # threads) agree to about 1e-5 of the score, not to 1e-5 absolute
    np.testing.assert_allclose(got["importance"], imp.scores, rtol=1e-4, atol=1e-5)
    assert nbr.figures(node) == 2

    a, b = "the teacher read the book .", f"she loved it {HOSTILE}"
    an = full.analyze(bundle, a, b)
    stats = head_pattern_stats(an.attentions, an.tokens)
    node = nbr.run(anb.head_patterns(MINILM, Stamp(), a, b, False, 2, 7), monkeypatch)
    got = nbr.numbers(node)
    assert got.pop("labels") == label_heads(stats).tolist()
    for name, value in got.items():
        np.testing.assert_allclose(value, stats[name], atol=1e-5)
    assert nbr.figures(node) == 2

    other = bert.load("all-minilm-l6-v2")
    ref_b = nb.ModelRef("builtin:all-minilm-l6-v2", "all-minilm-l6-v2")
    (ta, aa), (tb, ab) = attentions_of(bundle, text), attentions_of(other, text)
    node = nbr.run(anb.compare_models(MINILM, Stamp(), text, 4, 1, MINILM, ref_b, 5), monkeypatch)
    got = nbr.numbers(node)
    np.testing.assert_allclose(got["a"], aa[4, 1], atol=1e-5)
    np.testing.assert_allclose(got["b"], ab[4, 1], atol=1e-5)
    np.testing.assert_allclose(got["moved"], compare_attention(aa, ab, ta, tb).moved, atol=1e-5)
    out = model_outputs(bundle, text, 5)
    assert got["a_tokens"] == out.mlm.top_tokens
    np.testing.assert_allclose(got["a_probs"], out.mlm.top_probs, atol=1e-5)
    assert np.array(got["b_probs"]).shape == (1, 5)  # B's masked-word head is freshly initialised: its own draw
    assert nbr.figures(node) == 6
