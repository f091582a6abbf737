"""Sign-in through the school in a real Chromium, against a real OpenID Connect provider run by the
test on 127.0.0.1 (oidc-provider-mock: discovery, authorize, token, JWKS, end-session) and the app
configured by a secrets.toml of the test's own (STREAMLIT_SECRETS_FILES), as docs/DEPLOY.md shows:

- a user in the settings' teacher group signs in and may start a class board, without any key;
- a signed-in student is refused the teacher's powers, and the sidebar shows only their own name;
- signing out ends the sign-in (through the provider's end-session page) and the powers with it;
- a forged identity cookie, a forged callback and a sign-in older than BERT_EXPLORER_SIGNIN_HOURS
  are refused (the same cookie recipe, correctly signed and fresh, is accepted: the refusals are
  not an accident of the recipe);
- no name or email reaches the server's log.
"""

from __future__ import annotations

import json
import shutil
import threading
import time

import pytest
from werkzeug.serving import make_server

from benchmarks import server
from tests.helpers import link_built_data

pytestmark = pytest.mark.browser

COOKIE_SECRET = "a cookie secret for the sign-in test only"
TEACHER = {"email": "tess@school.example", "email_verified": True, "name": "Tess Teacher", "groups": ["staff"]}
STUDENT = {"email": "sam@school.example", "email_verified": True, "name": "Sam Student", "groups": ["pupils"]}
SIGN_IN = "Sign in through the school"
# The provider's pages, without their stylesheet from a CDN: nothing leaves the machine.
PLAIN_BASE = "<!doctype html><html lang='en'><main>{% block content %}{{ content }}{% endblock %}</main></html>"


@pytest.fixture(scope="module")
def provider():
    """An OpenID Connect provider on 127.0.0.1 with two users, `tess` (staff) and `sam` (a pupil)."""
    oidc = pytest.importorskip("oidc_provider_mock", reason="pip install -r requirements-dev.txt")
    from jinja2 import ChoiceLoader, DictLoader

    wsgi = oidc.app(user_claims=[oidc.User(sub="tess", claims=TEACHER), oidc.User(sub="sam", claims=STUDENT)])
    wsgi.jinja_env.loader = ChoiceLoader([DictLoader({"_base.html": PLAIN_BASE}), wsgi.jinja_env.loader])
    srv = make_server(server.HOST, 0, wsgi, threaded=True)
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    yield f"http://{server.HOST}:{srv.server_port}"
    srv.shutdown()
    thread.join(timeout=10)


def signin_env(folder, provider: str, public_url: str) -> dict[str, str]:
    """The environment of an app (or of each replica) with sign-in on: its secrets.toml in `folder`
    (redirect URI at `public_url`, what the browser opens), the provider above, the teacher group
    `staff`, the class board on."""
    secrets = folder / "secrets.toml"
    secrets.write_text(
        "[auth]\n"
        f'redirect_uri = "{public_url}/oauth2callback"\n'
        f'cookie_secret = "{COOKIE_SECRET}"\n'
        'client_id = "bert-explorer"\n'
        'client_secret = "a client secret"\n'
        f'server_metadata_url = "{provider}/.well-known/openid-configuration"\n'
    )
    return {
        "STREAMLIT_SECRETS_FILES": str(secrets),
        "BERT_EXPLORER_BOARD": "1",
        "BERT_EXPLORER_CACHE": str(link_built_data(folder / "cache")),
        "BERT_EXPLORER_TEACHER_GROUPS": "staff",
        "BERT_EXPLORER_SIGNIN_HOURS": "2",
        "BERT_EXPLORER_TEACHER_KEY": "",  # the claim alone makes the teacher, whatever the runner set
    }


@pytest.fixture(scope="module")
def signin_app(provider, tmp_path_factory, artifacts):
    """The app with sign-in on (signin_env) and its log."""
    pytest.importorskip("authlib", reason="pip install -r requirements.txt (Authlib: st.login)")
    tmp = tmp_path_factory.mktemp("signin")
    port = server.free_port()
    url = f"http://{server.HOST}:{port}"
    log = artifacts / "signin_server.log"
    proc = server.start_server(port, log, signin_env(tmp, provider, url))
    try:
        server.wait_healthy(proc, url)
        yield url, log
    finally:
        server.stop_server(proc)


def sign_in(pg, url: str, provider: str, sub: str, app_ready) -> None:
    """Open the app, click Sign in, pick `sub` on the provider's page, land back in the app."""
    pg.goto(url)
    app_ready(pg)
    pg.get_by_role("button", name=SIGN_IN).click()
    pg.wait_for_url(f"{provider}/**")
    pg.locator(f"button[name='sub'][value='{sub}']").click()
    pg.wait_for_url(f"{url}/")
    app_ready(pg)


def board(pg, url: str, app_ready) -> None:
    pg.goto(f"{url}/board")
    app_ready(pg)


def user_cookie(url: str, secret: str, claims: dict) -> dict:
    """Streamlit's identity cookie as its callback writes it, signed with `secret`."""
    from streamlit.web.server.starlette.starlette_app_utils import create_signed_value

    value = json.dumps({**claims, "origin": url, "is_logged_in": True, "provider": "default"})
    signed = create_signed_value(secret, "_streamlit_user", value).decode()
    return {"name": "_streamlit_user", "value": signed, "url": url}


def test_a_listed_teacher_signs_in_a_student_is_refused_and_signing_out_ends_it(
    signin_app, provider, page_factory, app_ready
):
    url, log = signin_app
    teacher = page_factory()
    sign_in(teacher, url, provider, "tess", app_ready)
    sidebar = teacher.get_by_test_id("stSidebar")
    sidebar.get_by_text("Signed in as Tess Teacher (teacher).").wait_for()
    board(teacher, url, app_ready)
    teacher.get_by_role("button", name="Start a board").click()  # no key typed: the claim is enough
    teacher.get_by_text("Class code:").wait_for()
    assert teacher.get_by_label("Teacher key").count() == 0

    student = page_factory()
    sign_in(student, url, provider, "sam", app_ready)
    student.get_by_test_id("stSidebar").get_by_text("Signed in as Sam Student.").wait_for()
    assert student.get_by_text("Tess Teacher").count() == 0
    board(student, url, app_ready)
    student.get_by_text("this server's settings do not list you as one").wait_for()
    assert student.get_by_role("button", name="Start a board").count() == 0

    teacher.get_by_test_id("stSidebar").get_by_role("button", name="Sign out").click()
    teacher.wait_for_url(f"{provider}/**")  # the provider's end-session page
    teacher.get_by_role("button", name="End session").click()
    teacher.wait_for_url(f"{url}/")
    app_ready(teacher)
    teacher.get_by_test_id("stSidebar").get_by_role("button", name=SIGN_IN).wait_for()
    board(teacher, url, app_ready)
    teacher.get_by_text("Starting a board is for the teacher").wait_for()
    assert teacher.get_by_role("button", name="Start a board").count() == 0
    assert "_streamlit_user" not in {c["name"] for c in teacher.context.cookies()}

    for pg in (teacher, student):
        pg.guard.assert_clean()
    text = log.read_text(errors="replace")
    for secret in ("Tess Teacher", "Sam Student", "tess@school.example", "sam@school.example"):
        assert secret not in text, f"{secret!r} in the server log"


def test_a_forged_cookie_a_forged_callback_and_an_old_sign_in_are_refused(signin_app, page_factory, app_ready):
    url, _ = signin_app
    issued = {"iss": "http://127.0.0.1:1", "sub": "tess", **TEACHER}
    cases = {
        "right": (COOKIE_SECRET, time.time() - 60),
        "forged": ("not the server's cookie secret", time.time() - 60),
        "old": (COOKIE_SECRET, time.time() - 2 * 3600 - 120),  # BERT_EXPLORER_SIGNIN_HOURS=2
    }
    pages = {}
    for name, (secret, iat) in cases.items():
        pg = page_factory()
        pg.context.add_cookies([user_cookie(url, secret, {**issued, "iat": int(iat)})])
        board(pg, url, app_ready)
        pages[name] = pg
    pages["right"].get_by_role("button", name="Start a board").wait_for()  # the recipe itself is sound
    for name in ("forged", "old"):
        pg = pages[name]
        pg.get_by_text("Starting a board is for the teacher").wait_for()
        assert pg.get_by_role("button", name="Start a board").count() == 0, name
        pg.get_by_test_id("stSidebar").get_by_role("button", name=SIGN_IN).wait_for()
        assert pg.get_by_text("Tess Teacher").count() == 0, name
    pages["old"].get_by_text("Your sign-in has expired: sign in again.").wait_for()

    forged = page_factory()
    forged.goto(f"{url}/oauth2callback?code=forged-code&state=forged-state")
    forged.wait_for_url(f"{url}/")
    app_ready(forged)
    forged.get_by_test_id("stSidebar").get_by_role("button", name=SIGN_IN).wait_for()
    assert "_streamlit_user" not in {c["name"] for c in forged.context.cookies()}
    for pg in (*pages.values(), forged):
        pg.guard.assert_clean()


@pytest.mark.skipif(shutil.which("haproxy") is None, reason="HAProxy is not installed (make setup-cluster)")
def test_sign_in_through_two_replicas_behind_haproxy_even_when_the_callback_reaches_the_other(
    provider, tmp_path_factory, page_factory, app_ready
):
    """Streamlit keeps the sign-in's state (Authlib's state and nonce) in a cookie signed with
    `[auth] cookie_secret`, not in the process: with one secret in every replica, the provider's
    callback may reach either replica (deploy/haproxy.cfg keeps a browser on one anyway)."""
    pytest.importorskip("authlib", reason="pip install -r requirements.txt (Authlib: st.login)")
    tmp = tmp_path_factory.mktemp("signin_replicas")
    ports, port = [server.free_port(), server.free_port()], server.free_port()
    url = f"http://{server.HOST}:{port}"
    procs = []
    try:
        for i, p in enumerate(ports, 1):
            folder = tmp / f"r{i}"
            folder.mkdir()
            procs.append(server.start_server(p, tmp / f"replica{i}.log", signin_env(folder, provider, url)))
        for proc, p in zip(procs, ports):
            server.wait_healthy(proc, f"http://{server.HOST}:{p}")
        procs.append(server.start_proxy(port, ports, tmp))
        server.wait_healthy(procs[-1], url)

        answered = {}  # path -> the replica that answered it
        pg = page_factory()
        pg.on("response", lambda r: answered.update({r.url.split("?")[0]: r.headers.get("x-replica")}))
        pg.goto(url)
        app_ready(pg)
        pg.get_by_role("button", name=SIGN_IN).click()
        pg.wait_for_url(f"{provider}/**")
        first = answered[f"{url}/auth/login"]
        other = {"r1": "r2", "r2": "r1"}[first]
        pg.context.add_cookies([{"name": "SERVERID", "value": other, "url": url}])  # as if the proxy moved it
        pg.locator("button[name='sub'][value='tess']").click()
        pg.wait_for_url(f"{url}/")
        app_ready(pg)
        assert answered[f"{url}/oauth2callback"] == other != first
        pg.get_by_test_id("stSidebar").get_by_text("Signed in as Tess Teacher (teacher).").wait_for()
        pg.goto(f"{url}/board")
        app_ready(pg)
        pg.get_by_role("button", name="Start a board").click()
        pg.get_by_text("Class code:").wait_for()
        pg.guard.assert_clean()
    finally:
        for proc in reversed(procs):
            server.stop_server(proc)
