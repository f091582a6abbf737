"""The Streamlit app through streamlit.testing (AppTest): every page renders without an
exception, with the default input and with a sentence pair; controls work; bad input gives a
message, never a traceback. Uses the default model "minilm-l6" (loaded once per process).

Plotly charts and iframes are UnknownElements here: their content is checked in test_plots.py
and in the browser tests.
"""

import re

import pytest

pytest.importorskip("streamlit")
from pathlib import Path  # noqa: E402

from streamlit.testing.v1 import AppTest  # noqa: E402

from app import state  # noqa: E402
from tests.helpers import APP_TIMEOUT, ENTRY, started_app  # noqa: E402

PAGES = ["pages/home.py", "pages/tokenization.py", "pages/embeddings.py", "pages/attention.py", "pages/masked_lm.py"]


def _ok(at):
    assert not at.exception, [e.value for e in at.exception]


def _errors(at):
    return [e.value for e in at.error]


@pytest.fixture(scope="module")
def home():
    at = AppTest.from_file(ENTRY, default_timeout=APP_TIMEOUT)
    at.run()
    return at


@pytest.fixture()
def app():
    return started_app()


def test_home_renders_and_shows_parameter_count(home):
    _ok(home)
    assert not _errors(home)
    assert [m.value for m in home.metric if m.label == "Parameters"] == ["22.9 M"]
    exact = [c.value for c in home.main.caption if "parameters in all" in c.value]
    assert exact and int(exact[0].split()[0].replace(",", "")) == 22_893_116  # all-MiniLM-L6-v2 + heads
    # the sidebar shows the model and its notes on every page, on every run
    assert any("parameters" in c.value for c in home.sidebar.caption)
    home.run()
    _ok(home)
    assert any("parameters" in c.value for c in home.sidebar.caption)


HOME_ALONE = """
import sys
from streamlit.testing.v1 import AppTest
at = AppTest.from_file(sys.argv[1], default_timeout=60).run()
assert not at.exception, [e.value for e in at.exception]
assert "The loaded model" in [s.value for s in at.header]
print("torch" in sys.modules)
"""


@pytest.mark.slow
def test_home_draws_the_default_model_without_torch():
    """Home and the sidebar describe the default built-in from its files: a fresh server imports
    neither torch nor the weights before its first page has drawn."""
    import subprocess
    import sys

    cmd = [sys.executable, "-c", HOME_ALONE, ENTRY]
    out = subprocess.run(cmd, cwd=Path(ENTRY).parent, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[-1] == "False", "torch was imported before Home had drawn"


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES[1:])
def test_page_renders_default_and_pair(app, page):
    app.switch_page(page).run()
    _ok(app)
    assert not _errors(app), _errors(app)
    # the page ran through streamlit_app.py: the sidebar's model picker is there
    assert any("parameters" in c.value for c in app.sidebar.caption)
    app.text_area(key=state.W_TEXT_B).input("It lay down in the shade and fell asleep.").run()
    _ok(app)
    assert not _errors(app), _errors(app)
    assert app.session_state[state.TEXT_B].startswith("It lay down")


@pytest.mark.slow
def test_sentence_carries_over_between_pages(app):
    app.switch_page("pages/tokenization.py").run()
    app.text_area(key=state.W_TEXT_A).input("Colourless green ideas sleep furiously.").run()
    app.switch_page("pages/attention.py").run()
    _ok(app)
    assert app.text_area(key=state.W_TEXT_A).value == "Colourless green ideas sleep furiously."


@pytest.mark.slow
def test_attention_layer_head_and_views(app):
    app.switch_page("pages/attention.py").run()
    app.slider(key="att_layer_6").set_value(4).run()
    app.slider(key="att_head_12").set_value(7).run()
    _ok(app)
    app.checkbox(key="att_hide").check().run()
    _ok(app)
    for view in (
        "All heads",
        "Q/K/V walk-through",
        "bertviz: head view",
        "bertviz: model view",
        "bertviz: neuron view",
        "Heatmap",
    ):
        app.radio(key="att_view").set_value(view).run()
        _ok(app)
        assert not _errors(app), (view, _errors(app))
    # the walk-through's softmax equals the model's own attention row
    app.radio(key="att_view").set_value("Q/K/V walk-through").run()
    df = app.dataframe[0].value
    assert (df["weight = softmax"] - df["weight in the model"]).abs().max() < 1e-4


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES[1:4])
def test_empty_and_whitespace_input_give_a_message(app, page):
    app.switch_page(page).run()
    for text in ("", "   \n\t "):
        app.text_area(key=state.W_TEXT_A).input(text).run()
        _ok(app)
        assert any("empty" in e for e in _errors(app)), _errors(app)


@pytest.mark.slow
def test_long_input_is_truncated_with_a_notice(app):
    app.switch_page("pages/tokenization.py").run()
    app.text_area(key=state.W_TEXT_A).input("a " * 1000).run()  # 2,000 characters (the cap), 1,000 tokens
    _ok(app)
    assert any("cut off" in w.value for w in app.warning)


@pytest.mark.slow
def test_emoji_and_cjk(app):
    app.switch_page("pages/tokenization.py").run()
    app.text_area(key=state.W_TEXT_A).input("I 🤗 love 東京 and ünïcödé </script><b>x</b>").run()
    _ok(app)
    assert any("[UNK]" in w.value for w in app.warning)
    app.switch_page("pages/attention.py").run()
    _ok(app)
    assert not _errors(app)


@pytest.mark.slow
def test_masked_lm_no_mask_and_ten_masks(app):
    app.switch_page("pages/masked_lm.py").run()
    _ok(app)
    read = [c.value.replace("\\", "") for c in app.caption if c.value.startswith("What this model read:")]
    assert read and "M words of English" in read[0] and "BERT-base read 3.3 B words" in read[0]
    assert "`" not in read[0] and "previous minilm-l6 (the" in read[0], "the card's code marks are not shown"
    app.text_area(key=state.W_MLM_TEXT).input("no gap in this sentence").run()
    _ok(app)
    assert any("[MASK]" in i.value for i in app.info)
    app.text_area(key=state.W_MLM_TEXT).input(" ".join(["[MASK]"] * 10)).run()
    _ok(app)
    assert not _errors(app)
    filled = [c.value for c in app.code if "«" in c.value]
    assert filled and filled[0].count("«") == 10
    # picking words of sentence A to mask
    app.radio(key="mlm_mode").set_value("Pick words of sentence A to mask").run()
    _ok(app)
    assert any("[MASK]" in c.value for c in app.code)


def test_attention_find_a_head_lists_heads_by_weight_and_shows_the_one_clicked(app):
    app.switch_page("pages/attention.py").run()
    _ok(app)
    assert app.selectbox(key=next(s.key for s in app.selectbox if s.key.startswith("fh_from_"))).value is not None
    listed = [b for b in app.button if (b.key or "").startswith("fh_")]
    found = [re.fullmatch(r"Layer (\d+), head (\d+): ([\d.]+)", b.label) for b in listed]
    assert len(listed) == 5 and all(found)
    weights = [float(m.group(3)) for m in found]
    assert weights == sorted(weights, reverse=True)
    listed[2].click().run()
    _ok(app)
    sliders = {s.label: s.value for s in app.slider}
    assert (sliders["Layer"], sliders["Head"]) == (int(found[2].group(1)), int(found[2].group(2)))


def test_masked_lm_puts_the_mask_box_first_and_fills_a_mask_typed_in_sentence_a(app):
    """The [MASK] box is the page's first text box; a [MASK] typed in Sentence A (the next-sentence
    box) is not silently ignored: the page says where gaps are filled and its button takes it there."""
    app.switch_page("pages/masked_lm.py").run()
    _ok(app)
    assert [t.key for t in app.text_area][:3] == [state.W_MLM_TEXT, state.W_TEXT_A, state.W_TEXT_B]
    assert not [b for b in app.button if b.key == "mlm_from_a"]
    typed = "The [MASK] barked at the mailman."
    app.text_area(key=state.W_TEXT_A).input(typed).run()
    _ok(app)
    assert any("Sentence A has a [MASK]" in i.value for i in app.info)
    app.button(key="mlm_from_a").click().run()
    _ok(app)
    assert app.text_area(key=state.W_MLM_TEXT).value == typed
    assert [c.value for c in app.code if "«" in c.value][0].startswith("the «")


@pytest.mark.slow
def test_random_sentence_b_button(app):
    app.switch_page("pages/masked_lm.py").run()
    app.button(key="nsp_random").click().run()
    _ok(app)
    assert app.session_state[state.TEXT_B]
    assert app.text_area(key=state.W_TEXT_B).value == app.session_state[state.TEXT_B]
    assert any(m.label == "P(B follows A)" for m in app.metric)


@pytest.mark.slow
def test_bad_local_folder_shows_an_error_not_a_traceback(app, tmp_path, monkeypatch):
    monkeypatch.setenv("BERT_EXPLORER_MODELS_DIR", str(tmp_path))  # under the allowed root: a real load error
    (tmp_path / "empty").mkdir()
    app.selectbox(key=state.W_MODEL_CHOICE).set_value("__folder__").run()
    app.text_input(key=state.W_LOCAL_PATH).input(str(tmp_path / "empty")).run()
    app.sidebar.button[0].click().run()
    _ok(app)
    assert any("no config" in e.value for e in app.sidebar.error)
    assert app.session_state[state.MODEL_SOURCE] == state.DEFAULT_MODEL


@pytest.mark.slow
def test_a_session_model_classifier_on_every_page(app):
    """A user's own model (here a tiny random classifier) is picked from session_state, keyed
    apart from the cached built-ins, and the MLM page says it has no MLM head."""
    from tests.helpers import minilm_tiny_classifier, select_session_model

    bundle = minilm_tiny_classifier()
    select_session_model(app, "tiny-clf", bundle)
    app.run()
    _ok(app)
    assert app.selectbox(key=state.W_MODEL_CHOICE).value == "session:tiny-clf"
    for page in PAGES:
        app.switch_page(page).run()
        _ok(app)
        assert not _errors(app), (page, _errors(app))
    app.switch_page("pages/attention.py").run()
    assert app.slider(key="att_layer_2").max == 2 and app.slider(key="att_head_4").max == 4
    app.switch_page("pages/masked_lm.py").run()
    assert any("classifier" in i.value for i in app.info)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["all-minilm-l6-v2", "mini-scratch"])
def test_each_other_builtin_on_every_page(app, name):
    """Picked in the sidebar, a built-in other than the default draws every page; the published
    encoder's untrained heads are said on the Masked LM page."""
    from bert.checkpoint.builtins import available_builtins

    if name not in available_builtins():
        pytest.skip(f"{name} is not in assets/")
    app.selectbox(key=state.W_MODEL_CHOICE).set_value(name).run()
    _ok(app)
    assert app.session_state[state.MODEL_SOURCE] == name
    for page in PAGES:
        app.switch_page(page).run()
        _ok(app)
        assert not _errors(app), (page, _errors(app))
    warned = any("untrained" in w.value for w in app.warning)  # still on the Masked LM page
    assert warned == (name == "all-minilm-l6-v2")


@pytest.mark.parametrize(
    "env, said",
    [
        ({"BERT_EXPLORER_BACKEND": "rayy"}, "BERT_EXPLORER_BACKEND must be one of local, ray"),
        ({"BERT_EXPLORER_BACKEND": "ray", "RAY_ADDRESS": ""}, "needs RAY_ADDRESS"),
    ],
)
def test_a_server_that_cannot_take_jobs_says_why_instead_of_a_page(monkeypatch, env, said):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    at = AppTest.from_file(ENTRY, default_timeout=60)
    at.run()
    assert not at.exception
    assert any(said in e.value and "This server cannot start" in e.value for e in at.error), [e.value for e in at.error]


def _heatmap_z(chart):
    """The z of a plotly heatmap as sent to the browser (plotly's typed-array encoding)."""
    import base64
    import json

    import numpy as np

    z = json.loads(chart.proto.spec)["data"][0]["z"]
    return np.frombuffer(base64.b64decode(z["bdata"]), z["dtype"]).reshape([int(n) for n in z["shape"].split(",")])


@pytest.mark.slow
def test_attention_patterns_draw_hidden_cells_as_hidden(app):
    import json

    import numpy as np

    app.switch_page("pages/attention.py").run()
    both = _heatmap_z(app.get("plotly_chart")[0])
    assert not np.isnan(both).any()
    app.radio(key="att_pattern").set_value("Left only (decoder)").run()
    _ok(app)
    z = _heatmap_z(app.get("plotly_chart")[0])
    T = z.shape[0]
    above = np.triu(np.ones((T, T), dtype=bool), 1)
    assert np.isnan(z[above]).all() and np.isfinite(z[~above]).all()  # hidden: NaN, not a 0-weight cell
    assert any("Grey cells are hidden by the mask" in c.value for c in app.caption)
    app.radio(key="att_pattern").set_value("Prefix of k tokens").run()
    k_box = app.number_input(key="att_pattern_k")
    assert (k_box.value, k_box.max) == (3, T)
    z = _heatmap_z(app.get("plotly_chart")[0])
    assert np.isfinite(z[:3, :3]).all() and np.isnan(z[3, 4:]).all() and np.isnan(z[:3, 3:]).all()
    app.radio(key="att_view").set_value("All heads").run()
    _ok(app)
    grid = json.loads(app.get("plotly_chart")[0].proto.spec)["data"]
    assert grid[-1]["name"] == "hidden by the mask"  # a trace of its own, grey
    # a k kept from a longer sentence: bert's message, and the prefix brought back to the end
    app.number_input(key="att_pattern_k").set_value(T).run()
    app.text_area(key=state.W_TEXT_A).input("the cat")
    app.text_area(key=state.W_TEXT_B).input("")
    app.run()
    _ok(app)
    said = [w.value for w in app.warning if "prefix of" in w.value]
    assert said and f"prefix of {T} tokens is longer than the input, which has 4 tokens" in said[0].replace("\\", "")
    assert app.number_input(key="att_pattern_k").value == 4 and not _errors(app)


@pytest.mark.slow
def test_masked_lm_reads_both_ways_and_left_only_side_by_side(app):
    app.switch_page("pages/masked_lm.py").run()
    app.text_area(key=state.W_MLM_TEXT).input("She [MASK] to school every day.").run()
    _ok(app)
    assert [m.value for m in app.markdown if m.value.startswith("**Reads")] == [
        "**Reads both ways**",
        "**Reads left only**",
    ]
    words = [c.value.replace("\\", "") for c in app.caption if ": reads " in c.value]
    assert len(words) == 2 and "reads both ways · largest:" in words[0] and "reads left only · largest:" in words[1]
    assert words[0].split("largest:")[1] != words[1].split("largest:")[1]  # the reading changed the guess
    why = [m.value.replace("\\", "") for m in app.markdown if m.value.startswith("Left only, the model reads")]
    assert why and "“She” and never “to school every day.”" in why[0]
