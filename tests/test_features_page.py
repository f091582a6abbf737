"""The Features page (pages/features.py, app/features/) and its figures (app/figures/features.py):
the figures on hand-made numbers, then the page through AppTest on a tiny masked-word model with
MiniLM's vocabulary: training beside the control, the quality table, a card, a sentence's
features, steering, and bad input said clearly, never a traceback."""

from __future__ import annotations

import numpy as np
import pytest

from app import students
from app.figures.features import activation_histogram, training_curves
from bert.analysis.dictionary import DictionaryStep
from bert.data.corpus.fetch import bert_cache_dir
from tests.helpers import minilm_tiny_classifier, minilm_tiny_mlm, select_session_model, started_app

TIMEOUT = 300


def test_training_curves_and_the_histogram():
    steps = [DictionaryStep(step=s, steps=20, variance_explained=s / 20, l0=4, dead=0.5, seconds=1) for s in (10, 20)]
    fig = training_curves([("<m>", steps), ("control", steps[:1])])
    assert [t.name for t in fig.data] == [
        "&lt;m&gt;: variance explained",
        "&lt;m&gt;: dead features",
        "control: variance explained",
        "control: dead features",
    ]
    assert list(fig.data[0].y) == [0.5, 1.0] and fig.data[1].line.dash == "dot"
    assert fig.data[0].line.color != fig.data[2].line.color
    fig = activation_histogram(np.array([2, 3]), np.array([0.0, 1.0, 2.0]), 7)
    assert list(fig.data[0].x) == [0.5, 1.5] and list(fig.data[0].y) == [2, 3]


def _ok(at):
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def _job(at):
    """The session's dictionary job (the local backend's)."""
    from app.jobs.local import manager
    from app.run_session import session as ts

    return manager().get(at.session_state[students.OWNER], at.session_state[ts.DC_JOB])


def _finish(at):
    """Wait for the session's dictionary job to end, then run the page (which opens its run)."""
    from app.jobs.local import manager

    job = _job(at)
    assert job is not None and manager().wait(job, TIMEOUT), "the job ends"
    at.run()
    _ok(at)


TEXTS = ["the cat sat on the mat", "a dog ran in the park", "she reads a good book", "the sun is very hot today"]


@pytest.mark.slow
def test_training_is_a_job_whose_run_reopens_by_its_code(monkeypatch):
    """Start queues a job (no place for analyses held); its live panel has the curves and Stop;
    when it ends the quality table shows both dictionaries and the run code; typed in another
    session, the code reopens the same dictionaries."""

    def texts(n, held, **kw):
        return (TEXTS * 10)[:n], TEXTS

    for reader in ("app.jobs.dictionary_job", "app.features.training_view"):  # the two that read the corpora
        monkeypatch.setattr(f"{reader}.corpus_texts", texts)
    at = started_app(TIMEOUT)
    model = minilm_tiny_mlm()
    select_session_model(at, "tiny-mlm", model)
    at.switch_page("pages/features.py").run()
    _ok(at)
    at.selectbox(key="ft_features").set_value(256)
    at.selectbox(key="ft_k").set_value(8)
    at.number_input(key="ft_steps").set_value(20)
    at.number_input(key="ft_sentences").set_value(40)
    assert any("MB of memory" in c.value for c in at.caption), "the memory estimate before Start"
    at.button(key="dc_start").click().run()
    assert not at.exception, [e.value for e in at.exception]
    job = _job(at)
    assert job is not None and job.kind == "dictionary" and job.info["code"]
    _finish(at)
    table = at.table[0].value
    assert list(table.columns) == ["this model", "random-weights control"]
    assert table.loc["L0: features active a token"].tolist() == ["8.0", "8.0"]
    code = job.info["code"]
    assert any(code in c.value for c in at.caption), "the run code is shown"
    other = started_app(TIMEOUT)  # another session, on the same model
    select_session_model(other, "tiny-mlm", model)
    other.switch_page("pages/features.py").run()
    other.text_input(key="ft_reopen_code").input(code.lower())
    other.button(key="ft_reopen").click().run()
    _ok(other)
    assert other.table[0].value.equals(table)
    other.text_input(key="ft_reopen_code").input("NOPE").run()
    other.button(key="ft_reopen").click().run()
    assert any("6 letters and digits" in e.value for e in other.error)


@pytest.mark.slow
def test_train_beside_the_control_then_read_and_steer(monkeypatch):
    if not (bert_cache_dir() / "corpora" / "brown.jsonl").is_file():
        pytest.skip("the corpora are not built here (`make data`)")
    monkeypatch.setenv("BERT_EXPLORER_DICT_MAX_TOKENS", "3000")
    at = started_app(TIMEOUT)
    select_session_model(at, "tiny-mlm", minilm_tiny_mlm())
    at.switch_page("pages/features.py").run()
    _ok(at)
    assert [t.value for t in at.title] == ["Features, not neurons"]
    at.number_input(key="ft_layer").set_value(2)
    at.selectbox(key="ft_features").set_value(256)
    at.selectbox(key="ft_k").set_value(8)
    at.number_input(key="ft_steps").set_value(50)
    at.number_input(key="ft_sentences").set_value(250)
    at.button(key="dc_start").click().run()
    _finish(at)
    table = at.table[0].value
    assert list(table.columns) == ["this model", "random-weights control"]
    assert table.loc["L0: features active a token"].tolist() == ["8.0", "8.0"]
    assert any("at most 3,000 word pieces" in i.value for i in at.info), "the token cap is said"
    assert any("Feature 0" in m.value for m in at.markdown)
    at.number_input(key="ft_feature").set_value(5).run()
    _ok(at)
    assert any("Feature 5" in m.value for m in at.markdown)
    at.text_input(key="ft_sentence").input("<b>cats</b> purr").run()
    _ok(at)
    at.text_input(key="ft_steer_text").input("no gap here").run()
    assert not at.exception
    assert any("no [MASK]" in e.value.replace("\\", "") for e in at.error)
    at.text_input(key="ft_steer_text").input("The cat [MASK] on the mat.").run()
    at.number_input(key="ft_steer_value").set_value(40.0).run()
    _ok(at)
    assert any("[MASK] at token 3" in m.value for m in at.markdown)


@pytest.mark.slow
def test_a_classifier_is_told_why_the_page_needs_a_masked_word_head():
    at = started_app(TIMEOUT)
    select_session_model(at, "tiny-clf", minilm_tiny_classifier())
    at.switch_page("pages/features.py").run()
    _ok(at)
    assert any("masked-word head" in i.value for i in at.info)
    assert "dc_start" not in [b.key for b in at.button], "nothing to train"


@pytest.mark.slow
def test_the_settings_fit_the_servers_caps(monkeypatch):
    monkeypatch.setenv("BERT_EXPLORER_DICT_MAX_FEATURES", "100")
    monkeypatch.setenv("BERT_EXPLORER_DICT_MAX_STEPS", "5")
    monkeypatch.setenv("BERT_EXPLORER_DICT_MAX_TEXTS", "40")
    at = started_app(TIMEOUT)
    select_session_model(at, "tiny-mlm", minilm_tiny_mlm())
    at.switch_page("pages/features.py").run()
    _ok(at)
    assert at.selectbox(key="ft_features").options == ["100"]
    assert at.number_input(key="ft_steps").value == 5
    assert at.number_input(key="ft_sentences").value == 40


@pytest.mark.slow
def test_the_page_opens_with_the_built_in_dictionary_and_a_link_opens_a_feature():
    """minilm-l6 ships a dictionary: the page shows it before anything is trained (its quality, its
    purity beside the controls'), and a link's feature is the card's, whose numbers are the model's."""
    from bert.analysis.dictionary_builtin import builtin_dictionary
    from bert.analysis.dictionary_features import encode_all, feature_card
    from bert.analysis.dictionary_vectors import corpus_texts, gather_activations

    shipped = builtin_dictionary("minilm-l6")
    if shipped is None or not (bert_cache_dir() / "corpora" / "brown.jsonl").is_file():
        pytest.skip("no built-in dictionary or no corpora here")
    at = started_app(TIMEOUT)
    at.query_params["feature"] = "7"
    at.switch_page("pages/features.py").run()
    _ok(at)
    assert any(s.value.startswith("The built-in dictionary: layer") for s in at.header)
    table = at.table[0].value
    assert list(table.columns) == ["this model"]
    purity = shipped.purity["this model"]
    assert table.loc["part-of-speech purity (top-50 contexts)", "this model"].startswith(f"{purity['mean']:.3f}")
    assert table.loc["variance explained (held out)", "this model"] == f"{shipped.quality.variance_explained:.3f}"
    import bert

    b, d = bert.load("minilm-l6"), shipped.dictionary
    _, held = corpus_texts(0, 300)
    acts = gather_activations(b, d.layer, held)
    card = feature_card(b, d, acts, encode_all(d, acts), 7)
    assert any(f"**Feature 7** is active on **{card.fires:,}**" in m.value for m in at.markdown), "the link's feature"
    assert any(btn.label == "Open as a notebook" for btn in at.get("download_button")), "the built-in opens elsewhere"
    at.number_input(key="ft_feature").set_value(9).run()
    _ok(at)
    assert at.query_params["feature"] == ["9"] or at.query_params["feature"] == "9", "the link follows the card"
