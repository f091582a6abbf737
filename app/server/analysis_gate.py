"""The server-wide bound on analyses computed at the same moment, and the "Busy" message.

The analysis cache (app/analysis_cache.py) bounds what is kept, not work in progress: twelve students
sending a long text at once would run twelve forward passes side by side (gigabytes). So every
analysis that is not in the cache waits for one of BERT_EXPLORER_MAX_ANALYSES places (default
2), in the order the students asked; a session that waits reads "Busy: N ahead of you". The
gate lives in this module, not in anything Streamlit can clear: one per server process.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import streamlit as st

from bert import settings

POLL_S = 1.0  # how often a waiting session re-reads its place (and notices a rerun or a closed tab)


def analysis_places() -> int:
    return settings.whole("BERT_EXPLORER_MAX_ANALYSES")


class Gate:
    """At most `places()` holders at once; the others wait first come, first served.

    A thread that already holds a place passes straight through (an analysis computed inside
    another cannot deadlock). `on_wait(ahead)` is called while waiting, at every change and
    every POLL_S seconds, outside the lock, and `on_wait(0)` once the place is taken after a
    wait: what it raises (Streamlit's rerun or stop) leaves the queue or the place cleanly."""

    def __init__(self, places: Callable[[], int]):
        self.places = places
        self.running = 0
        self._queue: deque = deque()
        self._cond = threading.Condition()
        self._local = threading.local()

    def waiting(self) -> int:
        with self._cond:
            return len(self._queue)

    def _take(self, ticket) -> int:
        """0 once `ticket` took a place, else how many are ahead of it (running + queued before)."""
        ahead = self._queue.index(ticket)
        if ahead == 0 and self.running < self.places():
            self._queue.popleft()
            self.running += 1
            self._cond.notify_all()  # the next in line may fit too
            return 0
        return self.running + ahead

    @contextmanager
    def place(self, on_wait: Callable[[int], None] | None = None) -> Iterator[None]:
        if getattr(self._local, "held", False):
            yield
            return
        ticket, waited = object(), False
        try:
            with self._cond:
                self._queue.append(ticket)
                ahead = self._take(ticket)
            while ahead:
                if on_wait is not None:
                    on_wait(ahead)
                    waited = True
                with self._cond:
                    ahead = self._take(ticket)
                    if ahead:
                        self._cond.wait(POLL_S)
                        ahead = self._take(ticket)
        except BaseException:
            with self._cond:
                if ticket in self._queue:
                    self._queue.remove(ticket)
                    self._cond.notify_all()
            raise
        self._local.held = True
        try:
            if waited:
                on_wait(0)  # the wait is over
            yield
        finally:
            self._local.held = False
            with self._cond:
                self.running -= 1
                self._cond.notify_all()


ANALYSES = Gate(analysis_places)  # the server's one gate for the pages' analyses


def busy_text(ahead: int) -> str:
    places = analysis_places()
    return (
        f"Busy: {ahead} ahead of you. The server computes {places} analyses at a time; "
        "yours starts as soon as a place is free (it is kept for everyone once done)."
    )


@contextmanager
def busy_notice() -> Iterator[Callable[[int], None]]:
    """An `on_wait` for Gate.place that shows "Busy: N ahead of you" where the result will be,
    and removes it once the wait is over."""
    slot = []

    def show(ahead: int) -> None:
        if not slot:
            slot.append(st.empty())
        if ahead:
            slot[0].info(busy_text(ahead), icon=":material/hourglass_top:")
        else:
            slot[0].empty()

    try:
        yield show
    finally:
        if slot:
            slot[0].empty()
