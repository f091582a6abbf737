"""A next-word model (trained left to right) carries its pattern in its config (is_decoder, as
transformers marks a causal BERT), keeps it through saving and loading, loses it when fine-tuned
(a classifier reads both ways), and is refused with why by every view that reads both ways with
BERT's heads: a gap's guesses, next sentence, the cloze set, saliency, the logit lens, ablation.
On the pages: the Masked LM page says why instead of guessing; nothing raises."""

import json
import threading

import pytest
from streamlit.testing.v1 import AppTest

import bert
from bert.analysis import ablation, cloze, explain, mlm
from bert.attention_masks import BIDIRECTIONAL, CAUSAL, trained_mask_kind
from bert.checkpoint.load import LEFT_TO_RIGHT_NOTE
from bert.data.corpus.base import Corpus
from bert.errors import InputError
from bert.train.events import PretrainDone
from bert.train.finetune_classifier import build_classifier
from bert.train.pretrain import pretrain
from tests.helpers import ENTRY, PRETRAIN_WORDS, pretrain_args, select_session_model, tiny_pretrain_bundle

WHY = "was trained on the next word"


def _pretrained(tmp_path, objective: str) -> bert.Bundle:
    corpus = Corpus(name="words", documents=[[" ".join(PRETRAIN_WORDS) + " ."] for _ in range(12)])
    args = pretrain_args(tmp_path / objective, objective=objective, steps=2, eval_every=2)
    events = list(pretrain(args, stop=threading.Event(), bundle=tiny_pretrain_bundle(), corpus=corpus))
    done = events[-1]
    assert isinstance(done, PretrainDone)
    return bert.load(done.path)


@pytest.fixture(scope="module")
def next_word(tmp_path_factory):
    return _pretrained(tmp_path_factory.mktemp("nw"), "next-word")


def test_the_pattern_is_saved_with_the_model_and_said_under_it(next_word, tmp_path):
    assert trained_mask_kind(next_word.config) == CAUSAL
    assert LEFT_TO_RIGHT_NOTE in next_word.notes and not next_word.nsp_head_trained
    bert.save(next_word, tmp_path / "again")
    assert json.loads((tmp_path / "again" / "config.json").read_text())["is_decoder"] is True
    assert trained_mask_kind(bert.load(tmp_path / "again").config) == CAUSAL


def test_bert_s_own_games_leave_it_unmarked(tmp_path):
    b = _pretrained(tmp_path, "mlm+nsp")
    assert trained_mask_kind(b.config) == BIDIRECTIONAL
    assert LEFT_TO_RIGHT_NOTE not in b.notes and b.nsp_head_trained
    assert mlm.mlm_topk(b, "the red [MASK] runs .", k=3).top_tokens  # it plays


def test_a_classifier_fine_tuned_from_it_reads_both_ways(next_word):
    clf = build_classifier(next_word, ["a", "b"])
    assert trained_mask_kind(clf.config) == BIDIRECTIONAL


@pytest.mark.parametrize(
    "view",
    [
        lambda b: mlm.mlm_topk(b, "the red [MASK] runs .", k=3),
        lambda b: mlm.mlm_topk(b, "the red [MASK] runs .", k=3, mask_kind=CAUSAL),
        lambda b: mlm.nsp_probability(b, "the red cat runs .", "a dog sits ."),
        lambda b: cloze.evaluate_cloze(b, [cloze.ClozeItem("fact", "the red [MASK] runs .", ("cat",), "left")]),
        lambda b: explain.saliency_mlm(b, "the red [MASK] runs ."),
        lambda b: explain.logit_lens(b, "the red [MASK] runs ."),
        lambda b: ablation.head_importance(b, "the red [MASK] runs ."),
    ],
    ids=["mlm", "mlm-left", "nsp", "cloze", "saliency", "lens", "ablation"],
)
def test_views_that_read_both_ways_refuse_it_with_why(next_word, view):
    with pytest.raises(InputError, match=WHY):
        view(next_word)


def test_the_masked_lm_page_says_why_instead_of_guessing(next_word):
    at = AppTest.from_file(ENTRY, default_timeout=120)
    select_session_model(at, "my next word", next_word)
    at.run()
    at.switch_page("pages/masked_lm.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    refusals = [i.value for i in at.info if WHY in i.value]
    assert len(refusals) == 2, [i.value for i in at.info]  # the gap and the next sentence
    assert any(i.value.startswith("Filling a gap") for i in at.info)
    assert not at.get("plotly_chart")  # no guesses drawn
    assert any(LEFT_TO_RIGHT_NOTE[:40] in i.value for i in at.sidebar.info)  # said under the model too
    at.switch_page("pages/ablation.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(WHY in e.value for e in at.error)  # a message, not a traceback
    for page in ("explanations", "lessons", "attention", "compare"):  # what they cannot show, they say why
        at.switch_page(f"pages/{page}.py").run()
        assert not at.exception, (page, [e.value for e in at.exception])
        assert all(WHY in e.value for e in at.error), (page, [e.value for e in at.error])
