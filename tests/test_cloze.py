"""The everyday cloze set and its scoring."""

from types import SimpleNamespace

import pytest

from bert.analysis import cloze
from bert.errors import DataError


def test_the_set_has_over_100_items_each_with_one_mask_and_answers():
    items = cloze.load_cloze()
    assert len(items) >= 100
    assert {it.kind for it in items} == {"fact", "grammar", "sense"}
    assert all(it.sentence.count("[MASK]") == 1 and it.answers for it in items)


def test_bad_line_is_a_data_error(tmp_path):
    p = tmp_path / "c.tsv"
    p.write_text("fact\tno mask here\tx\n")
    with pytest.raises(DataError):
        cloze.load_cloze(p)


def test_scoring_skips_punctuation_pieces_and_specials(monkeypatch):
    items = [
        cloze.ClozeItem("fact", "a [MASK] b", ("paris",)),
        cloze.ClozeItem("sense", "c [MASK] d", ("cup",)),
        cloze.ClozeItem("sense", "e [MASK] f", ("key",)),
    ]
    tops = {
        "a [MASK] b": [".", "[UNK]", "paris", "rome"],  # paris is the first word: top-1
        "c [MASK] d": ["glass", "##s", "mug", "x", "y", "cup"],  # cup is 5th word (##s skipped)
        "e [MASK] f": ["door", "room", "way", "time", "day", "key"],
    }  # key 6th: a miss

    def fake_topk(bundle, text, k):
        return SimpleNamespace(top_tokens=[tops[text]])

    monkeypatch.setattr("bert.analysis.mlm.mlm_topk", fake_topk)
    bundle = SimpleNamespace(tokenizer=SimpleNamespace())
    r = cloze.evaluate_cloze(bundle, items)
    assert r.top1 == pytest.approx(1 / 3) and r.top5 == pytest.approx(2 / 3)
    assert r.predictions[1] == ["glass", "mug", "x", "y", "cup"]
    assert [m[0].sentence for m in r.misses] == ["e [MASK] f"]
    assert r.by_kind["sense"] == (0.0, 0.5, 2)
