"""The teacher leads, the class answers: the board store's actions for a class in a lecture.

Two things live under a board's class code, next to its posted runs, in the board's store
(`Classroom(store)`: SQLite or PostgreSQL, the same lock and expiry, app/class_store/store.py holds
the tables):

- **the lead**: the page and view (a link's values, app/ui/links.py) the teacher shows now. The
  teacher's session writes it whenever its view changes (`lead`), and at least every
  LEAD_BEAT_S; followers poll `class_poll` and move when its version changes. Leading ends when
  the teacher stops, LEAD_IDLE_S after the teacher's last word, or LEAD_MAX_S after it began.
- **questions**: one open at a time, asked with the board's key (`ask`: the prompt, the choices
  or free text, the model's answer and the figure that explains it, worked out by the teacher's
  session: app/board/questions.py); each student answers once (`answer`, changeable until the
  reveal); `tally` counts them for the projector; `reveal` closes it. Kept a day, as the board.

Limits: answers 1-ANSWER_CHARS characters on one line, no control or format
characters, at most ANSWER_MARKS marks on a letter; one per student (the browser key of the
job limit) and at most MAX_CHANGES changes each; MAX_ANSWERS
students a question; MAX_QUESTIONS a day a class; a question's body at most BODY_BYTES. A student
is whatever cookie a client sends, so new answerers of a question are also bounded per client
address (app/server/new_students.py): BERT_EXPLORER_NEW_ANSWERERS_BURST (60, a class behind one
router) at once, then one every BERT_EXPLORER_NEW_ANSWERER_EVERY_S seconds, and at most
ANSWERS_PER_ADDRESS (half of MAX_ANSWERS) in all: one machine cannot answer as the whole class,
and the other half of a question is always there for students elsewhere. Nothing
here names a student to another: the tally is answers and counts, a student sees their own
answer, the teacher's CSV numbers the students and names only those signed in or launched from
the course (their real name and email, kept with the board for its teacher: BoardStore.keep_name).
"""

from __future__ import annotations

import json
import math
import threading
import time
import unicodedata
from collections import OrderedDict

from ..server.new_students import NewStudents, new_answerers
from .checks import normal_code, stored_student
from .errors import BoardError
from .store import KEEP_SECONDS, LEAD_IDLE_S, LEAD_MAX_S, BoardStore

LEAD_ENDED = "Leading the class ended (after 4 hours, or 20 minutes unheard): turn it on again to go on."
LEAD_BEAT_S = 30  # a leading session writes at least this often (its view unchanged)
VIEW_ITEMS = 24  # values in a lead's view
VIEW_CHARS = 400  # of one value (a link's text is cut at 300)
PAGE_CHARS = 40
ANSWER_CHARS = 80
ANSWER_MARKS = 4  # marks on one letter: Vietnamese stacks 2, pointed Hebrew 4, more is a tower
MAX_ANSWERS = 200  # students answering one question
ANSWERS_PER_ADDRESS = MAX_ANSWERS // 2  # of them from one client address: the rest is for others
MAX_CHANGES = 20  # times one student changes an answer
MAX_QUESTIONS = 50  # a class a day
BODY_BYTES = 300_000  # a question's JSON, its figure included
QUESTION_STATES = ("open", "revealed")
BODY_CACHED = 16  # question bodies kept read, server-wide (they never change)

_bodies: OrderedDict[tuple, dict] = OrderedDict()  # (store, question id) -> body: read once
_tallies: OrderedDict[tuple, tuple] = OrderedDict()  # (store, question id, version) -> tally
_cache_lock = threading.Lock()


def normal_answer(text: str | None) -> str:
    """What two answers that mean the same share: NFKC, case-folded, spaces collapsed, the
    quotes and full stops around a word and WordPiece's ## dropped ("Paris." = "paris" = "##paris")."""
    text = " ".join(unicodedata.normalize("NFKC", str(text or "")).casefold().split())
    text = text.strip(" \"'`«»“”‘’.,;:!?")
    return text[2:] if text.startswith("##") else text


def most_marks(text: str) -> int:
    """The most combining marks (Unicode categories Mn, Mc, Me) in a row on one character of
    `text`, composed first (NFC), so "é" typed as e and an accent counts none."""
    most = run = 0
    for c in unicodedata.normalize("NFC", text):
        run = run + 1 if unicodedata.category(c).startswith("M") else 0
        most = max(most, run)
    return most


def clean_answer(text: str | None) -> str:
    """A typed answer as kept (stripped), or BoardError when it cannot be one: empty, too long,
    holding control or format characters or a line or paragraph separator (an answer is one line
    of visible text on every screen), or a stack of marks that spills over the lines around it."""
    text = str(text or "").strip()
    if not text:
        raise BoardError("Type an answer first.")
    if len(text) > ANSWER_CHARS:
        raise BoardError(f"An answer is at most {ANSWER_CHARS} characters.")
    if any(unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp") for c in text):
        raise BoardError("An answer cannot hold control characters or line breaks.")
    if most_marks(text) > ANSWER_MARKS:
        raise BoardError(f"An answer cannot stack more than {ANSWER_MARKS} accents or marks on one letter.")
    return text


def is_right(body: dict, answer: str | None) -> bool | None:
    """Whether `answer` is the model's answer to the question `body`; None for no answer."""
    if answer is None:
        return None
    return normal_answer(answer) in {normal_answer(a) for a in body.get("accept") or [body["answer"]]}


def _clean_values(values) -> dict:
    if not isinstance(values, dict) or len(values) > VIEW_ITEMS:
        raise BoardError("That view holds too much to lead the class with.")
    clean = {}
    for k, v in values.items():
        if not isinstance(k, str) or len(k) > PAGE_CHARS or not isinstance(v, str):
            raise BoardError("That view cannot be led to.")
        clean[k] = v.replace("\x00", "")[:VIEW_CHARS]
    return clean


def clean_view(page: str, view: dict, address: dict | None = None) -> tuple[str, str]:
    """(page, JSON of the view and its address) as a lead keeps them, or BoardError. `view`: every
    value of the teacher's view, defaults included (what a follower applies); `address`: the query
    of the teacher's address (defaults left out), what a follower's address then shows."""
    page = str(page or "")
    if not page or len(page) > PAGE_CHARS or not all(c.isascii() and (c.isalnum() or c in "_-") for c in page):
        raise BoardError("That page cannot be led to.")
    clean = _clean_values(view)
    address = _clean_values(view if address is None else address)
    return page, json.dumps({"view": clean, "address": address}, sort_keys=True)


def _lead_view(stored: str) -> tuple[dict, dict]:
    """(view, address) of a stored lead (a lead written before addresses were kept: its view)."""
    data = json.loads(stored)
    if isinstance(data.get("view"), dict):
        return data["view"], data.get("address", data["view"])
    return data, data


def _remember(cache: OrderedDict, key, value) -> None:
    with _cache_lock:
        cache[key] = value
        while len(cache) > BODY_CACHED * 4:
            cache.popitem(last=False)


def _lead(version, started, page: str, stored: str) -> dict:
    view, address = _lead_view(stored)
    return {"version": (started, int(version)), "page": page, "view": view, "address": address}


class TooManyAnswerers(BoardError):
    """A new answerer of a question from an address that has had its share (the message says when)."""


class Classroom:
    """The lead and the questions of the boards in `store` (see the module docstring). `answerers`:
    the new answerers per client address (default: the server's one, no client can clear it)."""

    def __init__(self, store: BoardStore, answerers: NewStudents | None = None):
        self.store = store
        self.where = store.where
        self.answerers = new_answerers if answerers is None else answerers

    def check_teacher(self, code: str, teacher_key: str) -> str:
        """The class code when `teacher_key` is its board's key; BoardError otherwise."""
        with self.store.transaction() as db:
            return self.store.check_key(db, code, teacher_key)

    # --- the lead ---

    def lead(
        self,
        code: str,
        teacher_key: str,
        page: str,
        view: dict,
        *,
        address: dict | None = None,
        start: bool = False,
        now: float | None = None,
    ) -> int:
        """The teacher shows `page` with `view` (a link's values) at `address` (its query; default:
        the view) now; the lead's version, which changes only when the page or view does (else this
        is the teacher's heartbeat). Leading
        begins with `start`; a lead that ended (stopped, quiet or old) is not begun again by a
        heartbeat: BoardError, and the teacher turns it on again."""
        now = time.time() if now is None else now
        page, view_json = clean_view(page, view, address)
        with self.store.transaction() as db:
            self.store.expire_in(db, now)
            code = self.store.check_key(db, code, teacher_key)
            row = db.execute("SELECT page, view, version FROM lead WHERE code = ?", (code,)).fetchone()
            if row is None:
                if not start:
                    raise BoardError(LEAD_ENDED)
                db.execute(
                    "INSERT INTO lead (code, page, view, version, started, updated) VALUES (?, ?, ?, 1, ?, ?)",
                    (code, page, view_json, now, now),
                )
                return 1
            version = int(row[2]) + (0 if (row[0], row[1]) == (page, view_json) else 1)
            db.execute(
                "UPDATE lead SET page = ?, view = ?, version = ?, updated = ? WHERE code = ?",
                (page, view_json, version, now, code),
            )
            return version

    def stop_leading(self, code: str, teacher_key: str) -> None:
        with self.store.transaction() as db:
            code = self.store.check_key(db, code, teacher_key)
            db.execute("DELETE FROM lead WHERE code = ?", (code,))

    def class_poll(self, code: str, now: float | None = None) -> dict:
        """What a student's screen polls, in one read: the lead (version: (when it began, its
        count), so a lead begun again is new; page, view, address; None when nobody leads) and the newest
        question of the day (id, state, version; None when none)."""
        now = time.time() if now is None else now
        code = normal_code(code)
        with self.store.transaction(write=False) as db:
            lead = db.execute(
                "SELECT l.version, l.page, l.view, l.started, l.updated, q.id, q.state, q.version, q.asked "
                "FROM boards b LEFT JOIN lead l ON l.code = b.code "
                "LEFT JOIN questions q ON q.id = (SELECT MAX(id) FROM questions WHERE code = b.code) "
                "WHERE b.code = ? AND b.created >= ?",
                (code, now - KEEP_SECONDS),
            ).fetchone()
        if lead is None:
            raise BoardError(f"There is no class {code} on this server (a class lasts a day).")
        version, page, view, started, updated, qid, qstate, qversion, asked = lead
        led = version is not None and now - updated <= LEAD_IDLE_S and now - started <= LEAD_MAX_S
        fresh = qid is not None and now - asked <= KEEP_SECONDS
        return {
            "lead": _lead(version, started, page, view) if led else None,
            "question": {"id": int(qid), "state": qstate, "version": int(qversion)} if fresh else None,
        }

    # --- questions ---

    def ask(self, code: str, teacher_key: str, body: dict, now: float | None = None) -> int:
        """Open a question (body: kind, prompt, choices or None for free text, answer, accept,
        why, figure); its id. One open at a time, MAX_QUESTIONS a day."""
        now = time.time() if now is None else now
        text = json.dumps(body)
        if len(text.encode()) > BODY_BYTES:
            raise BoardError("That question's figure is too large to share; ask it on a shorter sentence.")
        with self.store.transaction() as db:
            self.store.expire_in(db, now)
            code = self.store.check_key(db, code, teacher_key)
            if db.execute("SELECT 1 FROM questions WHERE code = ? AND state = 'open'", (code,)).fetchone():
                raise BoardError("A question is open: reveal its answer before asking the next one.")
            if db.execute("SELECT COUNT(*) FROM questions WHERE code = ?", (code,)).fetchone()[0] >= MAX_QUESTIONS:
                raise BoardError(f"This class has asked {MAX_QUESTIONS} questions today, the most a day.")
            return db.insert(
                "INSERT INTO questions (code, asked, state, body, version) VALUES (?, ?, 'open', ?, 0)",
                (code, now, text),
            )

    def question(self, question_id: int) -> dict:
        """A question's body (read once per server: it never changes)."""
        key = (self.where, int(question_id))
        with _cache_lock:
            body = _bodies.get(key)
        if body is None:
            with self.store.transaction(write=False) as db:
                row = db.execute("SELECT body FROM questions WHERE id = ?", (int(question_id),)).fetchone()
            if row is None:
                raise BoardError("That question is gone (questions last a day).")
            body = json.loads(row[0])
            _remember(_bodies, key, body)
        return body

    def answer(
        self,
        code: str,
        question_id: int,
        student: str,
        text: str,
        now: float | None = None,
        address: str | None = None,
        name: str = "",
        email: str = "",
    ) -> None:
        """`student`'s answer to the open question (replacing theirs); BoardError when it is not
        open, the answer does not fit, or a limit is reached (TooManyAnswerers: `address`, the
        client's IP address, has brought its share of new answerers; None: not counted). `name`,
        `email`: a signed-in student's, kept for the teacher's CSV (BoardStore.keep_name)."""
        now = time.time() if now is None else now
        text = clean_answer(text)
        student = stored_student(student)
        choices = self.question(question_id).get("choices")
        if choices and text not in choices:
            raise BoardError("Pick one of the answers shown.")
        with self.store.transaction() as db:
            code = self.store.known(db, code)
            row = db.execute(
                "SELECT state FROM questions WHERE id = ? AND code = ?", (int(question_id), code)
            ).fetchone()
            if row is None or row[0] != "open":
                raise BoardError("This question is closed: its answer has been revealed.")
            mine = db.execute(
                "SELECT changes FROM answers WHERE question = ? AND student = ?", (int(question_id), student)
            ).fetchone()
            if mine is None:
                n = db.execute("SELECT COUNT(*) FROM answers WHERE question = ?", (int(question_id),)).fetchone()[0]
                if n >= MAX_ANSWERS:
                    raise BoardError(f"{MAX_ANSWERS} students have answered this question, the most it takes.")
                self._admit_answerer(int(question_id), student, address)
                db.execute(
                    "INSERT INTO answers (question, student, answer, answered, changes) VALUES (?, ?, ?, ?, 0)",
                    (int(question_id), student, text, now),
                )
            elif mine[0] >= MAX_CHANGES:
                raise BoardError(f"You have changed your answer {MAX_CHANGES} times: it stays as it is.")
            else:
                db.execute(
                    "UPDATE answers SET answer = ?, answered = ?, changes = changes + 1 "
                    "WHERE question = ? AND student = ?",
                    (text, now, int(question_id), student),
                )
            self.store.keep_name(db, code, student, name, email)
            db.execute("UPDATE questions SET version = version + 1 WHERE id = ?", (int(question_id),))

    def _admit_answerer(self, question_id: int, student: str, address: str | None) -> None:
        wait = self.answerers.wait(student, address, scope=(self.where, question_id), most=ANSWERS_PER_ADDRESS)
        if wait <= 0:
            return
        burst, every = self.answerers.rule()
        if wait == math.inf:
            raise TooManyAnswerers(
                f"{ANSWERS_PER_ADDRESS} browsers on your network have answered this question, the most "
                f"one network may (the other {MAX_ANSWERS - ANSWERS_PER_ADDRESS} places are for other "
                "networks). Answers already given can still be changed."
            )
        raise TooManyAnswerers(
            f"{burst} browsers on your network have just answered this question (then one more every "
            f"{every:g} s). Try again in {math.ceil(wait)} s; answers already given can still be changed."
        )

    def my_answer(self, question_id: int, student: str) -> str | None:
        with self.store.transaction(write=False) as db:
            row = db.execute(
                "SELECT answer FROM answers WHERE question = ? AND student = ?",
                (int(question_id), stored_student(student)),
            ).fetchone()
        return None if row is None else row[0]

    def tally(self, question_id: int, version: int) -> tuple[dict[str, int], int]:
        """({answer as first typed, normalised together: count}, how many answered), read once
        per question version for every viewer (a flood of answers is one read a version)."""
        key = (self.where, int(question_id), int(version))
        with _cache_lock:
            cached = _tallies.get(key)
        if cached is not None:
            return cached
        with self.store.transaction(write=False) as db:
            rows = db.execute(
                "SELECT answer FROM answers WHERE question = ? ORDER BY answered LIMIT ?",
                (int(question_id), MAX_ANSWERS),
            ).fetchall()
        counts: dict[str, int] = {}
        shown: dict[str, str] = {}
        for (a,) in rows:
            n = normal_answer(a) or a
            shown.setdefault(n, a)
            counts[shown[n]] = counts.get(shown[n], 0) + 1
        out = (dict(sorted(counts.items(), key=lambda kv: -kv[1])), len(rows))
        _remember(_tallies, key, out)
        return out

    def reveal(self, code: str, teacher_key: str, question_id: int) -> None:
        with self.store.transaction() as db:
            code = self.store.check_key(db, code, teacher_key)
            db.execute(
                "UPDATE questions SET state = 'revealed', version = version + 1 WHERE id = ? AND code = ?",
                (int(question_id), code),
            )

    def scores(self, code: str, teacher_key: str) -> tuple[int, dict[str, int]]:
        """(questions the class was asked today, {student: how many of them they answered right}):
        what the gradebook gets (app/lti), by the students' keys."""
        with self.store.transaction() as db:
            code = self.store.check_key(db, code, teacher_key)
            asked = db.execute("SELECT id, body FROM questions WHERE code = ?", (code,)).fetchall()
            rows = db.execute(
                "SELECT a.question, a.student, a.answer FROM answers a JOIN questions q ON a.question = q.id "
                "WHERE q.code = ?",
                (code,),
            ).fetchall()
        bodies = {qid: json.loads(body) for qid, body in asked}
        right: dict[str, int] = {}
        for qid, student, text in rows:
            right[student] = right.get(student, 0) + bool(is_right(bodies[qid], text))
        return len(bodies), right

    def answers_table(self, code: str, teacher_key: str) -> list[dict]:
        """Every answer of the class today, for the teacher's CSV: the question's number, prompt and
        model answer, the student's number in the class (by first answer), a signed-in student's
        real name and email ('' for an anonymous one), the answer, right."""
        with self.store.transaction() as db:
            code = self.store.check_key(db, code, teacher_key)
            rows = db.execute(
                "SELECT q.id, q.asked, q.body, a.student, a.answer, a.answered FROM questions q "
                "JOIN answers a ON a.question = q.id WHERE q.code = ? ORDER BY q.id, a.answered",
                (code,),
            ).fetchall()
            kept = db.execute("SELECT student, name, email FROM names WHERE code = ?", (code,)).fetchall()
        names = {s: (n, e) for s, n, e in kept}
        numbers: dict[str, int] = {}
        order: dict[int, int] = {}
        out = []
        for qid, asked, body_json, student, text, answered in rows:
            body = json.loads(body_json)
            numbers.setdefault(student, len(numbers) + 1)
            order.setdefault(qid, len(order) + 1)
            out.append(
                {
                    "question": order[qid],
                    "asked": time.strftime("%H:%M", time.localtime(asked)),
                    "prompt": body["prompt"],
                    "model's answer": body["answer"],
                    "student": f"student {numbers[student]}",
                    "name": names.get(student, ("", ""))[0],
                    "email": names.get(student, ("", ""))[1],
                    "answer": text,
                    "right": bool(is_right(body, text)),
                    "answered": time.strftime("%H:%M:%S", time.localtime(answered)),
                }
            )
        return out
