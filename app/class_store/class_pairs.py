"""The class's minimal pairs on its board: students post the pairs they typed on the Causes page,
and the board scores every pair with the model its viewer has loaded (app/board/pairs_panel.py).
No streamlit here; the table is app/class_store/store.py's `pairs`, kept a day like the board.

A pair is two sentences of 1-SENTENCE_CHARS characters on one line each (no control or format
characters), different from each other, of at most POSTED_TOKENS tokens each (the poster's page
counts them with its model's tokenizer; the board leaves a longer one unscored under another).
Limits: PAIRS_A_POST in one post, PAIRS_EACH a student on a board (the browser key of the job
limit), `address_cap` from one client address (PAIRS_PER_ADDRESS; PAIRS_EACH a student of a class
whose teacher declared that it shares one network, app/server/shared_network.py), MAX_PAIRS a board; a pair
already on the board is not posted twice. The pairs name no student: the board shows the
sentences only, and keeps the address as a hash. Posting bumps the board's version, so the
Class board page redraws; the board's key clears them (with the board's runs, `BoardStore.clear`)
or removes one pair (`remove`), touching nothing else.

A pair is scored once per model: the first viewer with a model scores it and keeps the scores
with the pair (`keep_scores`); every later page run, of any viewer with that model, reads them.
"""

from __future__ import annotations

import time
import unicodedata

from .checks import key_hash, stored_student
from .errors import BoardError
from .store import BoardStore

SENTENCE_CHARS = 200
POSTED_TOKENS = 40
PAIRS_A_POST = 10
PAIRS_EACH = 10
PAIRS_PER_ADDRESS = 30  # one machine cannot fill a board: 70 of its 100 stay for the others
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

    def post(
        self,
        code: str,
        student: str,
        pairs,
        now: float | None = None,
        address: str | None = None,
        address_cap: int = PAIRS_PER_ADDRESS,
    ) -> int:
        """Post `student`'s pairs to the board from client `address` (an address key; None: not
        counted); how many were new there (the others were on it)."""
        now = time.time() if now is None else now
        pairs = clean_pairs(pairs)
        student = stored_student(student)
        where = None if address is None else key_hash(address)
        with self.store.transaction() as db:
            self.store.expire_in(db, now)
            code = self.store.known(db, code)
            rows = db.execute("SELECT good, bad, student, address FROM pairs WHERE code = ?", (code,)).fetchall()
            there = {(g, b) for g, b, *_ in rows}
            new = [p for p in pairs if p not in there]
            mine = sum(1 for _, _, s, _ in rows if s == student)
            if mine + len(new) > PAIRS_EACH:
                raise BoardError(
                    f"A student posts at most {PAIRS_EACH} pairs to a board; you have posted {mine}, "
                    f"and these are {len(new)} more."
                )
            ours = sum(1 for *_, a in rows if where is not None and a == where)
            if where is not None and ours + len(new) > address_cap:
                raise BoardError(
                    f"Your network has posted {ours} pairs to board {code}, of at most {address_cap} from one "
                    "network (so that one machine cannot fill the board). If the whole class shares one "
                    "network, your teacher can say so on the Class board."
                )
            if len(rows) + len(new) > MAX_PAIRS:
                raise BoardError(
                    f"Board {code} holds {len(rows)} pairs of at most {MAX_PAIRS}: ask your teacher to clear it."
                )
            for g, b in new:
                db.insert(
                    "INSERT INTO pairs (code, student, posted, good, bad, address) VALUES (?, ?, ?, ?, ?, ?)",
                    (code, student, now, g, b, where),
                )
            if new:
                self.store.bump(db, code)
            return len(new)

    def pairs(self, code: str, now: float | None = None) -> list[tuple[str, str]]:
        """The board's pairs, oldest first."""
        return [(g, b) for _, g, b, _ in self.scored(code, None, now)]

    def scored(self, code: str, model: str | None, now: float | None = None) -> list[tuple]:
        """The board's pairs, oldest first, as (id, good, bad, scores): scores (PLL good, PLL bad, why
        not scored) as `model` left them with the pair, None where it has not scored it yet."""
        with self.store.transaction() as db:
            self.store.expire_in(db, time.time() if now is None else now)
            code = self.store.known(db, code)
            rows = db.execute(
                "SELECT p.id, p.good, p.bad, s.good, s.bad, s.why, s.model FROM pairs p "
                "LEFT JOIN pair_scores s ON s.pair = p.id AND s.model = ? WHERE p.code = ? ORDER BY p.id LIMIT ?",
                (str(model or ""), code, MAX_PAIRS),
            ).fetchall()
        return [(int(i), g, b, None if m is None else (sg, sb, why)) for i, g, b, sg, sb, why, m in rows]

    def keep_scores(self, code: str, model: str, scores: dict[int, tuple]) -> None:
        """Keep `model`'s scores of pairs of the board (pair id -> (PLL good, PLL bad, why not));
        a pair scored meanwhile by another viewer keeps the first scores."""
        with self.store.transaction() as db:
            code = self.store.known(db, code)
            ids = {int(r[0]) for r in db.execute("SELECT id FROM pairs WHERE code = ?", (code,)).fetchall()}
            for pair, (good, bad, why) in scores.items():
                if int(pair) in ids:
                    db.execute(
                        "INSERT INTO pair_scores (pair, model, good, bad, why) VALUES (?, ?, ?, ?, ?) "
                        "ON CONFLICT (pair, model) DO NOTHING",
                        (int(pair), str(model)[:200], good, bad, None if why is None else str(why)[:300]),
                    )

    def remove(self, code: str, teacher_key: str, pair: int) -> bool:
        """Remove one pair and its scores (the teacher's key needed), nothing else; False when it
        was not there."""
        with self.store.transaction() as db:
            code = self.store.check_key(db, code, teacher_key)
            gone = db.execute("DELETE FROM pairs WHERE code = ? AND id = ?", (code, int(pair))).rowcount
            db.execute("DELETE FROM pair_scores WHERE pair = ?", (int(pair),))
            if gone:
                self.store.bump(db, code)
            return bool(gone)
