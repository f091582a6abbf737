"""Links, figure downloads, projector styling and text alternatives, without a browser."""

import numpy as np
import plotly.graph_objects as go
import pytest
from streamlit.testing.v1 import AppTest

from app import state as S
from app.figures.attention import attention_heatmap
from app.figures.masked_lm import mlm_topk_bar
from app.figures.task_heads import span_probs
from app.ui import links, show_figure
from tests.helpers import ENTRY


def test_params_parse_only_valid_values_and_show_short_codes():
    layer = links.Param("layer", "k", "int", default=1, lo=1, hi=6)
    assert layer.parse("3") == 3 and layer.parse("0") is None and layer.parse("7") is None
    assert layer.parse("x") is None and layer.parse("-1") is None
    flag = links.Param("hide", "k", "bool")
    assert flag.parse("1") is True and flag.parse("0") is False and flag.parse("yes") is None
    view = links.Param("view", "k", "choice", choices=("Heatmap", "All heads"), codes=("map", "heads"))
    assert view.parse("heads") == "All heads" and view.parse("All heads") is None and view.parse("evil") is None
    assert view.show("All heads") == "heads"
    text = links.Param("a", "k")
    assert text.parse("x" * 5000) == "x" * links.LINK_TEXT_CHARS


def _run(page: str, **query) -> AppTest:
    at = AppTest.from_file(ENTRY, default_timeout=120)
    for k, v in query.items():
        at.query_params[k] = v
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.slow
def test_a_link_sets_the_view_and_the_address_follows_the_widgets():
    at = _run("pages/attention.py", a="the cat sat on the mat", layer="3", head="5", view="heads", hide="1")
    assert [s.value for s in at.slider][:2] == [3, 5]
    assert at.radio(key="att_view").value == "All heads" and at.checkbox(key="att_hide").value
    assert at.session_state[S.TEXT_A] == "the cat sat on the mat"
    at.slider(key="att_head_12").set_value(7).run()
    q = dict(at.query_params)
    assert q["head"] == "7" and q["layer"] == "3" and q["view"] == "heads" and q["a"] == "the cat sat on the mat"
    assert at.slider(key="att_head_12").value == 7  # the address did not pull it back


def test_bad_link_values_are_ignored_with_a_note_and_private_things_never_enter_a_link():
    at = _run("pages/attention.py", layer="99", view="<script>", model="../../etc")
    notes = [i.value for i in at.info]
    assert any("does not have" in n for n in notes) and any("layer" in n for n in notes), notes
    assert at.session_state[S.MODEL_SOURCE] == S.DEFAULT_MODEL
    assert [s.value for s in at.slider][:2] == [1, 1]
    # a session's own model is never named in a link
    at.session_state[S.MODEL_SOURCE] = "session:mine"
    at.run()
    assert "model" not in dict(at.query_params)


@pytest.mark.slow
def test_a_follower_arrives_with_the_whole_view_and_keeps_the_teachers_address():
    """class_panel moves a follower with links.arrive_with(the whole view) and the teacher's
    address: the follower's own values are replaced (defaults included), and the arriving run
    changes no query parameter (a change there could reach Chromium before the page switch did)."""
    at = AppTest.from_file(ENTRY, default_timeout=120)
    at.switch_page("pages/attention.py").run()
    at.slider(key="att_head_12").set_value(7).run()  # the follower's own view: head 7
    at.session_state[S.TEXT_A] = "my own sentence"
    at.run()
    assert dict(at.query_params)["head"] == "7"
    teacher_view = {"a": S.DEFAULT_TEXT_A, "b": "", "layer": "3", "head": "1", "hide": "0", "view": "map"}
    address = {"layer": "3"}  # what the teacher's own address shows: defaults left out
    at.session_state["_link_arriving"] = teacher_view
    at.query_params.clear()
    for k, v in address.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert [s.value for s in at.slider][:2] == [3, 1]  # head 7 replaced by the teacher's default
    assert at.session_state[S.TEXT_A] == S.DEFAULT_TEXT_A
    assert dict(at.query_params) == address  # the arriving run left the address as it came
    assert "_link_arriving" not in at.session_state
    at.slider(key="att_head_12").set_value(4).run()  # then the widgets rule, as after any link
    assert dict(at.query_params) == {"layer": "3", "head": "4"}


def test_long_text_is_cut_in_the_link_with_a_note():
    at = _run("pages/tokenization.py")
    at.session_state[S.TEXT_A] = "word " * 200
    at.run()
    assert len(dict(at.query_params)["a"]) == links.LINK_TEXT_CHARS
    assert any("cut" in n for n in at.session_state["_link_notes"].values())


def test_modebar_saves_png_at_3x_or_svg_named_for_the_figure():
    assert show_figure.file_name("Attention L4 H5") == "Attention-L4-H5"
    assert show_figure.file_name("../../x y") == "x-y" and show_figure.file_name("***") == "figure"
    png = show_figure.config("attention-L4-H5", "png")["toImageButtonOptions"]
    svg = show_figure.config("attention-L4-H5", "svg")["toImageButtonOptions"]
    assert png == {"format": "png", "filename": "attention-L4-H5", "scale": 3}
    assert svg["format"] == "svg" and svg["filename"] == "attention-L4-H5"
    assert show_figure.config("x", "exe")["toImageButtonOptions"]["format"] == "png"


def test_projector_style_enlarges_type_thickens_lines_and_uses_cividis():
    att = np.full((4, 4), 0.1)
    att[2, 1] = 0.7
    fig = show_figure.style_for_projector(attention_heatmap(att, ["[CLS]", "it", "dog", "[SEP]"], title="t"))
    assert fig.layout.font.size >= 18 and fig.layout.xaxis.tickfont.size >= 18 and fig.layout.yaxis.tickfont.size >= 18
    assert fig.data[0].colorscale[0][1].lower() == "#00224e"  # cividis
    line = show_figure.style_for_projector(go.Figure(go.Scatter(x=[1, 2], y=[3, 4], mode="lines")))
    assert line.data[0].line.width >= 3
    diverging = go.Figure(go.Heatmap(z=[[-1, 1]], colorscale="RdBu"))
    assert show_figure.style_for_projector(diverging).data[0].colorscale[0][1] != "#00224e"  # 0 keeps its meaning


def test_text_alternatives_say_what_is_strongest():
    att = np.full((4, 4), 0.1)
    att[2, 1] = 0.7
    fig = attention_heatmap(att, ["[CLS]", "it", "dog", "[SEP]"], title="layer 1, head 2")
    assert show_figure.describe(fig) == (
        "layer 1, head 2 · strongest: dog → it (0.70); 4 rows × 4 columns, values 0.10 to 0.70"
    )
    bar = mlm_topk_bar(["door", "window"], np.array([0.6, 0.2]), "gap 1")
    assert "largest: door (0.6)" in show_figure.describe(bar)
    sim = go.Figure(go.Heatmap(z=[[1.0, 0.3], [0.3, 1.0]], x=["a", "b"], y=["a", "b"]))
    assert "a → b (0.30)" in show_figure.describe(sim) or "b → a (0.30)" in show_figure.describe(sim)  # not itself
    # a reader's span: bars at token numbers, named by their ticks; the first of two series named
    span = span_probs(["clara", "was", "born", "in", "porto"], [0.1, 0.0, 0.0, 0.0, 0.9], [0.0, 0.0, 0.0, 0.1, 0.8])
    assert show_figure.describe(span) == "largest P(start): porto (0.9), then clara (0.1), was (0); 5 bars"
    hostile = mlm_topk_bar(["<img src=x>", "b"], np.array([0.9, 0.1]))
    assert "<img src=x>" in show_figure.describe(hostile)  # shown as text; the caption escapes markdown


@pytest.mark.slow
@pytest.mark.parametrize("page", ["pages/attention.py", "pages/masked_lm.py", "pages/embeddings.py"])
def test_every_figure_has_a_text_alternative(page):
    at = _run(page)
    words = [c.value for c in at.caption if c.value.startswith("In words:")]
    assert words, page
