"""Who is using this session: the one place every feature that counts, remembers or trusts people
asks (one job each, a class question's answers, a post on the board, the teacher's powers).

- Launched from the course (LTI 1.3, app/lti/): the platform's user, told by issuer + subject
  (hashed); a teacher by the launch's Instructor role.

- Signed in through the school (OpenID Connect, `st.login`; on when `.streamlit/secrets.toml` has an
  `[auth]` section, docs/DEPLOY.md): the provider's user, told by issuer + subject (hashed), the same
  in every browser they sign in from. A sign-in counts for BERT_EXPLORER_SIGNIN_HOURS after the
  provider issued it; then the session is anonymous again until the user signs in anew. A teacher
  is a signed-in user whose verified email (BERT_EXPLORER_TEACHER_EMAILS) or group claim
  (BERT_EXPLORER_TEACHER_GROUPS) the settings list.
- Anonymous (the default): this browser, all its tabs, told by Streamlit's XSRF cookie (hashed: the
  token itself is never kept), else this session, by the owner id it keeps in its state (jobs are
  looked up with it, so a session only ever reaches its own).

A person's real name and email stay in their own session's `Identity`, and go with what they do on
a class board (a post, a live run, an answer) to that board's store for its teacher's own screen and
CSV (`real_name`, app/class_store/store.py: BoardStore.keep_name); what is shown to others is a nickname.
They are never logged."""

from __future__ import annotations

import hashlib
import json
import time
import urllib.request
import uuid
from collections.abc import Mapping
from dataclasses import dataclass

import streamlit as st

from bert import settings

OWNER = "train_owner"  # str: this session's owner id for app.jobs (never shown)
LAUNCHED = "lti_launched"  # dict: the identity an LTI launch gave this session (app/lti/arrive.py)
ANONYMOUS, SIGNED_IN, LAUNCHED_FROM_COURSE = "anonymous", "signed in", "launched from the course"


@dataclass(frozen=True)
class Identity:
    """Who this session is. `key` is what caps, answers and posts are counted and stored under;
    `name` and `email` are for this session's own screen only; `nickname` is the provider's
    nickname claim, offered as the board nickname (what classmates see)."""

    key: str
    via: str = ANONYMOUS  # ANONYMOUS, SIGNED_IN or LAUNCHED_FROM_COURSE
    name: str = ""
    email: str = ""
    nickname: str = ""
    teacher: bool = False  # by a listed claim or the LTI Instructor role (the key: app/server/teacher.py)
    expired: bool = False  # a sign-in older than BERT_EXPLORER_SIGNIN_HOURS: anonymous again


def owner() -> str:
    """This session's owner id: jobs are looked up with it, so a session only sees its own."""
    ss = st.session_state
    if OWNER not in ss:
        ss[OWNER] = uuid.uuid4().hex
    return ss[OWNER]


def browser_id(xsrf_cookie: str | None) -> str | None:
    """A stable id of one browser from Streamlit's `_streamlit_xsrf` cookie, or None. The cookie
    ("2|mask|masked token|time") is set once per browser and sent by all its tabs; its token,
    unmasked, is the same in each. Hashed: the token itself is never kept."""
    parts = (xsrf_cookie or "").strip("\"'").split("|")
    try:
        if len(parts) == 4 and parts[0] == "2":
            mask, masked = bytes.fromhex(parts[1]), bytes.fromhex(parts[2])
            token = bytes(b ^ mask[i % 4] for i, b in enumerate(masked))
        elif len(parts) == 1 and len(parts[0]) >= 16:
            token = parts[0].encode()
        else:
            return None
    except ValueError:
        return None
    return hashlib.sha256(b"bert-explorer:" + token).hexdigest()[:20] if token else None


def user_id(issuer: str, subject: str) -> str:
    """A stable id of one provider's user (OpenID Connect: `sub` is unique within its `iss`), hashed
    so that no stored key reveals an email or a provider's id."""
    return hashlib.sha256(f"bert-explorer-user:{issuer}\n{subject}".encode()).hexdigest()[:20]


def signin_on() -> bool:
    """Sign-in through the school is configured: secrets.toml has an `[auth]` section."""
    return bool(auth_section())


def auth_section() -> Mapping:
    """secrets.toml's `[auth]` section, {} when there is none."""
    try:
        return st.secrets.get("auth") or {} if st.secrets.load_if_toml_exists() else {}
    except Exception:  # noqa: BLE001 - an unreadable secrets file is "off"
        return {}


SERVER_KEYS = ("redirect_uri", "cookie_secret")  # [auth] itself
PROVIDER_KEYS = ("client_id", "client_secret", "server_metadata_url")  # [auth] or [auth.default]
MIN_COOKIE_SECRET = 16  # characters: the identity cookie is signed with it


def auth_value(auth: Mapping, key: str) -> str:
    """A key of the `[auth]` section, or (PROVIDER_KEYS) of its `[auth.default]`; '' when neither."""
    default = auth.get("default") if key in PROVIDER_KEYS else None
    value = auth.get(key) or (default.get(key) if isinstance(default, Mapping) else None)
    return str(value or "").strip()


def auth_problem(auth: Mapping) -> str:
    """What stops `st.login` with this `[auth]` section, naming the setting; '' when nothing does."""
    try:
        import authlib  # noqa: F401 - st.login's OpenID Connect client
    except ImportError:
        return "Sign-in needs Authlib on the server: pip install -r requirements.txt."
    missing = [k for k in SERVER_KEYS + PROVIDER_KEYS if not auth_value(auth, k)]
    if missing:
        return f"secrets.toml [auth] has no {', '.join(missing)}: sign-in cannot start (docs/DEPLOY.md)."
    if not auth_value(auth, "redirect_uri").rstrip("/").endswith("/oauth2callback"):
        return "secrets.toml [auth] redirect_uri must be this server's address ending in /oauth2callback."
    if len(auth_value(auth, "cookie_secret")) < MIN_COOKIE_SECRET:
        return f"secrets.toml [auth] cookie_secret is shorter than {MIN_COOKIE_SECRET} characters."
    return ""


def provider_problem(metadata_url: str, timeout_s: float = 5.0) -> str:
    """'' when the provider's discovery document at `metadata_url` answers with the endpoints a
    sign-in needs; else what is wrong, naming the setting (asked on the Sign in click, not each run)."""
    where = f"the sign-in provider (secrets.toml [auth] server_metadata_url = {metadata_url})"
    try:
        with urllib.request.urlopen(metadata_url, timeout=timeout_s) as r:  # noqa: S310 - the server's own setting
            doc = json.loads(r.read(1_000_000))
    except (OSError, ValueError) as e:
        return f"Signing in is not possible now: {where} does not answer ({type(e).__name__})."
    need = ("issuer", "authorization_endpoint", "token_endpoint", "jwks_uri")
    if not isinstance(doc, dict) or not all(isinstance(doc.get(k), str) for k in need):
        return f"Signing in is not possible now: {where} is not an OpenID Connect discovery document."
    return ""


def _listed(name: str) -> set[str]:
    """A setting's comma- or space-separated list, compared case-insensitively."""
    return {v.casefold() for v in settings.text(name).replace(",", " ").split()}


def teacher_by_claims(claims: dict) -> bool:
    """The settings list this user's email (unless the provider says it is unverified) or one of
    the groups in their group claim (BERT_EXPLORER_GROUPS_CLAIM: a list or one string)."""
    email = claims.get("email")
    if isinstance(email, str) and claims.get("email_verified") is not False:
        if email.strip().casefold() in _listed("BERT_EXPLORER_TEACHER_EMAILS"):
            return True
    groups = claims.get(settings.text("BERT_EXPLORER_GROUPS_CLAIM") or "groups")
    groups = [groups] if isinstance(groups, str) else groups if isinstance(groups, list) else []
    return bool({g.casefold() for g in groups if isinstance(g, str)} & _listed("BERT_EXPLORER_TEACHER_GROUPS"))


def signed_in(claims: dict, now: float | None = None) -> Identity | None:
    """The identity `claims` (st.user's, an ID token's) give, or None when they are not a sign-in
    (no issuer or subject). A sign-in issued (`iat`) longer than BERT_EXPLORER_SIGNIN_HOURS ago,
    or without an issue time, is expired: an anonymous key with `expired` set."""
    iss, sub = claims.get("iss"), claims.get("sub")
    if not isinstance(iss, str) or not iss or not isinstance(sub, str) or not sub:
        return None
    issued = claims.get("iat")
    hours = settings.number("BERT_EXPLORER_SIGNIN_HOURS")
    now = time.time() if now is None else now
    if not isinstance(issued, (int, float)) or not (now - hours * 3600 <= issued <= now + 300):
        return Identity(anonymous_key(), expired=True)

    def text(name: str) -> str:
        v = claims.get(name)
        return v.strip() if isinstance(v, str) else ""

    return Identity(
        key=f"user:{user_id(iss, sub)}",
        via=SIGNED_IN,
        name=text("name") or " ".join(filter(None, (text("given_name"), text("family_name")))),
        email=text("email"),
        nickname=text("nickname"),
        teacher=teacher_by_claims(claims),
    )


def anonymous_key() -> str:
    """This browser (all its tabs) when Streamlit's XSRF cookie is there (server.enableXsrfProtection,
    on by default), else this session. Another browser or a private window is another student: the
    queue cap still bounds them all."""
    try:
        cookie = st.context.cookies.get("_streamlit_xsrf")
    except Exception:  # noqa: BLE001 - no context (tests)
        cookie = None
    bid = browser_id(cookie)
    return f"browser:{bid}" if bid else f"session:{owner()}"


def launched(issuer: str, subject: str, name: str, email: str, teacher: bool) -> Identity:
    """The identity an accepted LTI launch gives (its platform's user; a teacher by the role)."""
    return Identity(f"user:{user_id(issuer, subject)}", LAUNCHED_FROM_COURSE, name, email, "", teacher)


def identity() -> Identity:
    """Who this session is: the user its LTI launch named, else the signed-in user while their
    sign-in counts, else anonymous."""
    course = st.session_state.get(LAUNCHED)
    if isinstance(course, dict):
        return launched(**course)
    if signin_on():
        claims = st.user.to_dict()
        if claims.get("is_logged_in"):
            who = signed_in(claims)
            if who is not None:
                return who
    return Identity(anonymous_key())


def real_name() -> dict[str, str]:
    """This session's real name and email as the board keeps them for the teacher (its `name` and
    `email` arguments): both '' for an anonymous student."""
    who = identity()
    return {"name": who.name, "email": who.email}


def student_key() -> str:
    """Who the one-job-per-student cap, a question's answers and a board's posts count."""
    return identity().key
