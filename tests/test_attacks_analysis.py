"""The analyses a class can run at once are bounded.

1. Analyses not in the cache wait for one of BERT_EXPLORER_MAX_ANALYSES places, first come first
   served; each caller gets its own result, a student who waits reads "Busy: N ahead of you",
   and twelve students asking for the same text at once run the model once per place at most.
   Peak memory of many concurrent long analyses (VmHWM in a subprocess) stays near that of two.
2. Compare's sentences are a text box, not a table a client can add rows to: 5,000 lines in one
   message cost a bounded processor time (subprocess) and only 50 are read.
3. Head ablation reads the first BERT_EXPLORER_ABLATION_TOKENS tokens and ranks at most
   BERT_EXPLORER_ABLATIONS_PER_MINUTE new texts a minute per session, saying so.
4. "Continue this text" and "Watch it decode" are computed once per input (reruns and slider moves
   read the kept result) and in one of the analysis places, waiting as every analysis does.
5. Typed minimal pairs read at most BERT_EXPLORER_PAIR_TOKENS tokens a click (a sentence of T tokens
   is read T times; the first pairs that fit, saying so), at most BERT_EXPLORER_PAIRS_PER_MINUTE new
   sets a minute per session, with the scoring's peak memory reserved in the analysis budget.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from app.analysis_cache import budget_cached
from app.server import analysis_gate as gate

ROOT = Path(__file__).resolve().parent.parent


# ---- 1. the server-wide bound on analyses in progress -------------------------------------------


class Probe:
    """Counts the calls of a fake analysis and the most that ran at the same moment."""

    def __init__(self):
        self.lock = threading.Lock()
        self.active = self.most = self.calls = 0

    def __call__(self, x: int) -> dict:
        with self.lock:
            self.calls += 1
            self.active += 1
            self.most = max(self.most, self.active)
        time.sleep(0.05)  # long enough for the others to pile up behind it
        with self.lock:
            self.active -= 1
        return {"square": x * x}


@budget_cached()
def _square(tag: str, x: int, _probe: Probe) -> dict:
    return _probe(x)


def _from_threads(n: int, call) -> list:
    out = [None] * n
    start = threading.Barrier(n)

    def go(i):
        start.wait()
        out[i] = call(i)

    threads = [threading.Thread(target=go, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def test_at_most_k_analyses_run_at_once_and_each_gets_its_own_result(monkeypatch):
    monkeypatch.setenv("BERT_EXPLORER_MAX_ANALYSES", "2")
    probe = Probe()
    out = _from_threads(12, lambda i: _square(f"distinct-{id(probe)}", i, probe))
    assert [o["square"] for o in out] == [i * i for i in range(12)]
    assert probe.calls == 12 and probe.most <= 2
    assert gate.ANALYSES.running == 0 and gate.ANALYSES.waiting() == 0


def test_the_same_text_from_twelve_students_runs_once_per_place(monkeypatch):
    """Who waited finds the result of who went first in the cache: no second forward pass."""
    monkeypatch.setenv("BERT_EXPLORER_MAX_ANALYSES", "2")
    probe = Probe()
    out = _from_threads(12, lambda i: _square(f"same-{id(probe)}", 7, probe))
    assert all(o == {"square": 49} for o in out)
    assert probe.calls <= 2


def test_a_waiting_student_reads_busy_n_ahead_and_a_rerun_leaves_the_queue():
    g = gate.Gate(lambda: 1)
    release, holding = threading.Event(), threading.Event()

    def hold():
        with g.place():
            holding.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    holding.wait(10)
    seen, entered = [], threading.Event()

    def wait_in_line():
        with g.place(seen.append):
            entered.set()

    waiter = threading.Thread(target=wait_in_line)
    waiter.start()
    for _ in range(200):  # until the waiter has said where it stands
        if seen:
            break
        time.sleep(0.01)
    assert seen[0] == 1 and not entered.is_set() and g.waiting() == 1
    assert gate.busy_text(1).startswith("Busy: 1 ahead of you.")

    class Rerun(BaseException):  # what Streamlit raises in a script whose student typed again
        pass

    def rerun(ahead):
        raise Rerun

    with pytest.raises(Rerun):
        with g.place(rerun):
            pass
    assert g.waiting() == 1  # the one who left is out of the line, the other still in it
    release.set()
    holder.join(10)
    waiter.join(10)
    assert entered.is_set() and seen[-1] == 0  # told the wait is over
    assert g.running == 0 and g.waiting() == 0
    with g.place(), g.place():  # a thread holding a place passes through a nested analysis
        assert g.running == 1


def test_the_busy_notice_shows_on_the_page():
    from streamlit.testing.v1 import AppTest

    def page():
        from app.server.analysis_gate import busy_notice

        show = busy_notice().__enter__()  # left open: the notice stays, as while a student waits
        show(3)

    at = AppTest.from_function(page).run()
    assert [i.value for i in at.info] == [gate.busy_text(3)]
    assert "Busy: 3 ahead of you" in at.info[0].value


def test_a_page_waits_for_a_place_then_shows_its_result(monkeypatch):
    """The Attention page while another analysis holds the only place: it says where it stands,
    then shows its result once the place is free, and the notice is gone."""
    from streamlit.testing.v1 import AppTest

    from app import state
    from tests.helpers import ENTRY

    monkeypatch.setenv("BERT_EXPLORER_MAX_ANALYSES", "1")
    said = []
    monkeypatch.setattr(gate, "busy_text", lambda ahead: said.append(ahead) or f"Busy: {ahead} ahead of you.")
    at = AppTest.from_file(ENTRY, default_timeout=120)
    at.run()
    at.switch_page("pages/attention.py").run()
    holding, release = threading.Event(), threading.Event()

    def classmate():
        with gate.ANALYSES.place():
            holding.set()
            while not said:  # until the page has said it waits
                if release.wait(0.05):
                    break
            release.wait(0.5)

    other = threading.Thread(target=classmate)
    other.start()
    holding.wait(10)
    at.text_area(key=state.W_TEXT_A).input(f"A sentence nobody typed before, {id(at)}.").run()
    release.set()
    other.join(10)
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert said and said[0] == 1, said
    assert not [i for i in at.info if "Busy" in i.value]
    assert gate.ANALYSES.running == 0 and gate.ANALYSES.waiting() == 0


PEAK = """
import json, pathlib, re, sys, threading
import torch
torch.set_num_threads(1)
import bert
from app import analysis_cache
def hwm():
    return int(re.search(r"VmHWM:\\s+(\\d+)", open("/proc/self/status").read()).group(1)) / 1024
n = int(sys.argv[1])
b = bert.load("minilm-l6")
prose = " ".join(pathlib.Path("docs/RELIABILITY.md").read_text().split())  # 2,000 characters: 512 tokens
texts = [prose[1500 * i : 1500 * i + 2000] for i in range(n + 1)]
h0 = hwm()
assert analysis_cache._analyze("builtin:minilm-l6", texts[n], None, b).n_tokens == 512  # kept by the cache only
h1 = hwm()
start = threading.Barrier(n)
def go(i):
    start.wait()
    assert analysis_cache._analyze("builtin:minilm-l6", texts[i], None, b).n_tokens == 512
threads = [threading.Thread(target=go, args=(i,)) for i in range(n)]
[t.start() for t in threads]; [t.join() for t in threads]
print(json.dumps({"one": h1 - h0, "all": hwm() - h0}))
"""


def _peak(tmp_path, n: int, **env_extra) -> dict:
    """VmHWM over the loaded model (MB) of a subprocess: one 512-token analysis alone, then n
    different ones sent together from n threads."""
    import os

    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(ROOT),
        "BERT_EXPLORER_MAX_ANALYSES": "2",
        "HOME": str(tmp_path),
        "BERT_EXPLORER_CACHE": os.environ.get("BERT_EXPLORER_CACHE", str(ROOT / ".cache")),
        **env_extra,
    }
    r = subprocess.run(
        [sys.executable, "-c", PEAK, str(n)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_six_long_analyses_at_once_peak_near_two(tmp_path):
    """Cache off: six 512-token analyses sent together. Each layer's attention goes straight into
    one array, and the gate lets at most two run at once, so six together peak under four times
    one alone."""
    m = _peak(tmp_path, 6, BERT_EXPLORER_CACHE_MB="0")
    assert m["all"] < 4 * m["one"], m


@pytest.mark.slow
def test_twelve_long_analyses_at_once_stay_within_300_mb(tmp_path):
    """The defaults (cache 256 MB, 2 places): twelve different 512-token texts at once. The cache
    makes room for the work in progress, whose attentions are written layer by layer into one
    array, so the cache and two passes together stay within the bound."""
    m = _peak(tmp_path, 12)
    assert m["one"] < 150, m  # one array of attentions, not a list of layers copied into it
    assert m["all"] <= 300, m


def test_analyses_in_progress_reserve_room_in_the_cache():
    """Kept results make way for work in progress (least recently used first), and results
    put while another analysis runs leave room for it."""
    from app.analysis_cache import ENTRY_BYTES, BudgetCache

    c = BudgetCache(1000)
    for k in "abc":
        c.put(k, "x" * (300 - ENTRY_BYTES - 49))  # 300 bytes each
    c.get("a")  # b is now the least recently used
    with c.reserve(500):
        assert c.reserved == 500 and "b" not in c._items and "c" not in c._items and len(c) == 1
        c.put("d", "x" * (300 - ENTRY_BYTES - 49))
        assert c.bytes + c.reserved <= 1000 and len(c) == 1 and "d" in c._items
    assert c.reserved == 0
    with c.reserve(5000):  # more than the budget: everything kept makes way
        assert len(c) == 0 and c.bytes == 0


def test_attentions_go_layer_by_layer_into_one_array():
    """analyze's attentions equal the model's own exactly, and its peak estimate covers them."""
    import numpy as np
    import torch

    from bert.analysis.full import analysis_bytes, analyze
    from tests.helpers import tiny_bundle

    b = tiny_bundle()
    text = "good movie . bad plot"
    an = analyze(b, text)
    with torch.inference_mode():
        out = b.model.bert(torch.tensor([an.ids]), torch.tensor([an.type_ids]), output_attentions=True)
    want = torch.stack([a[0] for a in out.attentions]).numpy()
    assert an.attentions.dtype == np.float32 and np.array_equal(an.attentions, want)
    assert not an.attentions.flags.writeable
    assert analysis_bytes(b.config, an.n_tokens) > an.attentions.nbytes + an.hidden.nbytes + 3 * an.queries.nbytes


# ---- 2. Compare's sentences --------------------------------------------------------------------------


def test_no_page_has_a_table_a_client_can_add_rows_to():
    """Streamlit applies a client's added rows to any st.data_editor, even one with
    num_rows="fixed", before the page sees them (a fixed 6 x 12 grid given 1,000 rows: 5.5 s of
    processor): Compare's list is a capped text box, Head ablation's heads are rows of pills."""
    for path in sorted((ROOT / "pages").glob("*.py")) + sorted((ROOT / "app").rglob("*.py")):
        assert "data_editor" not in path.read_text(), path.name
    assert "sense_lines(" in (ROOT / "pages" / "compare.py").read_text()


ROWS = """
import json, sys, time
from streamlit.testing.v1 import AppTest
from app.ui.widgets import SENSE_BOX_CHARS
at = AppTest.from_file(sys.argv[1], default_timeout=300)
at.run()
at.switch_page("pages/compare.py").run()
at.radio(key="cmp_view").set_value("One word in many sentences").run()
lines = "\\n".join(f"We sat on the bank {i % 8} of the river. | river" for i in range(5000))  # 0.22 MB
c0 = time.process_time()
at.text_area(key="sense_lines").set_value(lines).run()  # as a client sends it, past max_chars
cpu = time.process_time() - c0
print(json.dumps({
    "cpu": cpu,
    "exceptions": [e.value for e in at.exception],
    "warnings": [w.value for w in at.warning],
    "box": len(at.session_state["sense_lines"]),
    "cap": SENSE_BOX_CHARS,
    "captions": [c.value for c in at.caption],
}))
"""


@pytest.mark.slow
def test_five_thousand_lines_in_one_message_are_cut_and_cheap():
    """5,000 rows pasted in one message: the box is cut to SENSE_BOX_CHARS as it arrives, so no
    rerun adds thousands of rows to the table."""
    r = subprocess.run(
        [sys.executable, "-c", ROWS, str(ROOT / "streamlit_app.py")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    m = json.loads(r.stdout.strip().splitlines()[-1])
    assert not m["exceptions"], m["exceptions"]
    assert m["box"] <= m["cap"]
    assert any("at most 50 sentences" in w and "left out" in w for w in m["warnings"]), m["warnings"]
    assert any(c.startswith("50 of at most 50 sentences") for c in m["captions"]), m["captions"]
    assert m["cpu"] < 10, m


# ---- 3. Head ablation ------------------------------------------------------------------------------


def _minilm_tokenizer():
    import bert
    from bert.checkpoint.builtins import minilm_package_dir

    return bert.Tokenizer.from_file(minilm_package_dir() / "vocab.txt")


def _tiny_mlm():
    import torch

    import bert
    from bert.model import BertForPreTraining
    from tests.helpers import tiny_config

    tok = _minilm_tokenizer()
    torch.manual_seed(0)
    cfg = tiny_config(len(tok), max_position_embeddings=512)
    return bert.Bundle(model=BertForPreTraining(cfg).eval(), tokenizer=tok, name="tiny-mlm")


LONG = "The [MASK] opened the door. " + "Unbelievably playful students walked in, " * 45  # 1,918 characters


def test_first_tokens_cuts_at_a_token_and_counts_the_rest():
    from bert.analysis.ablation import first_tokens

    b = _tiny_mlm()
    full = b.tokenizer.encode(LONG, None, max_length=None)
    cut, total = first_tokens(b, LONG, 128)
    assert total == len(full.ids) - 2 > 128
    again = b.tokenizer.encode(cut, None, max_length=None)
    assert again.ids[1:-1] == full.ids[1:129]  # the same first 128 tokens, no more
    assert first_tokens(b, "a short one", 128) == ("a short one", 3)


@pytest.fixture
def ablation_app():
    from streamlit.testing.v1 import AppTest

    from tests.helpers import ENTRY, select_session_model

    at = AppTest.from_file(ENTRY, default_timeout=120)
    select_session_model(at, "tiny-mlm", _tiny_mlm())
    at.run()
    at.switch_page("pages/ablation.py").run()
    assert not at.exception
    return at


def test_ablation_reads_the_first_tokens_and_says_so(ablation_app, monkeypatch):
    from app import state

    at = ablation_app
    at.text_area(key=state.W_MLM_TEXT).input(LONG).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any("reads the first 128 tokens of your text" in i.value for i in at.info), [i.value for i in at.info]
    monkeypatch.setenv("BERT_EXPLORER_ABLATION_TOKENS", "4")  # every [MASK] past the cut
    at.text_area(key=state.W_MLM_TEXT).input("One two three four five six [MASK] .").run()
    assert not at.exception
    said = [e.value.replace("\\", "") for e in at.error]  # shown escaped
    assert any("first 4 tokens" in e and "every [MASK] of yours comes later" in e for e in said), said


def test_ablation_ranks_a_few_new_texts_a_minute_per_session(ablation_app, monkeypatch):
    from app import state

    monkeypatch.setenv("BERT_EXPLORER_ABLATIONS_PER_MINUTE", "2")
    at = ablation_app  # its first text was the first new one
    box = at.text_area(key=state.W_MLM_TEXT)
    box.input("The [MASK] sat on the mat.").run()
    assert not at.warning or all("Try again" not in w.value for w in at.warning)
    at.text_area(key=state.W_MLM_TEXT).input("A [MASK] flew over the house.").run()
    assert not at.exception
    said = [w.value for w in at.warning if "Try again in" in w.value]
    assert said and "2 new texts" in said[0] and "the most this server allows one student" in said[0]
    assert not at.dataframe, "no ranking computed past the limit"
    assert any("For the class" in m.value for m in at.sidebar.markdown), "the rest of the app is drawn"
    at.text_area(key=state.W_MLM_TEXT).input("The [MASK] sat on the mat.").run()  # ranked lately: free
    assert not [w for w in at.warning if "Try again in" in w.value] and at.dataframe


def test_ablation_heads_switch_off_and_on_from_their_rows(ablation_app):
    at = ablation_app
    assert len(at.pills) == 2 and all(p.value == [0, 1, 2, 3] for p in at.pills)  # 2 layers x 4 heads, all on
    at.pills[1].unselect(2).run()
    assert not at.exception and at.session_state["abl_off"] == [[1, 2]]
    assert any(c.value.startswith("1 of 8 heads switched off") for c in at.caption)
    at.button(key="abl_all_on").click().run()
    assert at.session_state["abl_off"] == [] and all(p.value == [0, 1, 2, 3] for p in at.pills)


# ---- 4. writing: "Continue this text" and "Watch it decode" ----------------------------------------


def _continue_script():
    import streamlit as st

    from app.training.next_word_view import continue_box

    continue_box(st.session_state["res"])


def _decode_script():
    import streamlit as st

    from app.seq2seq.view import decode

    decode(st.session_state["res"])


@pytest.fixture(scope="module")
def written_runs():
    from types import SimpleNamespace

    from tests.helpers import tiny_pretrain_bundle, tiny_seq2seq_run

    next_word = {"bundle": tiny_pretrain_bundle(), "job_id": 1, "info": {"args": SimpleNamespace(probe="the cat")}}
    return {"continue": (_continue_script, next_word), "decode": (_decode_script, tiny_seq2seq_run())}


@pytest.mark.parametrize("box", ["continue", "decode"])
def test_writing_is_computed_once_per_input_and_in_an_analysis_place(box, written_runs, monkeypatch):
    from streamlit.testing.v1 import AppTest

    import app.analysis_cache as ac

    monkeypatch.setenv("BERT_EXPLORER_MAX_ANALYSES", "1")
    script, res = written_runs[box]
    res = {**res, "run": f"test-{box}-{time.time()}"}  # a run the cache has not seen
    calls, in_place = [], []
    real = ac.continue_text if box == "continue" else type(res["bundle"]).trace

    def counting(*args, **kwargs):
        calls.append(args[1])
        in_place.append(gate.ANALYSES.running)
        return real(*args, **kwargs)

    if box == "continue":
        monkeypatch.setattr(ac, "continue_text", counting)
    else:
        monkeypatch.setattr(type(res["bundle"]), "trace", counting)
    at = AppTest.from_function(script, default_timeout=60)
    at.session_state["res"] = res
    at.run()
    assert not at.exception and not at.error, [e.value for e in (*at.exception, *at.error)]
    layer = "pt_cont_1_layer" if box == "continue" else "s2s_layer"
    at.selectbox(key=layer).set_value(1).run()  # another layer picked: the same writing, another view of it
    at.run()
    assert not at.exception
    assert len(calls) == 1 and in_place == [1], (calls, in_place)

    holding, release = threading.Event(), threading.Event()

    def classmate():
        with gate.ANALYSES.place():
            holding.set()
            release.wait(10)

    other = threading.Thread(target=classmate)
    other.start()
    holding.wait(10)
    said = []
    monkeypatch.setattr(gate, "busy_text", lambda ahead: said.append(ahead) or release.set() or "Busy")
    key = "pt_cont_1_text" if box == "continue" else "s2s_text"
    (at.text_area if box == "continue" else at.text_input)(key=key).input("the dog").run()  # a new input waits
    other.join(10)
    assert said == [1] and len(calls) == 2 and not at.exception


# ---- 5. typed minimal pairs ------------------------------------------------------------------------


def _pairs_script():
    import streamlit as st

    from app.causes.pairs_view import render

    render(st.session_state["model"])


@pytest.fixture()
def pairs_app(monkeypatch):
    from streamlit.testing.v1 import AppTest

    import app.analysis_cache as ac
    from app.current_model import CurrentModel
    from tests.helpers import minilm_tiny_mlm

    scored, reserved = [], []
    real = ac.score_pairs

    def recording(bundle, pairs, word_level=False, cancelled=None):
        scored.append(list(pairs))
        reserved.append(ac.budget_cache().reserved)
        return real(bundle, pairs, word_level, cancelled)

    monkeypatch.setattr(ac, "score_pairs", recording)
    at = AppTest.from_function(_pairs_script, default_timeout=60)
    at.session_state["model"] = CurrentModel(minilm_tiny_mlm(), f"test:pairs:{time.time()}", "tiny")
    at.session_state["mp_source"] = "Your pairs"
    return at, scored, reserved


def test_typed_pairs_score_a_bounded_number_of_tokens_with_their_memory_reserved(pairs_app):
    from bert import settings
    from bert.analysis.scoring import scoring_peak_bytes, sentence_tokens

    at, scored, reserved = pairs_app
    long = " ".join(["the old house by the river"] * 6)  # 36 words: about 3,000 tokens read a pair
    at.session_state["mp_typed"] = "\n".join(f"{long} is {i}. | {long} are {i}." for i in range(50))
    at.run()
    assert not at.exception and not at.error, [e.value for e in (*at.exception, *at.error)]
    budget = settings.whole("BERT_EXPLORER_PAIR_TOKENS")
    ((pairs,),) = [scored]
    tok = at.session_state["model"].bundle.tokenizer
    tokens = sum(sentence_tokens(tok, s) ** 2 for pair in pairs for s in pair)
    assert 0 < len(pairs) < 50 and budget - 3500 < tokens <= budget, (len(pairs), tokens)
    said = [i.value for i in at.info if "at most" in i.value]
    assert said and f"The first {len(pairs)} pairs" in said[0] and "50 pairs" in said[0], said
    assert len(at.dataframe[0].value) == len(pairs)
    longest = max(sentence_tokens(tok, s) for pair in pairs for s in pair)
    assert reserved == [scoring_peak_bytes(at.session_state["model"].bundle.config, longest)] and reserved[0] > 0


def test_a_closed_tab_gives_up_its_typed_pairs_scoring_and_frees_its_place(pairs_app, monkeypatch):
    """The tab closes while its 5 pairs are scored (its session no longer active after the second
    sentence): the scoring ends before the third sentence, the analysis place is free again and
    nothing is kept as the pairs' scores (an open tab scores them whole)."""
    from app.server import analysis_gate, guard
    from bert.analysis import scoring

    at, scored, _ = pairs_app
    read, asked = [], []
    real = scoring.pseudo_log_likelihood
    monkeypatch.setattr(scoring, "pseudo_log_likelihood", lambda *a: read.append(a[1]) or real(*a))
    monkeypatch.setattr(guard, "_session_alive", lambda sid: asked.append(sid) or len(asked) <= 2)
    at.session_state["mp_typed"] = "\n".join(f"The cat {i} sleeps. | The cat {i} sleep." for i in range(5))
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert len(read) == 2 and len(asked) == 3 and asked[0], (read, asked)  # the page's own session was asked
    assert analysis_gate.ANALYSES.running == 0 and not at.dataframe
    monkeypatch.setattr(guard, "_session_alive", lambda sid: True)
    at.run()
    assert len(read) == 2 + 10 and at.dataframe, "not kept as scored: an open tab scores them whole"


def test_typed_pairs_score_a_few_new_sets_a_minute_per_session(pairs_app, monkeypatch):
    monkeypatch.setenv("BERT_EXPLORER_PAIRS_PER_MINUTE", "2")
    at, scored, _ = pairs_app
    for i in range(2):
        at.session_state["mp_typed"] = f"The cat {i} sleeps. | The cat {i} sleep."
        at.run()
        assert not at.warning and at.dataframe
    at.session_state["mp_typed"] = "The dogs bark. | The dogs barks."
    at.run()
    said = [w.value for w in at.warning if "Try again in" in w.value]
    assert said and "2 new sets of pairs" in said[0] and not at.dataframe and len(scored) == 2
    at.session_state["mp_typed"] = "The cat 0 sleeps. | The cat 0 sleep."  # scored lately: free to show again
    at.run()
    assert not at.warning and at.dataframe and len(scored) == 2
