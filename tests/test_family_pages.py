"""Every page with every family member this app runs (bert/family.py): a tiny random DistilBERT and
ELECTRA discriminator, made with transformers, saved as Hugging Face folders with MiniLM's
vocab.txt and opened through bert.load, as a teacher's models folder would give them. No page
raises or shows an error; each says what the member lacks (segments, a next-sentence head); the
ELECTRA view shows a bar per token; Compare says what differs; fine-tuning starts from each."""

import re
import time

import pytest
import torch
from streamlit.testing.v1 import AppTest

import bert
from app import state
from app.run_session import session as ts
from bert.data.labelled import stratified_split
from bert.tokenizer.bpe import MAX_TRACE_CHARS, NEARBY, RobertaTokenizer
from bert.train.events import FinetuneDone
from tests.helpers import (
    ENTRY,
    emoji_word,
    family_folder,
    fast_args,
    finetune_fn,
    reviews_csv,
    roberta_emoji_files,
    run_fn,
    select_session_model,
    tiny_data,
)

transformers = pytest.importorskip("transformers")
pytestmark = pytest.mark.slow

PAGES = [
    "home",
    "tokenization",
    "embeddings",
    "attention",
    "masked_lm",
    "head_patterns",
    "explanations",
    "ablation",
    "compare",
    "lessons",
]


NAMES = {"distilbert": "DistilBERT", "electra": "ELECTRA", "roberta": "RoBERTa", "albert": "ALBERT"}


def clean(at, where):
    assert not at.exception, (where, [e.value for e in at.exception])
    assert not at.error, (where, [e.value for e in at.error])


@pytest.fixture(params=["distilbert", "electra", "roberta", "albert"])
def member_app(request, tmp_path):
    b = bert.load(family_folder(request.param, tmp_path / request.param))
    at = AppTest.from_file(ENTRY, default_timeout=120)
    select_session_model(at, request.param, b)
    at.run()
    clean(at, "first run")
    return request.param, b, at


def test_every_page_runs_on_the_member_and_says_what_it_lacks(member_app):
    kind, b, at = member_app
    for page in PAGES:
        at.switch_page(f"pages/{page}.py").run()
        clean(at, page)
        infos = " ".join(i.value for i in at.info)
        if page == "home":
            card = " ".join(m.value for m in at.markdown)
            assert all(f"**{name}**" in card for name in ("BERT", *NAMES.values())), card
        if page == "embeddings":
            assert ("no segment embeddings" in infos) == (kind == "distilbert"), infos
            assert ("a learned projection lifts" in infos) == (kind in ("electra", "albert")), infos
            assert ("positions are counted from row 2" in infos) == (kind == "roberta"), infos
        if page == "tokenization":
            heading = {"roberta": "byte-level BPE", "albert": "Unigram"}.get(kind, "WordPiece")
            assert any(heading in h.value for h in at.header), [h.value for h in at.header]
        if page == "attention":
            assert ("run the SAME weights" in infos) == (kind == "albert"), infos
        if page == "masked_lm":
            if kind == "albert":
                assert "trained on sentence ORDER" in infos, infos
            else:
                assert f"{NAMES[kind]} has no next-sentence head" in infos, infos
            bars = [e for e in at.get("plotly_chart") if "replaced" in str(e.proto.spec)]
            assert bool(bars) == (kind == "electra")
    at.switch_page("pages/masked_lm.py").run()
    at.radio(key="mlm_mode").set_value("Pick words of sentence A to mask").run()  # the member's own words
    clean(at, "words to mask")
    assert at.multiselect[0].options and all(o.rsplit(" (word ", 1)[0].strip() for o in at.multiselect[0].options)
    at.switch_page("pages/attention.py").run()
    for view in at.radio(key="att_view").options:  # every view, the bertviz ones too
        at.radio(key="att_view").set_value(view).run()
        clean(at, view)
    at.switch_page("pages/explanations.py").run()
    at.radio(key="ex_view").set_value("Logit lens").run()
    clean(at, "logit lens")
    at.switch_page("pages/ablation.py").run()
    at.button(key="abl_top").click().run()
    clean(at, "ablation")


def test_compare_says_what_differs_from_bert(member_app):
    kind, _, at = member_app
    at.switch_page("pages/compare.py").run()
    at.radio(key="cmp_view").set_value("Two models side by side").run()
    at.selectbox(key="cmp_model_B").set_value("minilm-l6").run()
    assert not at.exception, [e.value for e in at.exception]
    said = " ".join(i.value for i in at.info)
    assert f"What differs: {NAMES[kind]} vs BERT" in said and "vs 6" in said, said


def test_tokenization_traces_a_long_emoji_word_up_to_the_cap_and_says_so_past_it(tmp_path):
    """A RoBERTa whose merges cover emoji: a word of 2,000 emoji picked from sentence A shows what was capped
    and the word's tokens, not thousands of merges (a table too big for Streamlit to send); a word at the
    cap shows its merges, each row short."""
    b = bert.load(family_folder("roberta", tmp_path / "roberta"))
    files = roberta_emoji_files(tmp_path / "emoji")
    b.tokenizer = RobertaTokenizer.from_files(files / "vocab.json", files / "merges.txt")
    assert len(b.tokenizer.vocab) <= b.config.vocab_size
    at = AppTest.from_file(ENTRY, default_timeout=120)
    select_session_model(at, "roberta", b)
    at.switch_page("pages/tokenization.py").run()
    at.text_area(key=state.W_TEXT_A).input(emoji_word(2000)).run()
    pick = next(s for s in at.selectbox if s.label == "A word from sentence A")
    pick.set_value(emoji_word(2000)).run()
    clean(at, "2,000 emoji")
    said = " ".join(i.value for i in at.info)
    assert f"traced for words of up to {MAX_TRACE_CHARS} characters; it has 2,000" in said, said
    assert "tokens, " in said and "more" in said, said
    assert not [d for d in at.dataframe if "merge rank" in d.value.columns]

    next(t for t in at.text_input if t.label == "…or type any word").input(emoji_word(MAX_TRACE_CHARS)).run()
    clean(at, "emoji at the cap")
    merges = next(d.value for d in at.dataframe if "merge rank" in d.value.columns)
    assert len(merges) >= 3 * MAX_TRACE_CHARS
    longest = max(len(t) for t in b.tokenizer.vocab)
    assert merges["the word now"].str.len().max() <= (2 * NEARBY + 1) * (longest + 3) + 4  # symbols near the merge
    assert merges["the word now"].str.endswith(" …").any() and merges["the word now"].str.startswith("… ").any()
    assert any("Result:" in x.value for x in at.success)


def test_a_typed_word_spelled_with_entities_stays_text_on_tokenization(tmp_path):
    """ALBERT splits words on spaces only, so an address spelled with HTML entities stays one piece
    of the "That is N words" message: escaped, it starts no entity and becomes no link."""
    at = AppTest.from_file(ENTRY, default_timeout=120)
    select_session_model(at, "albert", bert.load(family_folder("albert", tmp_path / "albert")))
    at.switch_page("pages/tokenization.py").run()
    next(t for t in at.text_input if t.label == "…or type any word").input("see http&colon;//x&period;io").run()
    clean(at, "a word with entities")
    said = next(i.value for i in at.info if "words for this tokenizer" in i.value)
    assert "colon;" in said and not re.search(r"(?<!\\)&[A-Za-z]+;", said), said


@pytest.mark.parametrize("kind", list(NAMES))
def test_fine_tuning_starts_from_the_member(kind, tmp_path):
    base = bert.load(family_folder(kind, tmp_path / kind))
    train, valid = stratified_split(tiny_data(80), 0.25, seed=0)
    events = run_fn(finetune_fn(base, train, valid, fast_args(epochs=1)))
    done = next(e for e in events if isinstance(e, FinetuneDone))
    assert done.error is None and done.bundle.is_classifier
    assert done.bundle.config.model_type == kind
    # the classifier's encoder is the member's: its first layer's weights came from the base
    got = done.bundle.model.bert.embeddings.word_embeddings.weight.shape
    assert got == base.model.bert.embeddings.word_embeddings.weight.shape
    probs = done.bundle.classify(["a good film", "a bad film"])
    assert probs.shape == (2, len(done.bundle.labels))


@pytest.mark.parametrize("kind", list(NAMES))
def test_the_fine_tuning_page_trains_a_classifier_from_the_member(kind, tmp_path):
    """The page's own run (upload, base picked, Start): the classifier is the member's, kept in the
    session and picked on the other pages; the Hugging Face download is off for it, with why."""
    at = AppTest.from_file(ENTRY, default_timeout=120)
    at.run()
    at.session_state[state.USER_MODELS][kind] = bert.load(family_folder(kind, tmp_path / kind))
    at.session_state[state.USER_MODEL_IDS][kind] = f"session:{kind}:test"
    at.session_state[ts.FT_UPLOAD] = {"name": "reviews.csv", "data": reviews_csv(200), "id": "f1"}
    at.switch_page("pages/finetune.py").run()
    at.radio(key="ft_source").set_value("upload").run()
    at.selectbox(key="ft_base").set_value(f"session:{kind}")
    at.number_input(key="ft_freeze_layers").set_value(0)
    at.number_input(key="ft_epochs").set_value(1).run()
    clean(at, "set up")
    at.button(key="ft_start").click().run()
    end = time.time() + 120
    while at.session_state[ts.FT_JOB] is not None and time.time() < end:
        time.sleep(0.3)
        at.run()
        assert not at.exception, [e.value for e in at.exception]
    assert at.session_state[ts.FT_JOB] is None, "the job did not finish in time"
    clean(at, "finished")
    res = at.session_state[ts.FT_RESULTS][-1]
    assert res["status"] == "done" and res["bundle"].is_classifier
    assert res["bundle"].config.model_type == kind and res["bundle"].tokenizer.kind == {
        "roberta": "bpe",
        "albert": "unigram",
    }.get(kind, "wordpiece")
    hf = [d for d in at.get("download_button") if "Hugging Face" in d.proto.label]
    assert len(hf) == 1 and hf[0].proto.disabled and "BERT models only" in hf[0].proto.help  # off, with why
    at.button(key=f"ft_use_{res['job_id']}").click().run()
    at.switch_page("pages/explanations.py").run()
    clean(at, "explanations of the classifier")


@pytest.mark.parametrize("freeze, changes", [(1, True), (3, False)])
def test_albert_shared_layer_is_frozen_only_when_every_layer_is(freeze, changes, tmp_path):
    base = bert.load(family_folder("albert", tmp_path / "albert"))  # 3 layers, one set of weights
    train, valid = stratified_split(tiny_data(80), 0.25, seed=0)
    events = run_fn(finetune_fn(base, train, valid, fast_args(epochs=1, freeze_layers=freeze)))
    done = next(e for e in events if isinstance(e, FinetuneDone))
    before = base.model.bert.shared_layer.ffn_in.weight
    after = done.bundle.model.bert.shared_layer.ffn_in.weight
    assert (not torch.equal(before, after)) == changes


@pytest.mark.parametrize("kind", list(NAMES))
def test_every_lesson_step_and_question_works_on_the_member(kind, tmp_path):
    """The lessons' figures, tables, claims and model-checked questions, computed on the member (its
    own tokenizer's steps where a lesson traces a word); a step on the session's trained decoder is
    given none here, and says so rather than drawing."""
    import pandas as pd
    import plotly.graph_objects as go

    from app.lessons import LESSONS
    from app.lessons.claims import say

    b = bert.load(family_folder(kind, tmp_path / kind))
    for lesson in LESSONS:
        for s in lesson.steps:
            out = s.show(None if s.uses == "seq2seq" else b)
            assert out is None or isinstance(out, go.Figure | pd.DataFrame), (lesson.key, s.title)
            if s.claim:  # what the step says the model does, worked out on the member
                said = say(s.claim, b)
                assert said.text or not said.holds, (lesson.key, s.title)
        for q in lesson.questions:
            a = q.ask(b)
            assert len(set(a.choices)) == len(a.choices) >= 2 and 0 <= a.answer < len(a.choices), (lesson.key, q.key)


@pytest.mark.parametrize("kind", list(NAMES))
def test_the_class_questions_work_on_the_member(kind, tmp_path):
    """A teacher whose model is a family member asks every kind of question: the answers are the
    model's own, words without the tokenizer's marks (a RoBERTa's "Ġtired" is "tired")."""
    from app.board import questions
    from app.lessons import LESSONS
    from bert.analysis.mlm import mlm_topk

    b = bert.load(family_folder(kind, tmp_path / kind))
    text = "the small dog runs under the big [MASK] ."
    q = questions.mask_question(b, text, kind)
    top = mlm_topk(b, text, k=1).top_tokens[0][0]
    assert q["answer"] == top.removeprefix("##").lstrip("Ġ▁") and not q["answer"].startswith(("Ġ", "▁"))
    assert questions.look_question(b, "the cat sat on the mat", 1, 0, 2, kind)["answer"]
    assert questions.pieces_question(b, "sleeps", kind)["answer"]
    assert questions.heads_question(b, text, kind)["answer"]
    for label in questions.lesson_questions(LESSONS):
        assert questions.lesson_question(b, label, kind, LESSONS)["answer"]
    if kind == "albert":  # its two-sentence head answers, as the sentence-order head it is
        assert questions.follows_question(b, "the cat sat", "on the mat", kind)["answer"] in ("yes", "no")


def test_continued_pre_training_refuses_a_member_with_why(tmp_path):
    from bert.errors import TrainingError
    from bert.train.pretrain_args import PretrainArgs
    from bert.train.pretrain_setup import initial_bundle

    folder = family_folder("roberta", tmp_path / "roberta")
    with pytest.raises(TrainingError, match="is a RoBERTa, pre-trained with masked LM: .* Fine-tune it instead"):
        initial_bundle(PretrainArgs(out=str(tmp_path / "out"), init=str(folder)), corpus=None)
