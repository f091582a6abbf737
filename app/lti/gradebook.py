"""Scores sent to a platform's gradebook (IMS LTI Assignment and Grade Services 2.0): each launched
student's latest launch with a gradebook column kept, an access token got with the tool's signed
assertion (the client credentials grant), and each score posted to the student's column."""

from __future__ import annotations

import json
import secrets
import time
import urllib.request
from urllib.parse import urlencode

from joserfc import jwt

from .tool import SCORE_SCOPE, Launch, LaunchRefused, Pending, Platform, tool_key, trusted_platform


class GradebookError(Exception):
    """Scores could not be sent; the message says why, naming the setting when it is one."""


GRADEBOOK = Pending(24 * 3600)  # a student's key -> their latest Launch with a gradebook column


def _post(url: str, data: bytes, headers: dict[str, str]) -> dict:
    req = urllib.request.Request(url, data=data, headers=headers, method="POST")
    with urllib.request.urlopen(req, timeout=20) as r:  # noqa: S310 - the platform's own endpoints
        body = r.read(1_000_000)
    return json.loads(body) if body.strip() else {}


def access_token(platform: Platform, now: float | None = None) -> str:
    """An access token for scores: the client credentials grant with the tool's signed assertion."""
    if not platform.auth_token_url:
        raise GradebookError("secrets.toml [[lti.platforms]] has no auth_token_url: scores cannot be sent.")
    now = time.time() if now is None else now
    key = tool_key()
    assertion = jwt.encode(
        {"alg": "RS256", "kid": key.kid},
        {
            "iss": platform.client_id,
            "sub": platform.client_id,
            "aud": platform.auth_token_url,
            "iat": int(now),
            "exp": int(now) + 300,
            "jti": secrets.token_urlsafe(16),
        },
        key,
    )
    form = {
        "grant_type": "client_credentials",
        "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
        "client_assertion": assertion,
        "scope": SCORE_SCOPE,
    }
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    try:
        got = _post(platform.auth_token_url, urlencode(form).encode(), headers)
    except (OSError, ValueError) as e:
        raise GradebookError(f"The platform's token endpoint refused or did not answer ({type(e).__name__}).") from e
    if not isinstance(got.get("access_token"), str):
        raise GradebookError("The platform's token endpoint gave no access token.")
    return got["access_token"]


def post_scores(scores: list[tuple[Launch, float, float]], now: float | None = None) -> int:
    """Send each (student's launch, score given, score maximum) to their gradebook column; how many."""
    now = time.time() if now is None else now
    tokens: dict[tuple[str, str], str] = {}
    sent = 0
    for who, given, maximum in scores:
        try:
            platform = trusted_platform(who.issuer, who.client_id)
        except LaunchRefused as e:
            raise GradebookError(str(e)) from e
        token = tokens.get((platform.issuer, platform.client_id)) or access_token(platform, now)
        tokens[(platform.issuer, platform.client_id)] = token
        score = {
            "userId": who.subject,
            "scoreGiven": given,
            "scoreMaximum": maximum,
            "activityProgress": "Completed",
            "gradingProgress": "FullyGraded",
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
        }
        path, _, query = who.lineitem.partition("?")
        url = f"{path.rstrip('/')}/scores" + (f"?{query}" if query else "")
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/vnd.ims.lis.v1.score+json"}
        try:
            _post(url, json.dumps(score).encode(), headers)
        except (OSError, ValueError) as e:
            raise GradebookError(f"The gradebook refused a score or did not answer ({type(e).__name__}).") from e
        sent += 1
    return sent
