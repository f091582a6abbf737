"""The class's minimal pairs on its board: students post the pairs they typed on the Causes page,
and the board scores every pair with the model its viewer has loaded (app/board/pairs_panel.py).
No streamlit here; the table is app/board/store.py's `pairs`, kept a day like the board.

A pair is two sentences of 1-SENTENCE_CHARS characters on one line each (no control or format
characters), different from each other. Limits: PAIRS_A_POST in one post, PAIRS_EACH a student
on a board (the browser key of the job limit), MAX_PAIRS a board; a pair already on the board is
not posted twice. The pairs name no student: the board shows the sentences only. Posting bumps
the board's version, so the Class board page redraws; the board's key clears them (with the
board's runs, `BoardStore.clear`).
"""

from __future__ import annotations

import time
import unicodedata

from .store import BoardError, BoardStore, stored_student

SENTENCE_CHARS = 200
PAIRS_A_POST = 10
PAIRS_EACH = 10
MAX_PAIRS = 100


def clean_sentence(text: str | None, which: str) -> str:
    """One sentence of a pair as kept (stripped), or BoardError saying what is wrong with it."""
    text = str(text or "").strip()
    if not text:
        raise BoardError(f"The {which} sentence is empty.")
    if len(text) > SENTENCE_CHARS:
        raise BoardError(
            f"A sentence posted to the board is at most {SENTENCE_CHARS} characters; the {which} one is {len(text)}."
        )
    if any(unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp") for c in text):
        raise BoardError(f"The {which} sentence holds control characters or a line break.")
    return text


def clean_pairs(pairs) -> list[tuple[str, str]]:
    """The pairs of one post as kept, or BoardError (none, too many, a bad sentence, twins)."""
    pairs = list(pairs or [])
    if not pairs:
        raise BoardError("There are no pairs to post.")
    if len(pairs) > PAIRS_A_POST:
        raise BoardError(f"Post at most {PAIRS_A_POST} pairs at once; these are {len(pairs)}.")
    out = []
    for good, bad in pairs:
        g, b = clean_sentence(good, "good"), clean_sentence(bad, "bad")
        if g == b:
            raise BoardError(f"«{g}» is its own twin: a minimal pair differs somewhere.")
        if (g, b) not in out:
            out.append((g, b))
    return out


class ClassPairs:
    """The minimal pairs posted to the boards in `store` (see the module docstring)."""

    def __init__(self, store: BoardStore):
        self.store = store

    def post(self, code: str, student: str, pairs, now: float | None = None) -> int:
        """Post `student`'s pairs to the board; how many were new there (the others were on it)."""
        now = time.time() if now is None else now
        pairs = clean_pairs(pairs)
        student = stored_student(student)
        with self.store.transaction() as db:
            self.store.expire_in(db, now)
            code = self.store.known(db, code)
            rows = db.execute("SELECT good, bad, student FROM pairs WHERE code = ?", (code,)).fetchall()
            there = {(g, b) for g, b, _ in rows}
            new = [p for p in pairs if p not in there]
            mine = sum(1 for *_, s in rows if s == student)
            if mine + len(new) > PAIRS_EACH:
                raise BoardError(
                    f"A student posts at most {PAIRS_EACH} pairs to a board; you have posted {mine}, "
                    f"and these are {len(new)} more."
                )
            if len(rows) + len(new) > MAX_PAIRS:
                raise BoardError(
                    f"Board {code} holds {len(rows)} pairs of at most {MAX_PAIRS}: ask your teacher to clear it."
                )
            for g, b in new:
                db.insert(
                    "INSERT INTO pairs (code, student, posted, good, bad) VALUES (?, ?, ?, ?, ?)",
                    (code, student, now, g, b),
                )
            if new:
                self.store.bump(db, code)
            return len(new)

    def pairs(self, code: str, now: float | None = None) -> list[tuple[str, str]]:
        """The board's pairs, oldest first."""
        with self.store.transaction() as db:
            self.store.expire_in(db, time.time() if now is None else now)
            code = self.store.known(db, code)
            rows = db.execute(
                "SELECT good, bad FROM pairs WHERE code = ? ORDER BY id LIMIT ?", (code, MAX_PAIRS)
            ).fetchall()
        return [(g, b) for g, b in rows]
