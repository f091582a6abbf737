"""The class board's errors: an action that cannot be done (BoardError, its message for the
student), and a database that cannot be reached (BoardUnavailable), which the pages show as a message."""

from __future__ import annotations

from bert import BertExplorerError

UNAVAILABLE = "The class board is unavailable right now (the database cannot be reached); everything else works."


class BoardError(BertExplorerError):
    """A board action that cannot be done (unknown code, bad nickname, full board, wrong key)."""


class BoardUnavailable(BoardError):
    """The board's database cannot be reached (down, unreachable, or its lock not had in time)."""

    def __init__(self, message: str = UNAVAILABLE):
        super().__init__(message)
