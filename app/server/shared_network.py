"""A class behind one router: the teacher says so, and the rules per client address make room.

The per-address rules (uploads held, app/server/guard.py; new browsers starting jobs and answering a
question, app/server/new_students.py; pairs posted to a board, app/class_store/class_pairs.py) stop one
machine from taking what the class shares. A class behind one school router is one address too, so
the teacher of a class board can declare "this class shares one network" (the Class board's "Your
class" part, from the classroom: the declaring session's own address is the one declared) with the
class's size. For DECLARED_S after that, that address's caps are those of `size` browsers (each rule
says how), never more than the server's own caps; the per-browser and per-session caps stay as they
are, so one browser still holds at most its own share. Kept in this process (each app replica its
own, as the buckets are); a restart forgets it.
"""

from __future__ import annotations

import threading
import time

DECLARED_S = 4 * 3600.0  # a school day's lessons; the teacher declares again the next day
MAX_CLASS = 60  # the most browsers one declaration speaks for
MAX_DECLARED = 1000  # addresses declared at once, server-wide (oldest forgotten first)

_lock = threading.Lock()
_declared: dict[str, tuple[int, float]] = {}  # address key -> (class size, until)


def declare(key: str, size: int, now: float | None = None) -> int:
    """Declare that the class of `size` browsers (1..MAX_CLASS, clamped) shares address key `key`
    (app/server/new_students.py's address_key); returns the size kept."""
    now = time.time() if now is None else now
    size = max(1, min(MAX_CLASS, int(size)))
    with _lock:
        _declared.pop(key, None)
        _declared[key] = (size, now + DECLARED_S)
        while len(_declared) > MAX_DECLARED:
            _declared.pop(next(iter(_declared)))
    return size


def undeclare(key: str) -> None:
    with _lock:
        _declared.pop(key, None)


def declared(key: str | None, now: float | None = None) -> tuple[int, float] | None:
    """(class size, until) of address key `key` while its declaration lasts, else None."""
    if key is None:
        return None
    now = time.time() if now is None else now
    with _lock:
        hit = _declared.get(key)
        if hit is not None and hit[1] <= now:
            del _declared[key]
            hit = None
    return hit


def class_size(key: str | None) -> int:
    """The browsers address key `key` speaks for: its declared class's size, else 1."""
    hit = declared(key)
    return hit[0] if hit else 1
