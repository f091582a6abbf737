"""The Fine-tuning page's other task shapes in AppTest: "label every word" and "find the answer",
each trained on a good upload through to its results (tiny model; a picked word's attention in the
tagger's try-it box), and a bad upload refused with a message. AppTest cannot upload: the bytes go
where the page keeps an upload, as a real one does."""

import base64
import json
import time

import numpy as np
import pytest

pytest.importorskip("streamlit")

from app import state  # noqa: E402
from app.class_store.service import JOINED  # noqa: E402
from app.run_session import session as ts  # noqa: E402
from app.training.task_head_results import NOT_ENTITIES, task_head_scores  # noqa: E402
from bert.data.qa_demo import qa_demo  # noqa: E402
from bert.tagging import word_attention  # noqa: E402
from tests.helpers import APP_TIMEOUT, started_app, tiny_bundle  # noqa: E402

CONLL = b"".join(f"the O\n{w} B-THING\nwas O\ngood O\n\n".encode() for w in ("film", "movie", "plot", "story") * 6)
POS = b"".join(f"the DT\n{w} NN\nwas VBD\ngood JJ\n\n".encode() for w in ("film", "movie", "plot", "story") * 6)


def _ok(at):
    assert not at.exception, [e.value for e in at.exception]


def _squad(passages: int = 8) -> bytes:
    paragraphs = {}
    for q in qa_demo(passages=passages).questions:
        qas = paragraphs.setdefault(q.context, [])
        qas.append(
            {"id": q.id, "question": q.question, "answers": [{"text": t, "answer_start": s} for t, s in q.answers]}
        )
    data = [{"title": "demo", "paragraphs": [{"context": c, "qas": qas} for c, qas in paragraphs.items()]}]
    return json.dumps({"version": "1.1", "data": data}).encode()


def _open(head: str, data: bytes, name: str):
    at = started_app()
    at.session_state[state.USER_MODELS]["tiny"] = tiny_bundle(name="tiny")
    at.session_state[state.USER_MODEL_IDS]["tiny"] = "session:tiny:test"
    at.session_state[f"hd_{head}_upload"] = {"name": name, "data": data, "id": "f1"}
    at.switch_page("pages/finetune.py").run()
    at.radio(key="ft_shape").set_value(head).run()
    at.radio(key=f"hd_{head}_source").set_value(ts.UPLOAD).run()
    _ok(at)
    return at


def _train(at, head: str, **settings):
    at.selectbox(key=f"hd_{head}_base").set_value("session:tiny")
    for k, v in settings.items():
        at.number_input(key=f"hd_{head}_{k}").set_value(v)
    at.run()
    _ok(at)
    at.button(key="hd_start").click().run()
    _ok(at)
    end = time.time() + 120
    while at.session_state[ts.HD_JOB] is not None and time.time() < end:  # as the live fragment reruns
        time.sleep(0.3)
        at.run()
        _ok(at)
    assert at.session_state[ts.HD_JOB] is None, "the job did not finish in time"
    assert not at.error, [e.value for e in at.error]
    return at.session_state[ts.HD_RESULTS][-1]


@pytest.mark.slow
@pytest.mark.parametrize("board", ["sqlite"], indirect=True)
def test_label_every_word_trains_on_an_upload_and_shows_its_results(board, monkeypatch):
    at = _open("tagger", CONLL, "things.conll")
    assert any("24 sentences, 96 words, 2 tags" in s.value for s in at.success)
    res = _train(at, "tagger", max_length=16, lr=2e-3, epochs=3)
    assert res["status"] == "done" and res["bundle"].is_tagger and res["code"]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["word accuracy"].endswith("%") and metrics["entity F1"].endswith("%")
    assert "4. Results" in [h.value for h in at.header]
    assert {"Per tag", "The worst sentences", "Try it"} <= {s.value for s in at.subheader}
    at.text_input(key=f"hd_try_{res['job_id']}").set_value("the **film** <b>was</b> good").run()
    _ok(at)
    assert not at.error and any("THING" in m.value for m in at.markdown)
    assert any("\\<" in m.value for m in at.markdown) and not any("<b>" in m.value for m in at.markdown)  # escaped
    words = at.selectbox(key=f"hd_att_word_{res['job_id']}_15")  # the * * film * * < b > was < / b > good
    assert words.options[3] == "film (4)" and at.selectbox(key=f"hd_att_head_{res['job_id']}").value == -1
    words.set_value(3)
    at.selectbox(key=f"hd_att_head_{res['job_id']}").set_value(1).run()
    _ok(at)
    (chart,) = [json.loads(c.proto.spec) for c in at.get("plotly_chart") if "looks" in c.proto.spec]
    assert chart["layout"]["title"]["text"] == "Where «film» looks: layer 2, head 2"  # the last layer by default
    y = chart["data"][0]["y"]  # plotly's typed-array encoding
    y = np.frombuffer(base64.b64decode(y["bdata"]), y["dtype"])
    assert len(chart["data"][0]["x"]) == len(y) == 17 and abs(y.sum() - 1) < 1e-4  # [CLS], 15 words, [SEP]
    want = word_attention(res["bundle"], "the **film** <b>was</b> good").weights[1, 1, 3]
    assert np.abs(y - want.numpy()).max() < 1e-5
    monkeypatch.setenv("BERT_EXPLORER_BOARD", "1")  # posted to the class board like a classifier's run
    code, _ = board.new_board()
    at.session_state[JOINED] = code
    at.run()
    at.text_input(key="ft_board_nick").input("Ada").run()
    at.button(key=f"ft_board_post_{res['job_id']}").click().run()
    _ok(at)
    assert any("Posted to board" in s.value for s in at.success)
    (e,) = board.entries(code)
    assert e["task"] == "tagger" and e["nickname"] == "Ada" and e["pooling"] is None
    assert e["accuracy"] == res["done"].scores["accuracy"] and e["other_score"] == res["done"].scores["f1"]
    assert e["val_accuracy"] and e["train_loss"]


def test_entity_f1_only_for_entity_tags_and_said_why_otherwise():
    scores = {"accuracy": 0.9, "f1": None}
    metrics, note = task_head_scores(True, scores, ["DT", "NN", "VBD"])
    assert [m for m, _ in metrics] == ["word accuracy"] and note == NOT_ENTITIES and "B-PER" in note
    metrics, note = task_head_scores(True, {"accuracy": 0.9, "f1": 0.5}, ["O", "B-PER", "I-PER"])
    assert metrics == [("word accuracy", "90.0 %"), ("entity F1", "50.0 %")] and note == ""
    assert [m for m, _ in task_head_scores(False, {"f1": 80.0}, [])[0]] == ["exact match", "F1"]


@pytest.mark.slow
def test_a_part_of_speech_tagger_shows_no_entity_f1_and_says_why():
    at = _open("tagger", POS, "pos.conll")
    res = _train(at, "tagger", max_length=16, lr=2e-3, epochs=1)
    assert res["status"] == "done" and res["done"].scores["f1"] is None
    labels = [m.label for m in at.metric]
    assert "word accuracy" in labels and "entity F1" not in labels
    assert any(NOT_ENTITIES in c.value.replace("\\", "") for c in at.caption)


def test_label_every_word_refuses_a_bad_file_with_a_message():
    at = _open("tagger", b"a O\nb O\n", "one-tag.conll")
    assert any("one tag only" in e.value for e in at.error)
    assert at.button(key="hd_start").disabled


@pytest.mark.slow
def test_find_the_answer_trains_on_a_squad_upload_and_answers():
    at = _open("reader", _squad(), "questions.json")
    assert any("40 questions over 8 passages" in s.value for s in at.success)
    res = _train(at, "reader", max_length=64, lr=1e-3, epochs=1)
    assert res["status"] == "done" and res["bundle"].is_reader
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["exact match"].endswith("%") and metrics["F1"].endswith("%")
    assert len(at.expander) >= 2  # answered validation questions
    at.text_input(key=f"hd_question_{res['job_id']}").set_value("Where was Clara born?").run()
    _ok(at)
    assert not at.error and any(c.value.startswith("Answer:") for c in at.caption)


def test_find_the_answer_refuses_a_bad_file_with_a_message():
    at = _open("reader", b"{not json", "broken.json")
    assert any("is not JSON" in e.value for e in at.error)
    assert at.button(key="hd_start").disabled


def test_an_upload_is_read_once_however_often_the_page_reruns(monkeypatch):
    from app.training import task_head_view

    reads = []
    real = task_head_view.read_squad

    def counting(data, name):
        reads.append(name)
        return real(data, name)

    monkeypatch.setattr(task_head_view, "read_squad", counting)
    at = _open("reader", _squad(), "questions.json")
    for _ in range(3):  # a slider moved, a fragment's rerun, another click
        at.run()
        _ok(at)
    assert reads == ["questions.json"] and any("40 questions over 8 passages" in s.value for s in at.success)
    at.session_state["hd_reader_upload"] = {"name": "other.json", "data": _squad(4), "id": "f2"}
    at.run()
    assert reads == ["questions.json", "other.json"]  # a new file is read, once


def test_each_shape_shows_its_budget_and_keeps_start_off_over_a_cap():
    at = started_app()
    at.switch_page("pages/finetune.py").run()
    for head in ("tagger", "reader"):
        at.radio(key="ft_shape").set_value(head).run()
        _ok(at)
        assert any("MB of memory" in c.value for c in at.caption), [c.value for c in at.caption]
        assert not at.error and not at.button(key="hd_start").disabled  # the defaults fit
        at.number_input(key=f"hd_{head}_max_length").set_value(512).run()
        _ok(at)
        assert any("Too big for this server" in e.value for e in at.error), [e.value for e in at.error]
        assert at.button(key="hd_start").disabled


def test_a_link_opens_the_page_on_its_task_shape():
    at = started_app()
    at.switch_page("pages/finetune.py")
    at.query_params["shape"] = "words"
    at.run()
    _ok(at)
    assert at.radio(key="ft_shape").value == "tagger" and "1. Data" in [h.value for h in at.header]
    assert at.button(key="hd_start") is not None


def test_lesson_five_shows_each_heads_scores_fresh_or_trained():
    from app.lessons.task_heads import FRESH_TAGS, span_scores, tag_scores
    from tests.helpers import minilm_tiny_classifier

    fresh = tag_scores(minilm_tiny_classifier())  # a fresh head on any encoder: the output's shape
    assert list(fresh.data[0].x) == FRESH_TAGS and len(fresh.data[0].y) == 8  # the sentence's 8 words
    spans = span_scores(minilm_tiny_classifier())
    assert [t.name for t in spans.data] == ["P(start)", "P(end)"]
    assert abs(sum(spans.data[0].y) - 1) < 1e-4  # a distribution over the passage's tokens


@pytest.mark.slow
@pytest.mark.parametrize("board", ["sqlite"], indirect=True)
def test_a_tagger_run_shown_live_on_the_class_board(board, monkeypatch):
    """A running tagger's job shown live: the board draws its word accuracy so far, and its last
    state (stopped, with the kept model's scores) is written when it ends."""
    from app import students
    from app.jobs.local import manager
    from app.jobs.spec import TASK_HEAD
    from app.jobs.task_head_job import task_head_spec
    from app.jobs.worker import run_job
    from app.training import board_buttons
    from bert.data.tagged import read_tagged
    from bert.train.events import TaskHeadEval, of_type
    from bert.train.task_head_args import TaskHeadArgs

    monkeypatch.setenv("BERT_EXPLORER_BOARD", "1")
    code, _ = board.new_board()
    at = started_app()
    at.session_state[JOINED] = code
    at.switch_page("pages/finetune.py").run()
    at.radio(key="ft_shape").set_value("tagger").run()
    args = TaskHeadArgs(threads=1, lr=2e-3, epochs=500, evals=2, max_length=16, freeze_embeddings=False)
    spec = task_head_spec("", "tiny", args, read_tagged(CONLL, "things.conll"), title="live")
    jm = manager()
    base = tiny_bundle(name="tiny")
    job, _ = jm.submit_for(
        at.session_state[students.OWNER], TASK_HEAD, lambda stop: run_job(spec, stop, base=base), "live"
    )
    job.info = {"base_name": "tiny", "args": args, "code": "ABCDEF", "head": "tagger"}  # as start_head does
    try:
        at.session_state[ts.HD_JOB] = job.id
        deadline = time.time() + APP_TIMEOUT
        while len(of_type(job.metrics, TaskHeadEval)) < 2 and time.time() < deadline:
            at.run()
            time.sleep(0.3)
        at.text_input(key=board_buttons.LIVE_NICK).input("Ada").run()
        at.button(key="ft_board_go_live").click().run()
        _ok(at)
        assert any("live on board" in s.value for s in at.success)
        (r,) = board.live_runs(code)
        assert r["task"] == "tagger" and r["state"] == "running" and r["val_accuracy"] and r["line"].startswith("step")
        viewer = started_app()  # another student, on the board
        viewer.session_state[JOINED] = code
        viewer.switch_page("pages/board.py").run()
        _ok(viewer)
        chart = json.loads(next(e for e in viewer.main if getattr(e, "type", "") == "plotly_chart").proto.spec)
        assert chart["layout"]["yaxis2"]["title"]["text"] == "word accuracy"
        assert chart["data"][1]["name"] == "validation word accuracy"
    finally:
        job.stop()
        jm.wait(job, 30)
    at.run()
    (r,) = board.live_runs(code)
    assert r["state"] == "stopped" and r["progress"] == 1.0 and r["accuracy"] is not None
