"""Two real app replicas behind HAProxy (deploy/haproxy.cfg) on 127.0.0.1: health through the
proxy, cookie stickiness (the websocket session and its uploads on one replica), and a replica
that dies taken out by the health check."""

from __future__ import annotations

import re
import shutil
import time
import urllib.request

import pytest

from benchmarks.server import HOST, free_port, run_async, start_proxy, start_server, stop_server, wait_healthy
from tests.live_server import loadtest, put_upload, xsrf_cookie

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("haproxy") is None, reason="HAProxy is not installed (make setup-cluster)"),
]
TIMEOUT = 120
COOKIE_SECRET = "one secret for every replica of the class"


class Proxy:
    def __init__(self, folder):
        self.folder = folder
        self.ports = [free_port(), free_port()]
        env = {"STREAMLIT_SERVER_COOKIE_SECRET": COOKIE_SECRET}
        self.replicas = [start_server(p, folder / f"replica{i}.log", env) for i, p in enumerate(self.ports, 1)]
        for proc, port in zip(self.replicas, self.ports):
            wait_healthy(proc, f"http://{HOST}:{port}")
        self.port = free_port()
        self.url = f"http://{HOST}:{self.port}"
        # after the replicas: HAProxy counts a server up until its checks fail, then wants two good ones
        self.haproxy = start_proxy(self.port, self.ports, folder)
        wait_healthy(self.haproxy, self.url)

    def log(self) -> str:
        return (self.folder / "haproxy.log").read_text(errors="replace")

    def stop(self):
        for proc in [self.haproxy, *self.replicas]:
            stop_server(proc)


@pytest.fixture(scope="module")
def proxy(tmp_path_factory):
    p = Proxy(tmp_path_factory.mktemp("proxy"))
    yield p
    p.stop()


def get(url: str, cookie: str | None = None) -> tuple[str, str, str]:
    """(body, X-Replica, the SERVERID the response sets or '')."""
    req = urllib.request.Request(url, headers={"Cookie": f"SERVERID={cookie}"} if cookie else {})
    with urllib.request.urlopen(req, timeout=10) as r:
        set_cookie = re.search(r"SERVERID=(\w+)", " ".join(r.headers.get_all("Set-Cookie") or []))
        return r.read().decode(), r.headers["X-Replica"], set_cookie.group(1) if set_cookie else ""


def test_health_through_the_proxy_and_a_cookie_keeps_a_browser_on_its_replica(proxy):
    fresh = [get(f"{proxy.url}/_stcore/health") for _ in range(4)]
    assert all(body == "ok" and cookie == replica for body, replica, cookie in fresh)  # told where it landed
    for name in ("r1", "r2"):
        again = [get(f"{proxy.url}/_stcore/health", cookie=name) for _ in range(5)]
        assert [replica for _, replica, _ in again] == [name] * 5
        assert all(cookie == "" for _, _, cookie in again)  # `indirect`: not set again

    async def two_tabs():
        pages = [loadtest().ProtocolPage(proxy.url) for _ in range(2)]
        for page in pages:
            await page.connect()
        try:
            return [page.ws.response.headers["X-Replica"] for page in pages]
        finally:
            for page in pages:
                await page.close()

    # two new browsers at once: one on each replica (leastconn counts their open websockets)
    assert sorted(run_async(two_tabs())) == ["r1", "r2"]


def test_a_websocket_session_and_its_50_mb_upload_go_through_the_proxy_to_one_replica(proxy):
    xsrf = xsrf_cookie()
    data = b"text,label\n" + b"a good film,good\n" * (49 * 1024 * 1024 // 17)

    async def session():
        page = loadtest().ProtocolPage(proxy.url, headers={"Cookie": f"_streamlit_xsrf={xsrf}; SERVERID=r2"})
        await page.connect()
        try:
            served_by = page.ws.response.headers["X-Replica"]
            await page.run(TIMEOUT, page="")
            await page.run(TIMEOUT)  # a second script run on the same session
            # the session lives on r2: its upload goes there too; the other replica does not know it
            here = put_upload(proxy.url, page.session_id, xsrf, data, other_cookies="SERVERID=r2")
            there = put_upload(proxy.url, page.session_id, xsrf, b"text,label\nx,y\n", other_cookies="SERVERID=r1")
            return served_by, page.session_id, page.state(), here, there
        finally:
            await page.close()

    served_by, session_id, state, here, there = run_async(session())
    assert served_by == "r2" and session_id
    assert state["body"] and not state["errors"], state
    assert here[0] in (200, 204), here  # stored
    assert there[0] == 400 and "session" in there[1].lower(), there


def test_a_dead_replica_is_taken_out_and_new_browsers_go_to_the_other(proxy):
    stop_server(proxy.replicas[0])
    t0 = time.monotonic()
    # at once: a browser whose cookie names the dead replica is served by the other one
    assert get(f"{proxy.url}/_stcore/health", cookie="r1")[:2] == ("ok", "r2")
    end = t0 + 15  # bounded: two failed checks a second apart take it out
    while "r1 is DOWN" not in proxy.log():
        assert time.monotonic() < end, proxy.log()[-2000:]
        time.sleep(0.1)
    print(f"r1 marked DOWN {time.monotonic() - t0:.1f} s after it stopped")
    # then its cookie is ignored and replaced
    assert get(f"{proxy.url}/_stcore/health", cookie="r1") == ("ok", "r2", "r2")
    assert {get(f"{proxy.url}/_stcore/health")[1] for _ in range(4)} == {"r2"}
