"""The class board (opt-in, BERT_EXPLORER_BOARD=1): students post their fine-tuning runs' settings
and curves under a class code, and everyone sees whose settings worked best.

A small SQLite file in the cache folder (`bert_cache_dir()/board/board.sqlite`), created on
demand; one connection per call with a timeout, so several sessions (threads) post at once
safely. Boards and entries last a day (`expire`). What is stored is bounded and never holds the
data or its texts: the settings, the final accuracy and two thinned curves (`summary_of`).
No streamlit here: pages/board.py draws it, app/train_view.py has the post button.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import secrets
import sqlite3
import time
import unicodedata
from pathlib import PurePath
from typing import TYPE_CHECKING

from bert import BertExplorerError, settings
from bert.corpus import bert_cache_dir
from bert.events import FinetuneEval, FinetuneStep, of_type

if TYPE_CHECKING:
    from bert.finetune import FinetuneArgs

from .helpers import finite_float

JOINED = "board_code"  # session-state key: the class code this session has joined
CODE_CHARS = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I
CODE_LEN = 6
NICK_CHARS = 24
MAX_ENTRIES = 200  # per board
MAX_BOARDS = 500  # on the server at once
MAX_POINTS = 200  # per curve
KEEP_SECONDS = 24 * 3600
TEXT_CHARS = 80  # of a model or data set name
MAX_LIVE = 3  # runs shown live on a board at once (a class watches one instead of queueing 30)
LIVE_STALE_S = 60  # a live run not updated for this long is shown as lost (its tab was closed)
LIVE_KEEP_S = 30 * 60  # a live run stays on the board this long after its last update
LINE_CHARS = 200  # of a live run's progress line

# the posted settings: key, label in the table and in "what the best runs share"
SETTING_LABELS = {
    "base_model": "base model",
    "lr": "learning rate",
    "batch_size": "batch size",
    "epochs": "epochs",
    "pooling": "pooling",
    "max_length": "max length",
    "dataset": "data set",
}


class BoardError(BertExplorerError):
    """A board action that cannot be done (unknown code, bad nickname, full board, wrong key)."""


def enabled() -> bool:
    return settings.flag("BERT_EXPLORER_BOARD")


def db_path():
    return bert_cache_dir() / "board" / "board.sqlite"


@contextlib.contextmanager
def _db():
    """One connection, in one immediate transaction (committed on success), closed after."""
    path = db_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, timeout=10, isolation_level=None)
    try:
        conn.execute("PRAGMA busy_timeout = 10000")
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("CREATE TABLE IF NOT EXISTS boards (code TEXT PRIMARY KEY, key_hash TEXT NOT NULL, created REAL)")
        conn.execute(
            "CREATE TABLE IF NOT EXISTS entries (id INTEGER PRIMARY KEY AUTOINCREMENT, code TEXT NOT NULL, "
            "nickname TEXT NOT NULL, posted REAL NOT NULL, summary TEXT NOT NULL)"
        )
        conn.execute("CREATE INDEX IF NOT EXISTS entries_code ON entries (code)")
        conn.execute(
            "CREATE TABLE IF NOT EXISTS live (id INTEGER PRIMARY KEY AUTOINCREMENT, code TEXT NOT NULL, "
            "nickname TEXT NOT NULL, started REAL NOT NULL, updated REAL NOT NULL, state TEXT NOT NULL, "
            "progress REAL NOT NULL, line TEXT NOT NULL, summary TEXT NOT NULL)"
        )
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
    finally:
        conn.close()


def _hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def normal_code(code: str | None) -> str:
    """A typed class code, stripped and upper-cased; BoardError when it cannot be one."""
    code = (code or "").strip().upper()
    if len(code) != CODE_LEN or any(c not in CODE_CHARS for c in code):
        raise BoardError(f"A class code is {CODE_LEN} letters and digits, as your teacher wrote it.")
    return code


def _known(conn, code: str) -> str:
    code = normal_code(code)
    if conn.execute("SELECT 1 FROM boards WHERE code = ?", (code,)).fetchone() is None:
        raise BoardError(f"There is no board {code} on this server (boards last a day).")
    return code


def _expire(conn, now: float) -> None:
    cutoff = now - KEEP_SECONDS
    conn.execute(
        "DELETE FROM entries WHERE posted < ? OR code IN (SELECT code FROM boards WHERE created < ?)", (cutoff, cutoff)
    )
    conn.execute("DELETE FROM boards WHERE created < ?", (cutoff,))
    conn.execute("DELETE FROM live WHERE updated < ? OR code NOT IN (SELECT code FROM boards)", (now - LIVE_KEEP_S,))


def expire(now: float | None = None) -> None:
    """Remove the entries and boards older than a day (their entries too)."""
    with _db() as conn:
        _expire(conn, time.time() if now is None else now)


def new_board(now: float | None = None) -> tuple[str, str]:
    """(class code to hand out, teacher key to keep) of a new board."""
    now = time.time() if now is None else now
    with _db() as conn:
        _expire(conn, now)
        if conn.execute("SELECT COUNT(*) FROM boards").fetchone()[0] >= MAX_BOARDS:
            raise BoardError(f"This server holds {MAX_BOARDS} boards already; try again tomorrow.")
        while True:
            code = "".join(secrets.choice(CODE_CHARS) for _ in range(CODE_LEN))
            if conn.execute("SELECT 1 FROM boards WHERE code = ?", (code,)).fetchone() is None:
                break
        key = secrets.token_urlsafe(12)
        conn.execute("INSERT INTO boards (code, key_hash, created) VALUES (?, ?, ?)", (code, _hash(key), now))
    return code, key


def exists(code: str, now: float | None = None) -> bool:
    try:
        with _db() as conn:
            _expire(conn, time.time() if now is None else now)
            _known(conn, code)
    except BoardError:
        return False
    return True


def clean_nickname(nickname: str | None) -> str:
    nick = (nickname or "").strip()
    if not nick:
        raise BoardError("Type a nickname to post under.")
    if len(nick) > NICK_CHARS:
        raise BoardError(f"A nickname is at most {NICK_CHARS} characters.")
    if any(unicodedata.category(c) in ("Cc", "Cf") for c in nick):
        raise BoardError("A nickname cannot hold control characters.")
    return nick


def _text(v) -> str | None:
    return None if v is None else str(v)[:TEXT_CHARS]


def _thin(points, n: int = MAX_POINTS) -> list[list[float]]:
    """At most `n` finite (step, value) points, evenly spread, the last one kept."""
    pts = []
    for p in list(points or [])[: 100 * n]:
        try:
            x, y = finite_float(p[0]), finite_float(p[1])
        except (TypeError, IndexError, KeyError):
            continue
        if x is not None and y is not None:
            pts.append([x, y])
    if len(pts) > n:
        pts = [pts[round(i * (len(pts) - 1) / (n - 1))] for i in range(n)]
    return pts


def clean_summary(s: dict) -> dict:
    """Only the known fields, of the right kinds and sizes."""
    s = s if isinstance(s, dict) else {}
    out = {
        "base_model": _text(s.get("base_model")),
        "lr": finite_float(s.get("lr")),
        "batch_size": finite_float(s.get("batch_size")),
        "epochs": finite_float(s.get("epochs")),
        "pooling": _text(s.get("pooling")),
        "max_length": finite_float(s.get("max_length")),
        "dataset": _text(s.get("dataset")),
        "accuracy": finite_float(s.get("accuracy")),
        "val_accuracy": _thin(s.get("val_accuracy")),
        "train_loss": _thin(s.get("train_loss")),
    }
    for k in ("batch_size", "epochs", "max_length"):
        if out[k] is not None:
            out[k] = int(out[k])
    return out


def post(code: str, nickname: str, run_summary: dict, now: float | None = None) -> int:
    """Post a run (see `summary_of`) under `nickname`; the entry's id."""
    now = time.time() if now is None else now
    nick = clean_nickname(nickname)
    summary = json.dumps(clean_summary(run_summary))
    with _db() as conn:
        _expire(conn, now)
        code = _known(conn, code)
        if conn.execute("SELECT COUNT(*) FROM entries WHERE code = ?", (code,)).fetchone()[0] >= MAX_ENTRIES:
            raise BoardError(f"Board {code} is full ({MAX_ENTRIES} runs); ask your teacher to clear it.")
        cur = conn.execute(
            "INSERT INTO entries (code, nickname, posted, summary) VALUES (?, ?, ?, ?)", (code, nick, now, summary)
        )
        return int(cur.lastrowid)


def entries(code: str, now: float | None = None) -> list[dict]:
    """The board's entries, oldest first: id, nickname, posted and the summary's fields."""
    with _db() as conn:
        _expire(conn, time.time() if now is None else now)
        code = _known(conn, code)
        rows = conn.execute(
            "SELECT id, nickname, posted, summary FROM entries WHERE code = ? ORDER BY id LIMIT ?",
            (code, MAX_ENTRIES),
        ).fetchall()
    return [{"id": i, "nickname": n, "posted": p, **clean_summary(json.loads(s))} for i, n, p, s in rows]


def clear(code: str, teacher_key: str) -> int:
    """Remove every entry of the board (the teacher's key needed); how many went."""
    with _db() as conn:
        code = _known(conn, code)
        (key_hash,) = conn.execute("SELECT key_hash FROM boards WHERE code = ?", (code,)).fetchone()
        if not hmac.compare_digest(key_hash, _hash((teacher_key or "").strip())):
            raise BoardError("That is not this board's teacher key.")
        conn.execute("DELETE FROM live WHERE code = ?", (code,))
        return conn.execute("DELETE FROM entries WHERE code = ?", (code,)).rowcount


# --- runs shown live while they train ---------------------------------------------------------

LIVE_STATES = ("queued", "running", "done", "stopped", "error")


def _live_now(row, now: float) -> bool:
    """A live row still training and heard from within LIVE_STALE_S."""
    return row[0] in ("queued", "running") and now - row[1] <= LIVE_STALE_S


def go_live(code: str, nickname: str, now: float | None = None) -> int:
    """Start showing a run live on the board under `nickname`; the live row's id (for `update_live`).
    At most MAX_LIVE runs train live on a board at once."""
    now = time.time() if now is None else now
    nick = clean_nickname(nickname)
    with _db() as conn:
        _expire(conn, now)
        code = _known(conn, code)
        rows = conn.execute("SELECT state, updated FROM live WHERE code = ?", (code,)).fetchall()
        if sum(_live_now(r, now) for r in rows) >= MAX_LIVE:
            raise BoardError(f"{MAX_LIVE} runs are live on board {code} already: watch one of them, or try later.")
        cur = conn.execute(
            "INSERT INTO live (code, nickname, started, updated, state, progress, line, summary) "
            "VALUES (?, ?, ?, ?, 'queued', 0, '', ?)",
            (code, nick, now, now, json.dumps(clean_summary({}))),
        )
        return int(cur.lastrowid)


def update_live(
    code: str, live_id: int, state: str, progress: float, line: str, run_summary: dict, now: float | None = None
) -> bool:
    """The live run's newest state, progress (0-1), progress line and summary (as `summary_of`);
    False when it is gone from the board (cleared or expired)."""
    now = time.time() if now is None else now
    state = state if state in LIVE_STATES else "error"
    progress = min(max(finite_float(progress) or 0.0, 0.0), 1.0)
    with _db() as conn:
        cur = conn.execute(
            "UPDATE live SET updated = ?, state = ?, progress = ?, line = ?, summary = ? WHERE id = ? AND code = ?",
            (
                now,
                state,
                progress,
                str(line)[:LINE_CHARS],
                json.dumps(clean_summary(run_summary)),
                int(live_id),
                normal_code(code),
            ),
        )
        return cur.rowcount == 1


def live_runs(code: str, now: float | None = None) -> list[dict]:
    """The board's live runs, newest first: id, nickname, started, updated, state ("lost" for a
    run not heard from in LIVE_STALE_S), progress, line and the summary's fields."""
    now = time.time() if now is None else now
    with _db() as conn:
        _expire(conn, now)
        code = _known(conn, code)
        rows = conn.execute(
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


# --- what is posted ----------------------------------------------------------------------------


def summary_of(res: dict) -> dict:
    """The posted summary of a fine-tuning result dict (app/training): settings, accuracy and the
    curves. Nothing from the data but its name."""
    info = res.get("info") or {}
    args: FinetuneArgs = info["args"]
    fin = res.get("done")
    acc = (res.get("report") or {}).get("accuracy", fin.accuracy if fin is not None else None)
    metrics = res.get("metrics") or []
    data = str(args.data or "")
    return clean_summary(
        {
            "base_model": info.get("base_name") or args.checkpoint,
            "lr": args.lr,
            "batch_size": args.batch_size,
            "epochs": args.epochs,
            "pooling": args.pooling,
            "max_length": args.max_length,
            "dataset": PurePath(data.replace("\\", "/")).name.replace("builtin:", "") if data else None,
            "accuracy": acc,
            "val_accuracy": [(m.step, m.accuracy) for m in of_type(metrics, FinetuneEval)],
            "train_loss": [(m.step, m.loss) for m in of_type(metrics, FinetuneStep)],
        }
    )


def fmt_setting(key: str, value) -> str:
    if value is None:
        return "?"
    if key == "lr":
        return f"{value:g}"
    return str(value)


def what_the_best_share(entries: list[dict], top: int = 3) -> list[str]:
    """The settings equal across the `top` best runs by accuracy, e.g. "pooling: mean"; none
    when fewer than two runs have an accuracy."""
    scored = sorted((e for e in entries if finite_float(e.get("accuracy")) is not None), key=lambda e: -e["accuracy"])
    best = scored[:top]
    if len(best) < 2:
        return []
    lines = []
    for key, label in SETTING_LABELS.items():
        values = {json.dumps(e.get(key)) for e in best}
        if len(values) == 1 and best[0].get(key) is not None:
            lines.append(f"{label}: {fmt_setting(key, best[0][key])}")
    return lines
