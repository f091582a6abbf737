"""The notebooks of Compare's "One word in many sentences" (app/export/model_notebooks.py), of a
finished pre-training run and of the Decoder page's decoding (app/export/training_notebooks.py) run
headless in the venv's kernel with no error, draw with the app's figure builders and print the
app's numbers for the same inputs (1e-5); the pages offer them with their inputs. Typed text
reaches them only as string literals and escaped markdown."""

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


def _pretrain_args(**kw):
    from bert.train.pretrain_args import PretrainArgs

    base = dict(out="", init="scratch", vocab="train:120", layers=1, hidden=32, heads=2, max_seq_length=32)
    base.update(batch_size=4, steps=6, lr=1e-3, warmup_steps=1, log_every=2, eval_every=3, save_every=100)
    base.update(eval_sequences=8, threads=1, cache_tokens=False, probe=f"the [MASK] sits on the [MASK] . {HOSTILE}")
    return PretrainArgs(**{**base, **kw})


def _code(node) -> list[str]:
    return ["".join(c.source) for c in node.cells if c.cell_type == "code"]


@pytest.mark.parametrize("objective", ["mlm+nsp", "next-word"])
def test_a_pretraining_notebook_without_the_downloaded_model_says_how_to_load_it(objective, capsys):
    """The cells after the report run as they are (the folder not yet set) and only say so."""
    import bert
    from app.export.notebook import SAVED_MODEL
    from app.export.training_notebooks import pretrain_report
    from bert.train.events import PretrainDone
    from bert.train.next_word import next_word_probe
    from tests.helpers import pretrain_eval, pretrain_start

    args = _pretrain_args(objective=objective)
    events = [pretrain_start(), pretrain_eval(3, probe=[[("the", 0.5)]])]
    node = nbr.read(pretrain_report(MINILM, Stamp(), HOSTILE, "session:x", events, PretrainDone(stopped=False), args))
    *_, load, try_it = _code(node)
    assert f"folder = {SAVED_MODEL!r}" in load and "bert.load" not in "".join(_code(node)[:-2])
    text = next_word_probe(args.probe) if objective == "next-word" else args.probe
    assert (
        f"text = next_word_probe({args.probe!r})" in try_it
        if objective == "next-word"
        else f"text = {text!r}" in try_it
    )
    exec(load + "\n" + try_it, {"bert": bert, "os": __import__("os"), "json": __import__("json")})
    assert "No model loaded yet: set `folder` above" in capsys.readouterr().out
    assert "<img" not in "".join(node.cells[3].source)  # the run's name, escaped


@pytest.fixture(scope="module")
def pretrain_run() -> dict:
    """A finished six-step pre-training run as the page keeps it: the app's job on tiny_corpus, its
    record (run_record) with the model, name and key the session gives it."""
    from app.jobs.records import run_record
    from app.jobs.worker import StopEvent
    from tests.helpers import pretrain_fn, run_fn, tiny_corpus

    args = _pretrain_args()
    events = run_fn(pretrain_fn(args, tiny_corpus(), "tiny-pre", "tiny"), StopEvent(job_id=4343))
    res = run_record("pretrain", events, {"args": args, "corpus": "tiny"}, "done", None, None)
    res.update(job_id=4343, finished=0.0, code=None, saved=False, bundle=res["done"].bundle, name="tiny-pre")
    return {**res, "key": "session:tiny-pre", "added": 0.0}


@pytest.mark.slow
def test_a_finished_pretraining_runs_notebook_redraws_it_and_tries_its_downloaded_model(
    pretrain_run, monkeypatch, tmp_path
):
    """The run's notebook run with `folder` set to its unzipped download: the curves, the final
    scores, the plateau step and the probe's guesses equal the app's."""
    import io
    import zipfile

    from app.export.notebook import SAVED_MODEL
    from app.export.training_notebooks import pretrain_report
    from app.run_session.names import safe_filename
    from app.training.downloads import model_zip
    from bert.train.events import PretrainEval, PretrainStart, last, of_type
    from bert.train.plateau import plateau_exit
    from bert.train.pretrain_eval import probe_predictions

    res = pretrain_run
    args, done, bundle = res["info"]["args"], res["done"], res["bundle"]
    with zipfile.ZipFile(io.BytesIO(model_zip(bundle, "tiny-pre"))) as z:  # "Download (BERT Explorer format)"
        z.extractall(tmp_path)
    text = pretrain_report(MINILM, Stamp(), "tiny-pre", res["key"], res["metrics"], done, args)
    node = nbr.run(text.replace(repr(SAVED_MODEL), repr(str(tmp_path / safe_filename("tiny-pre")))), monkeypatch)
    got = nbr.numbers(node)
    assert done.step == 6 and None not in (done.mlm_top1, done.mlm_top5, done.nsp_acc)
    assert (got["step"], got["top1"], got["top5"], got["nsp_acc"]) == (6, done.mlm_top1, done.mlm_top5, done.nsp_acc)
    evals, start = of_type(res["metrics"], PretrainEval), last(res["metrics"], PretrainStart)
    left = plateau_exit(evals, start.baseline_token)
    assert got["left_plateau_at"] == (left.step if left else None) and len(evals) == 2
    want = probe_predictions(bundle, args.probe, k=5)
    assert [[t for t, _ in g] for g in got["guesses"]] == [[t for t, _ in g] for g in want] and len(want) == 2
    # the page shows the guesses rounded to 4 decimals: a last digit may round the other way
    np.testing.assert_allclose(
        [[p for _, p in g] for g in got["guesses"]], [[p for _, p in g] for g in want], atol=1e-4
    )
    assert nbr.figures(node) == 1 + 2  # the curves, one bar chart a [MASK]


@pytest.mark.slow
def test_a_next_word_runs_notebook_continues_its_probe_with_its_downloaded_model(tmp_path):
    """A next-word run's "Try it" cells, `folder` set to its unzipped download (run here, not in a
    kernel: the report cells are the MLM run's): the same greedy continuation as the app's."""
    import io
    import json
    import os
    import zipfile

    import bert
    from app.export.notebook import NUMBERS, SAVED_MODEL
    from app.export.training_notebooks import pretrain_report
    from app.jobs.worker import StopEvent
    from app.training.downloads import model_zip
    from bert.analysis.generate import continue_text
    from bert.train.events import PretrainDone, last
    from bert.train.next_word import next_word_probe
    from tests.helpers import pretrain_fn, run_fn, tiny_corpus

    args = _pretrain_args(objective="next-word")
    events = run_fn(pretrain_fn(args, tiny_corpus(), "tiny-next", "tiny"), StopEvent(job_id=4344))
    done = last(events, PretrainDone)
    with zipfile.ZipFile(io.BytesIO(model_zip(done.bundle, "tiny-next"))) as z:
        z.extractall(tmp_path)
    node = nbr.read(pretrain_report(MINILM, Stamp(), "tiny-next", "session:tiny-next", events, done, args))
    *_, load, try_it = _code(node)
    load = load.replace(repr(SAVED_MODEL), repr(str(tmp_path / "tiny-next")))
    space = {"bert": bert, "os": os, "json": json}
    exec(load + "\n" + try_it, space)
    got = space[NUMBERS]
    want = continue_text(done.bundle, next_word_probe(args.probe), 20)
    assert got["written"] == [s.token for s in want.steps] and got["written"]
    np.testing.assert_allclose(got["probs"], [s.prob for s in want.steps], atol=1e-5)


@pytest.fixture(scope="module")
def decoder_run() -> dict:
    """A finished encoder-decoder run as the Decoder page keeps it (tests/helpers.py), saved under a run code."""
    from tests.helpers import tiny_seq2seq_run

    return {**tiny_seq2seq_run(), "code": "K7QX2M", "saved": True}


@pytest.mark.slow
def test_the_decoding_notebook_redraws_the_pages_decoding_from_its_numbers(decoder_run, monkeypatch):
    """The run's model has no download: the notebook carries the decoding the page computed
    (outputs, probabilities, attention within 1e-6) and its curves, and draws them with the page's
    builders; the run code says where the run reopens."""
    from app.export.training_notebooks import decoding
    from app.trained_decoder import example_source
    from bert.train.events import last
    from bert.train.seq2seq import Seq2SeqDone

    bundle, text = decoder_run["bundle"], example_source(decoder_run)
    tr = bundle.trace(text)
    L, T = tr.cross.shape[0], len(tr.outputs)
    assert T > 1 and L == 2
    nb_text = decoding(
        MINILM, Stamp(), bundle.name, "Reverse <b>", "K7QX2M", decoder_run["metrics"], text, tr, T - 2, 1
    )
    assert len(nb_text.encode()) < 200_000 and "K7QX2M" in nb_text and "<b>" not in nb_text
    node = nbr.run(nb_text, monkeypatch)
    got = nbr.numbers(node)
    done = last(decoder_run["metrics"], Seq2SeqDone)
    assert (got["exact_match"], got["best_step"]) == (done.exact_match, done.best_step)
    assert got["outputs"] == tr.outputs
    np.testing.assert_allclose(got["probs"], tr.probs, atol=1e-5)
    np.testing.assert_allclose(got["cross"], tr.cross[1].mean(0).numpy(), atol=1e-5)
    np.testing.assert_allclose(got["self"], tr.selfs[1].mean(0).numpy(), atol=1e-5)
    assert nbr.figures(node) == 3  # the curves, the cross- and the self-attention
    assert f"Step {T - 1}: it read {tr.inputs[T - 2]} and wrote {tr.outputs[T - 2]}" in nbr.printed(node)


@pytest.mark.slow
def test_the_pages_offer_their_notebooks_with_their_inputs(pretrain_run, decoder_run, monkeypatch):
    """In AppTest (no server to click): Compare's "One word in many sentences" offers its notebook,
    built from the page's word, sentences, senses and layer; a finished pre-training run offers its
    report, with its events and its model to load from its download; the Decoder page its decoding."""
    from streamlit.testing.v1 import AppTest

    from app.export.notebook import SAVED_MODEL
    from app.run_session import session as ts
    from app.trained_decoder import RESULT, example_source
    from bert.analysis.words import sense_examples
    from tests.helpers import ENTRY, offered_downloads, select_session_model

    offered = offered_downloads(monkeypatch, ("Open as a notebook",), by="key")
    at = AppTest.from_file(ENTRY, default_timeout=180)
    at.switch_page("pages/compare.py").run()
    at.radio(key="cmp_view").set_value("One word in many sentences").run()
    at.slider(key="sense_layer_6").set_value(2).run()
    assert not at.exception, [e.value for e in at.exception]
    node = nbr.read(offered["sense_map_ipynb"]().decode("utf-8"))
    word, sentences, senses = sense_examples()
    assert (_assigned(node, "word"), _assigned(node, "sentences")) == (word, sentences)
    assert (_assigned(node, "senses"), _assigned(node, "layer")) == (senses, 2)
    assert "bundle = bert.load('minilm-l6')" in "".join(node.cells[2].source)

    select_session_model(at, "tiny-pre", pretrain_run["bundle"])
    at.session_state[ts.PT_RESULTS] = [pretrain_run]
    at.switch_page("pages/pretrain.py").run()
    assert not at.exception, [e.value for e in at.exception]
    node = nbr.read(offered["pt_curves_4343_ipynb"]().decode("utf-8"))
    code = _code(node)
    assert _assigned(node, "folder") == SAVED_MODEL and "pretrain_curves(events, 6)" in code[2]
    assert len(code[2]) > 1000 and _assigned(node, "text") == pretrain_run["info"]["args"].probe

    at.session_state[RESULT] = decoder_run
    at.switch_page("pages/decoder.py").run()
    assert not at.exception, [e.value for e in at.exception]
    node = nbr.read(offered["s2s_cross_ipynb"]().decode("utf-8"))
    assert _assigned(node, "text") == example_source(decoder_run) and "K7QX2M" in "".join(node.cells[4].source)
