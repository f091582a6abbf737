"""The Causes page (pages/causes.py, app/causes/) and its figures (app/figures/causes.py): the
figures on hand-made numbers, then every view through AppTest with the default model, with
bad inputs each giving a clear message and never a traceback."""

from __future__ import annotations

import numpy as np
import pytest

from app.causes.pairs_view import chart_vs_total
from app.causes.patching_view import baseline_warnings, patched_line, prefers
from app.figures.causes import pair_word_scores, paradigm_accuracy_bars, patching_heatmap, probe_curves
from app.formatting import md_escape
from bert.analysis.patching import Patching
from bert.analysis.probes import ProbeCurve
from bert.analysis.scoring import SentenceScore
from tests.helpers import APP_TIMEOUT, ENTRY  # noqa: E402

START_PAGE = "pages/causes.py"  # where the module's `at` (tests/conftest.py) opens the app


def test_patching_heatmap_cells_labels_and_pick():
    effect = np.array([[0.0, 1.0, 0.0], [0.1, 0.5, 0.2], [0.0, 0.0, 1.0]])
    fig = patching_heatmap(effect, ["embeddings", "layer 1", "layer 2"], ["<b>", "a/b", "[MASK]"], 2, (1, 2))
    heat, cells = fig.data[0], fig.data[1]
    assert np.asarray(heat.z).shape == (3, 3) and heat.zmid == 0
    assert list(fig.layout.xaxis.ticktext) == ["&lt;b&gt;", "a/b", "[MASK]"]
    assert list(fig.layout.yaxis.ticktext) == ["embeddings", "layer 1", "layer 2"]
    cd = np.asarray(cells.customdata)
    assert cd.shape == (9, 2) and tuple(cd[5]) == (1, 2) and (cells.x[5], cells.y[5]) == (2, 1)
    shape = fig.layout.shapes[0]
    assert (shape.x0, shape.y0) == (1.5, 0.5), "the picked cell is outlined"
    assert fig.layout.annotations[0].x == 2, "the [MASK]'s column is marked"
    m = np.array([[-1.0, 2.0, -1.0], [-0.5, 0.5, 1.0], [-1.0, -1.0, 2.0]])
    ranked = patching_heatmap(effect, ["e", "1", "2"], ["a", "b", "c"], ranking=(m, "are", "<is>")).data[1].text
    assert ranked[1].endswith("restored; are first (+2.00)") and ranked[3].endswith("; &lt;is&gt; first (-0.50)")


def _patching(clean: float, corrupted: float, patched) -> Patching:
    """A residual patching of hand-made numbers: 2 rows, 3 places, the [MASK] last."""
    patched = np.asarray(patched, dtype=np.float64)
    toks = ["[CLS]", "boxes", "[MASK]"]
    return Patching(
        "residual", toks, ["[CLS]", "box", "[MASK]"], 2, "are", "is", clean, corrupted,
        (patched - corrupted) / (clean - corrupted), patched, np.zeros((2, 3, 1)), np.zeros((2, 3, 1)),
        [[["x"]] * 3] * 2, ["embeddings", "layer 1"], ["[CLS]", "boxes/box", "[MASK]"],
    )  # fmt: skip


def test_patching_says_when_the_clean_run_does_not_prefer_the_answer_or_the_corrupted_the_foil():
    fine = _patching(2.0, -1.0, [[-1.0, 2.0, -1.0], [-1.0, 0.5, 1.5]])
    assert baseline_warnings(fine) == []
    assert prefers(1.5, "are", "is") == "ranks **are** above **is** (+1.50)"
    assert prefers(-0.25, "are", "is") == "ranks **is** above **are** (-0.25)"
    assert prefers(1.0, "are", "<b>is") == f"ranks **are** above **{md_escape('<b>is')}** (+1.00)", "typed: escaped"
    # the pair: the clean sentence already prefers the foil, by -0.25
    boxes = _patching(-0.25, -4.26, [[-4.26, -0.25, -4.26], [-4.26, -4.0, -0.25]])
    (said,) = baseline_warnings(boxes)
    assert said.startswith("The clean sentence does not prefer **are**: it already ranks **is** above **are** (-0.25).")
    # restored in full, and still the foil first: the ranking says so beside the share
    line = patched_line(boxes, 1, 2)
    assert "1.00 of the gap restored" in line and "ranks **is** above **are** (-0.25), as the clean run does" in line
    assert "ranks **are** above" in patched_line(fine, 1, 2) and "as the clean run does" in patched_line(fine, 1, 2)
    assert "unlike the clean run" in patched_line(fine, 1, 0)
    both = _patching(-0.5, 0.5, [[0.5, -0.5, 0.5], [0.5, 0.5, -0.5]])
    assert [w.split(":")[0] for w in baseline_warnings(both)] == [
        "The clean sentence does not prefer **are**",
        "The corrupted sentence does not prefer **is**",
    ]


def _scored(words: list[str], scores: list[float]) -> SentenceScore:
    return SentenceScore(" ".join(words), words, np.array(scores), words, np.array(scores), sum(scores), False)


def test_a_pair_whose_differing_word_and_total_disagree_says_why_in_one_sentence():
    good = _scored(["the", "girl", "who", "met", "the", "boys", "was", "happy"], [-1, -2, -1, -2, -1, -4, -2.0, -1])
    bad = _scored(["the", "girl", "who", "met", "the", "boys", "were", "happy"], [-1, -2, -1, -2, -1, -1, -2.5, -1])
    said = chart_vs_total(good, bad)
    assert said == (
        "The words that differ («was» -2.00 vs «were» -2.50) favour the good sentence by 0.50, but the words both "
        "share score 3.00 higher in the bad one (most of all «boys»: -4.00 in the good, -1.00 in the bad), so the "
        "total favours the bad sentence by 2.50."
    )
    assert said.count(". ") == 0, "one sentence"
    agree = _scored(["the", "girl", "who", "met", "the", "boys", "was", "happy"], [-1, -2, -1, -2, -1, -1, -2.0, -1])
    assert chart_vs_total(agree, bad) == "", "both favour the good sentence: nothing to explain"
    # a word only one sentence has: the other side reads "nothing"
    never = _scored(["she", "has", "never", "been", "there"], [-1, -1, -3.0, -1, -1])
    ever = _scored(["she", "has", "been", "there"], [-2, -2, -2, -2])
    assert chart_vs_total(never, ever).startswith(
        "The words that differ («never» -3.00 vs nothing (0)) favour the bad sentence by 3.00, but"
    )


def test_paradigm_bars_and_a_pair_word_by_word():
    fig = paradigm_accuracy_bars(["a <i>", "b"], [0.9, 0.4], [20, 20])
    assert list(fig.data[0].y) == ["a &lt;i&gt;", "b"] and list(fig.data[0].text) == ["90%", "40%"]
    assert fig.data[0].marker.color[0] != fig.data[0].marker.color[1], "above and below chance in two colours"
    fig = pair_word_scores(
        ["the", "dogs", "bark"], [-1.0, -2.0, -3.0], ["the", "dogs", "barks", "<x>"], [-1, -2, -9, -4]
    )
    good, bad = fig.data
    assert list(good.x) == ["the", "dogs", "bark/barks"] and len(bad.x) == 4
    assert bad.x[3] == "–/&lt;x&gt;" and bad.customdata[3] == "&lt;x&gt;"


def test_probe_curves_two_lines_a_model_and_chance():
    def curve(acc, ctl):
        return ProbeCurve("pos", ["embeddings", "layer 1"], np.array(acc), np.array(ctl), 0.2, 0.3, ["A", "B"], 10, 5)

    fig = probe_curves([("<m>", curve([0.8, 0.9], [0.5, 0.4])), ("other", curve([0.6, 0.7], [0.3, 0.3]))])
    assert [t.name for t in fig.data] == [
        "&lt;m&gt;: property",
        "&lt;m&gt;: control task",
        "other: property",
        "other: control task",
    ]
    assert list(fig.data[0].y) == [0.8, 0.9] and fig.data[1].line.dash == "dash"
    assert fig.data[0].line.color == fig.data[1].line.color != fig.data[2].line.color
    assert fig.layout.shapes[0].y0 == 0.2, "chance drawn at the most frequent class's share"
    assert list(curve([0.8, 0.9], [0.5, 0.4]).selectivity) == pytest.approx([0.3, 0.5])


pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402


def _ok(at):
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def _refused(at, *said):
    """No traceback, and an error box saying all of `said` (read without markdown's escapes)."""
    assert not at.exception, [e.value for e in at.exception]
    errors = [e.value.replace("\\", "") for e in at.error]
    assert any(all(s in e for s in said) for e in errors), (errors, said)


@pytest.mark.slow
def test_patching_presets_sites_and_a_cell(at):
    _ok(at)
    assert [t.value for t in at.title] == ["Causes"]
    assert at.text_input(key="pt_clean").value.startswith("The keys to the cabinet")
    assert any("on the clean sentence" in m.value for m in at.markdown)
    for site in ("attention", "ffn", "heads", "residual"):
        at.selectbox(key="pt_site").set_value(site).run()
        _ok(at)
    pick = at.selectbox(key="pt_cell_residual_7_12")
    pick.set_value(6 * 12 + 6).run()  # the last layer at the [MASK]: the clean answer, fully
    _ok(at)
    assert "layer 6, [MASK]: 1.00 restored" in at.selectbox(key="pt_cell_residual_7_12").format_func(6 * 12 + 6)
    at.selectbox(key="pt_preset").set_value("A fact").run()
    _ok(at)
    assert at.text_input(key="pt_answer").value == "paris"
    assert any("France" in c.value or "france" in c.value for c in at.caption)


@pytest.mark.slow
def test_patching_bad_pairs_say_why(at):
    at.selectbox(key="pt_preset").set_value("Number agreement").run()
    at.text_input(key="pt_corrupted").input("The key to the big cabinet [MASK] on the table.").run()
    assert not at.error and not at.exception, "one box edited: the other is still to come"
    assert any("Now edit the clean sentence to match" in i.value and "the corrupted one 13" in i.value for i in at.info)
    at.text_input(key="pt_clean").input("The keys to this cabinet [MASK] on the table.").run()
    _refused(at, "12 tokens", "13")
    at.text_input(key="pt_corrupted").input("The key to the cabinet is on the table.").run()
    _refused(at, "no [MASK]")
    at.text_input(key="pt_corrupted").input("The key to the cabinet [MASK] on the table.").run()
    at.text_input(key="pt_answer").input("<b>zzqx</b>").run()
    _refused(at, "not a single token")
    at.text_input(key="pt_answer").input("").run()
    _refused(at, "the answer")
    at.text_input(key="pt_answer").input("are").run()
    _ok(at)
    long = " ".join(["the old house by the river"] * 9)  # 54 words
    at.text_input(key="pt_clean").input(f"{long} [MASK] here.").run()
    at.text_input(key="pt_corrupted").input(f"{long} [MASK] there.").run()
    assert not at.exception
    at.text_input(key="pt_clean").input(" ".join(["word"] * 70) + " [MASK]").run()
    at.text_input(key="pt_corrupted").input(" ".join(["term"] * 70) + " [MASK]").run()
    _refused(at, "more than the 64")


@pytest.mark.slow
def test_patching_a_pair_whose_clean_run_prefers_the_foil_says_so(at):
    """The issue's pair: 'The boxes on the shelf [MASK] very heavy.' already prefers 'is' on the
    default model; the page says so, and the fully restoring cell's run still ranks 'is' first."""
    at.selectbox(key="pt_preset").set_value("Number agreement").run()
    at.selectbox(key="pt_site").set_value("residual").run()
    at.text_input(key="pt_clean").input("The boxes on the shelf [MASK] very heavy.").run()
    assert not at.error and any("Now edit the corrupted sentence to match" in i.value for i in at.info)
    at.text_input(key="pt_corrupted").input("The box on the shelf [MASK] very heavy.").run()
    _ok(at)
    assert any(
        w.value.startswith("The clean sentence does not prefer **are**: it already ranks **is**") for w in at.warning
    )
    last = 6 * 11 + 6  # the last layer at the [MASK]
    at.selectbox(key="pt_cell_residual_7_11").set_value(last).run()
    _ok(at)
    assert (
        at.selectbox(key="pt_cell_residual_7_11")
        .format_func(last)
        .startswith("layer 6, [MASK]: 1.00 restored, is first (-0.")
    )
    assert any("1.00 of the gap restored; this run ranks **is** above **are**" in m.value for m in at.markdown)


@pytest.mark.slow
def test_minimal_pairs_paradigm_a_pair_and_typed_pairs(at):
    at.radio(key="cz_view").set_value("Minimal pairs").run()
    _ok(at)
    assert any(m.label == "The model prefers the good sentence" for m in at.metric)
    assert len(at.dataframe[0].value) == 20
    picker = next(s for s in at.selectbox if s.label == "A pair word by word")
    picker.set_value(3).run()
    _ok(at)
    at.radio(key="mp_source").set_value("Your pairs").run()
    _ok(at)
    assert len(at.dataframe[0].value) == 3
    before = next(s for s in at.selectbox if s.label == "A pair word by word")
    at.text_area(key="mp_typed").input("The dog barks. | The dog bark.").run()
    _ok(at)
    assert any("add more pairs" in i.value for i in at.info)
    after = next(s for s in at.selectbox if s.label == "A pair word by word")
    assert after.key != before.key and after.options == ["1. The dog barks.  vs  The dog bark."], "a new picker"
    # the default model: 'was' beats 'were', the shared words the other way; the caption says why
    at.text_area(key="mp_typed").input("The girl who met the boys was happy. | The girl who met the boys were happy.")
    at.run()
    _ok(at)
    said = [c.value.replace("\\", "") for c in at.caption if "The words that differ" in c.value]
    assert said and "(«was» " in said[0] and "favour the good sentence by" in said[0], said
    assert "so the total favours the bad sentence by" in said[0]
    at.text_area(key="mp_typed").input("The dog barks. The dog bark.").run()
    _refused(at, "line 1 is not")
    at.text_area(key="mp_typed").input("The [MASK] barks. | The dog bark.").run()
    _refused(at, "no [MASK]")
    long = " ".join(["the old house by the river"] * 9)  # 54 words
    at.text_area(key="mp_typed").input(f"{long} is big. | {long} are big.").run()
    _ok(at)
    at.text_area(key="mp_typed").input("<b>x</b> | [y](javascript:alert(1))").run()
    _ok(at)


@pytest.mark.slow
def test_probes_train_on_a_button_and_two_models_side_by_side(at):
    at.radio(key="cz_view").set_value("Probes").run()
    _ok(at)
    assert not at.dataframe, "nothing trains before the button"
    at.select_slider(key="pr_sentences").set_value(60).run()
    at.selectbox(key="pr_prop").set_value("number").run()
    at.button(key="pr_run").click().run()
    _ok(at)
    table = at.dataframe[0].value
    assert list(table["vectors"])[:2] == ["embeddings", "layer 1"] and len(table) == 7
    assert (
        table["accuracy"].between(0, 1).all() and (table["selectivity"] == table["accuracy"] - table["control"]).all()
    )
    at.selectbox(key="pr_beside").set_value("mini-scratch").run()
    _ok(at)
    assert set(at.dataframe[0].value["model"]) == {"minilm-l6", "mini-scratch"}


@pytest.mark.slow
def test_a_link_reopens_a_typed_pair():
    at = AppTest.from_file(ENTRY, default_timeout=APP_TIMEOUT)
    at.query_params["clean"] = "The girls near the house [MASK] happy."
    at.query_params["corrupted"] = "The girl near the house [MASK] happy."
    at.query_params["site"] = "heads"
    at.switch_page("pages/causes.py").run()
    _ok(at)
    assert at.text_input(key="pt_clean").value == "The girls near the house [MASK] happy."
    assert at.selectbox(key="pt_site").value == "heads" and at.text_input(key="pt_answer").value == "are"
    assert dict(at.query_params).get("site") == "heads" and "view" not in dict(at.query_params)


@pytest.mark.slow
def test_the_lessons_links_reopen_the_pairs_and_probes_views():
    from app.lessons.heads_learned import HEADS, PAIRS_PARADIGM

    titles = ("Which sentence sounds right?", "Where a noun's number is written")
    pair_link, probe_link = (next(s.link for s in HEADS.steps if s.title == t) for t in titles)
    at = AppTest.from_file(ENTRY, default_timeout=APP_TIMEOUT)
    for name, value in pair_link.query.items():
        at.query_params[name] = value
    at.switch_page(pair_link.page).run()
    _ok(at)
    assert at.radio(key="cz_view").value == "Minimal pairs" and at.selectbox(key="mp_paradigm").value == PAIRS_PARADIGM
    at = AppTest.from_file(ENTRY, default_timeout=APP_TIMEOUT)
    for name, value in probe_link.query.items():
        at.query_params[name] = value
    at.switch_page(probe_link.page).run()
    _ok(at)
    assert at.radio(key="cz_view").value == "Probes" and at.selectbox(key="pr_prop").value == "number"
