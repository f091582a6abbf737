"""Debian-shipped corpora: the .deb reader and the WordNet / GCIDE parsers on small inline data."""

import io
import tarfile

import pytest

from bert.data.corpus import debian as deb
from bert.data.corpus.registry import CORPORA, LEGACY_GROUP, load_corpus, split_corpora
from bert.errors import DataError


def _make_deb(tmp_path, files: dict[str, bytes]):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo("./" + name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    body = buf.getvalue()

    def member(name: str, data: bytes) -> bytes:
        head = f"{name:<16}{0:<12}{0:<6}{0:<6}{100644:<8}{len(data):<10}`\n".encode()
        return head + data + (b"\n" if len(data) % 2 else b"")

    path = tmp_path / "x_1.0_all.deb"
    path.write_bytes(b"!<arch>\n" + member("debian-binary", b"2.0\n") + member("data.tar.gz", body))
    return path


WORDNET = (
    "  1 This software and database is being provided to you\n"
    "00001740 03 n 01 entity 0 003 ~ 00001930 n 0000 | that which is perceived or known or inferred to "
    "have its own distinct existence (living or nonliving)\n"
    "00002137 03 n 02 abstraction 0 abstract_entity 0 010 | a general concept formed by extracting "
    'common features from specific examples; "the cat sat on the mat"; "ok"\n'
)


def test_read_deb_member_and_wordnet(tmp_path):
    path = _make_deb(tmp_path, {f: WORDNET.encode() for f in deb.WORDNET_FILES})
    assert deb.read_deb_member(path, "usr/share/wordnet/data.noun").startswith(b"  1 This")
    docs = list(deb.parse_wordnet(path, ""))
    assert len(docs) == 4  # one (short) document per part of speech
    sents = docs[0][2]
    assert sents[0].startswith("entity: that which is perceived")
    assert "abstraction: a general concept formed by extracting common features from specific examples." in sents
    assert "the cat sat on the mat." in sents  # examples become sentences
    assert not any("ok" == s.rstrip(".") for s in sents)  # examples under 3 words are dropped
    assert not any("This software" in s for s in sents)  # the licence header is skipped
    with pytest.raises(DataError):
        deb.read_deb_member(path, "usr/share/nothing")
    bad = tmp_path / "bad.deb"
    bad.write_bytes(b"not a deb")
    with pytest.raises(DataError):
        deb.read_deb_member(bad, "x")


GCIDE = (
    'Abdication \\Ab`di*ca"tion\\, n. [L. abdicatio: cf. F.\n'
    "   abdication.]\n"
    "   The act of abdicating; the renunciation of a high office,\n"
    "   dignity, or trust, by its holder. --Bailey.\n"
    "   [1913 Webster]\n"
    "\n"
    'Abdomen \\Ab*do"men\\, n.\n'
    "   1. (Anat.) The belly, or that part of the body between the\n"
    "      thorax and the pelvis. [R.]\n"
    "      [1913 Webster]\n"
)


def test_gcide_entries_are_cleaned():
    entries = dict(deb.gcide_entries(GCIDE))
    assert entries["Abdication"] == (
        "The act of abdicating; the renunciation of a high office, dignity, or trust, by its holder."
    )
    assert entries["Abdomen"] == "The belly, or that part of the body between the thorax and the pelvis."


def test_new_corpora_are_registered_and_split_apart_from_the_legacy_trio():
    assert {"wordnet", "gcide"} <= set(CORPORA) and set(LEGACY_GROUP) == {"wiki", "brown", "bbc"}
    assert CORPORA["wordnet"].command == "apt-get download wordnet-base=1:3.0-37"


@pytest.mark.slow
def test_legacy_split_unchanged_by_new_corpora():
    """The first built-ins' held-out documents stay held out: the trio splits as it always did."""
    train, valid = split_corpora(["wiki", "brown", "bbc"])
    t2, v2 = load_corpus("wiki+brown+bbc").split(0.05, seed=0)
    assert valid.documents == v2.documents and train.documents == t2.documents
