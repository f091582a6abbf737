"""The app as an LTI 1.3 tool, over HTTP against a platform run by the test on 127.0.0.1
(tests/lti_platform.py) and the real server (`streamlit run lti_app.py`): the JWKS, a login and
an accepted launch; then a forged signature, a wrong issuer, audience and deployment, an expired
token, a replayed nonce and a launch from another browser each refused with a page saying why,
status 400, no ticket handed out and no board made."""

from __future__ import annotations

import base64
import html
import http.client
import json
import re
import sqlite3
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from tests.helpers import link_built_data
from tests.lti_platform import CLIENT_ID, INSTRUCTOR, LTI, Platform, start_tool

pytestmark = pytest.mark.slow
RSAKey = pytest.importorskip("joserfc.jwk", reason="pip install -r requirements.txt").RSAKey


@pytest.fixture(scope="module")
def lti(tmp_path_factory):
    platform = Platform()
    folder = tmp_path_factory.mktemp("lti")
    cache = link_built_data(folder / "cache")
    env = {"BERT_EXPLORER_BOARD": "1", "BERT_EXPLORER_CACHE": str(cache)}
    proc, url = start_tool(folder, platform, env, folder / "tool.log")
    yield platform, url, cache
    from benchmarks import server

    server.stop_server(proc)
    platform.stop()


def request(url: str, method: str = "GET", form: dict | None = None, cookie: str = ""):
    """(status, headers, body as read) of one request, redirects not followed."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    headers = {"Cookie": cookie} if cookie else {}
    body = None
    if form is not None:
        body = urlencode(form)
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    conn.request(method, parts.path + (f"?{parts.query}" if parts.query else ""), body=body, headers=headers)
    r = conn.getresponse()
    out = r.status, {k.lower(): v for k, v in r.getheaders()}, html.unescape(r.read().decode())
    conn.close()
    return out


def login(platform: Platform, url: str) -> tuple[str, str, str]:
    """A login as the platform starts it: (state, nonce, the state cookie) from the tool's answer."""
    status, headers, _ = request(f"{url}/lti/login?{urlencode(platform.login_query('x'))}")
    assert status == 302
    q = parse_qs(urlsplit(headers["location"]).query)
    assert headers["location"].startswith(f"{platform.url}/auth?") and q["client_id"] == [CLIENT_ID]
    assert q["redirect_uri"] == [f"{url}/lti/launch"] and q["response_mode"] == ["form_post"]
    cookie = re.match(r"([^;]+)", headers["set-cookie"]).group(1)
    return q["state"][0], q["nonce"][0], cookie


def boards(cache) -> int:
    db = cache / "board" / "board.sqlite"
    if not db.exists():
        return 0
    with sqlite3.connect(db) as c:
        return c.execute("SELECT COUNT(*) FROM boards").fetchone()[0]


def test_the_tool_serves_its_key_set_and_takes_a_launch_checked_to_the_letter(lti):
    platform, url, cache = lti
    status, headers, body = request(f"{url}/lti/jwks")
    assert status == 200 and [k["kty"] for k in json.loads(body)["keys"]] == ["RSA"]
    assert '"d"' not in body  # the public half only

    state, nonce, cookie = login(platform, url)
    good = platform.sign(platform.claims(nonce, "Ina Instructor", [INSTRUCTOR]))
    status, headers, _ = request(f"{url}/lti/launch", "POST", {"id_token": good, "state": state}, cookie)
    assert status == 303 and re.fullmatch(r"/board\?lti=[\w-]{20,}", headers["location"])

    before = boards(cache)
    forger = RSAKey.generate_key(2048, private=True)
    cases = {
        "not signed by the platform's key": lambda n: platform.sign(platform.claims(n, "Eve", [INSTRUCTOR]), forger),
        "another issuer": lambda n: platform.sign(platform.claims(n, "Eve", [INSTRUCTOR], iss="http://evil")),
        "meant for another tool": lambda n: platform.sign(platform.claims(n, "Eve", [INSTRUCTOR], aud="other-tool")),
        "deployment of the tool is not one": lambda n: platform.sign(
            platform.claims(n, "Eve", [INSTRUCTOR], **{LTI + "deployment_id": "deployment-9"})
        ),
        "has expired": lambda n: platform.sign(platform.claims(n, "Eve", [INSTRUCTOR], iat=1, exp=2)),
        "used already": lambda n: good,  # the accepted launch's token (its nonce spent) on a new login
    }
    for why, make in cases.items():
        state, nonce, cookie = login(platform, url)
        status, headers, body = request(f"{url}/lti/launch", "POST", {"id_token": make(nonce), "state": state}, cookie)
        assert (status, "location" in headers) == (400, False), why
        assert "This launch is refused" in body and why in body, (why, body)
        assert "Traceback" not in body

    state, nonce, _ = login(platform, url)  # the right token, but from a browser without the login's cookie
    token = platform.sign(platform.claims(nonce, "Eve", [INSTRUCTOR]))
    status, headers, body = request(f"{url}/lti/launch", "POST", {"id_token": token, "state": state})
    assert status == 400 and "did not start in this browser" in body
    status, _, body = request(f"{url}/lti/login?iss=http://evil&login_hint=a&target_link_uri=b")
    assert status == 400 and "not one this server trusts" in body
    assert boards(cache) == before  # nothing changed


def test_the_launched_users_cookie_is_refused_forged_changed_or_expired(monkeypatch):
    from app.lti import tool

    monkeypatch.setattr(tool, "tool_secret", lambda purpose: f"secret of the test:{purpose}".encode())
    stu = tool.Launch(tool.RESOURCE_LINK, "https://lms", "c", "d", "stu", "Stu Student", "s@x", False, "101", "L")
    now = 1_900_000_000
    cookie = tool.identity_cookie(stu, hours=2, now=now)
    assert tool.identity_from_cookie(cookie, now=now + 3600) == {
        "issuer": "https://lms",
        "subject": "stu",
        "name": "Stu Student",
        "email": "s@x",
        "teacher": False,
    }
    assert tool.identity_from_cookie(cookie, now=now + 2 * 3600 + 1) is None  # expired
    payload, mac = cookie.rsplit(".", 1)
    body = json.loads(base64.urlsafe_b64decode(payload))
    promoted = base64.urlsafe_b64encode(json.dumps({**body, "teacher": True}).encode()).decode()
    assert tool.identity_from_cookie(f"{promoted}.{mac}", now=now) is None  # changed: its signature no longer fits
    monkeypatch.setattr(tool, "tool_secret", lambda purpose: b"another server's secret")
    assert tool.identity_from_cookie(cookie, now=now) is None  # signed by another key
    assert tool.identity_from_cookie("", now=now) is None and tool.identity_from_cookie("x.y", now=now) is None
