"""Hostile and odd text through the tokenizer, the model and every explorer page.

Each text of HOSTILE goes (1) through `bert`'s tokenizer and model: no exception, ids in the
vocabulary, offsets inside the text, no control or invisible character in a token, finite
outputs; and (2) into sentence A and the masked sentence of every explorer page (AppTest,
default model): no exception, and the expected message: "empty" for empty or blank input, the
truncation notice for 10,000 words, nothing alarming otherwise. What each case must show is
listed in docs/RELIABILITY.md. That the XSS strings are drawn as text in a real browser (no
alert, no injected element) is checked in tests/browser/ (test_pages_browser.py,
test_bertviz_browser.py, test_hostile_browser.py).
"""

from __future__ import annotations

import csv
import io
import math
import unicodedata
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

import bert  # noqa: E402
from app import state  # noqa: E402
from bert import InputError  # noqa: E402
from tests.helpers import APP_TIMEOUT, ENTRY, select_session_model  # noqa: E402

LONG = " ".join(["word", "another", "sentence", "goes", "on"] * 2000)  # 10,000 words
HOSTILE = {
    "empty": "",
    "whitespace": " \t\n \u00a0 \u3000 \r\n",
    "10k-words": LONG,
    "control": "abc\x00\x01\x07\x1b[31m def\x7f ghi\x85 jkl\ufffd",
    "zero-width-bidi": "pay\u200bpal \u202eevil\u202c \u200d\u2066isolate\u2069 \ufeffbom \u200fmark",
    "emoji": "I 🤗 love 👩\u200d👩\u200d👧\u200d👦 pizza 🍕🇫🇷 a lot",
    "cjk": "東京は日本の首都です。北京欢迎你！한국어도",
    "rtl": "مرحبا بالعالم שלום עולם",
    "script": "<script>alert(1)</script>",
    "close-script": "</script>",
    "img-onerror": '"><img src=x onerror=alert(1)>',
    "hundred-masks": " ".join(["[MASK]"] * 100),
    "typed-specials": "[CLS] hello [SEP] world [SEP] [PAD] [UNK] [cls] [mask]",
}
BLANK = {"empty", "whitespace"}


@pytest.fixture(scope="module")
def bundle():
    return bert.load("minilm-l6")


def _invisible(ch: str) -> bool:
    return unicodedata.category(ch)[0] == "C"


# ---- 1. the tokenizer and the model ---------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("name", list(HOSTILE))
def test_tokenizer_and_model(bundle, name):
    text = HOSTILE[name]
    tok = bundle.tokenizer
    enc = tok.encode(text, max_length=512)
    V = len(tok)
    assert enc.tokens[0] == "[CLS]" and enc.tokens[-1] == "[SEP]"
    assert len(enc.ids) == len(enc.tokens) == len(enc.type_ids) == len(enc.offsets) <= 512
    assert all(0 <= i < V for i in enc.ids)
    for (s, e), t, seq in zip(enc.offsets, enc.tokens, enc.sequence_ids):
        assert 0 <= s <= e <= len(text)
        if seq is not None and t not in ("[UNK]",) and not t.startswith("["):
            assert not any(_invisible(c) for c in t), (name, t)
    if name in BLANK:
        assert enc.tokens == ["[CLS]", "[SEP]"]
    if name == "10k-words":
        assert enc.truncated and len(enc.ids) == 512 and enc.num_truncated > 9000
    if name == "hundred-masks":
        assert enc.ids.count(tok.mask_id) == 100
    if name in ("script", "close-script", "img-onerror"):
        assert {"<", ">"} <= set(enc.tokens) or {'"', ">"} <= set(enc.tokens)
    if name == "typed-specials":  # typed specials are the special tokens, as in Hugging Face
        assert enc.tokens[:3] == ["[CLS]", "[CLS]", "hello"] and enc.tokens.count("[SEP]") == 3
    # a pair with the hostile text as sentence B too
    pair = tok.encode("a plain first sentence", text, max_length=128)
    assert len(pair.ids) <= 128
    with torch.inference_mode():
        out = bundle.model(torch.tensor([enc.ids]), torch.tensor([enc.type_ids]))
        hid = bundle.model.bert(torch.tensor([pair.ids]), torch.tensor([pair.type_ids]), output_attentions=True)
    assert torch.isfinite(out.mlm_logits).all() and torch.isfinite(out.nsp_logits).all()
    assert all(torch.isfinite(a).all() for a in hid.attentions)


def test_the_app_refuses_text_without_tokens(bundle):
    """Empty, blank and control-only input: an InputError with a message, not a model run."""
    from bert.analysis.common import encode

    for text in ("", "   ", "\x00\x01\u200b\u202e"):
        with pytest.raises(InputError, match="no tokens"):
            encode(bundle, text, None)


def test_mlm_on_a_hundred_masks_and_typed_specials(bundle):
    from app.analysis_cache import mlm_predict

    res = mlm_predict.__wrapped__("builtin:minilm-l6", HOSTILE["hundred-masks"], 5, bundle)
    assert len(res["predictions"]) == 100
    assert all(len(p["tokens"]) == 5 and np.isfinite(p["probs"]).all() for p in res["predictions"])
    res = mlm_predict.__wrapped__("builtin:minilm-l6", "[CLS] the cat [SEP] sat on the [MASK] .", 3, bundle)
    assert len(res["predictions"]) == 1


# ---- 2. every explorer page (AppTest) -------------------------------------------------------------

PAGES = [
    "pages/home.py",
    "pages/tokenization.py",
    "pages/embeddings.py",
    "pages/attention.py",
    "pages/masked_lm.py",
    "pages/head_patterns.py",
    "pages/explanations.py",
    "pages/ablation.py",
    "pages/compare.py",
]
PAGES = [p for p in PAGES if (Path(ENTRY).parent / p).exists()]
# pages that read sentence A (the others read the masked sentence)
READS_A = {"pages/tokenization.py", "pages/embeddings.py", "pages/attention.py", "pages/head_patterns.py"}
READS_MASKED = {"pages/masked_lm.py", "pages/explanations.py", "pages/ablation.py", "pages/compare.py"}


def _ok(at, where):
    assert not at.exception, (where, [e.value for e in at.exception])


def _messages(at):
    return (
        [("error", e.value) for e in at.error]
        + [("warning", w.value) for w in at.warning]
        + [("info", i.value) for i in at.info]
    )


def _masked(text: str) -> str:
    """The masked sentence for the pages that need a [MASK]: the hostile text with one in front
    (so even 10,000 words keep a gap before the cut); blank stays blank."""
    return text if not text.strip() else f"[MASK] {text}"


@pytest.mark.slow
@pytest.mark.parametrize("name", list(HOSTILE))
def test_every_page(at, name):
    text = HOSTILE[name]
    at.session_state[state.TEXT_A] = text
    at.session_state[state.TEXT_B] = ""
    at.session_state[state.MLM_TEXT] = _masked(text)
    for page in PAGES:
        at.switch_page(page).run()
        where = f"{page} with {name}"
        _ok(at, where)
        msgs = _messages(at)
        errors = [m for k, m in msgs if k == "error"]
        uses_text = page in READS_A or page in READS_MASKED
        if name in BLANK and uses_text:
            assert any("empty" in e for e in errors), (where, msgs)
            continue
        assert not errors, (where, errors)
        if name == "10k-words" and page in (
            "pages/tokenization.py",
            "pages/attention.py",
            "pages/embeddings.py",
            "pages/head_patterns.py",
            "pages/masked_lm.py",
        ):
            assert any(k == "warning" and ("cut" in m) for k, m in msgs), (where, msgs)
        if page == "pages/masked_lm.py":
            filled = [c.value for c in at.code if "«" in c.value]
            n_masks = _masked(text).count("[MASK]") + ("[mask]" in text)
            if name != "10k-words":
                assert filled and filled[0].count("«") == n_masks, (where, filled[:1], n_masks)


@pytest.mark.slow
def test_sentence_b_hostile_too(at):
    """The same texts as sentence B of a pair (the NSP head and the pair views)."""
    at.session_state[state.TEXT_A] = "The weather was lovely."
    at.session_state[state.MLM_TEXT] = "The [MASK] was lovely."
    for name in ("control", "zero-width-bidi", "close-script", "typed-specials", "10k-words"):
        at.session_state[state.TEXT_B] = HOSTILE[name]
        for page in ("pages/tokenization.py", "pages/attention.py", "pages/masked_lm.py"):
            at.switch_page(page).run()
            _ok(at, f"{page} with B={name}")
            assert not at.error, (page, name, [e.value for e in at.error])
    at.session_state[state.TEXT_B] = ""


@pytest.mark.slow
def test_attention_views_with_xss_and_long_text(at):
    """Every Attention view (plotly, walk-through table, bertviz) on the XSS strings and on
    10,000 words: no exception, no error box; bertviz says what it left out."""
    at.session_state[state.TEXT_B] = ""
    for name in ("img-onerror", "10k-words"):
        at.session_state[state.TEXT_A] = HOSTILE[name]
        at.switch_page("pages/attention.py").run()
        for view in ("All heads", "Q/K/V walk-through", "bertviz: head view", "bertviz: neuron view"):
            at.radio(key="att_view").set_value(view).run()
            _ok(at, f"{view} with {name}")
            assert not at.error, (view, name, [e.value for e in at.error])
            if name == "10k-words" and view.startswith("bertviz"):
                assert any(i.value for i in at.info), "the capped bertviz view says so"
        at.radio(key="att_view").set_value("Heatmap").run()


# ---- 3. exported tables keep formulas as text -------------------------------------------------------


def test_table_downloads_escape_formulas():
    import pandas as pd

    from app.formatting import table_csv

    df = pd.DataFrame(
        {
            "text": ["=cmd|' /C calc'!A0", "+SUM(1)", "@x", "-1+2", "plain"],
            "true": ['=HYPERLINK("http://x")', "a", "b", "c", "d"],
            "confidence": [0.9] * 5,
        }
    )
    data = table_csv(df)
    text = data.decode("utf-8-sig")
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == ["text", "true", "confidence"]
    for row in rows[1:]:
        for cell in row[:2]:
            assert cell[:1] not in ("=", "+", "-", "@"), row
    assert rows[1][0] == "'=cmd|' /C calc'!A0" and rows[5][0] == "plain" and float(rows[1][2]) == 0.9


def test_streamlit_table_export_is_off():
    """Streamlit's own "Download as CSV" does not escape formulas: the config switches it off."""
    import tomllib

    cfg = tomllib.loads((Path(ENTRY).parent / ".streamlit" / "config.toml").read_text())
    assert cfg["client"]["disableDataExport"] is True
    assert cfg["server"]["maxUploadSize"] == 50


def test_server_config_for_a_class():
    """No full garbage collection after every script run (it took half the server's processor
    under a class's load), no file watcher, no traceback details on screen."""
    import tomllib

    cfg = tomllib.loads((Path(ENTRY).parent / ".streamlit" / "config.toml").read_text())
    assert cfg["runner"]["postScriptGC"] is False
    assert cfg["server"]["fileWatcherType"] == "none"
    assert cfg["client"]["showErrorDetails"] == "none"


@pytest.mark.slow
def test_results_offer_escaped_csv_downloads(at):
    """A finished fine-tuning result whose mistakes hold formulas: the page's download buttons
    are there (AppTest cannot click a download; table_csv is what they serve)."""
    from app.run_session import session as ts
    from tests.helpers import finished_result

    base, res = finished_result()
    res["report"]["mistakes"] = [{"text": "=cmd|' /C calc'!A0", "true": "pos", "predicted": "neg", "prob": 0.9}]
    at.session_state[state.USER_MODELS]["tiny"] = base
    at.session_state[state.USER_MODEL_IDS]["tiny"] = "session:tiny:t"
    at.session_state[ts.FT_RESULTS] = [res]
    at.switch_page("pages/finetune.py").run()
    _ok(at, "finetune results")
    keys = {b.key for b in at.get("download_button")}
    jid = res["job_id"]
    assert {f"ft_csv_scores_{jid}", f"ft_csv_mistakes_{jid}"} <= keys, keys
    at.session_state[ts.FT_RESULTS] = []
    at.session_state[state.USER_MODELS].pop("tiny", None)
    at.session_state[state.MODEL_SOURCE] = state.DEFAULT_MODEL


# ---- 4. the size-bounded analysis cache --------------------------------------------------------------


def test_analysis_cache_is_bounded_by_bytes():
    from app.analysis_cache import BudgetCache, nbytes

    c = BudgetCache(budget=10_000)
    big = np.zeros(1000, dtype=np.float32)  # 4,000 bytes
    for k in range(5):
        c.put(k, {"a": big})
    assert c.bytes <= 10_000 and len(c) == 2 and c.get(0) is None and c.get(4) is not None
    c.get(3)
    c.put(5, {"a": big})
    assert c.get(3) is not None and c.get(4) is None  # least recently used goes first
    huge = np.zeros(10_000, dtype=np.float32)
    c.put("huge", huge)
    assert len(c) == 1 and c.get("huge") is huge  # the newest stays even when alone too big
    assert nbytes({"x": [big, (big,)], "t": torch.zeros(10)}) >= 8000 + 40


def test_long_analysis_is_counted(bundle):
    """A 512-token analysis of the default model is tens of MB: the budget counts it."""
    from app.analysis_cache import _analyze, nbytes

    an = _analyze.__wrapped__("builtin:minilm-l6", LONG, None, bundle)
    size = nbytes(an)
    assert an.n_tokens == 512 and 60 * 2**20 < size < 200 * 2**20
    assert math.isclose(
        size,
        an.attentions.nbytes + an.hidden.nbytes + an.queries.nbytes * 3 + sum(p.nbytes for p in an.parts.values()),
        rel_tol=0.05,
    )


def test_finished_jobs_give_memory_back(monkeypatch):
    """A fine-tuning job returns what it freed to the system when it ends (malloc_trim), so
    the next job in the queue does not stack on the last one's peak."""
    from app.server.memory import release_memory
    from bert.data.labelled import stratified_split
    from tests.helpers import fast_args, finetune_fn, run_fn, tiny_bundle, tiny_data

    calls = []
    monkeypatch.setattr("app.jobs.worker.release_memory", lambda: calls.append(1))
    base = tiny_bundle()
    train, valid = stratified_split(tiny_data(80), 0.25, seed=0)
    events = run_fn(finetune_fn(base, train, valid, fast_args(epochs=1)))
    assert events[-1].event == "report" and calls == [1]
    monkeypatch.undo()
    release_memory()  # the real one: harmless anywhere


@pytest.mark.slow
def test_a_one_layer_one_head_model_on_every_page():
    """The Pre-training page can make a 1-layer model with 1 head and the user can pick it: no
    page may fail on it (a slider from 1 to 1 is an error in Streamlit)."""
    from bert.checkpoint.builtins import minilm_package_dir

    tok = bert.Tokenizer.from_file(minilm_package_dir() / "vocab.txt")
    cfg = bert.BertConfig(
        vocab_size=len(tok), hidden_size=16, num_hidden_layers=1, num_attention_heads=1, intermediate_size=32
    )
    tiny = bert.Bundle(model=bert.BertForPreTraining(cfg).eval(), tokenizer=tok, name="one-head")
    a = AppTest.from_file(ENTRY, default_timeout=APP_TIMEOUT)
    select_session_model(a, "one-head", tiny)
    a.run()
    for page in PAGES:
        a.switch_page(page).run()
        _ok(a, page)
        assert not a.error, (page, [e.value for e in a.error])
    a.switch_page("pages/compare.py").run()
    for view in ("Two models side by side", "Attention over training"):
        a.radio(key="cmp_view").set_value(view).run()
        _ok(a, view)
        assert not a.error, (view, [e.value for e in a.error])
