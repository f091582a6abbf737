"""The lessons: their shape, questions worked out on the model, and the page."""

from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

import bert
from app.lessons import LESSONS, choices_with
from app.lessons.attention import best_head, pronoun_head
from bert.analysis import ablation, mlm

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module", params=["minilm-l6", "mini-scratch"])
def bundle(request):
    import bert.checkpoint.load

    if request.param not in bert.checkpoint.load.available_builtins():
        pytest.skip(f"{request.param} is not built in")
    return bert.load(request.param)


@pytest.fixture(scope="module")
def run():
    from tests.helpers import tiny_seq2seq_run

    return tiny_seq2seq_run()


def test_seven_lessons_of_four_to_eight_steps_and_two_to_four_questions():
    assert len(LESSONS) == 7 and len({lesson.key for lesson in LESSONS}) == 7
    for lesson in LESSONS:
        assert 4 <= len(lesson.steps) <= 8, lesson.key
        assert 2 <= len(lesson.questions) <= 4, lesson.key
        for s in lesson.steps:
            sentences = [x for x in s.text.replace("?", ".").split(". ") if x.strip()]
            assert 1 <= len(sentences) <= 4, (lesson.key, s.title)


@pytest.mark.slow
def test_every_step_shows_a_real_figure_or_table_and_links_to_an_existing_page(bundle, run):
    for lesson in LESSONS:
        for s in lesson.steps:
            given = run if s.uses == "seq2seq" else bundle
            out = s.show(given)
            assert out is None or isinstance(out, go.Figure | pd.DataFrame), (lesson.key, s.title)
            link = s.link(given) if callable(s.link) else s.link
            if link is not None:
                assert (ROOT / link.page).exists(), link.page
                assert all(isinstance(v, str) for v in link.query.values())


@pytest.mark.slow
def test_every_question_has_one_right_answer_among_distinct_choices(bundle):
    for lesson in LESSONS:
        for q in lesson.questions:
            a = q.ask(bundle)
            assert len(set(a.choices)) == len(a.choices) >= 2, (lesson.key, q.key, a.choices)
            assert 0 <= a.answer < len(a.choices) and a.why


def _ask(lesson_key: str, key: str, bundle):
    lesson = next(lesson for lesson in LESSONS if lesson.key == lesson_key)
    a = next(q for q in lesson.questions if q.key == key).ask(bundle)
    return a.choices[a.answer]


@pytest.mark.slow
def test_answers_are_computed_from_the_model(bundle):
    assert _ask("tokens", "pieces", bundle) == str(len(bundle.tokenizer.tokenize("unbelievably")))
    m = mlm.mlm_topk(bundle, "She opened the [MASK] and walked in.", k=1)
    assert _ask("games", "gap", bundle) == m.top_tokens[0][0]
    lay, _, _ = best_head(bundle, "previous")
    _, h, _ = best_head(bundle, "previous", layer=lay)
    assert _ask("attention", "previous", bundle) == f"head {h + 1}"
    assert _ask("attention", "pronoun", bundle) == pronoun_head(bundle)[2]
    imp = ablation.head_importance(bundle, "The capital of France is [MASK].")
    l, h = np.unravel_index(int(np.argmax(imp.scores)), imp.scores.shape)
    assert _ask("heads", "ablation", bundle) == f"layer {l + 1}, head {h + 1}"
    assert _ask("finetune", "head", bundle) == f"{2 * bundle.config.hidden_size + 2:,}"
    from app.lessons.encoders_decoders import gap, likelihood_change

    sentence = gap(bundle).sentence
    left = mlm.mlm_topk(bundle, sentence, k=1, mask_kind="causal")
    assert _ask("both", "left", bundle) == left.top_tokens[0][0].removeprefix("##")
    both = mlm.mlm_topk(bundle, sentence, k=1)
    word = both.top_tokens[0][0]
    every = mlm.mlm_topk(bundle, sentence, k=bundle.config.vocab_size, mask_kind="causal")
    p_left = every.top_probs[0][every.top_tokens[0].index(word)]
    assert _ask("both", "loses", bundle) == likelihood_change(float(both.top_probs[0][0]), float(p_left))


def test_choices_are_fixed_per_question_and_keep_the_right_one():
    a = choices_with("door", ["desk", "door", "house", "bench", "car"], "gap")
    assert a == choices_with("door", ["desk", "door", "house", "bench", "car"], "gap")
    choices, right = a
    assert choices[right] == "door" and len(choices) == 4 and len(set(choices)) == 4


@pytest.mark.slow
def test_the_lessons_page_steps_questions_progress_and_link():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=180)
    at.switch_page("pages/lessons.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.subheader[0].value.startswith("1. ")
    for _ in LESSONS[0].steps:
        at.button(key="lesson_next").click().run()
        assert not at.exception, [e.value for e in at.exception]
    assert any(s.value == "Check yourself" for s in at.subheader)
    assert dict(at.query_params).get("step") == str(len(LESSONS[0].steps))
    pieces = len(bert.load("minilm-l6").tokenizer.tokenize("unbelievably"))
    radio = at.radio(key="lq_tokens_pieces")
    options = list(radio.options)
    wrong = next(i for i, o in enumerate(options) if o != str(pieces))
    radio.set_value(wrong).run()
    assert at.error and "Not quite" in at.error[0].value
    good = next(i for i, o in enumerate(options) if o == str(pieces))
    at.radio(key="lq_tokens_pieces").set_value(good).run()
    assert at.success and at.success[0].value.startswith("Right.")
    assert any("1 of 15 questions right" in c.value for c in at.sidebar.caption)
    # progress survives a visit to another page and back
    at.switch_page("pages/tokenization.py").run()
    assert not at.exception
    at.switch_page("pages/lessons.py").run()
    assert not at.exception and any("1 of 15 questions right" in c.value for c in at.sidebar.caption)
    assert any(c.value.startswith(LESSONS[0].title + ": " + str(len(LESSONS[0].steps))) for c in at.sidebar.caption)
    # a link to the third lesson's second step opens it
    at2 = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=180)
    at2.query_params["lesson"] = "attention"
    at2.query_params["step"] = "1"
    at2.switch_page("pages/lessons.py").run()
    assert not at2.exception and at2.subheader[0].value == "2. " + LESSONS[2].steps[1].title
    # presenter view: the same step in large type, no sidebar progress
    at2.toggle(key="lesson_presenter").set_value(True).run()
    assert not at2.exception and at2.subheader[0].value.startswith("2. ")
    assert any("font-size: 22px" in m.value for m in at2.markdown)


@pytest.mark.slow
def test_left_only_step_is_measured_on_the_model_by_clue_side(bundle):
    from app.lessons.attention import reading_left_only

    t = reading_left_only(bundle)
    assert list(t["reads"].unique()) == ["both ways", "left only"]
    assert set(t["clue"]) == {"left of the gap", "right of the gap", "all"}
    assert t.groupby("reads")["gaps"].max().tolist() == [116, 116]
    if bundle.name == "minilm-l6":  # the figures docs/MODELS.md quotes
        right = t[t["clue"] == "right of the gap"].set_index("reads")["top-1"]
        assert (round(right["both ways"], 2), round(right["left only"], 2)) == (0.71, 0.26)


def test_a_probability_left_only_is_told_against_both_ways_by_a_factor_of_two():
    from app.lessons.encoders_decoders import LIKELY, likelihood_change

    assert likelihood_change(0.10, 0.25) == LIKELY[0]
    assert likelihood_change(0.10, 0.15) == likelihood_change(0.10, 0.06) == LIKELY[1]
    assert likelihood_change(0.10, 0.04) == LIKELY[2]


@pytest.mark.slow
def test_the_left_only_step_hides_the_right_of_the_diagonal_of_the_same_head(bundle):
    from app.lessons.encoders_decoders import BOTH

    both, left = (np.array(s.show(bundle).data[0].z, dtype=float) for s in BOTH.steps[:2])
    upper = np.triu(np.ones_like(both, dtype=bool), k=1)
    assert not np.isnan(both).any() and np.isnan(left[upper]).all() and not np.isnan(left[~upper]).any()
    np.testing.assert_allclose(np.nansum(left, -1), 1, atol=1e-4)  # what it gave to the right now goes left


@pytest.mark.slow
def test_lesson_seven_shows_every_step_with_its_figure_and_checks_answers_on_the_model(run):
    """On the page: without a trained decoder the cross-attention step says how to get one; with the
    session's run each of its steps draws a figure; both questions are told right or wrong by the
    model's own answer."""
    from streamlit.testing.v1 import AppTest

    from app import trained_decoder
    from app.formatting import md_escape
    from app.lessons.encoders_decoders import BOTH

    at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=180)
    at.query_params["lesson"] = "both"
    at.query_params["step"] = "4"
    at.switch_page("pages/lessons.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.subheader[0].value == "5. " + BOTH.steps[4].title
    assert any("No encoder-decoder is trained" in i.value for i in at.info)
    at.session_state[trained_decoder.RESULT] = run
    at.session_state["lesson_step"] = 0
    at.run()
    for i, s in enumerate(BOTH.steps):
        if i:
            at.button(key="lesson_next").click().run()
        assert not at.exception, [e.value for e in at.exception]
        assert at.subheader[0].value == f"{i + 1}. {s.title}"
        assert len(at.get("plotly_chart")) == 1, s.title
        assert not any("No encoder-decoder" in x.value for x in at.info)
    at.button(key="lesson_next").click().run()
    assert any(s.value == "Check yourself" for s in at.subheader)
    b = bert.load("minilm-l6")
    for q in BOTH.questions:
        a = q.ask(b)
        key = f"lq_both_{q.key}"
        wrong = next(j for j in range(len(a.choices)) if j != a.answer)
        at.radio(key=key).set_value(wrong).run()
        assert any(f"the answer is “{md_escape(a.choices[a.answer])}”" in e.value for e in at.error), q.key
        at.radio(key=key).set_value(a.answer).run()
        assert not at.exception
    assert len(at.success) == 2 and all(x.value.startswith("Right.") for x in at.success)
    assert any("2 of 15 questions right" in c.value for c in at.sidebar.caption)


@pytest.mark.slow
def test_a_lesson_seven_link_opens_the_attention_page_with_its_reading():
    from streamlit.testing.v1 import AppTest

    from app import attention_masks as masks
    from app.lessons.encoders_decoders import BOTH

    b = bert.load("minilm-l6")
    for step, read, k in ((1, masks.LEFT, None), (3, masks.PREFIX, 7)):
        link = BOTH.steps[step].link(b)
        at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=180)
        for name, value in link.query.items():
            at.query_params[name] = value
        at.switch_page(link.page).run()
        assert not at.exception, [e.value for e in at.exception]
        assert at.radio(key="att_pattern").value == read
        if k is not None:
            assert int(link.query["k"]) == k and at.number_input(key="att_pattern_k").value == k


@pytest.mark.slow
def test_lesson_six_scores_a_minimal_pair_word_by_word(bundle):
    """The minimal-pair step draws the pair's own word scores, the verb where they differ."""
    from app.lessons.heads_learned import HEADS, PAIR
    from bert.analysis.scoring import score_pairs

    pair_step = next(s for s in HEADS.steps if s.title == "Which sentence sounds right?")
    fig = pair_step.show(bundle)
    res = score_pairs(bundle, [PAIR])
    assert np.allclose(fig.data[0].y, res.good[0].word_scores) and np.allclose(fig.data[1].y, res.bad[0].word_scores)
    assert "is/are" in list(fig.data[0].x) and pair_step.link.query["view"] == "pairs"


@pytest.mark.slow
def test_lesson_six_probes_every_layer_beside_a_control():
    """The probe step: a noun-number curve and its control over every layer's vectors (on the
    smaller built-in; the every-step test draws it on both)."""
    from app.lessons.heads_learned import HEADS

    probe_step = next(s for s in HEADS.steps if s.title == "Where a noun's number is written")
    bundle = bert.load("mini-scratch")
    fig = probe_step.show(bundle)
    if fig is None:
        pytest.skip("the Brown Corpus is not fetched here (make data)")
    rows = bundle.config.num_hidden_layers + 1
    assert [len(t.y) for t in fig.data] == [rows, rows] and fig.data[1].line.dash == "dash"
    assert probe_step.link.query == {"view": "probes", "property": "number"}
