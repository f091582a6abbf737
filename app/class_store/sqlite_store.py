"""The class board in one SQLite file (the default store; app/class_store/postgres.py is the other):
`BoardStore`'s rules (app/class_store/store.py) over one immediate transaction per action."""

from __future__ import annotations

import contextlib
import logging
import sqlite3
from pathlib import Path

from .errors import BoardUnavailable
from .store import CLASS_COLUMNS, CLASS_TABLES, LOCK_WAIT_S, SCHEMA, BoardStore

log = logging.getLogger("bert_explorer")


class _SqliteDb:
    """One SQLite connection inside a transaction, as `BoardStore` uses it."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn

    def execute(self, sql: str, params=()):
        return self.conn.execute(sql, params)

    def insert(self, sql: str, params) -> int:
        return int(self.conn.execute(sql, params).lastrowid)


def _columns(conn, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


class SqliteStore(BoardStore):
    """The board in one SQLite file (created on demand). One connection per action, in one
    immediate transaction: several sessions (threads) and processes on this machine post at
    once safely. Not on a network mount (SQLite's locks do not hold there): app/class_store/postgres.py."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.where = str(self.path)

    @contextlib.contextmanager
    def transaction(self, write: bool = True):
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=LOCK_WAIT_S, isolation_level=None)
        except (OSError, sqlite3.Error) as e:
            log.warning("the class board's SQLite file cannot be opened: %s", e)
            raise BoardUnavailable() from e
        try:
            conn.execute(f"PRAGMA busy_timeout = {LOCK_WAIT_S * 1000}")
            conn.execute("BEGIN IMMEDIATE")
            if conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA:
                self._create(conn)
            try:
                yield _SqliteDb(conn)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        except sqlite3.OperationalError as e:  # locked past the wait, disk I/O, unreadable file
            log.warning("the class board's SQLite file cannot be used: %s", e)
            raise BoardUnavailable() from e
        finally:
            conn.close()

    def _create(self, conn) -> None:
        """The tables, or the columns a board file of the first version lacks (its posts kept)."""
        conn.execute(
            "CREATE TABLE IF NOT EXISTS boards (code TEXT PRIMARY KEY, key_hash TEXT NOT NULL, created REAL, "
            "version INTEGER NOT NULL DEFAULT 0)"
        )
        conn.execute(
            "CREATE TABLE IF NOT EXISTS entries (id INTEGER PRIMARY KEY AUTOINCREMENT, code TEXT NOT NULL, "
            "nickname TEXT NOT NULL, posted REAL NOT NULL, summary TEXT NOT NULL, run_hash TEXT, student TEXT)"
        )
        conn.execute(
            "CREATE TABLE IF NOT EXISTS live (id INTEGER PRIMARY KEY AUTOINCREMENT, code TEXT NOT NULL, "
            "nickname TEXT NOT NULL, started REAL NOT NULL, updated REAL NOT NULL, state TEXT NOT NULL, "
            "progress REAL NOT NULL, line TEXT NOT NULL, summary TEXT NOT NULL, student TEXT)"
        )
        conn.execute(
            "CREATE TABLE IF NOT EXISTS nicknames (code TEXT NOT NULL, nick_key TEXT NOT NULL, "
            "student TEXT NOT NULL, PRIMARY KEY (code, nick_key))"
        )
        for sql in CLASS_TABLES:
            conn.execute(
                sql.replace(
                    "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY", "INTEGER PRIMARY KEY AUTOINCREMENT"
                ).replace("DOUBLE PRECISION", "REAL")
            )
        for table, column in (
            ("boards", "version INTEGER NOT NULL DEFAULT 0"),
            ("entries", "run_hash TEXT"),
            ("entries", "student TEXT"),
            ("live", "student TEXT"),
            *CLASS_COLUMNS,
        ):
            if column.split()[0] not in _columns(conn, table):
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {column}")
        conn.execute("CREATE INDEX IF NOT EXISTS entries_code ON entries (code)")
        conn.execute("CREATE UNIQUE INDEX IF NOT EXISTS entries_run ON entries (code, run_hash)")
        conn.execute("CREATE INDEX IF NOT EXISTS live_code ON live (code)")
        conn.execute(f"PRAGMA user_version = {SCHEMA}")
