"""The class board's store: one interface (`BoardStore`, every rule of the board written once) and
its two implementations: app/class_store/sqlite_store.py (the default) and app/class_store/postgres.py.
What comes in is checked in app/class_store/checks.py; the errors are app/class_store/errors.py's.

Students post their fine-tuning runs' settings and curves under a class code, and everyone sees
whose settings worked best. Boards and entries last a day (`expire`). What is stored is bounded
and never holds the data or its texts: the settings, the final scores and two thinned curves
(app/class_store/summary.py). No streamlit here: pages/board.py draws it, app/training/board_buttons.py
has the post button.

A board belongs to its teacher and its posts to their students (`student`: the browser key of the
one-job-per-student limit, app/jobs/local.py): only the teacher starts a board (pages/board.py
asks for the server's teacher key, app/server/teacher.py), at most MAX_BOARDS are kept (the oldest empty
one goes first when full); a run is posted once per board (its run code, kept hashed), and only by
the student who trained it (its `owner`, recorded with the run: a run reopened by its code in
another browser can be explored there, not posted under a classmate's name); a nickname belongs to
the student who first used it on the board, until the teacher removes that student's last entry
under it; a student posts at most MAX_POSTS_EACH runs and uses at most MAX_NICKS_EACH nicknames on
a board; the board's key clears it or removes one entry. A signed-in or launched student's real
name and email (app/students.py) are kept with the board for its teacher alone (`keep_name`,
`names`: the board's key needed) and go with the board; an anonymous student has none. `version`
changes whenever the posted runs do, so a page redraws only then.

Every action is one transaction that holds the store's one write lock from its first statement
(SQLite: BEGIN IMMEDIATE; PostgreSQL: an advisory lock), so the limits hold for any number of
sessions, threads and app replicas posting at once. A store that cannot be reached raises
`BoardUnavailable`, which the pages show as a message.
"""

from __future__ import annotations

import hmac
import json
import logging
import secrets
import threading
import time
from collections import OrderedDict

from ..formatting import finite_float
from .checks import (
    CODE_CHARS,
    CODE_LEN,
    check_owner,
    clean_nickname,
    clean_person,
    key_hash,
    nick_key,
    normal_code,
    stored_student,
)
from .errors import BoardError, BoardUnavailable
from .summary import clean_summary

MAX_ENTRIES = 200  # per board
MAX_BOARDS = 500  # on the server at once
KEEP_SECONDS = 24 * 3600
MAX_LIVE = 3  # runs shown live on a board at once (a class watches one instead of queueing 30)
LIVE_STALE_S = 60  # a live run not updated for this long is shown as lost (its tab was closed)
LIVE_KEEP_S = 30 * 60  # a live run stays on the board this long after its last update
LINE_CHARS = 200  # of a live run's progress line
MAX_POSTS_EACH = 3  # runs one student posts to a board
MAX_NICKS_EACH = 3  # nicknames one student uses on a board
LOCK_WAIT_S = 10  # a transaction waits this long for the write lock
SCHEMA = 6  # SQLite: PRAGMA user_version of the tables below; 1 (no version) is upgraded in place
LEAD_IDLE_S = 20 * 60  # a class's lead ends this long after the teacher's session last wrote it
LEAD_MAX_S = 4 * 3600  # and this long after it began (app/class_store/classroom.py)
READ_CACHED = 32  # boards whose entries are kept read, server-wide (a class polls one)
LIVE_STATES = ("queued", "running", "done", "stopped", "error")

# The class's lead and questions (app/class_store/classroom.py) and minimal pairs (app/class_store/class_pairs.py),
# in PostgreSQL's words (SQLite's: the id an INTEGER PRIMARY KEY AUTOINCREMENT, REAL for DOUBLE PRECISION).
CLASS_TABLES = (
    "CREATE TABLE IF NOT EXISTS lead (code TEXT PRIMARY KEY, page TEXT NOT NULL, view TEXT NOT NULL, "
    "version BIGINT NOT NULL, started DOUBLE PRECISION NOT NULL, updated DOUBLE PRECISION NOT NULL)",
    "CREATE TABLE IF NOT EXISTS questions (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, code TEXT NOT NULL, "
    "asked DOUBLE PRECISION NOT NULL, state TEXT NOT NULL, body TEXT NOT NULL, version BIGINT NOT NULL DEFAULT 0)",
    "CREATE TABLE IF NOT EXISTS answers (question BIGINT NOT NULL, student TEXT NOT NULL, answer TEXT NOT NULL, "
    "answered DOUBLE PRECISION NOT NULL, changes INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (question, student))",
    "CREATE INDEX IF NOT EXISTS questions_code ON questions (code)",
    "CREATE TABLE IF NOT EXISTS pairs (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, code TEXT NOT NULL, "
    "student TEXT NOT NULL, posted DOUBLE PRECISION NOT NULL, good TEXT NOT NULL, bad TEXT NOT NULL, address TEXT)",
    # a pair's scores by one model (its cache key), kept with the pair: scored once, read by every viewer
    "CREATE TABLE IF NOT EXISTS pair_scores (pair BIGINT NOT NULL, model TEXT NOT NULL, good DOUBLE PRECISION, "
    "bad DOUBLE PRECISION, why TEXT, PRIMARY KEY (pair, model))",
    # a signed-in or launched student's real name and email on a board: read only with its key
    "CREATE TABLE IF NOT EXISTS names (code TEXT NOT NULL, student TEXT NOT NULL, name TEXT NOT NULL, "
    "email TEXT NOT NULL, PRIMARY KEY (code, student))",
)
# Columns added to a table of an earlier version (SQLite: when its user_version is older;
# PostgreSQL: ADD COLUMN IF NOT EXISTS at every start).
CLASS_COLUMNS = (("pairs", "address TEXT"),)

log = logging.getLogger("bert_explorer")

# (store, code, created, version) -> entries: read once per board version for every viewer
_read: OrderedDict[tuple, list[dict]] = OrderedDict()
_read_lock = threading.Lock()


def _live_now(row, now: float) -> bool:
    """A live row still training and heard from within LIVE_STALE_S."""
    return row[0] in ("queued", "running") and now - row[1] <= LIVE_STALE_S


class BoardStore:
    """The board's actions over one database. An implementation gives `where` (names the
    database, for the read cache) and `transaction()`: a context manager that holds the store's
    write lock (unless `write` is False: one read-only statement) and yields an object with
    `execute(sql, params)` (SQL with `?` placeholders, returning a cursor: fetchone, fetchall,
    rowcount) and `insert(sql, params)` (the new row's id); committed on success, rolled back on
    an exception; BoardUnavailable when the database cannot be reached."""

    where = ""

    def transaction(self, write: bool = True):
        raise NotImplementedError

    def close(self) -> None:
        """Let go of any connection kept open."""

    # --- helpers inside one transaction ---

    def known(self, db, code: str) -> str:
        code = normal_code(code)
        if db.execute("SELECT 1 FROM boards WHERE code = ?", (code,)).fetchone() is None:
            raise BoardError(f"There is no board {code} on this server (boards last a day).")
        return code

    def expire_in(self, db, now: float) -> None:
        """Inside a transaction: remove what is older than a day (and leads gone quiet)."""
        cutoff = now - KEEP_SECONDS
        db.execute(
            "DELETE FROM entries WHERE posted < ? OR code IN (SELECT code FROM boards WHERE created < ?)",
            (cutoff, cutoff),
        )
        db.execute("DELETE FROM boards WHERE created < ?", (cutoff,))
        db.execute("DELETE FROM live WHERE updated < ? OR code NOT IN (SELECT code FROM boards)", (now - LIVE_KEEP_S,))
        db.execute("DELETE FROM nicknames WHERE code NOT IN (SELECT code FROM boards)")
        db.execute("DELETE FROM names WHERE code NOT IN (SELECT code FROM boards)")
        db.execute("DELETE FROM questions WHERE asked < ? OR code NOT IN (SELECT code FROM boards)", (cutoff,))
        db.execute("DELETE FROM answers WHERE question NOT IN (SELECT id FROM questions)")
        db.execute("DELETE FROM pairs WHERE posted < ? OR code NOT IN (SELECT code FROM boards)", (cutoff,))
        db.execute("DELETE FROM pair_scores WHERE pair NOT IN (SELECT id FROM pairs)")
        db.execute(
            "DELETE FROM lead WHERE updated < ? OR started < ? OR code NOT IN (SELECT code FROM boards)",
            (now - LEAD_IDLE_S, now - LEAD_MAX_S),
        )

    def _claim(self, db, code: str, nick: str, student: str) -> None:
        """Reserve `nick` on the board for `student`, or BoardError when another student has it or
        this one has used MAX_NICKS_EACH nicknames there already."""
        key = nick_key(nick)
        row = db.execute("SELECT student FROM nicknames WHERE code = ? AND nick_key = ?", (code, key)).fetchone()
        if row is not None:
            if row[0] != student:
                raise BoardError(f"Someone else on board {code} posts as {nick}: pick another nickname.")
            return
        used = db.execute("SELECT COUNT(*) FROM nicknames WHERE code = ? AND student = ?", (code, student)).fetchone()
        if used[0] >= MAX_NICKS_EACH:
            raise BoardError(f"You have used {MAX_NICKS_EACH} nicknames on board {code}: post under one of them.")
        db.execute("INSERT INTO nicknames (code, nick_key, student) VALUES (?, ?, ?)", (code, key, student))

    def keep_name(self, db, code: str, student: str, name: str, email: str) -> None:
        """Inside a transaction: `student`'s real name and email on the board, for its teacher
        (`names`); nothing for an anonymous student (both empty)."""
        name, email = clean_person(name), clean_person(email)
        if name or email:
            db.execute(
                "INSERT INTO names (code, student, name, email) VALUES (?, ?, ?, ?) ON CONFLICT (code, student) "
                "DO UPDATE SET name = excluded.name, email = excluded.email",
                (code, student, name, email),
            )

    def names(self, code: str, teacher_key: str) -> dict[str, tuple[str, str]]:
        """{nickname's key (`nick_key`): (real name, email)} of the board's signed-in or launched
        students, for the teacher's own screen (the board's key needed); anonymous ones absent."""
        with self.transaction() as db:
            code = self.check_key(db, code, teacher_key)
            rows = db.execute(
                "SELECT k.nick_key, n.name, n.email FROM nicknames k JOIN names n "
                "ON n.code = k.code AND n.student = k.student WHERE k.code = ?",
                (code,),
            ).fetchall()
        return {k: (name, email) for k, name, email in rows}

    def bump(self, db, code: str) -> None:
        """Inside a transaction: the board's version moves on (its page redraws)."""
        db.execute("UPDATE boards SET version = version + 1 WHERE code = ?", (code,))

    def check_key(self, db, code: str, teacher_key: str) -> str:
        code = self.known(db, code)
        (kept,) = db.execute("SELECT key_hash FROM boards WHERE code = ?", (code,)).fetchone()
        if not hmac.compare_digest(kept, key_hash((teacher_key or "").strip())):
            raise BoardError("That is not this board's teacher key.")
        return code

    # --- the actions ---

    def expire(self, now: float | None = None) -> None:
        """Remove the entries and boards older than a day (their entries too)."""
        with self.transaction() as db:
            self.expire_in(db, time.time() if now is None else now)

    def new_board(self, now: float | None = None, code: str | None = None, key: str | None = None) -> tuple[str, str]:
        """(class code to hand out, teacher key to keep) of a new board. Only the teacher calls it
        (pages/board.py checks the server's teacher key); when MAX_BOARDS are kept, the oldest board
        nobody posted to or shows a run live on goes to make room. A course's board (app/lti) comes
        with its own code and key; BoardError when a board has that code already."""
        now = time.time() if now is None else now
        if code is not None:
            code = normal_code(code)
        with self.transaction() as db:
            self.expire_in(db, now)
            if db.execute("SELECT COUNT(*) FROM boards").fetchone()[0] >= MAX_BOARDS:
                empty = db.execute(
                    "SELECT code FROM boards WHERE code NOT IN (SELECT code FROM entries) "
                    "AND code NOT IN (SELECT code FROM live) ORDER BY created LIMIT 1"
                ).fetchone()
                if empty is None:
                    raise BoardError(f"This server holds {MAX_BOARDS} boards in use; the oldest go after a day.")
                db.execute("DELETE FROM nicknames WHERE code = ?", (empty[0],))
                db.execute("DELETE FROM boards WHERE code = ?", (empty[0],))
            if code is not None and db.execute("SELECT 1 FROM boards WHERE code = ?", (code,)).fetchone():
                raise BoardError(f"There is a board {code} already.")
            while code is None:
                code = "".join(secrets.choice(CODE_CHARS) for _ in range(CODE_LEN))
                if db.execute("SELECT 1 FROM boards WHERE code = ?", (code,)).fetchone() is not None:
                    code = None
            key = key or secrets.token_urlsafe(12)
            db.execute("INSERT INTO boards (code, key_hash, created) VALUES (?, ?, ?)", (code, key_hash(key), now))
        return code, key

    def boards_kept(self) -> int:
        """How many boards the store holds (expired ones included until the next action)."""
        with self.transaction(write=False) as db:
            return int(db.execute("SELECT COUNT(*) FROM boards").fetchone()[0])

    def exists(self, code: str, now: float | None = None) -> bool:
        try:
            with self.transaction() as db:
                self.expire_in(db, time.time() if now is None else now)
                self.known(db, code)
        except BoardUnavailable:
            raise
        except BoardError:
            return False
        return True

    def post(
        self,
        code: str,
        nickname: str,
        run_summary: dict,
        *,
        run_code: str,
        student: str,
        owner: str | None,
        now: float | None = None,
        name: str = "",
        email: str = "",
    ) -> int:
        """Post run `run_code` (see `summary_of`) under `nickname` for `student` (a browser key);
        the entry's id. `owner`: the student who trained the run, as recorded with it (BoardError
        when that is not `student`). `name`, `email`: a signed-in student's, kept for the teacher
        (`keep_name`). A run is posted once per board; see the module's docstring for the other
        limits."""
        now = time.time() if now is None else now
        nick = clean_nickname(nickname)
        student = stored_student(student)
        run_code = str(run_code or "").strip().upper()
        if not run_code:
            raise BoardError("Only a run with a run code can be posted.")
        check_owner(run_code, owner, student)
        run_hash = key_hash(run_code)
        summary = json.dumps(clean_summary(run_summary))
        with self.transaction() as db:
            self.expire_in(db, now)
            code = self.known(db, code)
            if db.execute("SELECT 1 FROM entries WHERE code = ? AND run_hash = ?", (code, run_hash)).fetchone():
                raise BoardError(f"This run is on board {code} already: each run is posted once.")
            if db.execute("SELECT COUNT(*) FROM entries WHERE code = ?", (code,)).fetchone()[0] >= MAX_ENTRIES:
                raise BoardError(f"Board {code} is full ({MAX_ENTRIES} runs); ask your teacher to remove some.")
            mine = db.execute("SELECT COUNT(*) FROM entries WHERE code = ? AND student = ?", (code, student)).fetchone()
            if mine[0] >= MAX_POSTS_EACH:
                raise BoardError(
                    f"You have posted {MAX_POSTS_EACH} runs to board {code}, the most each; "
                    "your teacher can remove one."
                )
            self._claim(db, code, nick, student)
            self.keep_name(db, code, student, name, email)
            entry_id = db.insert(
                "INSERT INTO entries (code, nickname, posted, summary, run_hash, student) VALUES (?, ?, ?, ?, ?, ?)",
                (code, nick, now, summary, run_hash, student),
            )
            self.bump(db, code)
            return entry_id

    def entries(self, code: str, now: float | None = None) -> list[dict]:
        """The board's entries, oldest first: id, nickname, posted and the summary's fields. Read
        once per board version for every viewer (the dicts are shared: read-only)."""
        with self.transaction() as db:
            self.expire_in(db, time.time() if now is None else now)
            code = self.known(db, code)
            created, ver = db.execute("SELECT created, version FROM boards WHERE code = ?", (code,)).fetchone()
            key = (self.where, code, created, ver)
            with _read_lock:
                cached = _read.get(key)
            if cached is not None:
                return list(cached)
            rows = db.execute(
                "SELECT id, nickname, posted, summary FROM entries WHERE code = ? ORDER BY id LIMIT ?",
                (code, MAX_ENTRIES),
            ).fetchall()
        out = [{"id": i, "nickname": n, "posted": p, **clean_summary(json.loads(s))} for i, n, p, s in rows]
        with _read_lock:
            _read[key] = out
            while len(_read) > READ_CACHED:
                _read.popitem(last=False)
        return list(out)

    def version(self, code: str, now: float | None = None) -> int | None:
        """A number that changes whenever the board's posted runs do (a post, a removal, a clear);
        None when there is no such board. One small query: a page polls it to redraw only on
        change."""
        cutoff = (time.time() if now is None else now) - KEEP_SECONDS
        code = normal_code(code)
        with self.transaction(write=False) as db:
            row = db.execute("SELECT version FROM boards WHERE code = ? AND created >= ?", (code, cutoff)).fetchone()
        return None if row is None else int(row[0])

    def clear(self, code: str, teacher_key: str) -> int:
        """Remove every entry of the board, its live runs, nicknames and the class's minimal pairs
        (the teacher's key needed); how many entries went."""
        with self.transaction() as db:
            code = self.check_key(db, code, teacher_key)
            db.execute("DELETE FROM live WHERE code = ?", (code,))
            db.execute("DELETE FROM pairs WHERE code = ?", (code,))
            db.execute("DELETE FROM pair_scores WHERE pair NOT IN (SELECT id FROM pairs)")
            db.execute("DELETE FROM nicknames WHERE code = ?", (code,))
            self.bump(db, code)
            return db.execute("DELETE FROM entries WHERE code = ?", (code,)).rowcount

    def remove(self, code: str, teacher_key: str, entry_id: int) -> bool:
        """Remove one entry of the board (the teacher's key needed); False when it was not there.
        Its run may be posted again (by its owner), and its nickname is free again unless its
        student still uses it on the board (another entry, or a live run): a name taken from a
        classmate goes back to them with the entry that took it."""
        with self.transaction() as db:
            code = self.check_key(db, code, teacher_key)
            row = db.execute("SELECT nickname, student FROM entries WHERE code = ? AND id = ?", (code, int(entry_id)))
            row = row.fetchone()
            if row is None:
                return False
            db.execute("DELETE FROM entries WHERE code = ? AND id = ?", (code, int(entry_id)))
            self._release(db, code, row[0], row[1])
            self.bump(db, code)
            return True

    def _release(self, db, code: str, nickname: str, student: str | None) -> None:
        """Free `student`'s claim on `nickname` on the board when none of their entries or live
        runs there is shown under it any more."""
        if student is None:  # an entry of a board file older than the claims: nothing was claimed
            return
        key = nick_key(nickname)
        still = db.execute(
            "SELECT nickname FROM entries WHERE code = ? AND student = ? "
            "UNION ALL SELECT nickname FROM live WHERE code = ? AND student = ?",
            (code, student, code, student),
        ).fetchall()
        if all(nick_key(n) != key for (n,) in still):
            db.execute("DELETE FROM nicknames WHERE code = ? AND nick_key = ? AND student = ?", (code, key, student))

    # --- runs shown live while they train ---

    def go_live(
        self, code: str, nickname: str, *, student: str, now: float | None = None, name: str = "", email: str = ""
    ) -> int:
        """Start showing a run of `student` live on the board under `nickname` (theirs, as for
        `post`, `name` and `email` too); the live row's id (for `update_live`). At most MAX_LIVE runs train live on a
        board at once, one of them a student's."""
        now = time.time() if now is None else now
        nick = clean_nickname(nickname)
        student = stored_student(student)
        with self.transaction() as db:
            self.expire_in(db, now)
            code = self.known(db, code)
            rows = db.execute("SELECT state, updated, student FROM live WHERE code = ?", (code,)).fetchall()
            live = [r for r in rows if _live_now(r, now)]
            if any(r[2] == student for r in live):
                raise BoardError(f"A run of yours is live on board {code} already.")
            if len(live) >= MAX_LIVE:
                raise BoardError(f"{MAX_LIVE} runs are live on board {code} already: watch one of them, or try later.")
            self._claim(db, code, nick, student)
            self.keep_name(db, code, student, name, email)
            return db.insert(
                "INSERT INTO live (code, nickname, started, updated, state, progress, line, summary, student) "
                "VALUES (?, ?, ?, ?, 'queued', 0, '', ?, ?)",
                (code, nick, now, now, json.dumps(clean_summary({})), student),
            )

    def update_live(
        self,
        code: str,
        live_id: int,
        state: str,
        progress: float,
        line: str,
        run_summary: dict,
        now: float | None = None,
    ) -> bool:
        """The live run's newest state, progress (0-1), progress line and summary (as
        `summary_of`); False when it is gone from the board (cleared or expired)."""
        now = time.time() if now is None else now
        state = state if state in LIVE_STATES else "error"
        progress = min(max(finite_float(progress) or 0.0, 0.0), 1.0)
        line = str(line).replace("\x00", "")[:LINE_CHARS]
        summary = json.dumps(clean_summary(run_summary))
        code = normal_code(code)
        with self.transaction() as db:
            cur = db.execute(
                "UPDATE live SET updated = ?, state = ?, progress = ?, line = ?, summary = ? WHERE id = ? AND code = ?",
                (now, state, progress, line, summary, int(live_id), code),
            )
            return cur.rowcount == 1

    def live_runs(self, code: str, now: float | None = None) -> list[dict]:
        """The board's live runs, newest first: id, nickname, started, updated, state ("lost" for
        a run not heard from in LIVE_STALE_S), progress, line and the summary's fields."""
        now = time.time() if now is None else now
        with self.transaction() as db:
            self.expire_in(db, now)
            code = self.known(db, code)
            rows = db.execute(
                "SELECT id, nickname, started, updated, state, progress, line, summary FROM live WHERE code = ? "
                "ORDER BY id DESC LIMIT ?",
                (code, 4 * MAX_LIVE),
            ).fetchall()
        out = []
        for i, nick, started, updated, state, progress, line, summary in rows:
            lost = state in ("queued", "running") and not _live_now((state, updated), now)
            out.append(
                {
                    "id": i,
                    "nickname": nick,
                    "started": started,
                    "updated": updated,
                    "state": "lost" if lost else state,
                    "progress": progress,
                    "line": line,
                    **clean_summary(json.loads(summary)),
                }
            )
        return out
