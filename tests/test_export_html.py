"""A view saved as one HTML file (app/export): it reaches nothing outside itself (plotly.js inlined
once, every script inline, no http(s) address), typed text stays text, a layer/head choice is
precomputed within its budget, the stamp names the model by a hash of its weights; and every
figure a page draws through app/ui/show_figure.py offers it, with the page's model and inputs."""

from __future__ import annotations

import base64
import gzip
import json
import re

import numpy as np
import plotly.graph_objects as go
import pytest
import torch

from app.export import view_file
from app.export.stamp import Stamp, app_version, weights_hash
from app.export.view_file import Choice, Panel, view_html
from app.figures.attention import ReleasedError, attention_heatmap, head_maps
from app.figures.core import TITLE_BAND
from tests.helpers import tiny_bundle

HOSTILE = '<img src=x onerror=alert(1)> </script><script>alert(2)</script> & "quotes"'
TOKENS = ["[CLS]", "the", "<b>cat</b>", "sat", "[SEP]"]


def _atts(L=2, H=3, T=5) -> np.ndarray:  # T: len(TOKENS)
    a = np.random.default_rng(0).random((L, H, T, T)).astype(np.float32)
    return a / a.sum(-1, keepdims=True)


def _views(text: str) -> dict:
    """The file's JSON block of figures, read back."""
    m = re.search(r'<script type="application/json" id="bx-views">(.*?)</script>', text, re.S)
    assert m, "no figure data"
    return json.loads(m.group(1))


def _array(v) -> np.ndarray:
    """A plotted array as the file carries it: a list, or plotly's typed array (dtype, base64 bytes, shape)."""
    if isinstance(v, dict):
        a = np.frombuffer(base64.b64decode(v["bdata"]), dtype=v["dtype"])
        return a.reshape([int(n) for n in str(v.get("shape", len(a))).split(",")])
    return np.asarray(v, dtype=float)


def _file(choice: Choice | None = None, inputs=(("Sentence A", HOSTILE),)) -> str:
    atts = _atts()
    fig = attention_heatmap(atts[0, 0], TOKENS, title="layer 1, head 1")
    stamp = Stamp(model="tiny <model>", weights="0123456789ab", inputs=inputs)
    return view_html("Attention L1 H1", [Panel(fig, f"strongest: {HOSTILE}", choice)], stamp)


def test_the_file_reaches_nothing_outside_itself():
    text = _file()
    scripts = re.findall(r"<script\b[^>]*>", text, re.I)
    assert scripts == [
        '<script type="application/json" id="bx-views">',
        '<script type="application/gzip;base64" id="bx-plotly">',
        "<script>",
    ]
    packed = re.search(r'id="bx-plotly">([A-Za-z0-9+/=]+)</script>', text).group(1)
    assert gzip.decompress(base64.b64decode(packed)).decode() == view_file.plotly_js()  # once, as plotly ships it
    markup = text.replace(packed, "")
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", markup, re.I)
    assert not re.search(r"https?:", markup, re.I)
    assert not re.search(r"<(link|iframe|object|embed|img)\b", markup, re.I)
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', text).group(1)
    assert "default-src 'none'" in policy and "unsafe-eval" not in policy and "connect-src" not in policy


def test_typed_text_stays_text():
    text = _file()
    assert "<img src=x" not in text and "alert(2)</script>" not in text and "<b>cat" not in text
    assert "&lt;img src=x onerror=alert(1)&gt;" in text  # the inputs and the caption, as text
    assert "tiny &lt;model&gt;" in text
    data = _views(text)  # the figure's labels travel as JSON strings, escaped by the figure builders
    assert data["panels"][0]["frames"][0][0][0]["y"][2] == "&lt;b&gt;cat&lt;/b&gt;"


def test_the_stamp_says_model_weights_date_inputs_and_version():
    text = _file()
    assert "0123456789ab" in text and "saved 20" in text and "UTC" in text
    assert f"made with BERT Explorer {app_version()}" in text and app_version() != "unknown"
    assert "<dt>Sentence A</dt>" in text


def test_a_bertviz_view_is_stamped_with_its_scripts_data_and_policy_untouched():
    from app.bertviz.views import head_view_html

    view = head_view_html(TOKENS, _atts())
    stamp = Stamp(model="tiny <model>", weights="0123456789ab", inputs=(("Sentence A", HOSTILE),))
    text = view_file.stamped(view.html, "Bertviz head view", stamp)
    scripts = lambda doc: re.findall(r"<script\b[^>]*>.*?</script>", doc, re.S)
    policy = lambda doc: re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', doc).group(1)
    assert scripts(text) == scripts(view.html) and policy(text) == policy(view.html)  # draws as it did
    head, body = text.split("<body>")
    assert "<style>" in head and body.lstrip().startswith('<header class="bx-own"><h1>Bertviz head view</h1>')
    assert "&lt;img src=x onerror=alert(1)&gt;" in body and "<img src=x" not in text and "tiny &lt;model&gt;" in body
    assert "0123456789ab" in body and f"made with BERT Explorer {app_version()}</footer>" in body
    assert body.rstrip().endswith("</html>")
    with pytest.raises(ValueError):
        view_file.stamped("<p>not a document</p>", "x", stamp)


def test_a_choice_carries_one_frame_per_layer_and_head_and_menus_to_pick_them():
    atts = _atts()
    draw = lambda l, h: attention_heatmap(atts[l, h], TOKENS, title=f"layer {l + 1}, head {h + 1}")
    text = _file(Choice((("Layer", 2), ("Head", 3)), draw, (1, 2)))
    panel = _views(text)["panels"][0]
    assert panel["sizes"] == [2, 3] and len(panel["frames"]) == 6
    data, layout_no = panel["frames"][1 * 3 + 2]  # row-major: layer 2, head 3
    np.testing.assert_allclose(_array(data[0]["z"]), atts[1, 2], atol=1e-6)
    assert panel["layouts"][layout_no]["title"]["text"] == "layer 2, head 3"
    assert len(panel["layouts"]) == 6  # titles differ; equal layouts would be kept once
    assert re.search(r'<label>Layer <select>.*<option value="1" selected>2</option>', text)
    assert re.search(r'<label>Head <select>.*<option value="2" selected>3</option>', text)


def test_a_choice_over_budget_keeps_the_figure_shown_and_says_so(monkeypatch):
    monkeypatch.setattr(view_file, "FRAMES_BUDGET", 1_000)
    atts = _atts()
    drawn = []
    draw = lambda l, h: drawn.append((l, h)) or attention_heatmap(atts[l, h], TOKENS)
    text = _file(Choice((("Layer", 2), ("Head", 3)), draw, (0, 0)))
    assert not drawn and "<select>" not in text
    assert len(_views(text)["panels"][0]["frames"]) == 1
    assert "The layer and head choice is left out of this file" in text


def test_a_figure_drawn_under_streamlits_template_is_saved_fitted_and_in_real_colours(monkeypatch):
    """The app's plotly template (Streamlit's: placeholder colours its page swaps, no automargin)
    does not reach the file as is: its colours are the light theme's, every axis has automargin
    and the title sits in its own band above a key axis on top."""
    import plotly.io as pio
    import streamlit.elements.plotly_chart  # noqa: F401  registers Streamlit's template

    monkeypatch.setattr(pio.templates, "default", "streamlit")
    curve = go.Figure(go.Scatter(x=[1, 2, 3], y=[3, 1, 2], mode="lines"))
    assert curve.layout.template.layout.colorway[0] == "#000001"
    text = view_html("t", [Panel(curve), Panel(attention_heatmap(_atts()[0, 0], TOKENS, title="layer 1"))], Stamp())
    line, heat = (p["layouts"][0] for p in _views(text)["panels"])
    assert not re.findall(r"#0000[0-4]\d", json.dumps(_views(text)))  # no placeholder left
    assert line["template"]["layout"]["colorway"][:3] == ["#0068c9", "#83c9ff", "#ff2b2b"]
    assert line["xaxis"]["automargin"] is True and line["yaxis"]["automargin"] is True
    assert heat["title"]["yref"] == "container" and heat["margin"]["t"] > TITLE_BAND + 30  # band + key axis


def test_the_weights_hash_follows_the_weights():
    a, b = tiny_bundle(seed=0), tiny_bundle(seed=0)
    assert weights_hash(a.model) == weights_hash(b.model)
    assert re.fullmatch(r"[0-9a-f]{12}", weights_hash(a.model))
    with torch.no_grad():
        b.model.bert.embeddings.word_embeddings.weight[0, 0] += 1e-3
    c = tiny_bundle(seed=0)
    with torch.no_grad():
        c.model.bert.embeddings.word_embeddings.weight[0, 0] += 1e-3
    assert weights_hash(c.model) != weights_hash(a.model)
    assert weights_hash(tiny_bundle(seed=1).model) != weights_hash(a.model)


@pytest.mark.slow
def test_every_figure_of_a_page_offers_its_file_with_the_model_and_inputs(monkeypatch):
    """The Attention page in AppTest: its heatmap's button builds a file with the layer/head
    menus, the model's name and hash and the sentence typed (AppTest has no server to click)."""
    from streamlit.testing.v1 import AppTest

    from app import state
    from tests.helpers import ENTRY, offered_downloads

    offered = offered_downloads(monkeypatch)
    at = AppTest.from_file(ENTRY, default_timeout=120)
    at.session_state[state.TEXT_A] = f"the cat sat {HOSTILE}"
    at.switch_page("pages/attention.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert {"att_heatmap_html", "att_heatmap_ipynb", "att_heatmap_wheel"} <= {b.key for b in at.get("download_button")}
    text = offered["attention-L1-H1.html"]().decode("utf-8")
    panel = _views(text)["panels"][0]
    assert panel["sizes"] == [6, 12] and len(panel["frames"]) == 72
    assert "&lt;img src=x onerror=alert(1)&gt;" in text and "<img src=x" not in text
    from app.model_sources import load_model

    assert f"<code>{weights_hash(load_model(state.DEFAULT_MODEL).model)}</code>" in text
    notebook = json.loads(offered["attention-L1-H1.ipynb"]())  # the same model by name, the same sentence
    code = "".join(line for cell in notebook["cells"] for line in cell["source"])
    assert "bundle = bert.load('minilm-l6')" in code and repr(f"the cat sat {HOSTILE}") in code
    at.radio(key="att_view").set_value("bertviz: head view").run()  # bertviz's own document, stamped
    assert not at.exception, [e.value for e in at.exception]
    text = offered["bertviz-head-view.html"]().decode("utf-8")
    assert "&lt;img src=x onerror=alert(1)&gt;" in text.split("</header>")[0] and "<img src=x" not in text
    assert f"<code>{weights_hash(load_model(state.DEFAULT_MODEL).model)}</code>" in text
    assert 'id="bertexplorer-data"' in text and "made with BERT Explorer" in text


def _menus(text: str) -> list[list[str]]:
    """Each menu's option names, in the order of the file."""
    return [re.findall(r"<option[^>]*>([^<]*)</option>", m) for m in re.findall(r"<select>(.*?)</select>", text)]


@pytest.mark.slow
def test_explanations_and_compare_carry_their_choices_in_the_file(monkeypatch):
    """Explanations (the default sentence's two [MASK]s): rollout vs saliency for each [MASK] and
    guess, the logit lens for each [MASK]; Compare's one word at every layer; each frame the figure
    the page draws for that choice. Explanations, Tokenization and Embeddings offer their notebooks."""
    from streamlit.testing.v1 import AppTest

    from app import state
    from app.analysis_cache import saliency
    from app.figures.explain import saliency_bars
    from app.model_sources import load_model
    from bert.analysis.mlm import mlm_topk
    from tests.helpers import ENTRY, offered_downloads

    offered = offered_downloads(monkeypatch)
    at = AppTest.from_file(ENTRY, default_timeout=180)
    at.switch_page("pages/explanations.py").run()
    assert not at.exception, [e.value for e in at.exception]
    text = offered["explanations-bars.html"]().decode("utf-8")
    panel = _views(text)["panels"][0]
    assert panel["sizes"] == [2, 8] and len(panel["frames"]) == 16 and 'class="bx-note"' not in text
    (masks, guesses) = _menus(text)
    assert masks[0].startswith("1 (token ") and guesses[:3] == ["1st", "2nd", "3rd"]
    b = load_model(state.DEFAULT_MODEL)  # the second [MASK]'s third guess, as the page draws it
    sentence = at.session_state["mlm_text"]
    pred = mlm_topk(b, sentence, k=8)
    sal = saliency("a key of this test's own", sentence, pred.positions[1], pred.top_tokens[1][2], b)
    want = saliency_bars(sal.tokens, sal.rollout, sal.saliency, sal.position)
    np.testing.assert_allclose(_array(panel["frames"][1 * 8 + 2][0][1]["y"]), want.data[1].y, rtol=1e-3, atol=1e-4)
    at.radio(key="ex_view").set_value("Logit lens").run()
    assert not at.exception, [e.value for e in at.exception]
    for name in ("explanations-lens.html", "explanations-answer.html"):
        panel = _views(offered[name]().decode("utf-8"))["panels"][0]
        assert panel["sizes"] == [2] and len(panel["frames"]) == 2, name

    code = "".join(l for c in json.loads(offered["explanations-lens.ipynb"]())["cells"] for l in c["source"])
    assert repr(sentence) in code and "mask = 1" in code  # the page's [MASK], its top guess
    for page, name in (("tokenization", "tokens.ipynb"), ("embeddings", "embeddings-token.ipynb")):
        at.switch_page(f"pages/{page}.py").run()
        assert not at.exception, [e.value for e in at.exception]
        code = "".join(l for c in json.loads(offered[name]())["cells"] for l in c["source"])
        assert "bundle = bert.load('minilm-l6')" in code and repr(state.DEFAULT_TEXT_A) in code, page

    at.switch_page("pages/compare.py").run()
    at.radio(key="cmp_view").set_value("One word in many sentences").run()
    assert not at.exception, [e.value for e in at.exception]
    for name in ("compare-senses-map.html", "compare-senses-sep.html"):
        text = offered[name]().decode("utf-8")
        panel = _views(text)["panels"][0]
        assert panel["sizes"] == [7] and len(panel["frames"]) == 7, name
        assert _menus(text) == [["0 (embeddings)", "1", "2", "3", "4", "5", "6"]], name


def test_compares_choices_draw_what_the_page_draws_and_name_their_options():
    from app.export import choices
    from app.figures.compare import attention_diff_heatmap, moved_heatmap
    from bert.analysis.compare import compare_attention

    aa, ab = _atts(), _atts()[::-1].copy()
    pick_a, pick_b = choices.two_models(aa, ab, TOKENS, TOKENS, ("A: x", "B: y"), (1, 2))
    d = compare_attention(aa, ab, TOKENS, TOKENS)
    pick_d, pick_m = choices.model_difference(aa, ab, TOKENS, d.moved, (1, 2))
    text = view_html(
        "Compare", [Panel(pick_d.draw(1, 2), choice=pick_d), Panel(pick_a.draw(1, 2), choice=pick_a)], Stamp()
    )
    diff = _views(text)["panels"][0]
    assert diff["sizes"] == [2, 3] and _menus(text)[:2] == [["1", "2"], ["1", "2", "3"]]
    for l, h in ((0, 0), (1, 2)):
        want = attention_diff_heatmap(d.diff[l, h], TOKENS, f"A − B, layer {l + 1}, head {h + 1}")
        np.testing.assert_allclose(_array(diff["frames"][l * 3 + h][0][0]["z"]), want.data[0].z, atol=1e-3)
    assert pick_m.draw(1, 2).layout == moved_heatmap(d.moved, (1, 2)).layout  # the picked head boxed
    del aa  # the analysis let go: the file keeps the figure shown, with a note
    text = view_html("Compare", [Panel(pick_b.draw(1, 2), choice=pick_a)], Stamp())
    assert len(_views(text)["panels"][0]["frames"]) == 1 and "no longer holds them" in text


def test_a_classifiers_explanation_carries_every_class_named():
    from app.export import choices
    from bert.analysis.explain import saliency_classifier
    from tests.helpers import minilm_tiny_classifier

    b = minilm_tiny_classifier()
    text = f"the film was long {HOSTILE}"
    pick = choices.class_saliency("tiny-clf of this test", b, text, b.labels, 1)
    html_text = view_html("Explanations", [Panel(pick.draw(1), choice=pick)], Stamp())
    panel = _views(html_text)["panels"][0]
    assert panel["sizes"] == [2] and _menus(html_text) == [["negative", "positive"]]
    for c in (0, 1):
        want = saliency_classifier(b, text, class_index=c).saliency
        np.testing.assert_allclose(_array(panel["frames"][c][0][1]["y"]), want, rtol=1e-3, atol=1e-4)


def test_a_training_runs_snapshots_carry_every_step_layer_and_head_within_the_budget(monkeypatch):
    from app.export import choices
    from app.figures.compare import change_over_training
    from bert.train.attention_snapshots import AttentionSnapshots

    steps, snaps = [0, 10, 20], [a.astype(np.float16) for a in (_atts(), _atts()[::-1], _atts()[:, ::-1])]
    att, moved, line = choices.training_snapshots(steps, snaps, TOKENS, (2, 1, 0))
    text = view_html(
        "Snapshots", [Panel(att.draw(2, 1, 0), choice=att), Panel(moved.draw(2, 1, 0), choice=moved)], Stamp()
    )
    maps, moves = _views(text)["panels"]
    assert maps["sizes"] == [3, 2, 3] and len(maps["frames"]) == 18 and _menus(text)[0] == ["0", "10", "20"]
    np.testing.assert_allclose(_array(maps["frames"][2 * 6 + 1 * 3 + 0][0][0]["z"]), snaps[2][1, 0], atol=1e-3)
    change = AttentionSnapshots.change_since_start(np.stack(snaps))  # what the page draws
    np.testing.assert_allclose(_array(moves["frames"][1 * 6][0][0]["z"]), change[1], atol=1e-3)
    assert line.draw(1, 0, 2).to_json() == change_over_training(steps, change, (0, 2), 1).to_json()
    monkeypatch.setattr(view_file, "FRAMES_BUDGET", 10_000)  # a long run: the file says what it left out
    text = view_html("Snapshots", [Panel(att.draw(2, 1, 0), choice=att)], Stamp())
    assert "The step and layer and head choice is left out of this file" in text


def test_head_maps_draw_any_head_as_the_page_draws_the_picked_one():
    from app.formatting import hide_specials

    atts = _atts()
    for keep in (None, [1, 2, 3]):
        draw = head_maps(atts, TOKENS, keep, start=1, size=2)
        for layer, head in ((0, 0), (1, 2)):
            z = _array(_views(view_html("t", [Panel(draw(layer, head))], Stamp()))["panels"][0]["frames"][0][0][0]["z"])
            full = atts[layer, head] if keep is None else hide_specials(atts[layer, head], TOKENS)[0]
            np.testing.assert_allclose(z, full[1:3, 1:3], atol=1e-6)


def test_head_maps_keep_no_analysis_alive_and_a_released_one_leaves_the_figure_with_a_note():
    import gc

    atts = _atts()
    draw = head_maps(atts, TOKENS)
    shown = draw(0, 1)  # the page's own figure, drawn while the analysis is held
    del atts
    gc.collect()
    with pytest.raises(ReleasedError):
        draw(1, 0)
    text = view_html("t", [Panel(shown, "", Choice((("Layer", 2), ("Head", 3)), draw, (0, 1)))], Stamp())
    assert len(_views(text)["panels"][0]["frames"]) == 1 and "<select>" not in text
    assert "no longer holds them" in text


def test_a_table_view_is_escaped_html_with_no_script():
    import pandas as pd

    table = pd.DataFrame({"token": ["[CLS]", HOSTILE], "id": [101, 7]})
    text = view_html("Tokens", [Panel(table=table)], Stamp(inputs=(("Sentence A", HOSTILE),)))
    assert "<script" not in text and "<img" not in text
    assert "<td>&lt;img src=x onerror=alert(1)&gt; &lt;/script&gt;" in text and "<td>101</td>" in text
    assert "default-src 'none'; style-src 'unsafe-inline'" in text


def test_files_are_built_one_at_a_time(monkeypatch):
    """Ten students saving at once queue for the interpreter instead of starving other pages."""
    import threading

    entered, crowd, inside, most = threading.Event(), threading.Event(), [0], [0]
    release = threading.Event()
    lock = threading.Lock()
    real = view_file._frames

    def frames(panel):
        with lock:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
            if inside[0] > 1:
                crowd.set()
        entered.set()
        release.wait(30)
        with lock:
            inside[0] -= 1
        return real(panel)

    monkeypatch.setattr(view_file, "_frames", frames)
    fig = attention_heatmap(_atts()[0, 0], TOKENS)
    threads = [threading.Thread(target=view_html, args=("t", [Panel(fig)], Stamp())) for _ in range(3)]
    for t in threads:
        t.start()
    assert entered.wait(30)
    assert not crowd.wait(2)  # a second builder never gets in while the first is inside
    assert sum(t.is_alive() for t in threads) == 3 and inside[0] == 1
    release.set()
    for t in threads:
        t.join(30)
    assert most[0] == view_file.BUILDS_AT_ONCE == 1


def test_files_of_the_same_view_share_their_frames():
    atts, drawn = _atts(), []
    draw = lambda l, h: drawn.append((l, h)) or attention_heatmap(atts[l, h], TOKENS)
    one = _file(Choice((("Layer", 2), ("Head", 3)), draw, (0, 0), key=("same view", 1)))
    two = _file(Choice((("Layer", 2), ("Head", 3)), draw, (1, 1), key=("same view", 1)))
    assert len(drawn) == 6 and _views(one)["panels"][0]["frames"] == _views(two)["panels"][0]["frames"]
    _file(Choice((("Layer", 2), ("Head", 3)), draw, (0, 0), key=("another view", 1)))
    assert len(drawn) == 12
