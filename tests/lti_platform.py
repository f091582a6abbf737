"""An LTI 1.3 platform run by the tests on 127.0.0.1 (what Moodle or Canvas does for a tool, no
more): its own RSA key and key set, the OpenID Connect authorization endpoint that answers the
tool's login with a signed id_token posted to the tool's launch URL, a start link per prepared
launch (third-party initiated login), and a deep linking return endpoint that checks the tool's
signed response against the tool's own key set, and Assignment and Grade Services (a token for
the tool's signed client assertion, a gradebook column that takes scores with that token). And the
app as the tool (`streamlit run lti_app.py`) with a secrets.toml that registers this platform."""

from __future__ import annotations

import html
import json
import os
import subprocess
import threading
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlencode

from joserfc import jwt
from joserfc.jwk import KeySet, RSAKey
from werkzeug.serving import make_server
from werkzeug.wrappers import Request, Response

from benchmarks import server

LTI = "https://purl.imsglobal.org/spec/lti/claim/"
DL = "https://purl.imsglobal.org/spec/lti-dl/claim/"
AGS = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
CLIENT_ID = "bert-explorer-tool"
DEPLOYMENT = "deployment-1"
COURSE = {"id": "course-101", "title": "Linguistics 101"}


class Platform:
    """The platform on a free port of 127.0.0.1; `launches` are the prepared launches by name
    (its users), `placed` the content items deep linking returned, each checked."""

    def __init__(self):
        self.key = RSAKey.generate_key(2048, private=True, parameters={"kid": "platform-key-1"})
        self.launches: dict[str, dict] = {}
        self.placed: list[dict] = []
        self.scores: list[dict] = []  # what the gradebook column received
        self.tokens: set[str] = set()
        self.tool_url = ""
        self.srv = make_server(server.HOST, 0, self.wsgi, threaded=True)
        self.url = f"http://{server.HOST}:{self.srv.server_port}"
        self.thread = threading.Thread(target=self.srv.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.srv.shutdown()
        self.thread.join(timeout=10)

    def claims(
        self, nonce: str, name: str, roles: list[str], kind: str = "LtiResourceLinkRequest", target: str = "", **over
    ) -> dict:
        """An id_token's claims as this platform writes them (`target`: the item's address, the
        tool's home by default); `over` replaces (None: leaves out)."""
        now = int(time.time())
        sub = name.lower().replace(" ", "-")
        c = {
            "iss": self.url,
            "aud": CLIENT_ID,
            "sub": sub,
            "nonce": nonce,
            "iat": now,
            "exp": now + 300,
            "name": name,
            "email": f"{sub}@school.example",
            LTI + "message_type": kind,
            LTI + "version": "1.3.0",
            LTI + "deployment_id": DEPLOYMENT,
            LTI + "target_link_uri": target or f"{self.tool_url}/",
            LTI + "roles": roles,
            LTI + "context": COURSE,
            LTI + "resource_link": {"id": "link-1"},
            AGS: {"scope": [SCORE_SCOPE], "lineitem": f"{self.url}/lineitems/1"},
        }
        if kind == "LtiDeepLinkingRequest":
            c[DL + "deep_linking_settings"] = {
                "deep_link_return_url": f"{self.url}/deep-link-return",
                "accept_types": ["ltiResourceLink"],
                "data": "platform-opaque-data",
            }
        c.update(over)
        return {k: v for k, v in c.items() if v is not None}

    def sign(self, claims: dict, key: RSAKey | None = None) -> str:
        key = key or self.key
        return jwt.encode({"alg": "RS256", "kid": "platform-key-1"}, claims, key)

    def start_url(self, launch: str) -> str:
        """Where a user's browser starts `launch` (the platform's link to the tool)."""
        return f"{self.url}/start/{launch}"

    def login_query(self, launch: str) -> dict[str, str]:
        return {
            "iss": self.url,
            "login_hint": launch,
            "target_link_uri": self.launches.get(launch, {}).get("target") or f"{self.tool_url}/",
            "lti_message_hint": launch,
            "client_id": CLIENT_ID,
            "lti_deployment_id": DEPLOYMENT,
        }

    def wsgi(self, environ, start_response):
        req = Request(environ)
        if req.path == "/jwks":
            resp = Response(json.dumps({"keys": [self.key.as_dict(private=False)]}), mimetype="application/json")
        elif req.path.startswith("/start/"):
            query = urlencode(self.login_query(req.path.removeprefix("/start/")))
            resp = Response(status=302, headers={"Location": f"{self.tool_url}/lti/login?{query}"})
        elif req.path == "/auth":
            resp = self.authorize(req)
        elif req.path == "/deep-link-return" and req.method == "POST":
            resp = self.deep_link_return(req)
        elif req.path == "/token" and req.method == "POST":
            resp = self.token(req)
        elif req.path == "/lineitems/1/scores" and req.method == "POST":
            resp = self.score(req)
        else:
            resp = Response("not found", status=404)
        return resp(environ, start_response)

    def authorize(self, req: Request) -> Response:
        """The tool's authentication request answered as a platform does: checked, then the
        signed id_token form-posted to the registered launch URL."""
        a = req.args
        expected = {"scope": "openid", "response_type": "id_token", "response_mode": "form_post", "prompt": "none"}
        if any(a.get(k) != v for k, v in expected.items()) or a.get("client_id") != CLIENT_ID:
            return Response("bad authentication request", status=400)
        if a.get("redirect_uri") != f"{self.tool_url}/lti/launch" or not a.get("nonce") or not a.get("state"):
            return Response("bad redirect_uri, nonce or state", status=400)
        prepared = self.launches.get(a.get("lti_message_hint", ""))
        if prepared is None or a.get("login_hint") != a.get("lti_message_hint"):
            return Response("unknown launch", status=400)
        token = self.sign(self.claims(a["nonce"], **prepared))
        body = (
            f"<form id='f' method='post' action='{html.escape(a['redirect_uri'], quote=True)}'>"
            f"<input type='hidden' name='id_token' value='{token}'>"
            f"<input type='hidden' name='state' value='{html.escape(a['state'], quote=True)}'></form>"
            "<script>document.getElementById('f').submit()</script>"
        )
        return Response(f"<!doctype html><html><body>{body}</body></html>", mimetype="text/html")

    def tool_keys(self) -> KeySet:
        with urllib.request.urlopen(f"{self.tool_url}/lti/jwks", timeout=10) as r:
            return KeySet.import_key_set(json.loads(r.read()))

    def token(self, req: Request) -> Response:
        """The client credentials grant: the tool's assertion checked against its key set."""
        f = req.form
        if f.get("grant_type") != "client_credentials" or f.get("scope") != SCORE_SCOPE:
            return Response("bad grant", status=400)
        c = jwt.decode(f["client_assertion"], self.tool_keys(), algorithms=["RS256"]).claims
        if (c.get("iss"), c.get("sub"), c.get("aud")) != (CLIENT_ID, CLIENT_ID, f"{self.url}/token"):
            return Response("bad client assertion", status=401)
        token = f"access-{len(self.tokens)}"
        self.tokens.add(token)
        body = {"access_token": token, "token_type": "Bearer", "expires_in": 3600, "scope": SCORE_SCOPE}
        return Response(json.dumps(body), mimetype="application/json")

    def score(self, req: Request) -> Response:
        auth = req.headers.get("Authorization", "")
        if auth.removeprefix("Bearer ") not in self.tokens:
            return Response("no valid token", status=401)
        if req.mimetype != "application/vnd.ims.lis.v1.score+json":
            return Response("not a score", status=415)
        self.scores.append(json.loads(req.get_data()))
        return Response("", status=204)

    def deep_link_return(self, req: Request) -> Response:
        token = jwt.decode(req.form["JWT"], self.tool_keys(), algorithms=["RS256"])
        c = token.claims
        ok = (
            c.get("iss") == CLIENT_ID
            and c.get("aud") == self.url
            and c.get(LTI + "message_type") == "LtiDeepLinkingResponse"
            and c.get(LTI + "deployment_id") == DEPLOYMENT
            and c.get(DL + "data") == "platform-opaque-data"
            and c.get("exp", 0) > time.time()
        )
        if not ok:
            return Response(f"refused deep linking response: {c}", status=400)
        self.placed.extend(c.get(DL + "content_items") or [])
        titles = ", ".join(html.escape(i.get("title", "")) for i in self.placed)
        return Response(f"<!doctype html><html><body><h1>Placed: {titles}</h1></body></html>", mimetype="text/html")


def tool_secrets(folder: Path, platform: Platform) -> Path:
    """A secrets.toml registering `platform` with the tool (a fresh tool key in `folder`)."""
    key = folder / "tool-key.pem"
    key.write_bytes(RSAKey.generate_key(2048, private=True).as_pem(private=True))
    secrets = folder / "secrets.toml"
    secrets.write_text(
        "[lti]\n"
        f'private_key_file = "{key}"\n'
        "[[lti.platforms]]\n"
        f'issuer = "{platform.url}"\n'
        f'client_id = "{CLIENT_ID}"\n'
        f'deployment_ids = ["{DEPLOYMENT}"]\n'
        f'auth_login_url = "{platform.url}/auth"\n'
        f'key_set_url = "{platform.url}/jwks"\n'
        f'auth_token_url = "{platform.url}/token"\n'
    )
    return secrets


def start_tool(folder: Path, platform: Platform, env: dict[str, str], log_path: Path):
    """`streamlit run lti_app.py` on a free port with `platform` registered; (process, url)."""
    port = server.free_port()
    url = f"http://{server.HOST}:{port}"
    platform.tool_url = url
    full = {**os.environ, "STREAMLIT_SECRETS_FILES": str(tool_secrets(folder, platform)), **env}
    proc = server.own_session(
        server.streamlit_cmd("lti_app.py", port),
        cwd=server.ROOT,
        env=full,
        stdout=open(log_path, "w"),
        stderr=subprocess.STDOUT,
    )
    try:
        server.wait_healthy(proc, url)
    except Exception:
        server.stop_server(proc)
        raise
    return proc, url
