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

    def fake_topk(bundle, text, k, mask_kind="bidirectional"):
        return SimpleNamespace(top_tokens=[tops[text]])

    monkeypatch.setattr("bert.analysis.mlm.mlm_topk", fake_topk)
    bundle = SimpleNamespace(tokenizer=SimpleNamespace())
    r = cloze.evaluate_cloze(bundle, items)
    assert r.top1 == pytest.approx(1 / 3) and r.top5 == pytest.approx(2 / 3)
    assert r.predictions[1] == ["glass", "mug", "x", "y", "cup"]
    assert [m[0].sentence for m in r.misses] == ["e [MASK] f"]
    assert r.by_kind["sense"] == (0.0, 0.5, 2)


def test_every_item_says_where_its_clue_stands():
    items = cloze.load_cloze()
    sides = [it.clue for it in items]
    assert set(sides) == {"left", "right"} and sides.count("right") >= 20
    by_sentence = {it.sentence: it.clue for it in items}
    assert by_sentence["The capital of France is [MASK]."] == "left"
    assert by_sentence["She [MASK] to school every day."] == "right"


def test_three_column_lines_still_load_and_a_bad_side_is_a_data_error(tmp_path):
    p = tmp_path / "c.tsv"
    p.write_text("# kind\tsentence\tanswers\tclue\nfact\tA [MASK] b.\tx|Y\nfact\tC [MASK].\tz\tRight\n")
    old, new = cloze.load_cloze(p)
    assert (old.clue, old.answers) == (None, ("x", "y")) and new.clue == "right"
    p.write_text("fact\tA [MASK] b.\tx\tabove\n")
    with pytest.raises(DataError, match="line 1: the clue column must be left or right"):
        cloze.load_cloze(p)
    p.write_text("fact\tA [MASK] b.\tx\tleft\textra\n")
    with pytest.raises(DataError, match="line 1: expected"):
        cloze.load_cloze(p)


def test_report_splits_by_clue_side_under_the_pattern_asked_for(monkeypatch):
    items = [
        cloze.ClozeItem("fact", "a [MASK]", ("x",), "left"),
        cloze.ClozeItem("fact", "[MASK] b", ("y",), "right"),
        cloze.ClozeItem("fact", "[MASK] c", ("z",), "right"),
        cloze.ClozeItem("fact", "d [MASK]", ("w",)),  # no side: counted, not split
    ]
    seen = []

    def fake_topk(bundle, text, k, mask_kind="bidirectional"):
        seen.append(mask_kind)
        # reading left only, the right-clue gaps are missed
        hit = mask_kind == "bidirectional" or not text.startswith("[MASK]")
        return SimpleNamespace(top_tokens=[[{"a": "x", "[": "y"}.get(text[0], "w") if hit else "q"]])

    monkeypatch.setattr("bert.analysis.mlm.mlm_topk", fake_topk)
    bundle = SimpleNamespace(tokenizer=SimpleNamespace())
    both = cloze.evaluate_cloze(bundle, items)
    left = cloze.evaluate_cloze(bundle, items, mask_kind="causal")
    assert seen == ["bidirectional"] * 4 + ["causal"] * 4 and left.mask_kind == "causal"
    assert both.by_side == {"left": (1.0, 1.0, 1), "right": (0.5, 0.5, 2)}  # "[MASK] c" wants z, gets y
    assert left.by_side == {"left": (1.0, 1.0, 1), "right": (0.0, 0.0, 2)}
    assert (left.n, left.top1) == (4, 0.5)


def test_cli_prints_both_patterns_and_the_sides(monkeypatch, capsys):
    report = cloze.ClozeReport(n=2, top1=0.5, top5=1.0, by_kind={"fact": (0.5, 1.0, 2)}, by_side={"left": (1, 1, 1)})
    asked = []
    monkeypatch.setattr("bert.checkpoint.load.load", lambda name: name)
    monkeypatch.setattr(cloze, "evaluate_cloze", lambda b, mask_kind: asked.append(mask_kind) or report)
    assert cloze.main(["m", "--pattern", "bidirectional", "--pattern", "causal", "--pattern", "3"]) == 0
    out = capsys.readouterr().out
    assert asked == ["bidirectional", "causal", 3]
    assert "m (causal): everyday cloze top-1 0.500" in out and "clue left  top-1 1.000" in out
