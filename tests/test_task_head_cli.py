"""`python -m bert tag` and `python -m bert answer` on saved folders (main(argv), as the command runs
it): the words, tags and probabilities `tag` gives, the span, offsets and score `answer` gives, read
from standard input with '-', and a refusal as one line on stderr with exit status 2."""

import io
import json

import pytest
import torch

import bert
from bert.__main__ import main
from bert.checkpoint.builtins import minilm_package_dir
from bert.task_models import BertForQuestionAnswering, BertForTokenClassification
from tests.helpers import tiny_config

TAGS = {0: "O", 1: "B-PER", 2: "I-PER"}
SENTENCES = ["Ada Lovelace met Charles Babbage.", "unaffable café prices!"]
QUESTION = "Who met Charles?"
PASSAGE = "Ada Lovelace met Charles Babbage in London in 1833, at a party given by his friends. " * 4


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """A random tiny tagger and reader on MiniLM's vocabulary, saved in our format."""
    root = tmp_path_factory.mktemp("cli")
    tok = bert.Tokenizer.from_file(minilm_package_dir() / "vocab.txt")
    torch.manual_seed(0)
    tagger = BertForTokenClassification(tiny_config(len(tok), max_position_embeddings=128, id2label=TAGS))
    reader = BertForQuestionAnswering(tiny_config(len(tok), max_position_embeddings=128))
    with torch.no_grad():  # heads that tell tags and positions apart
        tagger.classifier.weight.normal_(0, 1.0)
        reader.qa_outputs.weight.normal_(0, 1.0)
    return (
        bert.save(bert.Bundle(model=tagger.eval(), tokenizer=tok, name="tg"), root / "tagger"),
        bert.save(bert.Bundle(model=reader.eval(), tokenizer=tok, name="rd"), root / "reader"),
    )


def test_tag_prints_each_words_tag_and_probability(folders, capsys):
    tagger = bert.load(str(folders[0]))
    assert main(["tag", str(folders[0]), *SENTENCES]) == 0
    blocks = capsys.readouterr().out.split("\n\n")
    assert blocks[-1] == "" and len(blocks) == 3  # a blank line after each sentence
    for block, words in zip(blocks, tagger.tag(SENTENCES)):
        rows = [line.split("\t") for line in block.strip("\n").split("\n")]
        assert [(w, t) for w, t, _ in rows] == [(w.word, w.tag) for w in words]
        assert [float(p) for *_, p in rows] == pytest.approx([w.prob for w in words], abs=1e-4)
    assert {t for w in tagger.tag(SENTENCES) for _, t, _ in w} != {"O"}  # not one tag everywhere


def test_tag_reads_standard_input_and_writes_json(folders, capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO(SENTENCES[1] + "\n\n" + SENTENCES[0] + "\n"))
    assert main(["tag", str(folders[0]), "-", "--json"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [x["sentence"] for x in lines] == [SENTENCES[1], SENTENCES[0]]  # the blank line skipped
    assert [w[0] for w in lines[0]["words"]] == ["unaffable", "café", "prices", "!"]


def test_answer_prints_the_span_its_offsets_and_score(folders, capsys, monkeypatch):
    reader = bert.load(str(folders[1]))
    want = reader.answer(QUESTION, PASSAGE, max_length=48, stride=12)
    assert len(want.windows) > 1  # the passage is read in several windows
    assert main(["answer", str(folders[1]), "-q", QUESTION, "-p", PASSAGE, "--max-length", "48", "--stride", "12"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert (got["answer"], got["start"], got["end"]) == (want.text, want.start, want.end)
    assert PASSAGE[got["start"] : got["end"]] == got["answer"] and got["score"] == pytest.approx(want.score)
    monkeypatch.setattr("sys.stdin", io.StringIO(PASSAGE))
    assert main(["answer", str(folders[1]), "-q", QUESTION, "-p", "-", "--max-length", "48", "--stride", "12"]) == 0
    assert json.loads(capsys.readouterr().out) == got


@pytest.mark.parametrize(
    "argv, says",
    [
        (["answer", "{tagger}", "-q", "Who?", "-p", "Ada."], "is not a question-answering model"),
        (["tag", "{reader}", "Ada met Charles."], "is not a fine-tuned tagger"),
        (["answer", "{reader}", "-q", " ", "-p", "Ada."], "a question and a passage are both needed"),
        (["answer", "{reader}", "-q", "Who?", "-p", "Ada.", "--stride", "-3"], "the stride must be at least 0"),
        (["tag", "{tagger}", "word " * 200], "longer than this model's 128 tokens"),
        (["tag", "no-such-folder", "Ada."], "neither a built-in model"),
    ],
)
def test_a_refusal_is_one_line_on_stderr_and_exit_status_2(folders, capsys, argv, says):
    argv = [a.format(tagger=folders[0], reader=folders[1]) for a in argv]
    assert main(argv) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err.startswith("error: ") and says in out.err and out.err.count("\n") == 1


def test_what_was_read_is_printed_with_control_characters_escaped(folders, capsys):
    hostile = "Ada\x1bc met\u202e Charles\x07 Babbage."
    assert main(["tag", str(folders[0]), hostile]) == 0
    out = capsys.readouterr().out
    assert not any(c in out for c in "\x1b\u202e\x07")
    assert "Ada\\x1bc\t" in out  # the word as read, its escape character written out
    assert main(["tag", str(folders[0]), "--json", hostile]) == 0
    out = capsys.readouterr().out
    assert not any(c in out for c in "\x1b\u202e\x07") and json.loads(out)["sentence"] == hostile


def test_a_passage_past_the_cap_is_refused_before_it_is_read(folders, capsys, monkeypatch):
    from bert.answering import MAX_PASSAGE_CHARS

    long = "Ada met Charles. " * (MAX_PASSAGE_CHARS // 17 + 1)
    assert main(["answer", str(folders[1]), "-q", QUESTION, "-p", long]) == 2
    assert f"at most {MAX_PASSAGE_CHARS:,}" in capsys.readouterr().err

    class Stdin(io.StringIO):
        asked: list = []

        def read(self, n=-1):
            self.asked.append(n)
            return super().read(n)

    monkeypatch.setattr("sys.stdin", Stdin(long * 3))
    assert main(["answer", str(folders[1]), "-q", QUESTION, "-p", "-"]) == 2
    assert Stdin.asked == [MAX_PASSAGE_CHARS + 1] and "at most" in capsys.readouterr().err
