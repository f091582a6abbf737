"""Nothing on screen states what the model does unless the model was asked: every lesson claim is
registered (app/lessons/claims.py) and checked here on both built-ins against the model's own
output; a claim without a check, or lesson text that states what the model does outside a claim,
fails; colour words come from the scale a figure is drawn with; class questions name their gap."""

import re
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import pytest

import bert
from app import state
from app.lessons import LESSONS, heads_learned, pretraining_games
from app.lessons import attention as att
from app.lessons import encoders_decoders as ed
from app.lessons import tokens_embeddings as te
from app.lessons.claims import CLAIMS, COLOUR_SLOTS, percent, say
from bert.analysis.attention_heads import head_pattern_stats
from bert.analysis.full import analyze, position_table
from bert.analysis.mlm import mlm_topk

ROOT = Path(__file__).resolve().parent.parent
BUILTINS = ["minilm-l6", "mini-scratch"]

# Lesson text that reads like a claim but says how a method works, not what this model does.
NOT_CLAIMS = {
    "15 %": "the share of tokens pre-training hides: BERT's recipe, not a model's output",
    "the model guesses": "how the fill-the-gap game is played, not what this model guesses",
    "the model finds": "how a pseudo-log-likelihood is added up, not what this model finds",
}
CLAIM_LIKE = re.compile(
    r"(?i)\b(dark|darker|bright|brighter|yellow|blue|red|white|pale|lighter)\b"  # colour words: COLOUR_SLOTS
    r"|\d+\s?%"  # a measured share
    r"|minilm|mini-scratch"  # a model's numbers written into prose
    r"|\b(usually|often|always|never|most heads|many heads|a few heads)\b"
    r"|\b(the model|this model|it|BERT)\s+(sees|guesses|puts|knows|prefers|ranks|finds|gets|learns|learned)\b"
)
SCALE_WORDS = re.compile(r"(?i)\b(dark|darker|bright|brighter|yellow|pale)\b")  # words a projector's scale flips


def _texts():
    for lesson in LESSONS:
        yield lesson.key, "summary", lesson.summary
        for s in lesson.steps:
            for text in (s.title, s.text, s.none_note):
                yield lesson.key, s.title, text


def test_lesson_text_states_nothing_the_model_does_outside_a_claim():
    found = [
        (key, where, m.group(0))
        for key, where, text in _texts()
        for m in CLAIM_LIKE.finditer(text)
        if m.group(0) not in NOT_CLAIMS
    ]
    assert not found, f"move these into a claim (app/lessons/claims.py) worked out on the model: {found}"


def test_the_scan_finds_a_claim_written_as_prose():
    for prose in ("Read both ways the model sees “barked”.", "one dark column", "on minilm-l6 71 %", "often at [SEP]"):
        assert CLAIM_LIKE.search(prose), prose
    assert not CLAIM_LIKE.search("Each row is one token looking at the others: its weights add up to 1.")


def test_every_step_claim_is_registered_and_every_claim_is_shown_by_a_step():
    used = [s.claim for lesson in LESSONS for s in lesson.steps if s.claim]
    assert set(used) <= set(CLAIMS), set(used) - set(CLAIMS)
    assert set(CLAIMS) <= set(used), f"registered but shown by no step: {set(CLAIMS) - set(used)}"


def test_every_claim_has_a_check_here():
    assert set(CLAIMS) == set(CHECKS), f"claims without a check: {set(CLAIMS) - set(CHECKS)}"


def test_no_page_caption_writes_a_colour_word_the_projector_scale_would_contradict():
    for path in (ROOT / "pages").glob("*.py"):
        for literal in re.findall(r'"([^"\n]*)"', path.read_text()):
            assert not SCALE_WORDS.search(literal), (path.name, literal)


# --- colour words -------------------------------------------------------------------------------


def test_colour_words_come_from_the_scale():
    from app.ui.colour_words import words_for

    assert words_for("Blues").more == "darker" and words_for("Blues").high == "dark blue"
    assert words_for("Cividis").more == "brighter" and words_for("Cividis").high == "bright yellow"
    assert words_for("RdBu_r").high == "dark red" and words_for("RdBu_r").low == "dark blue"


def test_an_attention_map_says_darker_and_on_a_projector_brighter():
    from app.figures.attention import attention_heatmap
    from app.lessons.view import step_text
    from app.ui import show_figure

    fig = attention_heatmap(np.eye(3), ["a", "b", "c"])
    assert show_figure.colour_words(fig, projector=False).more == "darker"
    assert show_figure.colour_words(fig, projector=True).more == "brighter"
    drawn = show_figure.style_for_projector(go.Figure(fig))  # what projector mode draws: the words agree
    assert show_figure.colour_words(drawn, projector=False) == show_figure.colour_words(fig, projector=True)
    assert show_figure.colour_words(go.Figure(go.Bar(y=[1]))) is None
    # a lesson's colour slot is filled from the figure as drawn, and a model's word in a claim is escaped
    text = step_text("A {more} cell.", "one {high} column for “*x*”.", fig)
    assert "{" not in text and "darker" in text and "dark blue column" in text and r"\*x\*" in text


# --- every claim on both built-ins -----------------------------------------------------------------


@pytest.fixture(scope="module", params=BUILTINS)
def bundle(request):
    import bert.checkpoint.load

    if request.param not in bert.checkpoint.load.available_builtins():
        pytest.skip(f"{request.param} is not built in")
    return bert.load(request.param)


def _quotes(said, *values):
    for v in values:
        assert str(v) in said.text, (v, said.text)


def check_vocabulary(b, said):
    whole = all(len(b.tokenizer.tokenize(w)) == 1 for w in te.COMMON_WORDS)
    assert said.holds == whole
    _quotes(said, f"{len(b.tokenizer.vocab):,}")


def check_rare_word(b, said):
    pieces = b.tokenizer.tokenize(te.LONG_WORD)
    assert said.holds == (len(pieces) > 1)
    _quotes(said, " + ".join(pieces) if len(pieces) > 1 else te.LONG_WORD)


def check_neighbours(b, said):
    pt = position_table(b)
    n = min(te.SHOWN_POSITIONS, pt.P)
    sim = pt.sim[:n, :n].copy()
    np.fill_diagonal(sim, -np.inf)
    k = int(sum(abs(int(np.argmax(sim[i])) - i) == 1 for i in range(n)))
    assert said.holds == (k > n // 2)
    _quotes(said, f"{k} of the first {n}")


def check_curve(b, said):
    xy = position_table(b).coords[: te.SHOWN_POSITIONS]
    r = np.linalg.norm(np.diff(xy, axis=0), axis=1).mean() / np.linalg.norm(xy[:, None] - xy[None], axis=-1).mean()
    assert said.holds == (r < te.CURVE)
    _quotes(said, f"{r:.0%}")


def check_order(b, said):
    from bert.analysis.words import word_order

    per = word_order(b, te.SENTENCE, seed=1).per_layer
    assert said.holds == (per[-1] < per[0] - te.DRIFT)
    _quotes(said, f"{per[0]:.2f}", f"{per[-1]:.2f}")


def _stats(b):
    an = analyze(b, att.SENTENCE)
    return head_pattern_stats(an.attentions, an.tokens)


def check_previous(b, said):
    prev = _stats(b)["previous"]
    lay, h = np.unravel_index(int(np.argmax(prev)), prev.shape)
    assert said.holds == (prev.max() > att.HABIT)
    _quotes(said, f"layer {lay + 1}, head {h + 1}", percent(prev.max()))


def check_resting(b, said):
    s = _stats(b)
    share = s["[CLS]"] + s["[SEP]"]
    n = int((share > att.HABIT).sum())
    assert said.holds == (n >= max(2, share.size // 4) and share.max() > att.HABIT)
    _quotes(said, f"{n} of {share.size}")
    if said.holds:
        assert "{high} column" in said.text  # the colour word comes from the scale shown


def check_pronoun(b, said):
    an = analyze(b, att.SENTENCE)
    i = next(j for j, t in enumerate(an.tokens) if t == att.PRONOUN)
    spans = [
        (j, att.SENTENCE[s:e].strip()) for j, ((s, e), w) in enumerate(zip(an.offsets, an.word_ids)) if w is not None
    ]
    far = [j for j, text in spans if text not in ("", ".") and abs(j - i) > 1]
    rows = an.attentions[:, :, i, far]  # (L, H, far)
    lay, h, r = np.unravel_index(int(np.argmax(rows)), rows.shape)
    word = an.tokens[far[r]]
    assert said.holds == (word in att.MEANINGS)
    _quotes(said, f"layer {lay + 1}, head {h + 1}", f"“{word}”")


def check_by_layer(b, said):
    s = _stats(b)
    near, special = (s["previous"] + s["next"]).mean(1), (s["[CLS]"] + s["[SEP]"]).mean(1)
    half = len(near) // 2
    assert said.holds == (near[:half].mean() > near[half:].mean() and special[half:].mean() > special[:half].mean())
    _quotes(said, percent(near[:half].mean()), percent(special[half:].mean()))


def check_left_only(b, said):
    t = att.reading_left_only(b).set_index(["reads", "clue"])["top-1"]
    right = t["both ways", "right of the gap"] - t["left only", "right of the gap"]
    left = t["both ways", "left of the gap"] - t["left only", "left of the gap"]
    assert said.holds == (right > left)
    _quotes(said, percent(t["both ways", "right of the gap"]), percent(t["left only", "right of the gap"]))


def check_clue_after_the_gap(b, said):
    def first(sentence, pattern="bidirectional"):
        return mlm_topk(b, sentence, k=1, mask_kind=pattern).top_tokens[0][0]

    shows = [first(s) == a != first(s, "causal") for s, a, _ in ed.GAPS]
    assert said.holds == any(shows)
    sentence = ed.GAPS[shows.index(True)][0] if any(shows) else ed.GAPS[0][0]
    _quotes(said, sentence, f"“{first(sentence)}” first", f"guesses “{first(sentence, 'causal')}”")
    if not said.holds:  # the fallback names where the clue's word came
        every = mlm_topk(b, sentence, k=b.config.vocab_size).top_tokens[0]
        answer = ed.GAPS[0][1]
        _quotes(said, f"“{answer}” only" if answer in every else "not in its vocabulary")


def check_second_gap(b, said):
    m = mlm_topk(b, pretraining_games.TWO_GAPS, k=1)
    top = m.top_tokens[1][0]
    assert said.holds == (top in pretraining_games.AGREEING)
    _quotes(said, f"“{top}” first ({percent(m.top_probs[1][0])})")


def check_lens(b, said):
    from bert.analysis.explain import logit_lens

    tops = [row[0] for row in logit_lens(b, pretraining_games.GAP, k=1).top_tokens[0]]
    k = max((i + 1 for i in range(len(tops) - 1) if tops[i] != tops[-1]), default=0)
    assert said.holds == (k > (len(tops) - 1) / 2)
    _quotes(said, f"“{tops[-1]}”", f"of {len(tops) - 1}")


def check_few_heads(b, said):
    from bert.analysis.ablation import head_importance

    drops = np.sort(np.clip(head_importance(b, heads_learned.ABLATE).scores.ravel(), 0, None))[::-1]
    k = int(np.ceil(heads_learned.FEW * drops.size))
    share = drops[:k].sum() / drops.sum()
    assert said.holds == (share > 0.5)
    _quotes(said, f"the {k} heads", percent(share), f"{drops[0]:.2f}")


def check_busy_low(b, said):
    from bert.analysis.attention_heads import head_patterns_over

    labels = head_patterns_over(b).labels
    busy = [int(sum(x not in ("[CLS]", "[SEP]") for x in row)) for row in labels]
    half = len(busy) // 2
    assert said.holds == (sum(busy[:half]) > sum(busy[-half:]))
    _quotes(said, f"{sum(busy[:half])} busy heads", f"{sum(busy[-half:])} in the upper")


def check_patching(b, said):
    from bert.analysis.patching import PRESETS, activation_patching
    from bert.errors import InputError

    try:
        r = activation_patching(b, *PRESETS["Number agreement"], "residual")
    except InputError:
        assert not said.holds and said.text == ""  # the step's none_note speaks instead
        return
    if not r.clean > 0 > r.corrupted:
        assert not said.holds
        _quotes(said, f"{r.clean:+.2f}", f"{r.corrupted:+.2f}")
        return
    subject = [a != c for a, c in zip(r.clean_tokens, r.corrupted_tokens)].index(True)
    crossing = np.flatnonzero(r.effect[:, r.position] > r.effect[:, subject])
    assert said.holds == bool(r.effect[0, subject] > 0.5 and r.effect[-1, r.position] > 0.5 and len(crossing))
    _quotes(said, percent(r.effect[0, subject]), percent(r.effect[-1, r.position]))


def check_pair_verb(b, said):
    from bert.analysis.scoring import score_pairs

    res = score_pairs(b, [heads_learned.PAIR])
    g, w = res.good[0], res.bad[0]
    i = [x != y for x, y in zip(g.words, w.words)].index(True)
    assert said.holds == (g.word_scores[i] > w.word_scores[i])
    _quotes(said, f"{float(g.word_scores[i]):.2f}", f"{float(w.word_scores[i]):.2f}")


def check_feature_words(b, said):
    from app.lessons import features as fl
    from bert.analysis.dictionary_builtin import builtin_dictionary
    from bert.analysis.dictionary_words import strongest_feature, word_activations

    shipped = builtin_dictionary(b.name)
    if shipped is None:
        assert not said.holds and said.text == fl.NO_DICTIONARY
        return
    d = shipped.dictionary
    feature, _ = strongest_feature(b, d, fl.SENTENCE, fl.WORD)
    words = [*fl.NOUNS, *fl.OTHERS]
    acts = dict(zip(words, word_activations(b, d, feature, words), strict=True))
    on = [w for w in fl.NOUNS if acts[w] > 0]
    top_other = max(fl.OTHERS, key=acts.get)
    assert said.facts["feature"] == feature and said.facts["top_other"] == top_other
    assert said.holds == (len(on) >= len(fl.NOUNS) // 2 and min(acts[w] for w in on) > acts[top_other])
    _quotes(said, f"feature {feature}", top_other, f"{acts[top_other]:.2f}")


CHECKS = {
    "features.one-kind-of-word": check_feature_words,
    "tokens.vocabulary": check_vocabulary,
    "tokens.rare-word-split": check_rare_word,
    "embeddings.neighbours-alike": check_neighbours,
    "embeddings.positions-curve": check_curve,
    "embeddings.order-drift": check_order,
    "attention.previous-token-head": check_previous,
    "attention.heads-rest": check_resting,
    "attention.pronoun-head": check_pronoun,
    "attention.habits-by-layer": check_by_layer,
    "attention.left-only-cloze": check_left_only,
    "both.clue-after-the-gap": check_clue_after_the_gap,
    "games.second-gap-agrees": check_second_gap,
    "games.guess-appears-late": check_lens,
    "heads.few-heads-matter": check_few_heads,
    "heads.busy-heads-low": check_busy_low,
    "heads.patching-subject-then-mask": check_patching,
    "heads.pair-verb": check_pair_verb,
}


@pytest.mark.slow
@pytest.mark.parametrize("key", sorted(CLAIMS))
def test_each_claim_says_what_the_model_does(bundle, key):
    said = say(key, bundle)
    CHECKS[key](bundle, said)
    assert said.text or not said.holds
    assert not set(re.findall(r"\{\w+\}", said.text)) - set(COLOUR_SLOTS), said.text


@pytest.mark.slow
def test_a_step_with_a_colour_slot_shows_a_figure_with_a_colour_scale(bundle):
    from app.ui import show_figure

    for lesson in LESSONS:
        for s in lesson.steps:
            said = say(s.claim, bundle).text if s.claim else ""
            if any(slot in s.text + said for slot in COLOUR_SLOTS):
                assert show_figure.colour_words(s.show(bundle), projector=False) is not None, s.title


def test_the_gap_falls_back_to_saying_what_the_model_did():
    """Lesson 7's gap when no candidate works on the model: the first one, and what the model put there."""
    b = bert.load("minilm-l6")
    barked = ed.GAPS[:1]
    said = ed.clue_after_the_gap(b, barked)
    top = mlm_topk(b, barked[0][0], k=1).top_tokens[0][0]
    assert not said.holds and f"puts “{top}” first" in said.text and "“dog” only" in said.text
    assert "the clue did not settle it" in said.text


# --- class questions --------------------------------------------------------------------------------


@pytest.mark.slow
def test_mask_questions_name_the_gap_they_ask_about(bundle):
    from app.board import questions as q

    text = state.DEFAULT_MLM_TEXT
    assert text.count("[MASK]") == 2
    both = mlm_topk(bundle, text, k=1)
    left = mlm_topk(bundle, text, k=1, mask_kind="causal")
    for gap, place in ((1, "first"), (2, "second")):
        body = q.mask_question(bundle, text, "m", gap)
        assert f"the {place} of its 2 [MASK]s" in body["prompt"] and body["prompt"].count(q.MARK) == 1
        assert body["prompt"].split("«")[1].split(q.MARK)[0].count("[MASK]") == gap - 1  # the marked one is it
        assert body["answer"] == both.top_tokens[gap - 1][0].removeprefix("##")
        assert q.left_question(bundle, text, "m", gap)["answer"] == left.top_tokens[gap - 1][0].removeprefix("##")
    one = q.mask_question(bundle, state.HINT_MLM_TEXT, "m")
    assert "the [MASK]?" in one["prompt"] and q.MARK not in one["prompt"]
    with pytest.raises(bert.InputError, match="1 to 2"):
        q.mask_question(bundle, text, "m", 3)
    from bert.analysis.ablation import head_importance

    heads = q.heads_question(bundle, text, "m", 2)
    imp = head_importance(bundle, text, position=both.positions[1])
    lay, h = np.unravel_index(int(np.argmax(imp.scores)), imp.scores.shape)
    assert heads["answer"] == f"layer {lay + 1} head {h + 1}" and "second of its 2" in heads["prompt"]


@pytest.mark.slow
def test_the_knows_question_on_every_preset_is_the_models_patching(bundle):
    from app.board import questions as q
    from bert.analysis.patching import PRESETS, activation_patching
    from bert.errors import InputError

    for name, pair in PRESETS.items():
        try:
            r = activation_patching(bundle, *pair, site="residual")
        except InputError:
            with pytest.raises(InputError):
                q.knows_question(bundle, pair, "m")
            continue
        first = int((r.effect[:, r.position] >= q.KNOWS_SHARE).argmax())
        body = q.knows_question(bundle, pair, "m")
        assert body["answer"] == r.rows[first], name
        assert "elsewhere" not in body["why"]  # says only what was measured
        splits = r.clean > 0 > r.corrupted  # the premise: clean prefers the answer, corrupted the foil
        assert ("Careful" in body["why"]) == (not splits), (name, r.clean, r.corrupted)
        if not splits:
            assert (
                f"{r.clean:+.2f} in the clean" in body["why"] and f"{r.corrupted:+.2f} in the corrupted" in body["why"]
            )


@pytest.mark.slow
def test_the_attention_pages_caption_follows_projector_mode():
    """The head map's caption says which way a cell goes with more attention in the scale on screen:
    darker in blues, brighter in the projector's cividis."""
    from streamlit.testing.v1 import AppTest

    for projector, word in (("0", "darker"), ("1", "brighter")):
        at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=180)
        at.query_params["projector"] = projector  # the teacher's projector link
        at.switch_page("pages/attention.py").run()
        assert not at.exception, [e.value for e in at.exception]
        captions = [c.value for c in at.caption]
        assert any(f"{word} means more attention" in c for c in captions), captions


# --- every question kind on both built-ins ---------------------------------------------------------


def kind_mask(b):
    from app.board import questions as q

    for text in (state.DEFAULT_MLM_TEXT, state.HINT_MLM_TEXT):
        p = mlm_topk(b, text, k=1)
        for gap in range(1, text.count("[MASK]") + 1):
            assert q.mask_question(b, text, "m", gap)["answer"] == p.top_tokens[gap - 1][0].removeprefix("##")


def kind_left(b):
    from app.board import questions as q

    p = mlm_topk(b, state.DEFAULT_MLM_TEXT, k=1, mask_kind="causal")
    for gap in (1, 2):
        assert q.left_question(b, state.DEFAULT_MLM_TEXT, "m", gap)["answer"] == p.top_tokens[gap - 1][0]


def kind_heads(b):
    from app.board import questions as q
    from bert.analysis.ablation import head_importance

    imp = head_importance(b, state.HINT_MLM_TEXT)
    lay, h = np.unravel_index(int(np.argmax(imp.scores)), imp.scores.shape)
    assert q.heads_question(b, state.HINT_MLM_TEXT, "m")["answer"] == f"layer {lay + 1} head {h + 1}"


def kind_look(b):
    from app.board import questions as q

    an = analyze(b, state.DEFAULT_TEXT_A)
    body = q.look_question(b, state.DEFAULT_TEXT_A, 1, 2, 3, "m")
    assert body["answer"] == body["choices"][int(np.argmax(an.attentions[1, 2, 3]))]


def kind_follows(b):
    from app.board import questions as q
    from bert.analysis.mlm import nsp_probability

    for second in (pretraining_games.FOLLOWS, pretraining_games.RANDOM):
        p = nsp_probability(b, pretraining_games.FIRST, second)
        assert q.follows_question(b, pretraining_games.FIRST, second, "m")["answer"] == ("yes" if p >= 0.5 else "no")
        assert f"{p:.0%}" in q.follows_question(b, pretraining_games.FIRST, second, "m")["why"]


def kind_pieces(b):
    from app.board import questions as q

    for word in ("unhappiness", "dog"):
        n = len(b.tokenizer.tokenize(word))
        assert q.pieces_question(b, word, "m")["answer"] == q.PIECE_CHOICES[min(n, len(q.PIECE_CHOICES)) - 1]


def kind_knows(b):
    pass  # test_the_knows_question_on_every_preset_is_the_models_patching, on every preset


def kind_prefers(b):
    from app.board import questions as q
    from bert.analysis.scoring import score_pairs

    for paradigm in list(q.PARADIGMS)[:1]:  # one pair: scoring is T runs a sentence
        good, bad = q.PARADIGMS[paradigm].pairs[0]
        res = score_pairs(b, [(good, bad)])
        body = q.prefers_question(b, paradigm, 1, "m")
        assert body["answer"] == (good if res.good[0].total > res.bad[0].total else bad), paradigm
        assert ("not the grammatical one" in body["why"]) == (body["answer"] == bad)


def kind_lesson(b):
    from app.board import questions as q

    asked_here = {"1. From text to tokens: pieces", "7. Encoders, decoders and both: left"}  # every one: test_lessons
    assert asked_here <= set(q.lesson_questions(LESSONS))
    for label, (_, question) in q.lesson_questions(LESSONS).items():
        if label not in asked_here:
            continue
        asked = question.ask(b)
        assert q.lesson_question(b, label, "m", LESSONS)["answer"] == asked.choices[asked.answer], label


def kind_fires(b):
    import torch

    from app.board import questions as q
    from bert.analysis.dictionary_builtin import builtin_dictionary
    from bert.analysis.dictionary_vectors import state_after

    shipped = builtin_dictionary(b.name)
    if shipped is None:
        return  # no dictionary: the class is told to train one (test_feature_questions.py)
    d, words = shipped.dictionary, q.fires_words("")
    codes = []
    for w in words:  # each word alone: [CLS] its pieces [SEP]; a word's code: the largest over its pieces
        enc = b.tokenizer.encode(w)
        with torch.no_grad():
            x = state_after(b, torch.tensor([enc.ids]), torch.tensor([enc.type_ids]), d.layer)[0, 1:-1]
            codes.append(d.sae.encode(x.float()).max(0).values)
    codes = torch.stack(codes)  # (W, F)
    asked = 0
    for feature in sorted(set(codes.argmax(1).tolist())):  # each word's strongest feature
        acts = codes[:, feature]
        if float(acts.max()) > 0 and float(acts.topk(2).values[1]) < float(acts.max()):
            assert q.fires_question(b, d, feature, "", "m")["answer"] == words[int(acts.argmax())], feature
            asked += 1
    assert asked >= 2


KIND_CHECKS = {
    "fires": kind_fires,
    "mask": kind_mask,
    "left": kind_left,
    "heads": kind_heads,
    "look": kind_look,
    "follows": kind_follows,
    "pieces": kind_pieces,
    "knows": kind_knows,
    "prefers": kind_prefers,
    "lesson": kind_lesson,
}
NOT_ON_BUILTINS = {"writes": "asked of the encoder-decoder the session trained: tests/test_classroom.py"}


def test_every_question_kind_is_checked_here():
    from app.board.questions import KINDS

    assert set(KINDS) == set(KIND_CHECKS) | set(NOT_ON_BUILTINS)


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(KIND_CHECKS))
def test_each_question_kind_gives_the_models_own_answer(bundle, kind):
    KIND_CHECKS[kind](bundle)


@pytest.mark.slow
def test_the_lessons_page_shows_each_claim_as_the_model_makes_it():
    """On screen, the default model: lesson 7's gap is the one it fills (“sun”, not the barking dog it
    misses), and lesson 3's resting column is named in the colour the projector draws it."""
    from streamlit.testing.v1 import AppTest

    b = bert.load(state.DEFAULT_MODEL)
    for lesson, step, projector, said in (
        ("both", 2, "0", ed.clue_after_the_gap(b).text),
        ("attention", 2, "1", att.heads_rest(b).text.replace("{high}", "bright yellow")),
        ("attention", 2, "0", att.heads_rest(b).text.replace("{high}", "dark blue")),
    ):
        at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=180)
        at.query_params.update(lesson=lesson, step=str(step), projector=projector)
        at.switch_page("pages/lessons.py").run()
        assert not at.exception, [e.value for e in at.exception]
        shown = " ".join(m.value for m in at.markdown).replace("\\", "").replace("\u2060", "")  # md-escaped
        assert said in shown, (said, shown[:400])
