"""The class board of this server: whether it is on (BERT_EXPLORER_BOARD=1) and which store holds
it: PostgreSQL at BERT_EXPLORER_DATABASE_URL when set (app replicas share it), else the SQLite
file `bert_cache_dir()/board/board.sqlite`."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from bert import settings
from bert.data.corpus.fetch import bert_cache_dir

from .classroom import Classroom
from .errors import BoardUnavailable
from .sqlite_store import SqliteStore
from .store import BoardStore

JOINED = "board_code"  # session-state key: the class code this session has joined
TEACHER = "class_teacher"  # session-state key: (code, board key) once the key is proven for the joined class
DATABASE_URL = "BERT_EXPLORER_DATABASE_URL"

log = logging.getLogger("bert_explorer")
_current: dict[tuple[str, str], BoardStore] = {}  # the one store in use, under its (kind, where)
_lock = threading.Lock()


def enabled() -> bool:
    return settings.flag("BERT_EXPLORER_BOARD")


def db_path() -> Path:
    """The SQLite file of the board when no database URL is set."""
    return bert_cache_dir() / "board" / "board.sqlite"


def _open(kind: str, where: str) -> BoardStore:
    if kind == "sqlite":
        return SqliteStore(Path(where))
    try:
        from .postgres import PostgresStore  # psycopg: requirements-cluster.txt, not needed for SQLite
    except ImportError as e:
        log.error("%s is set but psycopg is missing: pip install -r requirements-cluster.txt", DATABASE_URL)
        raise BoardUnavailable() from e
    return PostgresStore(where)


def board_store() -> BoardStore:
    """The store the settings name now, the same object for every session (its connections kept);
    the one named before is closed when they change (a test's folder or database)."""
    url = settings.text(DATABASE_URL)
    key = ("postgres", url) if url else ("sqlite", str(db_path()))
    with _lock:
        store = _current.get(key)
        if store is None:
            store = _open(*key)
            for old in _current.values():
                old.close()
            _current.clear()
            _current[key] = store
    return store


def classroom() -> Classroom:
    """The lead and questions of this server's classes, in the board's store."""
    return Classroom(board_store())
