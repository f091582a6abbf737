"""The real server in a subprocess on 127.0.0.1, for tests that speak to it as a client would.

Built on scripts/loadtest.py (start_server, wait_healthy, stop_server, MemoryWatch, ProtocolPage),
loaded from its file: scripts/ is not a package.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def loadtest():
    """scripts/loadtest.py as a module (loaded once)."""
    if "loadtest" in sys.modules:
        return sys.modules["loadtest"]
    spec = importlib.util.spec_from_file_location("loadtest", ROOT / "scripts" / "loadtest.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["loadtest"] = mod
    spec.loader.exec_module(mod)
    return mod


class LiveServer:
    """`streamlit run streamlit_app.py` on a free port with `env`; `watch` samples its memory."""

    def __init__(self, log_path: Path, env: dict[str, str] | None = None):
        lt = loadtest()
        self.port = lt.free_port()
        self.url = f"http://{lt.HOST}:{self.port}"
        self.log_path = log_path
        self.proc = lt.start_server(self.port, log_path, env or {})
        try:
            lt.wait_healthy(self.proc, self.url)
        except Exception:
            lt.stop_server(self.proc)
            raise
        self.watch = lt.MemoryWatch(self.proc.pid)

    def page(self, headers: dict[str, str] | None = None):
        """A new websocket session (not connected yet)."""
        return loadtest().ProtocolPage(self.url, headers=headers)

    def hwm_mb(self) -> float:
        """The kernel's peak memory (VmHWM) of the server's process tree, MB."""
        return self.watch.hwm_mb()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        loadtest().stop_server(self.proc)


def xsrf_cookie() -> str:
    """A fresh `_streamlit_xsrf` cookie as Streamlit writes it ("2|mask|masked token|time"):
    what a browser gets on its first visit, and what a script can mint at will."""
    token, mask = os.urandom(16), os.urandom(4)
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(token))
    return f"2|{mask.hex()}|{masked.hex()}|{int(time.time())}"


def browser(cookie: str, address: str | None = None) -> dict[str, str]:
    """Handshake headers of a browser with `cookie`, seen from `address` (X-Forwarded-For: the
    server trusts it from 127.0.0.1, as from a reverse proxy there)."""
    headers = {"Cookie": f"_streamlit_xsrf={cookie}"}
    if address:
        headers["X-Forwarded-For"] = address
    return headers


def put_upload(
    url: str, session_id: str, cookie: str, data: bytes, name: str = "f.csv", other_cookies: str = ""
) -> tuple[int, str]:
    """A raw `PUT /_stcore/upload_file/<session>/<new id>` as the frontend sends it (multipart,
    the XSRF header, and `other_cookies` such as a proxy's "SERVERID=r1"); (HTTP status, body)."""
    boundary = uuid.uuid4().hex
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
        "Content-Type: text/csv\r\n\r\n"
    ).encode()
    body = head + data + f"\r\n--{boundary}--\r\n".encode()
    req = urllib.request.Request(
        f"{url}/_stcore/upload_file/{session_id}/{uuid.uuid4()}",
        data=body,
        method="PUT",
        headers={
            "Content-Type": f"multipart/form-data; boundary={boundary}",
            "X-Xsrftoken": cookie,
            "Cookie": "; ".join(c for c in (f"_streamlit_xsrf={cookie}", other_cookies) if c),
        },
    )
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")
