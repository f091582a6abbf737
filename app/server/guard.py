"""What a client may do to the server, enforced once per process (`install()`, from the entry).

- Refused: `BackMsg(clear_cache=True)` (the menu's "Clear cache", or one hand-made frame), which
  would clear every session's Streamlit caches; server-wide state is module-level in any case.
- Capped, per session, per client address and server-wide, in files and bytes (the
  BERT_EXPLORER_UPLOAD_* settings): `PUT /_stcore/upload_file/...`, answered 429 with the reason
  before the file is kept. The sessions of one client address (a session's websocket peer: IPv4,
  or an IPv6 /64, as app/server/new_students.py counts) hold at most
  BERT_EXPLORER_UPLOAD_*_PER_ADDRESS of the server's files and bytes (by default a part of each),
  so one machine opening many sessions never fills the
  server's caps for everyone else; a class behind one router shares that, unless its teacher
  declared that the class shares one network (app/server/shared_network.py): then its address
  holds what `size` tabs may, within the server's caps. The copy of an upload
  a training page keeps in its session (`keep`: a Fine-tuning file stays until its student
  removes it) counts as the session's too. A file no widget asked for within `UNCLAIMED_S` is
  dropped, and a session's files and kept copies `DISCONNECTED_S` after its socket closed.

Incoming widget state is bounded by Streamlit's `server.maxWidgetStateSize` (.streamlit/config.toml),
not by `server.maxMessageSize`, which caps outgoing messages too.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from bert import settings

from .new_students import address_key
from .shared_network import class_size

log = logging.getLogger(__name__)

MB = 2**20
UNCLAIMED_S = 60.0  # a file no file_uploader has read within this is dropped (a raw PUT)
DISCONNECTED_S = 10.0  # a closed session's files are dropped after this (not the 2-min TTL)
SWEEP_EVERY_S = 5.0
CLEAR_CACHE_LOG_EVERY_S = 60.0  # one log line a minute per session that keeps asking

_lock = threading.Lock()
_installed = False
_guard: UploadGuard | None = None
_clear_cache_logged: dict[str, float] = {}


def install() -> None:
    """Refuse clear-cache requests and cap uploads, once for the whole process (cheap after)."""
    global _installed, _guard
    if _installed:
        return
    with _lock:
        if _installed:
            return
        _refuse_clear_cache()
        mgr = _uploaded_file_manager()
        if mgr is not None:
            _guard = UploadGuard(mgr)
            _guard.start_sweeper()
        _installed = True


def upload_guard() -> UploadGuard | None:
    """The process's upload guard (None before `install()` or without Streamlit's server)."""
    return _guard


# --- clear cache -----------------------------------------------------------------------------------


def _refuse_clear_cache() -> None:
    from streamlit.runtime.app_session import AppSession

    AppSession._handle_clear_cache_request = _refused_clear_cache


def _refused_clear_cache(session) -> None:
    """Instead of Streamlit's: clear nothing (caches, jobs and the session's state stay)."""
    now = time.monotonic()
    sid = str(getattr(session, "id", "?"))
    with _lock:
        if now - _clear_cache_logged.get(sid, -CLEAR_CACHE_LOG_EVERY_S) < CLEAR_CACHE_LOG_EVERY_S:
            return
        if len(_clear_cache_logged) > 1000:
            _clear_cache_logged.clear()
        _clear_cache_logged[sid] = now
    log.warning("refused a client's clear-cache request (session %s): caches and jobs are server-wide", sid)


# --- uploads ---------------------------------------------------------------------------------------


def _uploaded_file_manager():
    try:
        from streamlit import runtime
        from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager
    except ImportError:
        return None
    if not runtime.exists():
        return None  # AppTest, scripts: no upload route
    mgr = runtime.get_instance().uploaded_file_mgr
    return mgr if isinstance(mgr, MemoryUploadedFileManager) else None


def upload_caps() -> dict[str, int]:
    return {
        "session_files": settings.whole("BERT_EXPLORER_UPLOAD_FILES_PER_SESSION"),
        "session_bytes": settings.whole("BERT_EXPLORER_UPLOAD_MB_PER_SESSION") * MB,
        "address_files": settings.whole("BERT_EXPLORER_UPLOAD_FILES_PER_ADDRESS"),
        "address_bytes": settings.whole("BERT_EXPLORER_UPLOAD_MB_PER_ADDRESS") * MB,
        "files": settings.whole("BERT_EXPLORER_UPLOAD_FILES"),
        "bytes": settings.whole("BERT_EXPLORER_UPLOAD_MB") * MB,
    }


class UploadRefused(Exception):
    """An upload over a cap (the message says which)."""


class UploadGuard:
    """Wraps the server's MemoryUploadedFileManager: caps on `add_file`, claims seen in `get_files`
    (a file_uploader reading its files), and a sweeper that frees what nobody uses. `address`:
    a session's client IP address (None: unknown, then only the session and server caps count)."""

    def __init__(self, mgr, alive=None, clock=time.monotonic, address=None):
        self.mgr = mgr
        self._add, self._get = mgr.add_file, mgr.get_files
        self._alive = alive or _session_alive
        self._address = address or _session_address
        self._address_of: dict[str, str | None] = {}  # session -> address key, kept with its files
        self._clock = clock
        self._lock = threading.Lock()
        self._put_at: dict[tuple[str, str], float] = {}  # (session, file) -> when it arrived
        self._claimed: set[tuple[str, str]] = set()
        self._gone_since: dict[str, float] = {}  # session -> first seen disconnected
        self._kept: dict[str, dict[str, tuple[str, int]]] = {}  # session -> slot -> (file id, bytes): `keep`
        mgr.add_file = self.add_file
        mgr.get_files = self.get_files

    def held(self) -> dict[str, tuple[int, int]]:
        """session -> (files, bytes) held now: the uploaders' files, and the copies a session keeps
        (`keep`) of files its uploaders no longer hold."""
        out = {}
        for sid, files in list(self.mgr.file_storage.items()):
            recs = list(files.values())
            out[sid] = (len(recs), sum(len(r.data) for r in recs))
        for sid, slots in list(self._kept.items()):
            in_uploader = self.mgr.file_storage.get(sid, {})
            extra = [size for fid, size in list(slots.values()) if fid not in in_uploader]
            if extra:
                n, b = out.get(sid, (0, 0))
                out[sid] = (n + len(extra), b + sum(extra))
        return out

    def keep(self, session_id: str, slot: str, file_id: str, size: int) -> None:
        """A session keeps its own copy of an uploaded file in `slot` (the training pages: the file
        stays until the student removes it): it counts against the caps as the session's, until
        `release` or the session closes. A slot holds one file: a new one replaces the old."""
        with self._lock:
            self._kept.setdefault(session_id, {})[slot] = (file_id, int(size))

    def release(self, session_id: str, slot: str) -> None:
        with self._lock:
            slots = self._kept.get(session_id, {})
            slots.pop(slot, None)
            if not slots:
                self._kept.pop(session_id, None)

    def address_of(self, session_id: str) -> str | None:
        """The address key of `session_id`'s client, looked up while the session is connected
        and kept while it holds files (a closed session's files still count for its address)."""
        if session_id not in self._address_of:
            ip = self._address(session_id)
            self._address_of[session_id] = None if ip is None else address_key(ip)
        return self._address_of[session_id]

    def check(self, session_id: str, file_id: str, size: int) -> None:
        """Raise UploadRefused when keeping `size` more bytes for `session_id` breaks a cap."""
        caps = upload_caps()
        held = self.held()
        replacing = file_id in self.mgr.file_storage.get(session_id, {})
        n, b = held.get(session_id, (0, 0))
        total_n = sum(v[0] for v in held.values())
        total_b = sum(v[1] for v in held.values())
        more = 0 if replacing else 1
        if n + more > caps["session_files"] or b + size > caps["session_bytes"]:
            raise UploadRefused(
                f"This tab already holds {n} uploaded file(s), {b / MB:,.1f} MB (at most "
                f"{caps['session_files']} files, {caps['session_bytes'] / MB:,.0f} MB a tab). "
                "Remove a file first (its uploader's ✕, or “Remove file”)."
            )
        if total_n + more > caps["files"] or total_b + size > caps["bytes"]:
            raise UploadRefused(
                f"The server holds too many uploads right now ({total_n} files, {total_b / MB:,.0f} MB; "
                f"at most {caps['files']} files, {caps['bytes'] / MB:,.0f} MB). Try again in a minute."
            )
        addr = self.address_of(session_id)
        if addr is not None:
            mine = [v for sid, v in held.items() if self._address_of.get(sid) == addr]
            addr_n, addr_b = sum(v[0] for v in mine), sum(v[1] for v in mine)
            most_n, most_b = caps["address_files"], caps["address_bytes"]
            tabs = class_size(addr)
            if tabs > 1:  # a declared class: the caps of that many tabs, within the server's
                most_n = max(most_n, min(caps["files"], tabs * caps["session_files"]))
                most_b = max(most_b, min(caps["bytes"], tabs * caps["session_bytes"]))
            if addr_n + more > most_n or addr_b + size > most_b:
                raise UploadRefused(
                    f"The tabs of your network already hold {addr_n} uploaded file(s), {addr_b / MB:,.0f} MB "
                    f"(at most {most_n} files, {most_b / MB:,.0f} MB from one "
                    "network, so that one machine cannot take every upload place). A file is freed when its "
                    "job starts or its tab closes: try again in a minute. A class behind one router: your "
                    "teacher can say so on the Class board."
                )

    def add_file(self, session_id: str, file) -> None:
        self.sweep()
        with self._lock:  # check and keep together: two PUTs at once cannot both squeeze in
            try:
                self.check(session_id, file.file_id, len(file.data))
            except UploadRefused as e:
                log.warning("refused an upload of %d bytes (session %s): %s", len(file.data), session_id, e)
                raise _http_refusal(str(e)) from None
            self._add(session_id, file)
            self._put_at[(session_id, file.file_id)] = self._clock()

    def get_files(self, session_id: str, file_ids):
        recs = self._get(session_id, file_ids)
        with self._lock:
            self._claimed.update((session_id, r.file_id) for r in recs)
        return recs

    def sweep(self) -> int:
        """Free files nobody claimed within UNCLAIMED_S and closed sessions' files; returns how
        many files were freed."""
        now = self._clock()
        freed = 0
        with self._lock:
            for sid in [s for s in self._kept if s not in self.mgr.file_storage]:  # kept copies only
                if self._alive(sid) is False:
                    since = self._gone_since.setdefault(sid, now)
                    if now - since >= DISCONNECTED_S:
                        freed += len(self._kept.pop(sid))
                        self._gone_since.pop(sid, None)
            for sid, files in list(self.mgr.file_storage.items()):
                if self._alive(sid) is False:
                    since = self._gone_since.setdefault(sid, now)
                    if now - since >= DISCONNECTED_S:
                        freed += len(files)
                        self.mgr.remove_session_files(sid)
                        freed += len(self._kept.pop(sid, {}))
                        self._gone_since.pop(sid, None)
                    continue
                self._gone_since.pop(sid, None)
                for fid in list(files):
                    key = (sid, fid)
                    if key not in self._claimed and now - self._put_at.get(key, now) >= UNCLAIMED_S:
                        self.mgr.remove_file(sid, fid)
                        freed += 1
            live = {(sid, fid) for sid, files in list(self.mgr.file_storage.items()) for fid in list(files)}
            self._put_at = {k: t for k, t in self._put_at.items() if k in live}
            self._claimed &= live
            self._gone_since = {
                s: t for s, t in self._gone_since.items() if s in self.mgr.file_storage or s in self._kept
            }
            self._address_of = {
                s: a for s, a in self._address_of.items() if self.mgr.file_storage.get(s) or s in self._kept
            }
        if freed:
            log.info("freed %d uploaded file(s) nobody uses", freed)
        return freed

    def start_sweeper(self) -> None:
        def loop():
            while True:
                time.sleep(SWEEP_EVERY_S)
                try:
                    self.sweep()
                except Exception:  # noqa: BLE001 - the sweeper must never die
                    log.exception("upload sweeper")

        threading.Thread(target=loop, name="upload-sweeper", daemon=True).start()


def tab_closed() -> Callable[[], bool]:
    """For a long computation in this page run: a check that says True once this session's tab is
    closed (its websocket gone), so the work can be given up; always False outside a page run."""
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    ctx = get_script_run_ctx(suppress_warning=True)
    if ctx is None:
        return lambda: False
    session = ctx.session_id
    return lambda: _session_alive(session) is False


def _session_alive(session_id: str) -> bool | None:
    try:
        from streamlit import runtime

        return bool(runtime.get_instance().is_active_session(session_id)) if runtime.exists() else None
    except Exception:  # noqa: BLE001 - an internal API that may change: then keep the files
        return None


def _session_address(session_id: str) -> str | None:
    """The IP address of `session_id`'s websocket peer (what a trusted proxy forwards), or None."""
    try:
        from streamlit import runtime

        if not runtime.exists():
            return None
        client = runtime.get_instance().get_client(session_id)
        context = getattr(client, "client_context", None)
        return getattr(context, "remote_ip", None)
    except Exception:  # noqa: BLE001 - an internal API that may change: then not counted per address
        return None


def _http_refusal(message: str) -> Exception:
    """The exception Streamlit's upload route turns into an HTTP answer: 429 with the reason."""
    from starlette.exceptions import HTTPException

    return HTTPException(status_code=429, detail=message)
