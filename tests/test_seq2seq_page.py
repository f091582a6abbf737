"""The Decoder page (AppTest): it renders, trains a tiny encoder-decoder as a job and shows its
result and a step-by-step decoding; bad input gets a message, never a traceback.

AppTest cannot upload a file: the tests put the file's bytes where the page keeps an upload
(app.seq2seq.session UPLOAD), which is what the page does with a real upload."""

import time

import pytest

pytest.importorskip("streamlit")

from app import (
    state,  # noqa: E402
    trained_decoder,  # noqa: E402
)
from app.seq2seq import session as s2s  # noqa: E402
from app.seq2seq import view  # noqa: E402
from bert.train.precision import server_precision  # noqa: E402
from bert.train.seq2seq import Seq2SeqStart, Seq2SeqStep  # noqa: E402
from tests.helpers import SPECIALS, started_app, use_cache  # noqa: E402

PAGE = "pages/decoder.py"
START_PAGE = PAGE  # where `fresh_at` (tests/conftest.py) opens the app


def _ok(at):
    assert not at.exception, [e.value for e in at.exception]


@pytest.fixture(autouse=True)
def own_cache(monkeypatch, tmp_path):
    """The runs this file saves: a cache folder of its own (before the app starts)."""
    use_cache(monkeypatch, tmp_path / "cache")


def upload(at, data: bytes, name="pairs.csv"):
    at.session_state[s2s.UPLOAD] = {"name": name, "data": data, "id": name}
    at.radio(key="s2s_task").set_value("upload").run()
    _ok(at)


def test_page_renders_with_the_default_task(fresh_at):
    assert [h.value for h in fresh_at.header][:4] == ["1. Task", "2. Encoder and decoder", "3. Train", "4. Result"]
    assert not fresh_at.error
    assert not fresh_at.button(key="s2s_start").disabled
    assert any("reverse order" in m.value for m in fresh_at.markdown)


def test_the_progress_line_says_which_precision_the_run_trains_in():
    start = Seq2SeqStart(steps=10, train_pairs=9, valid_pairs=1, parameters=5, trainable=5, vocab=20, precision="bf16")
    step = Seq2SeqStep(step=3, epoch=0, loss=1.5, token_acc=0.5, lr=1e-3, seconds=1.0)
    assert view.progress_line([start], 10)[1].endswith("running… · in bf16")
    assert view.progress_line([start, step], 10)[1] == "Step 3 of 10 · loss 1.500 · in bf16"
    assert view.progress_line([Seq2SeqStart(steps=10, train_pairs=9, valid_pairs=1, parameters=5, trainable=5,
                                            vocab=20), step], 10)[1] == "Step 3 of 10 · loss 1.500"  # fmt: skip


def test_a_tiny_run_trains_and_decodes(fresh_at):
    fresh_at.number_input(key="s2s_steps").set_value(40)
    fresh_at.number_input(key="s2s_eval").set_value(20).run()  # the Start button's settings are those drawn before it
    fresh_at.button(key="s2s_start").click().run()
    _ok(fresh_at)
    assert not fresh_at.error, [e.value for e in fresh_at.error]
    end = time.time() + 120
    while fresh_at.session_state[s2s.JOB] is not None and time.time() < end:
        time.sleep(0.3)
        fresh_at.run()
        _ok(fresh_at)
    assert fresh_at.session_state[s2s.JOB] is None, "the job did not finish in time"
    res = fresh_at.session_state[trained_decoder.RESULT]
    assert res is not None and res["bundle"] is not None
    assert "Held-out exact match" in [m.label for m in fresh_at.metric]
    ran_in = server_precision("cpu")  # what the page gave the run: the server's, on the CPU
    assert any(c.value.endswith(f" · in {ran_in}.") for c in fresh_at.caption), [c.value for c in fresh_at.caption]
    assert f" in {ran_in}; kept: step" in res["bundle"].card
    assert "Watch it decode" in [s.value for s in fresh_at.subheader]
    assert fresh_at.slider(key="s2s_step").max >= 1
    fresh_at.text_input(key="s2s_text").set_value("cat <b>moon</b> egg").run()  # typed markup stays text
    _ok(fresh_at)
    assert any("Output so far" in m.value for m in fresh_at.markdown)
    fresh_at.text_input(key="s2s_text").set_value("cat zebra egg").run()  # a word the task never had
    _ok(fresh_at)
    said = [w.value for w in fresh_at.warning if "Not in this model's vocabulary" in w.value]
    assert said and "**zebra**" in said[0] and "**cat**" not in said[0] and "It knows" in said[0]
    assert any(e.label.endswith("words it knows") for e in fresh_at.expander)
    listed = [m.value for m in fresh_at.markdown if m.value.startswith("apple, ")]
    assert listed and "moon" in listed[0].split(", ") and "zebra" not in listed[0]
    # kept under its run code: a fresh session (a refresh, another day) reopens it by that code
    code = res["code"]
    assert res["saved"] and any(f"Run code **{code}**" in m.value for m in fresh_at.markdown), [
        m.value for m in fresh_at.markdown
    ]
    fresh = started_app()
    fresh.switch_page(PAGE).run()
    fresh.text_input(key="s2s_reopen_code").input(code.lower()).run()
    fresh.button(key="s2s_reopen").click().run()
    _ok(fresh)
    again = fresh.session_state[trained_decoder.RESULT]
    same = again["bundle"].generate(["cat moon egg"]) == res["bundle"].generate(["cat moon egg"])
    assert again["code"] == code and same
    assert [m.value for m in fresh.metric] == [m.value for m in fresh_at.metric]  # its scores read back
    assert any(c.value.endswith(f" · in {ran_in}.") for c in fresh.caption)  # and the precision it ran in
    assert any(f"Run {code} is open" in i.value for i in fresh.info)
    assert any("Output so far" in m.value for m in fresh.markdown)
    # a Pre-training page's box sends it here, and a typed path is only ever a bad code
    fresh.switch_page("pages/pretrain.py").run()
    fresh.text_input(key="pt_reopen_code").input(code).run()
    fresh.button(key="pt_reopen").click().run()
    _ok(fresh)
    assert any("reopen it on the Decoder on top page" in e.value for e in fresh.error), [e.value for e in fresh.error]
    fresh.switch_page(PAGE).run()
    fresh.text_input(key="s2s_reopen_code").input("../../x").run()
    fresh.button(key="s2s_reopen").click().run()
    assert any("A run code is 6 letters" in e.value for e in fresh.error), [e.value for e in fresh.error]


@pytest.mark.parametrize(
    "data, said",
    [
        (b"source,target\n" + b"a b,b a\n" * 11 + b"c d,\n", "empty target"),
        (b"a b,b a\n" * 11 + ("w " * 10_000).encode() + b",x\n", "10,000 words"),
        (b"a b,b a\n", "1 pair"),
    ],
)
def test_bad_uploads_say_why(fresh_at, data, said):
    upload(fresh_at, data)
    assert any(said in e.value for e in fresh_at.error), [e.value for e in fresh_at.error]
    assert fresh_at.button(key="s2s_start").disabled


def test_a_member_whose_weights_cannot_be_a_decoder_is_refused(fresh_at):
    """An ALBERT (one layer shared by every depth, narrow embeddings): the page says why."""
    import bert
    from bert.config import BertConfig
    from bert.model import BertForPreTraining

    cfg = BertConfig(vocab_size=20, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=37, model_type="albert", embedding_size=16)  # fmt: skip
    words = [*SPECIALS, *"abcdefghijklmno"]
    b = bert.Bundle(model=BertForPreTraining(cfg), tokenizer=bert.Tokenizer(words), name="albertish")
    fresh_at.session_state[state.USER_MODELS]["albertish"] = b
    fresh_at.session_state[state.USER_MODEL_IDS]["albertish"] = "session:albertish:test"
    fresh_at.run()
    fresh_at.selectbox(key="s2s_encoder").set_value(state.session_key("albertish")).run()
    _ok(fresh_at)
    assert any("shared by every depth" in e.value for e in fresh_at.error), [e.value for e in fresh_at.error]
    assert fresh_at.button(key="s2s_start").disabled


def test_a_step_over_the_servers_tokens_is_refused_at_start(fresh_at):
    """Batch 256 of the built-in task's pairs is past the tokens a step may read (the other pages'
    rule): the page says so before Start, whose button is off, and nothing is queued."""
    fresh_at.number_input(key="s2s_batch").set_value(256).run()
    _ok(fresh_at)
    assert fresh_at.button(key="s2s_start").disabled
    said = [e.value for e in fresh_at.error]
    assert any("Too big for this server: batch 256" in e and "tokens per step" in e for e in said), said
    assert fresh_at.session_state[s2s.JOB] is None


def test_the_jobs_memory_is_shown_before_start_and_a_job_past_the_servers_is_refused(fresh_at, monkeypatch):
    """Under the settings, before Start: the job's estimate (a step's tokens and its MB, the pairs
    and the scoring counted); past BERT_EXPLORER_MAX_JOB_MB the page says why, Start is off and
    nothing is queued (the job's own check: test_seq2seq_train.py)."""
    said = [c.value for c in fresh_at.caption]
    assert any("this job needs about" in c and "MB of memory (at most 1,024)" in c for c in said), said
    assert not fresh_at.button(key="s2s_start").disabled
    monkeypatch.setenv("BERT_EXPLORER_MAX_JOB_MB", "5")
    fresh_at.run()
    _ok(fresh_at)
    refused = [e.value for e in fresh_at.error]
    assert any("this job would take about" in e and "allows 5 MB per job" in e for e in refused), refused
    assert fresh_at.button(key="s2s_start").disabled
    assert fresh_at.session_state[s2s.JOB] is None
