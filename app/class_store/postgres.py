"""The class board in PostgreSQL (BERT_EXPLORER_DATABASE_URL, psycopg 3): the store several app
replicas share. The rules are app/class_store/store.py's, unchanged; this module only connects.

Every writing action holds one transaction-level advisory lock (`LOCK_ID`) from its first
statement, as SQLite's BEGIN IMMEDIATE holds its file: the actions of all replicas run one after
another, so the caps (posts and nicknames each, runs a board, live runs, boards a server) hold
across them; under READ COMMITTED each statement after the lock sees every action committed
before it. `version`, the page's poll, reads without the lock. The tables live in the schema
`SCHEMA_NAME`, created on first use.

A few connections are kept open per store (`KEEP_IDLE`). The server down or unreachable:
`BoardUnavailable` within CONNECT_TIMEOUT_S, then at once for RETRY_S (a kept connection the server
closed is replaced once, so a restarted server is used again at the next action after that).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time

import psycopg
from psycopg.pq import TransactionStatus

from .errors import BoardUnavailable
from .store import CLASS_COLUMNS, CLASS_TABLES, LOCK_WAIT_S, BoardStore

log = logging.getLogger("bert_explorer")

SCHEMA_NAME = "bert_explorer_board"
LOCK_ID = 0x6265_7274_626F_6172  # "bertboar": the board's advisory lock, one for the database
LOCK_SQL = f"SELECT pg_advisory_xact_lock({LOCK_ID})"
KEEP_IDLE = 4  # connections kept open per store between actions
CONNECT_TIMEOUT_S = 5
RETRY_S = 3.0  # after a failed connection, actions fail at once this long (a class does not each wait)
TCP_TIMEOUT_MS = 15_000  # a server that stops answering mid-action (network gone) ends it

TABLES = (
    "CREATE TABLE IF NOT EXISTS boards (code TEXT PRIMARY KEY, key_hash TEXT NOT NULL, "
    "created DOUBLE PRECISION, version BIGINT NOT NULL DEFAULT 0)",
    "CREATE TABLE IF NOT EXISTS entries (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
    "code TEXT NOT NULL, nickname TEXT NOT NULL, posted DOUBLE PRECISION NOT NULL, summary TEXT NOT NULL, "
    "run_hash TEXT, student TEXT)",
    "CREATE TABLE IF NOT EXISTS live (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, code TEXT NOT NULL, "
    "nickname TEXT NOT NULL, started DOUBLE PRECISION NOT NULL, updated DOUBLE PRECISION NOT NULL, "
    "state TEXT NOT NULL, progress DOUBLE PRECISION NOT NULL, line TEXT NOT NULL, summary TEXT NOT NULL, "
    "student TEXT)",
    "CREATE TABLE IF NOT EXISTS nicknames (code TEXT NOT NULL, nick_key TEXT NOT NULL, student TEXT NOT NULL, "
    "PRIMARY KEY (code, nick_key))",
    "CREATE INDEX IF NOT EXISTS entries_code ON entries (code)",
    "CREATE UNIQUE INDEX IF NOT EXISTS entries_run ON entries (code, run_hash)",
    "CREATE INDEX IF NOT EXISTS live_code ON live (code)",
    *CLASS_TABLES,
    *(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {column}" for table, column in CLASS_COLUMNS),
)


class _PostgresDb:
    """One psycopg connection inside a transaction, as `BoardStore` uses it (`?` -> `%s`)."""

    def __init__(self, conn: psycopg.Connection):
        self.conn = conn

    def execute(self, sql: str, params=()):
        return self.conn.execute(sql.replace("?", "%s"), params)

    def insert(self, sql: str, params) -> int:
        return int(self.execute(sql + " RETURNING id", params).fetchone()[0])


class PostgresStore(BoardStore):
    """The board in the PostgreSQL database at `url` (a libpq URL or key=value string)."""

    def __init__(self, url: str):
        self.url = url
        self.where = "postgres:" + url
        self._idle: list[psycopg.Connection] = []
        self._lock = threading.Lock()
        self._ready = False  # the schema and tables are there
        self._retry_at = 0.0  # time.monotonic() before which no connection is tried

    def _connect(self) -> psycopg.Connection:
        if time.monotonic() < self._retry_at:
            raise BoardUnavailable()
        try:
            conn = psycopg.connect(
                self.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S, tcp_user_timeout=TCP_TIMEOUT_MS
            )
            conn.execute(f"SET search_path TO {SCHEMA_NAME}")
        except psycopg.Error as e:  # refused, unreachable, bad URL or password
            self._retry_at = time.monotonic() + RETRY_S
            log.warning("the class board's database cannot be reached: %s", e)
            raise BoardUnavailable() from e
        return conn

    def _take(self) -> tuple[psycopg.Connection, bool]:
        """A connection (and whether it was kept from before: it may have been closed by the server)."""
        with self._lock:
            if self._idle:
                return self._idle.pop(), True
        return self._connect(), False

    def _give_back(self, conn: psycopg.Connection) -> None:
        with self._lock:
            if len(self._idle) < KEEP_IDLE and not conn.closed:
                self._idle.append(conn)
                return
        conn.close()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def _failed(self, conn: psycopg.Connection, e: Exception) -> BoardUnavailable:
        """What to raise after `e`; a broken `conn` is dropped with the kept ones (the server went
        away: they are dead too), a sound one (the lock not had in time) rolled back and kept."""
        log.warning("the class board's database failed: %s", e)
        if conn.broken or conn.closed:
            conn.close()
            self.close()
        else:
            self._rollback(conn)
        return BoardUnavailable()

    def _rollback(self, conn: psycopg.Connection) -> None:
        try:
            if conn.info.transaction_status != TransactionStatus.IDLE:
                conn.execute("ROLLBACK")
        except psycopg.Error:
            conn.close()
        self._give_back(conn)

    def _create(self, conn: psycopg.Connection) -> None:
        """The schema and tables, once per store (in a transaction of their own, under the lock)."""
        try:
            with conn.transaction():
                conn.execute(LOCK_SQL)
                if not conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (SCHEMA_NAME,)).fetchone():
                    conn.execute(f"CREATE SCHEMA {SCHEMA_NAME}")  # else none: a schema made by the DBA will do
                for sql in TABLES:
                    conn.execute(sql)
        except psycopg.OperationalError:
            raise
        except psycopg.Error as e:  # e.g. no right to create the schema: the server's set-up
            log.error("the class board's tables cannot be created: %s", e)
            self._give_back(conn)
            raise BoardUnavailable() from e
        self._ready = True

    def _begin(self, write: bool) -> psycopg.Connection:
        """A connection in a transaction holding the lock (when `write`; else in autocommit, for
        one statement); a kept connection that fails is replaced by a new one once."""
        while True:
            conn, kept = self._take()
            try:
                if not self._ready:
                    self._create(conn)
                if write:  # one round trip
                    conn.execute(f"BEGIN; SET LOCAL lock_timeout = '{LOCK_WAIT_S}s'; {LOCK_SQL}")
                elif kept:
                    conn.execute("SELECT 1")  # a dead kept connection shows here, where it can be replaced
                return conn
            except psycopg.OperationalError as e:
                if not kept or not (conn.broken or conn.closed):
                    raise self._failed(conn, e) from e
                conn.close()
                self.close()

    @contextlib.contextmanager
    def transaction(self, write: bool = True):
        conn = self._begin(write)
        try:
            yield _PostgresDb(conn)
            if write:
                conn.execute("COMMIT")
        except psycopg.OperationalError as e:  # the server went away, or the lock not had in time
            raise self._failed(conn, e) from e
        except BaseException:
            self._rollback(conn)
            raise
        self._give_back(conn)
