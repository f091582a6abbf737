"""How fast one client address may turn into new "students": for the one-job-per-student cap,
and for the answers to a class question.

A student is a browser, told by Streamlit's `_streamlit_xsrf` cookie (app.students.student_key).
The cookie is the client's to choose: a script sending a fresh one per connection is a new
student each time, and could take every slot and the whole queue from one machine, or answer a
class question as hundreds of students. So a student key never seen before (in a scope) is let
in only with a token of its client address (IPv4, or the /64 of an IPv6 address: one host holds
many of those). `NewStudents` is that mechanism: a token bucket per (scope, address) and the keys
already admitted in each scope; two rules use it.

**Jobs** (scope: the server): `BERT_EXPLORER_NEW_STUDENTS_BURST` (4) new students at once, then one
every `BERT_EXPLORER_NEW_STUDENT_EVERY_S` (20 s). A key that has started a job before (within
`REMEMBER_S`) is not counted again: a student's second and later jobs are never slowed. A class
behind one router is one address: its first 4 jobs start at once, then one new student every
20 s (the 30th after 8.7 min; only MAX_JOBS + MAX_QUEUE jobs can be active at once in any case,
and a job takes minutes). What is left: keys admitted stay admitted for a day, so one address
collects a new student every 20 s (the queue cap still bounds what they hold at once, and each
job needs its own open connection).

**Class questions** (scope: the question, app/class_store/classroom.py): `BERT_EXPLORER_NEW_ANSWERERS_BURST`
(60: a class behind one router answers at once) new answerers of one question from one address,
then one every `BERT_EXPLORER_NEW_ANSWERER_EVERY_S` (30 s: latecomers of a larger class), and never
more than `most` (half the question's MAX_ANSWERS) from one address: one machine cannot fill a
question, whose other half stays for students elsewhere. Changing an answer is never counted.

Both: an address whose class its teacher declared (app/server/shared_network.py: "this class
shares one network", with its size) has a burst of at least the class's size, and a `most` of at
least that many; the rest of the rule is unchanged. An attacker with many addresses, or one
behind the class's router (then it spends the class's tokens), is not told apart; without logins
a server cannot tell more. The buckets live in this process: each app replica counts its own
connections.
"""

from __future__ import annotations

import ipaddress
import math
import threading
import time
from collections import OrderedDict

from bert import settings
from bert.errors import BertExplorerError

from .shared_network import class_size

REMEMBER_S = 24 * 3600.0  # a student key admitted in a scope is known there this long
MAX_KNOWN = 20_000  # student keys remembered (oldest forgotten first)
MAX_ADDRESSES = 10_000  # buckets, one a (scope, address) (oldest forgotten first)


class TooManyNewStudents(BertExplorerError):
    """A new student key from an address whose tokens are spent (the message says when to retry);
    shown as the Start button's notice, as the jobs' own caps (app.jobs.budget.LimitError) are. Not
    one of them: the server's guards do not depend on the jobs."""


def client_address() -> str | None:
    """This session's client IP address ("127.0.0.1" from this machine, or what a reverse proxy
    there forwards), None without a connection (AppTest, scripts: nobody to count)."""
    try:
        import streamlit as st

        if not st.context.headers:
            return None
        return st.context.ip_address or "127.0.0.1"  # Streamlit says None for localhost
    except Exception:  # noqa: BLE001 - no context
        return None


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
    """Token buckets per (scope, address), and the student keys already admitted in each scope.
    `burst` and `every` name the settings of the bucket (read at each call)."""

    def __init__(
        self,
        burst: str = "BERT_EXPLORER_NEW_STUDENTS_BURST",
        every: str = "BERT_EXPLORER_NEW_STUDENT_EVERY_S",
        clock=time.monotonic,
    ):
        self.burst_setting, self.every_setting = burst, every
        self._clock = clock
        self._lock = threading.Lock()
        self._known: OrderedDict[tuple, float] = OrderedDict()  # (scope, student) -> last admitted
        # (scope, address) -> (tokens, at, admitted, the burst it was last filled to)
        self._buckets: OrderedDict[tuple, tuple[float, float, int, int]] = OrderedDict()

    def rule(self) -> tuple[int, float]:
        """(burst, every): new students at once, then one every this many seconds."""
        return settings.whole(self.burst_setting), settings.number(self.every_setting)

    def wait(self, student: str, ip: str | None, scope: object = "", most: int | None = None) -> float:
        """Admit `student` from `ip` in `scope` and return 0.0, or return the seconds until its
        address has a token (math.inf: the address has had `most` students admitted in this
        scope, its share). A student admitted in `scope` before is admitted again at no cost, from
        any address. Without an address (no connection: AppTest, scripts) there is nobody to count."""
        if ip is None:
            return 0.0
        burst, every = self.rule()
        now = self._clock()
        bucket = (scope, address_key(ip))
        tabs = class_size(bucket[1])
        burst = max(burst, tabs)
        most = None if most is None else max(most, tabs)
        who = (scope, student)
        with self._lock:
            seen = self._known.get(who)
            if seen is not None and now - seen < REMEMBER_S:
                self._known.move_to_end(who)
                self._known[who] = now
                return 0.0
            tokens, at, admitted, had = self._buckets.get(bucket, (float(burst), now, 0, burst))
            tokens += max(0, burst - had)  # a class declared since: its extra browsers at once
            tokens = min(float(burst), tokens + (now - at) / every)
            if most is not None and admitted >= most:
                self._buckets[bucket] = (tokens, now, admitted, burst)
                return math.inf
            if tokens < 1.0:
                self._buckets[bucket] = (tokens, now, admitted, burst)
                return (1.0 - tokens) * every
            self._buckets[bucket] = (tokens - 1.0, now, admitted + 1, burst)
            self._buckets.move_to_end(bucket)
            self._known[who] = now
            self._known.move_to_end(who)
            while len(self._known) > MAX_KNOWN:
                self._known.popitem(last=False)
            while len(self._buckets) > MAX_ADDRESSES:
                self._buckets.popitem(last=False)
            return 0.0

    def admit(self, student: str, ip: str | None) -> None:
        """The jobs' rule: let `student` start a job from `ip`, or raise TooManyNewStudents."""
        wait = self.wait(student, ip)
        if wait > 0:
            burst, every = self.rule()
            raise TooManyNewStudents(
                f"{burst} new browsers have just started jobs from your network (then one every "
                f"{every:g} s). Try again in {wait:.0f} s; a browser that has started a job here "
                "before is not held back."
            )


_new_students = NewStudents()
# new answerers of a class question (scope: the question); app/class_store/classroom.py says the rule
new_answerers = NewStudents("BERT_EXPLORER_NEW_ANSWERERS_BURST", "BERT_EXPLORER_NEW_ANSWERER_EVERY_S")


def admit(student: str, ip: str | None) -> None:
    """The server's one NewStudents.admit for jobs (module-level: no client can clear it)."""
    _new_students.admit(student, ip)
