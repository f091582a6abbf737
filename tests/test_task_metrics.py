"""The scores of the two per-token heads, by their reference definitions: entity F1 as seqeval
counts it (hand cases worked out by its rules; against seqeval itself on IOB2/IOBES edge cases
and random tags) and SQuAD's exact match and F1 (hand cases of the official evaluation's
normalisation and counting)."""

import os
import random

import pytest

from bert.train.qa_metrics import best_scores, exact_match, f1, normalize_answer, squad_scores
from bert.train.tag_metrics import entities, entity_scores, is_bio, tag_report


def test_entities_follow_seqevals_chunk_rules():
    assert entities(["B-PER", "I-PER", "O", "B-LOC"]) == [("PER", 0, 1), ("LOC", 3, 3)]
    assert entities(["O", "I-PER", "I-PER"]) == [("PER", 1, 2)]  # an I- after O starts an entity
    assert entities(["B-PER", "I-LOC"]) == [("PER", 0, 0), ("LOC", 1, 1)]  # a change of type ends one
    assert entities(["B-PER", "B-PER"]) == [("PER", 0, 0), ("PER", 1, 1)]
    assert entities(["S-PER", "B-LOC", "E-LOC", "I-LOC"]) == [("PER", 0, 0), ("LOC", 1, 2), ("LOC", 3, 3)]
    assert entities(["O", "O"]) == []
    assert entities(["B-PER", "I-PER"]) == [("PER", 0, 1)]  # the last one is closed at the end


def test_entity_f1_on_seqevals_own_example():
    gold = [["O", "O", "O", "B-MISC", "I-MISC", "I-MISC", "O"], ["B-PER", "I-PER", "O"]]
    pred = [["O", "O", "B-MISC", "I-MISC", "I-MISC", "I-MISC", "O"], ["B-PER", "I-PER", "O"]]
    assert entity_scores(gold, pred) == {"precision": 0.5, "recall": 0.5, "f1": 0.5}
    # the same entity in another sentence is another entity: micro counts keep sentences apart
    s = entity_scores([["B-PER"], ["O"]], [["O"], ["B-PER"]])
    assert s["f1"] == 0.0
    assert entity_scores([["O"]], [["O"]]) == {"precision": 0.0, "recall": 0.0, "f1": 0.0}


def _seqeval():
    """seqeval's metrics module (a dev requirement): skipped without it, failed without it in CI."""
    try:
        from seqeval.metrics import sequence_labeling
    except ImportError:
        if os.environ.get("CI", "").strip().lower() in ("true", "1", "yes"):
            raise
        pytest.skip("seqeval is not installed (pip install -r requirements-dev.txt)")
    return sequence_labeling


# (gold, predicted) sentences: IOB2's edge cases (an I- with no B-, a type change inside a run, an
# I- right after O), IOBES's E- and S- (alone, after each other, after another type), empty ones
EDGE_PAIRS = [
    (["B-PER", "I-PER", "O"], ["I-PER", "I-PER", "O"]),  # an I- opening a sentence starts an entity
    (["O", "B-LOC", "I-LOC"], ["O", "I-LOC", "I-LOC"]),  # an I- after O too: the same span
    (["B-PER", "I-PER", "I-PER"], ["B-PER", "I-LOC", "I-LOC"]),  # a type change splits the run
    (["B-ORG", "B-ORG", "O"], ["B-ORG", "I-ORG", "O"]),  # two one-word entities, or one of two words
    (["O", "I-LOC", "B-LOC", "I-PER"], ["O", "B-LOC", "B-LOC", "B-PER"]),
    (["S-PER", "B-LOC", "E-LOC", "I-LOC"], ["S-PER", "B-LOC", "I-LOC", "E-LOC"]),
    (["E-PER", "E-PER"], ["B-PER", "E-PER"]),  # an E- alone is a one-word entity
    (["B-PER", "E-LOC"], ["S-PER", "S-LOC"]),
    (["B-PER", "O", "I-PER"], ["B-PER", "I-PER", "I-PER"]),
    (["O", "O"], ["B-MISC", "O"]),  # a predicted entity where there is none
    (["B-MISC"], ["O"]),  # a missed one
    (["I-PER"], ["I-PER"]),
]


def test_entities_and_entity_scores_equal_seqevals_on_edge_cases():
    sl = _seqeval()
    for tags in {tuple(t) for pair in EDGE_PAIRS for t in pair}:
        assert entities(list(tags)) == sl.get_entities(list(tags)), tags
    gold, pred = [g for g, _ in EDGE_PAIRS], [p for _, p in EDGE_PAIRS]
    ours = entity_scores(gold, pred)
    assert 0 < ours["f1"] < 1  # some right, some wrong: the comparison means something
    assert ours["precision"] == pytest.approx(sl.precision_score(gold, pred), abs=1e-12)
    assert ours["recall"] == pytest.approx(sl.recall_score(gold, pred), abs=1e-12)
    assert ours["f1"] == pytest.approx(sl.f1_score(gold, pred), abs=1e-12)
    for k in range(len(EDGE_PAIRS)):  # and sentence by sentence (where seqeval's score is defined)
        g, p = gold[k : k + 1], pred[k : k + 1]
        if sl.get_entities(g[0]) and sl.get_entities(p[0]):
            assert entity_scores(g, p)["f1"] == pytest.approx(sl.f1_score(g, p), abs=1e-12), EDGE_PAIRS[k]


def test_entity_f1_equals_seqeval_on_random_tags():
    sl = _seqeval()
    rng = random.Random(0)
    tags = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "E-LOC", "S-ORG"]
    gold = [[rng.choice(tags) for _ in range(rng.randint(1, 12))] for _ in range(200)]
    pred = [[t if rng.random() < 0.7 else rng.choice(tags) for t in s] for s in gold]
    ours = entity_scores(gold, pred)
    assert ours["f1"] == pytest.approx(sl.f1_score(gold, pred), abs=1e-9)
    assert ours["precision"] == pytest.approx(sl.precision_score(gold, pred), abs=1e-9)
    assert ours["recall"] == pytest.approx(sl.recall_score(gold, pred), abs=1e-9)


def test_tag_report_counts_words_per_tag():
    tags = ["O", "B-PER", "I-PER"]
    gold = [[1, 2, 0], [0, 1]]
    pred = [[1, 0, 0], [1, 1]]
    r = tag_report(gold, pred, tags)
    assert r.confusion == [[1, 1, 0], [0, 2, 0], [1, 0, 0]]
    assert r.accuracy == pytest.approx(3 / 5)
    assert r.precision == {"O": 0.5, "B-PER": 2 / 3, "I-PER": 0.0}
    assert r.recall == {"O": 0.5, "B-PER": 1.0, "I-PER": 0.0}
    assert r.support == {"O": 2, "B-PER": 2, "I-PER": 1}
    # gold entities: PER(0,1), PER(1,1) in sentence 2; predicted: PER(0,0), PER(0,0) and PER(1,1) in 2
    assert r.entity == pytest.approx({"precision": 1 / 3, "recall": 1 / 2, "f1": 0.4})
    assert tag_report([[0, 1]], [[0, 1]], ["NN", "VB"]).entity is None  # part of speech: no entities


def test_is_bio_tells_entity_tags_from_part_of_speech():
    assert is_bio(["O", "B-PER", "I-PER"]) and is_bio(["S-LOC", "O"])
    assert not is_bio(["NN", "VB", "O"]) and not is_bio(["O"]) and not is_bio(["B-"])


def test_normalize_answer_as_the_official_squad_script():
    assert normalize_answer("The  Eiffel Tower!") == "eiffel tower"
    assert normalize_answer("an apple, a pear") == "apple pear"
    assert normalize_answer("theatre") == "theatre"  # articles only as whole words
    assert normalize_answer("U.S.-based") == "usbased"  # punctuation removed, not turned into spaces


def test_exact_match_and_f1_on_hand_cases():
    assert exact_match("the Eiffel Tower", "Eiffel tower.") == 1.0
    assert exact_match("Eiffel", "Eiffel Tower") == 0.0
    assert f1("in Paris France", "Paris") == pytest.approx(0.5)  # P 1/3, R 1
    assert f1("Paris Paris", "Paris") == pytest.approx(2 / 3)  # shared words counted with multiplicity
    assert f1("London", "Paris") == 0.0
    assert f1("", "") == 1.0 and f1("Paris", "") == 0.0 and f1("", "Paris") == 0.0  # SQuAD 2.0's no-answer
    assert f1("the", "a") == 1.0  # both normalise to nothing


def test_the_best_gold_answer_counts_and_empty_golds_mean_no_answer():
    assert best_scores("Denver Broncos", ["Broncos", "Denver Broncos", "the Denver Broncos"]) == (1.0, 1.0)
    em, score = best_scores("Broncos win", ["Denver Broncos", "Broncos"])
    assert em == 0.0 and score == pytest.approx(2 / 3)
    assert best_scores("", []) == (1.0, 1.0) and best_scores("", [" ", "the"]) == (1.0, 1.0)
    s = squad_scores(["Paris", "in Paris France"], [["Paris"], ["Paris"]])
    assert s == pytest.approx({"exact_match": 50.0, "f1": 75.0})
