"""The app as an LTI 1.3 tool (IMS LTI 1.3 Core, Deep Linking 2.0): the platforms it trusts, its
key, the OpenID Connect login-initiation and the launch, checked to the letter; framework-free
(app/lti/routes.py serves it, app/lti/arrive.py hands a launch to the session that opens;
app/lti/gradebook.py sends scores back).

Configured in `.streamlit/secrets.toml` (docs/DEPLOY.md), off without an `[lti]` section:

    [lti]
    private_key_file = "/etc/bert-explorer/lti-key.pem"   # the tool's RSA key (its JWKS: /lti/jwks)
    [[lti.platforms]]
    issuer = "https://moodle.school.example"
    client_id = "the client id the platform gave"
    deployment_ids = ["1"]
    auth_login_url = "https://moodle.school.example/mod/lti/auth.php"
    key_set_url = "https://moodle.school.example/mod/lti/certs.php"

A launch is refused (LaunchRefused, its message shown as the page) unless: its state is one this
process handed out at login, to this browser, unused and under LOGIN_TTL_S old; its id_token is
signed by the platform's key (RS256, from its key set URL); `iss` is that platform, `aud` holds
its client id (`azp` too when several), the deployment is one it lists, `exp`/`iat` are current,
and its nonce is the one given at login, used once. Logins, nonces and tickets live in this
process: behind replicas, the proxy's affinity cookie must reach the launch (docs/DEPLOY.md).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import threading
import time
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from urllib.parse import urlencode

import streamlit as st
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet, RSAKey

LTI = "https://purl.imsglobal.org/spec/lti/claim/"
DL = "https://purl.imsglobal.org/spec/lti-dl/claim/"
AGS = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
RESOURCE_LINK, DEEP_LINKING = "LtiResourceLinkRequest", "LtiDeepLinkingRequest"
TEACHER_ROLES = {
    "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor",
    "http://purl.imsglobal.org/vocab/lis/v2/membership#Administrator",
}
LOGIN_TTL_S = 600  # a login must come back as a launch within this
TICKET_TTL_S = 120  # a launch's ticket must be redeemed by the app's page within this
CLOCK_SKEW_S = 60
MAX_PENDING = 10_000  # logins, nonces and tickets each: the oldest go first
KEY_SET_TTL_S = 600


class LaunchRefused(Exception):
    """A login or launch that is not accepted; the message says why, for the page shown."""


@dataclass(frozen=True)
class Platform:
    issuer: str
    client_id: str
    deployment_ids: tuple[str, ...]
    auth_login_url: str
    key_set_url: str
    auth_token_url: str = ""  # Assignment and Grade Services: where the tool gets its access token


@dataclass(frozen=True)
class Launch:
    """What an accepted launch says about its user and course (the user's name and email are for
    their own session only: app/students.py)."""

    kind: str  # RESOURCE_LINK or DEEP_LINKING
    issuer: str
    client_id: str
    deployment: str
    subject: str
    name: str
    email: str
    teacher: bool
    course: str  # the platform's context id ('' when the launch has none)
    course_title: str
    deep_link_return_url: str = ""
    deep_link_data: str = ""
    target: str = ""  # the target_link_uri the platform launched
    lineitem: str = ""  # the gradebook column of the launched link, when the platform lets scores in


@dataclass
class Pending:
    """Time-bounded one-use values of this process (logins by state, nonces, tickets)."""

    ttl_s: float
    items: dict[str, tuple[float, object]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def put(self, key: str, value: object, now: float) -> None:
        with self.lock:
            for k in [k for k, (t, _) in self.items.items() if t < now]:
                del self.items[k]
            while len(self.items) >= MAX_PENDING:
                del self.items[next(iter(self.items))]
            self.items[key] = (now + self.ttl_s, value)

    def take(self, key: str, now: float) -> object | None:
        with self.lock:
            until, value = self.items.pop(key, (0.0, None))
        return value if until >= now else None

    def get(self, key: str, now: float) -> object | None:
        with self.lock:
            until, value = self.items.get(key, (0.0, None))
        return value if until >= now else None

    def seen(self, key: str, now: float) -> bool:
        return self.get(key, now) is not None


LOGINS = Pending(LOGIN_TTL_S)  # state -> (platform issuer, client id, nonce, target)
USED_NONCES = Pending(LOGIN_TTL_S + CLOCK_SKEW_S)
TICKETS = Pending(TICKET_TTL_S)  # ticket -> Launch
DEEP_LINKS = Pending(LOGIN_TTL_S)  # token -> Launch (an instructor placing a link)


def section() -> Mapping:
    """secrets.toml's `[lti]` section, {} when there is none."""
    try:
        return st.secrets.get("lti") or {} if st.secrets.load_if_toml_exists() else {}
    except Exception:  # noqa: BLE001 - an unreadable secrets file is "off"
        return {}


def enabled() -> bool:
    return bool(section())


def platforms() -> list[Platform]:
    """The platforms `[lti]` lists (entries missing a field are left out: `problem` names them)."""
    out = []
    for p in section().get("platforms") or []:
        try:
            ids = p.get("deployment_ids") or []
            out.append(
                Platform(
                    issuer=str(p["issuer"]),
                    client_id=str(p["client_id"]),
                    deployment_ids=tuple(str(d) for d in ([ids] if isinstance(ids, str) else ids)),
                    auth_login_url=str(p["auth_login_url"]),
                    key_set_url=str(p["key_set_url"]),
                    auth_token_url=str(p.get("auth_token_url") or ""),
                )
            )
        except (KeyError, TypeError, AttributeError):
            continue
    return out


def problem() -> str:
    """What is wrong with `[lti]`, naming the setting; '' when launches can be taken."""
    if not section():
        return "LTI is off on this server: secrets.toml has no [lti] section (docs/DEPLOY.md)."
    listed = section().get("platforms") or []
    if not listed:
        return "secrets.toml [lti] lists no [[lti.platforms]]: no platform may launch this tool."
    if len(platforms()) < len(listed):
        return (
            "An [[lti.platforms]] entry in secrets.toml lacks one of issuer, client_id, "
            "auth_login_url, key_set_url: that platform cannot launch this tool."
        )
    try:
        tool_key()
    except (OSError, ValueError, JoseError) as e:
        return f"secrets.toml [lti] private_key_file cannot be read as an RSA private key ({type(e).__name__})."
    return ""


@lru_cache(maxsize=4)
def _key_from(pem: bytes) -> RSAKey:
    key = RSAKey.import_key(pem)
    if not key.is_private:
        raise ValueError("not a private key")
    kid = hashlib.sha256(json.dumps(key.as_dict(private=False), sort_keys=True).encode()).hexdigest()[:16]
    return RSAKey.import_key(pem, parameters={"kid": kid, "use": "sig", "alg": "RS256"})


def tool_key() -> RSAKey:
    """The tool's signing key: `[lti] private_key` (PEM text) or `private_key_file`."""
    cfg = section()
    pem = cfg.get("private_key") or Path(str(cfg.get("private_key_file") or "")).read_text()
    return _key_from(str(pem).encode())


def jwks() -> dict:
    """The tool's public key set (what platforms fetch from /lti/jwks)."""
    return {"keys": [tool_key().as_dict(private=False)]}


def tool_secret(purpose: str) -> bytes:
    """A secret of this tool for `purpose`, derived from its private key (the same in every replica)."""
    d = tool_key().as_dict(private=True)["d"]
    return hmac.new(d.encode(), purpose.encode(), hashlib.sha256).digest()


def trusted_platform(issuer: str, client_id: str | None) -> Platform:
    known = [p for p in platforms() if p.issuer == issuer and (client_id is None or p.client_id == client_id)]
    if not known:
        raise LaunchRefused("This learning platform (its issuer and client id) is not one this server trusts.")
    return known[0]


def login(params: Mapping[str, str], redirect_uri: str, now: float | None = None) -> tuple[str, str]:
    """Third-party initiated login: (the platform's authorization URL to send the browser to, the
    state to bind to the browser's cookie)."""
    now = time.time() if now is None else now
    iss, hint, target = params.get("iss"), params.get("login_hint"), params.get("target_link_uri")
    if not iss or not hint or not target:
        raise LaunchRefused("A launch must start with iss, login_hint and target_link_uri: start it from the course.")
    platform = trusted_platform(iss, params.get("client_id"))
    state, nonce = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
    LOGINS.put(state, (platform.issuer, platform.client_id, nonce, target), now)
    query = {
        "scope": "openid",
        "response_type": "id_token",
        "response_mode": "form_post",
        "prompt": "none",
        "client_id": platform.client_id,
        "redirect_uri": redirect_uri,
        "login_hint": hint,
        "state": state,
        "nonce": nonce,
    }
    if params.get("lti_message_hint"):
        query["lti_message_hint"] = params["lti_message_hint"]
    sep = "&" if "?" in platform.auth_login_url else "?"
    return f"{platform.auth_login_url}{sep}{urlencode(query)}", state


_KEY_SETS: dict[str, tuple[float, KeySet]] = {}


def platform_keys(platform: Platform, now: float) -> KeySet:
    """The platform's public keys from its key set URL (kept KEY_SET_TTL_S)."""
    cached = _KEY_SETS.get(platform.key_set_url)
    if cached and cached[0] > now:
        return cached[1]
    try:
        with urllib.request.urlopen(platform.key_set_url, timeout=10) as r:  # noqa: S310 - the server's setting
            keys = KeySet.import_key_set(json.loads(r.read(1_000_000)))
    except (OSError, ValueError, JoseError) as e:
        raise LaunchRefused(
            "The platform's key set (secrets.toml [[lti.platforms]] key_set_url) could not be read "
            f"({type(e).__name__})."
        ) from e
    _KEY_SETS[platform.key_set_url] = (now + KEY_SET_TTL_S, keys)
    return keys


def launch(id_token: str, state: str, browser_state: str | None, now: float | None = None) -> Launch:
    """Check a launch (the platform's form post) to the letter; the Launch, or LaunchRefused."""
    now = time.time() if now is None else now
    if not state or not browser_state or not hmac.compare_digest(state, browser_state):
        raise LaunchRefused(
            "This launch did not start in this browser (its state does not match): open it from the course "
            "again, in a new window if the platform shows it inside its page."
        )
    pending = LOGINS.take(state, now)
    if pending is None:
        raise LaunchRefused("This launch's login is unknown, used or too old: open it from the course again.")
    issuer, client_id, nonce, target = pending
    platform = trusted_platform(issuer, client_id)
    return _launch_of(_token_claims(id_token, platform, nonce, now), platform, target)


def _token_claims(id_token: str, platform, nonce: str, now: float) -> dict:
    """The id token's claims, once its signature, issuer, audience, times and nonce hold."""
    try:
        token = jwt.decode(id_token or "", platform_keys(platform, now), algorithms=["RS256"])
    except (JoseError, ValueError) as e:
        raise LaunchRefused("The launch's token is not signed by the platform's key.") from e
    c = token.claims
    if c.get("iss") != platform.issuer:
        raise LaunchRefused("The launch's token names another issuer than the platform it came from.")
    aud = c.get("aud")
    auds = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
    if platform.client_id not in auds or (len(auds) > 1 and c.get("azp") != platform.client_id):
        raise LaunchRefused("The launch's token is meant for another tool (its audience is not this tool).")
    exp, iat = c.get("exp"), c.get("iat")
    if not isinstance(exp, (int, float)) or exp < now - CLOCK_SKEW_S:
        raise LaunchRefused("The launch's token has expired: open it from the course again.")
    if not isinstance(iat, (int, float)) or iat > now + CLOCK_SKEW_S or iat < now - LOGIN_TTL_S:
        raise LaunchRefused("The launch's token was not issued just now: open it from the course again.")
    got_nonce = c.get("nonce")
    if not isinstance(got_nonce, str) or USED_NONCES.seen(got_nonce, now):
        raise LaunchRefused("This launch was used already (its nonce is spent): open it from the course again.")
    USED_NONCES.put(got_nonce, True, now)
    if not hmac.compare_digest(got_nonce, nonce):
        raise LaunchRefused("The launch's nonce is not the one its login gave: open it from the course again.")
    return c


def _launch_of(c: dict, platform, target) -> Launch:
    """The Launch the verified claims describe, once its deployment, kind and user hold."""
    deployment = c.get(LTI + "deployment_id")
    if not isinstance(deployment, str) or deployment not in platform.deployment_ids:
        raise LaunchRefused("This deployment of the tool is not one this server lists for the platform.")
    kind = c.get(LTI + "message_type")
    if c.get(LTI + "version") != "1.3.0" or kind not in (RESOURCE_LINK, DEEP_LINKING):
        raise LaunchRefused("This is not an LTI 1.3 launch this tool takes (a resource link or deep linking).")
    sub = c.get("sub")
    if not isinstance(sub, str) or not sub:
        raise LaunchRefused("The launch names no user (its sub claim is empty).")
    context = c.get(LTI + "context") if isinstance(c.get(LTI + "context"), dict) else {}
    roles = c.get(LTI + "roles") if isinstance(c.get(LTI + "roles"), list) else []
    dl = c.get(DL + "deep_linking_settings") if isinstance(c.get(DL + "deep_linking_settings"), dict) else {}
    if kind == DEEP_LINKING and not isinstance(dl.get("deep_link_return_url"), str):
        raise LaunchRefused("A deep linking launch must give its deep_link_return_url.")

    def text(v: object) -> str:
        return v.strip()[:200] if isinstance(v, str) else ""

    claimed_target = c.get(LTI + "target_link_uri")  # the item launched (a placed view), else the login's
    ags = c.get(AGS) if isinstance(c.get(AGS), dict) else {}
    scopes = ags.get("scope") if isinstance(ags.get("scope"), list) else []

    return Launch(
        kind=kind,
        issuer=platform.issuer,
        client_id=platform.client_id,
        deployment=deployment,
        subject=sub,
        name=text(c.get("name")) or " ".join(filter(None, (text(c.get("given_name")), text(c.get("family_name"))))),
        email=text(c.get("email")),
        teacher=bool(TEACHER_ROLES & {r for r in roles if isinstance(r, str)}),
        course=text(context.get("id")),
        course_title=text(context.get("title")) or text(context.get("label")),
        deep_link_return_url=text(dl.get("deep_link_return_url")) if kind == DEEP_LINKING else "",
        deep_link_data=dl.get("data") if isinstance(dl.get("data"), str) else "",
        target=claimed_target if isinstance(claimed_target, str) and claimed_target else str(target),
        lineitem=text(ags.get("lineitem")) if SCORE_SCOPE in scopes else "",
    )


def ticket_for(accepted: Launch, now: float | None = None) -> str:
    """A one-use ticket the app's page redeems (app/lti/arrive.py) to take this launch's identity."""
    ticket = secrets.token_urlsafe(24)
    TICKETS.put(ticket, accepted, time.time() if now is None else now)
    return ticket


def redeem(ticket: str, now: float | None = None) -> Launch | None:
    value = TICKETS.take(ticket or "", time.time() if now is None else now)
    return value if isinstance(value, Launch) else None


def deep_link_token(accepted: Launch, now: float | None = None) -> str:
    """A one-use token with which this instructor's session places one link (routes.deep_link_return)."""
    token = secrets.token_urlsafe(24)
    DEEP_LINKS.put(token, accepted, time.time() if now is None else now)
    return token


def deep_link_response(token: str, url: str, title: str, now: float | None = None) -> tuple[str, str]:
    """(the platform's deep_link_return_url, the signed LtiDeepLinkingResponse JWT placing `url`)."""
    now = time.time() if now is None else now
    accepted = DEEP_LINKS.take(token or "", now)
    if not isinstance(accepted, Launch):
        raise LaunchRefused("This link placement is unknown, used or too old: start it from the course again.")
    claims = {
        "iss": accepted.client_id,
        "aud": accepted.issuer,
        "iat": int(now),
        "exp": int(now) + 300,
        "nonce": secrets.token_urlsafe(16),
        LTI + "message_type": "LtiDeepLinkingResponse",
        LTI + "version": "1.3.0",
        LTI + "deployment_id": accepted.deployment,
        DL + "content_items": [{"type": "ltiResourceLink", "title": title[:200], "url": url}],
    }
    if accepted.deep_link_data:
        claims[DL + "data"] = accepted.deep_link_data
    key = tool_key()
    return accepted.deep_link_return_url, jwt.encode({"alg": "RS256", "kid": key.kid}, claims, key)


IDENTITY_FIELDS = ("issuer", "subject", "name", "email", "teacher")


def identity_cookie(accepted: Launch, hours: float, now: float | None = None) -> str:
    """The launch's user as a cookie value signed with the tool's secret, good for `hours`: a
    reload or a new tab of the launched browser stays that user (app/lti/arrive.py)."""
    now = time.time() if now is None else now
    body = {f: getattr(accepted, f) for f in IDENTITY_FIELDS} | {"exp": int(now + hours * 3600)}
    payload = base64.urlsafe_b64encode(json.dumps(body, separators=(",", ":")).encode()).decode()
    mac = hmac.new(tool_secret("identity cookie"), payload.encode(), hashlib.sha256).hexdigest()
    return f"{payload}.{mac}"


def identity_from_cookie(value: str | None, now: float | None = None) -> dict | None:
    """The user an identity cookie names (IDENTITY_FIELDS), or None: unsigned, forged or expired."""
    payload, _, mac = (value or "").strip('"').rpartition(".")
    if not payload or not mac:
        return None
    want = hmac.new(tool_secret("identity cookie"), payload.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(mac, want):
        return None
    try:
        body = json.loads(base64.urlsafe_b64decode(payload.encode()))
    except ValueError:
        return None
    if not isinstance(body, dict) or not isinstance(body.get("exp"), int):
        return None
    if body["exp"] < (time.time() if now is None else now):
        return None
    out = {f: body.get(f) for f in IDENTITY_FIELDS}
    ok = all(isinstance(out[f], str) for f in IDENTITY_FIELDS[:4]) and isinstance(out["teacher"], bool)
    return out if ok else None
