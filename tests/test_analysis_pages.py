"""The analysis pages (head patterns, explanations, ablation, compare) and their figures.

Part 1: the figures (app/figures/*.py) on hand-made numbers: each figure has the right shape, and every
token reaches plotly escaped. Part 2: the pages through streamlit.testing (AppTest) with the
default model and with a tiny session classifier: every view renders with no exception and
no error box, and the controls work. Plotly charts are UnknownElements in AppTest.
"""

import numpy as np
import pytest

from app.analysis_cache import off_key
from app.figures.attention_heads import (
    PATTERN_COLOURS,
    STAT_NAMES,
    class_probs_before_after,
    head_stats_bar,
    importance_heatmap,
    pattern_map,
    topk_before_after,
)
from app.figures.compare import (
    attention_diff_heatmap,
    change_over_training,
    class_probs_bar,
    moved_heatmap,
    sense_scatter,
    separation_line,
)
from app.figures.explain import answer_by_layer, logit_lens_heatmap, saliency_bars
from bert.analysis.ablation import head_mask
from bert.analysis.attention_heads import LABELS

rng = np.random.default_rng(0)
L, H = 3, 4


def _stats():
    return {name: rng.random((L, H)) for name in STAT_NAMES}


# --- part 1: figures ------------------------------------------------------------------------------


def test_pattern_map_cells_hover_and_legend():
    labels = np.array(
        [
            ["[CLS]", "previous", "broad", "other"],
            ["[SEP]", "[SEP]", "next", "self"],
            ["punctuation", "[CLS]", "[CLS]", "broad"],
        ]
    )
    stats = _stats()
    fig = pattern_map(labels, stats, selected=(1, 2), title="<b>x</b>")
    hm, pts = fig.data[0], fig.data[1]
    z = np.asarray(hm.z)
    assert z.shape == (L, H)
    names = list(PATTERN_COLOURS)
    assert z[0, 1] == names.index("previous") and z[2, 0] == names.index("punctuation")
    # the clickable markers: one per head, customdata starts with the 0-based layer, head
    cd = np.asarray(pts.customdata)
    assert cd.shape == (L * H, 2 + len(STAT_NAMES))
    i = 1 * H + 2
    assert tuple(cd[i, :2]) == (1, 2) and (pts.x[i], pts.y[i]) == (3, 2)
    assert np.isclose(cd[i, 2], stats["[CLS]"][1, 2])
    # one legend entry per label in use, with its count
    legend = [t.name for t in fig.data[2:]]
    assert len(legend) == len(set(labels.ravel()))
    assert "[CLS] (3)" in legend
    assert len(fig.layout.shapes) == 1
    assert "<b>" not in fig.layout.title.text
    assert set(PATTERN_COLOURS) == set(LABELS)


def test_head_stats_bar():
    fig = head_stats_bar(_stats(), 2, 3)
    assert len(fig.data[0].y) == len(STAT_NAMES)
    assert fig.layout.title.text == "layer 3, head 4"


def test_saliency_bars_two_series_per_token_escaped():
    tokens = ["[CLS]", "<script>", "[MASK]", "<script>", "[SEP]"]
    r, s = rng.random(5), rng.random(5)
    fig = saliency_bars(tokens, r / r.sum(), s / s.sum(), position=2)
    assert len(fig.data) == 2 and all(len(t.x) == 5 for t in fig.data)
    assert len(set(fig.data[0].x)) == 5, "repeated tokens stay apart"
    assert all("<script>" not in x for x in fig.data[0].x)
    assert fig.layout.annotations and fig.layout.annotations[0].x == fig.data[0].x[2]


def test_logit_lens_heatmap_and_answer_line():
    k, n = 3, L + 1
    toks = [["the", "a", "<i>"] for _ in range(n - 1)] + [["paris", "the", "a"]]
    probs = np.sort(rng.random((n, k)), -1)[:, ::-1]
    fig = logit_lens_heatmap(toks, probs, answer="paris")
    hm = fig.data[0]
    assert np.asarray(hm.z).shape == (n, k)
    assert list(hm.y) == ["embeddings", "layer 1", "layer 2", "layer 3"]
    assert hm.text[-1][0] == "<b>paris</b>" and hm.text[0][2] == "&lt;i&gt;"
    line = answer_by_layer(probs[:, 0], np.arange(n, 0, -1), "<b>")
    assert len(line.data[0].y) == n and "<b>" not in line.layout.title.text


def test_ablation_figures():
    fig = topk_before_after(["a", "b"], [0.6, 0.3], ["c", "a"], [0.5, 0.2], title="t")
    assert len(fig.data) == 2 and list(fig.data[1].y) == ["c", "a"]
    fig = class_probs_before_after(["negative", "positive"], [0.2, 0.8], [0.6, 0.4])
    assert len(fig.data) == 2 and len(fig.data[0].x) == 2
    scores = rng.normal(size=(L, H))
    fig = importance_heatmap(scores, "log-probability", "paris", off=[(0, 1), (2, 3)])
    hm = fig.data[0]
    assert np.asarray(hm.z).shape == (L, H)
    assert hm.text[0][1] == "×" and hm.text[2][3] == "×" and hm.text[0][0] == ""
    assert hm.zmin == -hm.zmax == -np.abs(scores).max()


def test_side_by_side_figures():
    d = rng.normal(size=(5, 5)) * 0.1
    fig = attention_diff_heatmap(d, ["[CLS]", "a", "&", "a", "[SEP]"])
    assert np.asarray(fig.data[0].z).shape == (5, 5) and fig.data[0].zmid == 0
    assert "&amp;" in fig.data[0].x
    moved = rng.random((L, H))
    fig = moved_heatmap(moved, selected=(0, 0))
    assert np.asarray(fig.data[0].z).shape == (L, H) and len(fig.layout.shapes) == 1
    fig = class_probs_bar(["neg", "pos"], [0.3, 0.7])
    assert list(fig.data[0].x) == pytest.approx([0.3, 0.7])


def test_sense_scatter_one_trace_per_sense_and_separation_line():
    coords = rng.normal(size=(5, 2))
    senses = ["river", "money", "river", "<b>", "money"]
    sents = ["s1", "s2", "s3", "<img src=x onerror=alert(1)>", "s5"]
    fig = sense_scatter(coords, senses, sents, word="bank", layer=2)
    assert [t.name for t in fig.data] == ["river", "money", "&lt;b&gt;"]
    assert list(fig.data[0].text) == ["1", "3"]
    assert all("<img" not in c for t in fig.data for c in t.customdata)
    fig = separation_line(np.array([0.0, 0.1, 0.5, 0.7]), layer=2)
    assert len(fig.data) == 2 and list(fig.data[1].x) == [2]


def test_head_mask_and_off_key():
    m = head_mask(2, 3, [(0, 1), (1, 2)])
    assert m.tolist() == [[1, 0, 1], [1, 1, 0]]
    assert off_key([[1, 2], (0, 1), (1, 2)]) == ((0, 1), (1, 2))


# --- part 2: the pages (AppTest) ---------------------------------------------------------------

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from app import state  # noqa: E402
from tests.helpers import APP_TIMEOUT, ENTRY  # noqa: E402

PAGES = ["pages/head_patterns.py", "pages/explanations.py", "pages/ablation.py", "pages/compare.py"]


def _ok(at):
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


@pytest.mark.slow
def test_head_patterns_input_probe_and_open_on_attention(at):
    at.switch_page("pages/head_patterns.py").run()
    _ok(at)
    assert at.dataframe[0].value["heads"].sum() == 6 * 12  # the legend counts every head
    at.radio(key="hp_source").set_value("The built-in probe sentences").run()
    _ok(at)
    at.selectbox(key="hp_head_6_12").set_value(3 * 12 + 4).run()  # layer 4, head 5
    _ok(at)
    assert "hp_map_6_12_ipynb" in {b.key for b in at.get("download_button")}  # "Open as a notebook"
    at.button(key="hp_open").click().run()  # lands on the Attention page
    _ok(at)
    assert [t.value for t in at.title] == ["Attention"]
    assert at.slider(key="att_layer_6").value == 4 and at.slider(key="att_head_12").value == 5
    assert at.radio(key="att_view").value == "Heatmap"
    assert not at.warning, [w.value for w in at.warning]


def _explanation_views(at, choice_key: str) -> None:
    """On the Explanations page: the first view's rank correlation, the second choice of
    `choice_key` (a [MASK] or a class), then the logit lens view."""
    assert any(m.label.startswith("Rank correlation") for m in at.metric)
    at.selectbox(key=choice_key).set_value(1).run()
    _ok(at)
    at.radio(key="ex_view").set_value("Logit lens").run()
    _ok(at)


@pytest.mark.slow
def test_explanations_both_views_and_several_masks(at):
    at.switch_page("pages/explanations.py").run()
    _ok(at)
    import bert

    untrained = any("no MLM head" in n for n in bert.load("minilm-l6").notes)
    assert any("untrained" in w.value for w in at.warning) == untrained  # warned only if untrained
    _explanation_views(at, "ex_mask_2")
    assert any("top guess" in m.value for m in at.markdown)
    at.text_area(key=state.W_MLM_TEXT).input("no gap here").run()
    assert not at.exception
    assert any("MASK" in e.value for e in at.error)
    at.text_area(key=state.W_MLM_TEXT).input(state.DEFAULT_MLM_TEXT).run()
    _ok(at)


@pytest.mark.slow
def test_ablation_buttons_and_ranking(at):
    at.switch_page("pages/ablation.py").run()
    _ok(at)
    assert len(at.dataframe[-1].value) == 10  # the top-10 ranking
    at.button(key="abl_top").click().run()
    _ok(at)
    assert len(at.session_state["abl_off"]) == 5
    assert any("5 of 72 heads switched off" in c.value for c in at.caption)
    assert "abl_mlm_0_ipynb" in {b.key for b in at.get("download_button")}  # "Open as a notebook"
    at.button(key="abl_all_on").click().run()
    _ok(at)
    assert at.session_state["abl_off"] == []


@pytest.mark.slow
def test_compare_two_models_and_word_map(at):
    at.switch_page("pages/compare.py").run()
    _ok(at)
    at.slider(key="cmp_layer").set_value(3).run()
    _ok(at)
    assert "cmp_att_a_ipynb" in {b.key for b in at.get("download_button")}  # "Open as a notebook"
    at.radio(key="cmp_view").set_value("One word in many sentences").run()
    _ok(at)
    at.slider(key="sense_layer_6").set_value(0).run()
    _ok(at)
    at.text_input(key="sense_word").input("river").run()  # not in every sentence
    assert not at.exception
    assert any("river" in e.value for e in at.error)
    at.text_input(key="sense_word").input("bank").run()
    _ok(at)
    at.text_area(key="sense_lines").input("The bank was closed. | money\n\nWe swam to the bank | river\nA bank").run()
    _ok(at)
    assert any(c.value.startswith("3 of at most 50 sentences") for c in at.caption)


@pytest.mark.slow
def test_a_session_classifier_on_every_analysis_page():
    """A user's own classifier: class explanations, class ablation, and side by side with the
    default model (different shapes: a message, not an error)."""
    from tests.helpers import minilm_tiny_classifier, select_session_model

    bundle = minilm_tiny_classifier()
    a = AppTest.from_file(ENTRY, default_timeout=APP_TIMEOUT)
    select_session_model(a, "tiny-clf", bundle)
    a.run()
    for page in PAGES:
        a.switch_page(page).run()
        _ok(a)
    a.switch_page("pages/explanations.py").run()
    _explanation_views(a, "ex_class")
    assert any("classifier" in i.value for i in a.info)
    a.switch_page("pages/ablation.py").run()
    a.button(key="abl_top").click().run()
    _ok(a)
    a.switch_page("pages/compare.py").run()
    a.radio(key="cmp_view").set_value("Two models side by side").run()
    a.selectbox(key="cmp_model_B").set_value("minilm-l6").run()
    _ok(a)
    assert any("different shapes" in w.value for w in a.warning)
    a.slider(key="cmp_layer").set_value(2).run()
    _ok(a)


# --- attention over training (bert/train/attention_snapshots.py and its view) -------------------------


def _tiny_pretraining_bundle():
    import bert
    from bert.checkpoint.builtins import minilm_package_dir

    tok = bert.Tokenizer.from_file(minilm_package_dir() / "vocab.txt")
    cfg = bert.BertConfig(
        vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37
    )
    return bert.Bundle(model=bert.BertForPreTraining(cfg).eval(), tokenizer=tok, name="tiny")


def _recorded(bundle, steps=(0, 10, 20, 30)):
    import torch

    from bert.train.attention_snapshots import AttentionSnapshots

    rec = AttentionSnapshots.for_tokenizer(bundle.tokenizer, every=10)
    model = bundle.model
    model.train()  # as in a training loop
    torch.manual_seed(0)
    for step in steps:
        assert rec(step, model)
        assert not rec(step + 1, model)  # not yet time
        with torch.no_grad():  # stand-in for an optimizer step
            for p in model.bert.layers[1].parameters():
                p.add_(0.3 * torch.randn_like(p))
    assert model.training, "the recorder restores the training mode"
    return rec


def test_attention_snapshots_record_every_n_and_measure_change():
    bundle = _tiny_pretraining_bundle()
    rec = _recorded(bundle)
    steps, atts = rec.view()
    T = len(rec.tokens)
    assert steps == [0, 10, 20, 30] and atts.shape == (4, 2, 4, T, T)
    assert np.allclose(atts.sum(-1), 1, atol=1e-2)
    change = rec.change_since_start(atts)
    assert change.shape == (4, 2, 4) and np.all(change[0] == 0)
    assert change[-1, 1].mean() > 0 and np.all(change[:, 0] < 1e-3), "only layer 2's weights changed"
    fig = change_over_training(steps, change, selected=(0, 0), step_index=2)
    assert len(fig.data) == 3 and list(fig.data[0].x) == steps
    held_steps, held = rec.held()  # the same snapshots, not copied (a saved view's frames read them)
    assert held_steps == steps and all(h is a for h, a in zip(held, rec.attentions))
    np.testing.assert_allclose(np.stack(held).astype(np.float32), atts)
    # past max_snapshots: thinned, the first kept, `every` doubled
    from bert.train.attention_snapshots import AttentionSnapshots

    small = AttentionSnapshots.for_tokenizer(bundle.tokenizer, every=1, max_snapshots=4)
    for s in range(6):
        small(s, bundle.model)
    assert small.steps[0] == 0 and len(small) <= 4 and small.every == 2


@pytest.mark.slow
def test_attention_over_training_view():
    from app.run_session.snapshots import SNAPSHOTS

    a = AppTest.from_file(ENTRY, default_timeout=APP_TIMEOUT)
    a.run()
    a.switch_page("pages/compare.py").run()
    a.radio(key="cmp_view").set_value("Attention over training").run()
    _ok(a)
    assert any("No recordings" in i.value for i in a.info)
    a.session_state[SNAPSHOTS] = {"my run": _recorded(_tiny_pretraining_bundle())}
    a.run()
    _ok(a)
    a.select_slider(key="snap_step_my run").set_value(1).run()
    a.slider(key="snap_layer").set_value(2).run()
    _ok(a)
