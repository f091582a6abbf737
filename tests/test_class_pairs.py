"""The class's minimal pairs on its board (app/class_store/class_pairs.py, app/board/pairs_panel.py): the
store's limits on each store, then a student posting typed pairs from the Causes page and the
Class board page scoring them with the loaded model: each pair's hit or miss, the hit rate, typed
text shown as text, bad input a clear message."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.class_store import class_pairs
from app.class_store.class_pairs import ClassPairs
from app.class_store.errors import BoardError
from app.class_store.service import JOINED

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = "<img src=x onerror=alert(1)> **bold**"
DAY = 24 * 3600


def test_posts_are_bounded_deduplicated_and_go_with_the_day(board, monkeypatch):
    code, key = board.new_board()
    cp = ClassPairs(board)
    v0 = board.version(code)
    assert cp.post(code, "ann", [("The dogs bark.", "The dogs barks."), (" The dogs bark. ", "The dogs barks.")]) == 1
    assert board.version(code) != v0, "a post redraws the board page"
    assert cp.post(code, "bob", [("The dogs bark.", "The dogs barks."), ("A cat sleeps.", "A cat sleep.")]) == 1
    assert cp.pairs(code) == [("The dogs bark.", "The dogs barks."), ("A cat sleeps.", "A cat sleep.")]
    for pairs, said in [
        ([], "no pairs"),
        ([("a", "a")], "its own twin"),
        ([("", "b")], "good sentence is empty"),
        ([("a" * 201, "b")], "at most 200 characters"),
        ([("a\nb", "c")], "line break"),
        ([("a\u202eb", "c")], "control characters"),
        ([(f"s{i}", f"t{i}") for i in range(11)], "at most 10 pairs at once"),
    ]:
        with pytest.raises(BoardError, match=said):
            cp.post(code, "ann", pairs)
    with pytest.raises(BoardError, match="no board"):
        cp.post("ZZZZZZ", "ann", [("a", "b")])
    assert cp.post(code, "ann", [(f"s{i}", f"t{i}") for i in range(9)]) == 9
    with pytest.raises(BoardError, match="at most 10 pairs to a board; you have posted 10"):
        cp.post(code, "ann", [("x", "y")])
    monkeypatch.setattr(class_pairs, "MAX_PAIRS", 12)
    with pytest.raises(BoardError, match="holds 11 pairs of at most 12"):
        cp.post(code, "cy", [("x", "y"), ("u", "v")])
    assert len(cp.pairs(code)) == 11
    board.clear(code, key)
    assert cp.pairs(code) == [], "the teacher's clear takes the pairs too"
    with board.transaction(write=False) as db:
        created = float(db.execute("SELECT created FROM boards WHERE code = ?", (code,)).fetchone()[0])
    cp.post(code, "ann", [("x", "y")], now=created)
    board.expire(now=created + DAY + 1)
    with board.transaction(write=False) as db:
        assert db.execute("SELECT COUNT(*) FROM pairs WHERE code = ?", (code,)).fetchone()[0] == 0


def test_one_machine_cannot_fill_the_board_and_a_classmate_still_posts(board):
    code, _ = board.new_board()
    cp = ClassPairs(board)
    posted = []
    for k in range(10):  # ten fresh cookies from one machine, ten pairs each
        try:
            posted.append(
                cp.post(code, f"script-{k}", [(f"s{k} {i}", f"t{k} {i}") for i in range(10)], address="10.0.0.66")
            )
        except BoardError as e:
            assert "Your network has posted 30 pairs" in str(e) and "your teacher can say so" in str(e)
            posted.append(0)
    assert posted == [10, 10, 10] + [0] * 7
    assert cp.post(code, "real student", [("The dogs bark.", "The dogs barks.")], address="10.0.0.7") == 1
    assert cp.post(code, "class", [("A cat sleeps.", "A cat sleep.")], address="10.0.0.66", address_cap=31) == 1
    with board.transaction(write=False) as db:
        kept = {r[0] for r in db.execute("SELECT address FROM pairs WHERE code = ?", (code,)).fetchall()}
    assert "10.0.0.66" not in kept and len(kept) == 2, "the address is kept as a hash"


def test_the_teacher_removes_one_pair_and_nothing_else(board):
    code, key = board.new_board()
    cp = ClassPairs(board)
    cp.post(code, "ann", [("The dogs bark.", "The dogs barks."), ("A cat sleeps.", "A cat sleep.")])
    board.post(code, "Ann", {}, run_code="ANN001", student="ann", owner="ann")
    (first, _, _, _), (second, _, _, _) = cp.scored(code, "m")
    cp.keep_scores(code, "m", {first: (-1.0, -2.0, None), second: (-3.0, -1.0, None)})
    with pytest.raises(BoardError):
        cp.remove(code, "not the key", first)
    v = board.version(code)
    assert cp.remove(code, key, first) is True and board.version(code) != v
    assert cp.remove(code, key, first) is False
    assert cp.scored(code, "m") == [(second, "A cat sleeps.", "A cat sleep.", (-3.0, -1.0, None))]
    assert len(board.entries(code)) == 1, "the posted run stays"
    with board.transaction(write=False) as db:
        assert db.execute("SELECT COUNT(*) FROM pair_scores WHERE pair = ?", (first,)).fetchone()[0] == 0


def test_a_pair_is_scored_once_per_model_and_kept_with_it(board, monkeypatch):
    pytest.importorskip("streamlit")
    from app.board import pairs_panel
    from app.current_model import CurrentModel
    from tests.helpers import minilm_tiny_mlm

    code, _ = board.new_board()
    long = " ".join(["a"] * 45)  # 45 tokens in 89 characters
    ClassPairs(board).post(code, "ann", [("The dogs bark.", "The dogs barks."), (f"{long} a.", f"{long} b.")])
    calls = []
    real = pairs_panel.pair_scores
    monkeypatch.setattr(pairs_panel, "pair_scores", lambda *a: calls.append(a[1]) or real(*a))
    model = CurrentModel(minilm_tiny_mlm(), "test:board-pairs", "tiny")
    first, pairs = pairs_panel.scored_rows(model, code, board)
    again, _ = pairs_panel.scored_rows(model, code, board)  # another page run, another viewer
    assert calls == [(("The dogs bark.", "The dogs barks."),)], "scored once; the long pair never"
    assert first.equals(again) and [g for _, g, _ in pairs] == ["The dogs bark.", f"{long} a."]
    assert first["model"].iloc[0] in ("hit", "miss") and "longer than 40" in first["model"].iloc[1]
    other = CurrentModel(model.bundle, "test:board-pairs-other", "tiny")
    pairs_panel.scored_rows(other, code, board)
    assert len(calls) == 2, "another model scores it once too"


pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402


@pytest.mark.slow
@pytest.mark.parametrize("board", ["sqlite"], indirect=True)
def test_a_student_posts_typed_pairs_and_the_board_scores_them(board, monkeypatch):
    monkeypatch.setenv("BERT_EXPLORER_BOARD", "1")
    code, _ = board.new_board()
    student = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=120)
    student.run()
    student.switch_page("pages/causes.py").run()
    student.radio(key="cz_view").set_value("Minimal pairs").run()
    student.radio(key="mp_source").set_value("Your pairs").run()
    assert not student.exception and not [b for b in student.button if b.key == "mp_post"], "no board joined"
    student.session_state[JOINED] = code
    student.text_area(key="mp_typed").input(
        f"The cats sleep on the sofa. | The cats sleeps on the sofa.\n{HOSTILE} | {HOSTILE} no\n"
        "The keys to the cabinet are here. | The keys to the cabinet is here."
    ).run()
    student.button(key="mp_post").click().run()
    assert not student.exception and any("3 pairs posted" in s.value for s in student.success)
    student.button(key="mp_post").click().run()
    assert any("on board" in s.value and "already" in s.value for s in student.success)
    student.text_area(key="mp_typed").input("\n".join(f"A{i} cat sleeps. | A{i} cat sleep." for i in range(11))).run()
    student.button(key="mp_post").click().run()
    assert any("at most 10 pairs at once" in e.value.replace("\\", "") for e in student.error) and not student.exception

    ClassPairs(board).post(code, "another browser", [("The [MASK] barks.", "The dog bark.")])  # unscorable
    teacher = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=120)
    teacher.run()
    teacher.session_state[JOINED] = code
    teacher.switch_page("pages/board.py").run()
    assert not teacher.exception, [e.value for e in teacher.exception]
    table = next(d.value for d in teacher.dataframe if "good sentence" in d.value.columns)
    assert list(table["good sentence"]) == [
        "The cats sleep on the sofa.",
        HOSTILE,
        "The keys to the cabinet are here.",
        "The [MASK] barks.",
    ]
    assert table["model"].iloc[3].startswith("not scored: ") and "[MASK]" in table["model"].iloc[3]
    table = table.iloc[:3]
    verdicts = list(table["model"])
    assert set(verdicts) <= {"hit", "miss"} and verdicts[0] == "hit"
    assert (table["difference"] > 0).tolist() == [v == "hit" for v in verdicts]
    (metric,) = [m for m in teacher.metric if "prefers the good sentence" in m.label]
    hits = verdicts.count("hit")
    assert metric.value.startswith(f"{hits} of 3 pairs ({hits / 3:.0%})")
    shown = [m.value for m in teacher.markdown] + [c.value for c in teacher.caption]
    assert not any("<img" in v for v in shown)


def test_the_prefers_question_answers_with_the_sentence_the_model_scores_higher():
    """ "Which of two sentences does the model find more likely?": a built-in pair scored by
    pseudo-log-likelihood; the model's answer is its higher sentence, whether or not it is the
    grammatical one, and the choices' order gives nothing away."""
    from app.board.questions import prefers_question
    from bert import InputError
    from bert.analysis.paradigms import PARADIGMS
    from bert.analysis.scoring import pseudo_log_likelihood
    from tests.helpers import minilm_tiny_classifier, minilm_tiny_mlm

    bundle = minilm_tiny_mlm()
    for name in list(PARADIGMS)[:4]:
        good, bad = PARADIGMS[name].pairs[2]
        q = prefers_question(bundle, name, 3, "tiny")
        higher = max((good, bad), key=lambda s: pseudo_log_likelihood(bundle, s).total)
        assert q["kind"] == "prefers" and q["choices"] == sorted([good, bad]) and q["answer"] == higher
        assert name in q["prompt"] and PARADIGMS[name].about in q["why"] and q["figure"]
        assert ("not the grammatical one" in q["why"]) == (higher == bad)
    for name, number in [("no such rule", 1), (next(iter(PARADIGMS)), 0), (next(iter(PARADIGMS)), 21)]:
        with pytest.raises(InputError):
            prefers_question(bundle, name, number, "tiny")
    with pytest.raises(InputError):  # a classifier has no masked-word head to score with
        prefers_question(minilm_tiny_classifier(), next(iter(PARADIGMS)), 1, "tiny")
