"""What comes into the class board, checked and cleaned before it is stored: a typed class code, a
nickname (and what two nicknames that look the same share), a browser's key, a real name or email
kept for the teacher, a run's owner; and the hash a teacher's key is kept as."""

from __future__ import annotations

import hashlib
import unicodedata

from .errors import BoardError

CODE_CHARS = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I
CODE_LEN = 6
NICK_CHARS = 24
NAME_CHARS = 120  # of a real name or an email kept for the teacher


def key_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def normal_code(code: str | None) -> str:
    """A typed class code, stripped and upper-cased; BoardError when it cannot be one."""
    code = (code or "").strip().upper()
    if len(code) != CODE_LEN or any(c not in CODE_CHARS for c in code):
        raise BoardError(f"A class code is {CODE_LEN} letters and digits, as your teacher wrote it.")
    return code


def clean_nickname(nickname: str | None) -> str:
    nick = (nickname or "").strip()
    if not nick:
        raise BoardError("Type a nickname to post under.")
    if len(nick) > NICK_CHARS:
        raise BoardError(f"A nickname is at most {NICK_CHARS} characters.")
    if any(unicodedata.category(c) in ("Cc", "Cf") for c in nick):
        raise BoardError("A nickname cannot hold control characters.")
    return nick


def nick_key(nickname: str) -> str:
    """What two nicknames that look the same share: "Bob", "bob " and "ｂｏｂ" are one nickname."""
    return " ".join(unicodedata.normalize("NFKC", nickname).casefold().split())


def stored_student(student: str | None) -> str:
    """A browser's key as the store keeps it (no NUL, at most 100 characters); BoardError when empty."""
    student = str(student or "").replace("\x00", "")  # PostgreSQL's text holds no NUL
    if not student:
        raise BoardError("This browser cannot be told apart from others: reload the page and post again.")
    return student[:100]


def clean_person(text: str | None) -> str:
    """A provider's name or email as kept for the teacher: one line, no control or format
    characters, at most NAME_CHARS."""
    text = "".join(c if unicodedata.category(c) not in ("Cc", "Cf") else " " for c in str(text or ""))
    return " ".join(text.split())[:NAME_CHARS]


def check_owner(run_code: str, owner: str | None, student: str) -> None:
    """BoardError unless `student` trained the run: a post speaks for the run's student (the
    nickname, the accuracy), so a run reopened by its code in another browser is not theirs to post."""
    owner = str(owner or "").replace("\x00", "")[:100]
    if not owner:
        raise BoardError(
            f"Run {run_code} does not record which browser trained it, so it cannot be posted: "
            "only the student who trained a run can post it."
        )
    if owner != student:
        raise BoardError(
            f"Run {run_code} was trained in another browser: only the student who trained a run can post it "
            "to the board. A run reopened by its code can be explored here, not posted."
        )
