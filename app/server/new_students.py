"""How fast one client address may turn into new "students" for the one-job-per-student cap.

A student is a browser, told by Streamlit's `_streamlit_xsrf` cookie (app.training.follow.student_key).
The cookie is the client's to choose: a script sending a fresh one per connection is a new
student each time, and could take every slot and the whole queue from one machine. So a student
key never seen before may start a job only with a token of its client address (IPv4, or the /64 of
an IPv6 address: one host holds many of those): `BERT_EXPLORER_NEW_STUDENTS_BURST` (4) at once,
then one every `BERT_EXPLORER_NEW_STUDENT_EVERY_S` (20 s). A key that has started a job before
(within `REMEMBER_S`) is not counted again: a student's second and later jobs are never slowed.

A class behind one router is one address: its first 4 jobs start at once, then one new student
every 20 s (the 30th after 8.7 min; only MAX_JOBS + MAX_QUEUE jobs can be active at once in any
case, and a job takes minutes). What is left: keys admitted stay admitted for a day, so one
address collects a new student every 20 s (the queue cap still bounds what they hold at once,
and each job needs its own open connection); an attacker with many addresses, or one behind the
class's router (then it spends the class's tokens); without logins a server cannot tell more.
"""

from __future__ import annotations

import ipaddress
import threading
import time
from collections import OrderedDict

from bert import settings
from bert.errors import BertExplorerError

REMEMBER_S = 24 * 3600.0  # a student key that started a job is known this long
MAX_KNOWN = 20_000  # student keys remembered (oldest forgotten first)
MAX_ADDRESSES = 10_000


class TooManyNewStudents(BertExplorerError):
    """A new student key from an address whose tokens are spent (the message says when to retry);
    shown as the Start button's notice, as the jobs' own caps (app.jobs.budget.LimitError) are. Not
    one of them: the server's guards do not depend on the jobs."""


def address_key(ip: str) -> str:
    """The address a token bucket belongs to: the IPv4 address, or an IPv6 address's /64."""
    try:
        addr = ipaddress.ip_address(ip.strip())
    except ValueError:
        return "other"
    if isinstance(addr, ipaddress.IPv6Address):
        if addr.ipv4_mapped is not None:
            return str(addr.ipv4_mapped)
        return str(ipaddress.ip_network(f"{addr}/64", strict=False))
    return str(addr)


class NewStudents:
    """Token buckets per address, and the student keys already admitted."""

    def __init__(self, clock=time.monotonic):
        self._clock = clock
        self._lock = threading.Lock()
        self._known: OrderedDict[str, float] = OrderedDict()
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # addr -> (tokens, at)

    def admit(self, student: str, ip: str | None) -> None:
        """Let `student` start a job from `ip`, or raise TooManyNewStudents. Without an address
        (no connection: AppTest, scripts) there is nobody to count."""
        if ip is None:
            return
        burst = settings.whole("BERT_EXPLORER_NEW_STUDENTS_BURST")
        every = settings.number("BERT_EXPLORER_NEW_STUDENT_EVERY_S")
        now = self._clock()
        addr = address_key(ip)
        with self._lock:
            seen = self._known.get(student)
            if seen is not None and now - seen < REMEMBER_S:
                self._known.move_to_end(student)
                self._known[student] = now
                return
            tokens, at = self._buckets.get(addr, (float(burst), now))
            tokens = min(float(burst), tokens + (now - at) / every)
            if tokens < 1.0:
                wait = (1.0 - tokens) * every
                self._buckets[addr] = (tokens, now)
                raise TooManyNewStudents(
                    f"{burst} new browsers have just started jobs from your network (then one every "
                    f"{every:g} s). Try again in {wait:.0f} s; a browser that has started a job here "
                    "before is not held back."
                )
            self._buckets[addr] = (tokens - 1.0, now)
            self._buckets.move_to_end(addr)
            self._known[student] = now
            self._known.move_to_end(student)
            while len(self._known) > MAX_KNOWN:
                self._known.popitem(last=False)
            while len(self._buckets) > MAX_ADDRESSES:
                self._buckets.popitem(last=False)


_new_students = NewStudents()


def admit(student: str, ip: str | None) -> None:
    """The server's one NewStudents.admit (module-level: no client can clear it)."""
    _new_students.admit(student, ip)
