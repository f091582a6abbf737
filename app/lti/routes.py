"""The LTI 1.3 endpoints, served by the app's own server through `st.App` (lti_app.py):

- /lti/login   the platform's third-party initiated login (GET or POST): to the platform's
               authorization URL, the state bound to this browser by a cookie;
- /lti/launch  the platform's form post of the id_token: checked (app/lti/tool.py), then to the
               app with a one-use ticket (the course's class board for a resource link);
- /lti/jwks    the tool's public key set;
- /lti/deep-link  an instructor's chosen view placed in the course: an auto-submitted form that
               posts the signed LtiDeepLinkingResponse back to the platform.

A refused login or launch is a plain page saying why (escaped), status 400, nothing changed."""

from __future__ import annotations

import html
from urllib.parse import urlencode, urlsplit

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from bert import settings

from ..class_store.service import enabled as board_enabled
from . import tool

STATE_COOKIE = "bert_explorer_lti_state"
IDENTITY_COOKIE = "bert_explorer_lti_user"  # the launch's user, signed (app/lti/arrive.py reads it)
TICKET = "lti"  # the query parameter that carries a launch's ticket to the app (app/lti/arrive.py)


def page(title: str, body: str, status: int = 200) -> HTMLResponse:
    """A small page of the tool's own (`body` is HTML the caller escaped)."""
    doc = (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title></head>"
        f"<body style='font-family:sans-serif;max-width:40rem;margin:3rem auto'>"
        f"<h1>{html.escape(title)}</h1>{body}</body></html>"
    )
    return HTMLResponse(doc, status_code=status, headers={"Cache-Control": "no-store"})


def refused(e: tool.LaunchRefused) -> HTMLResponse:
    return page("This launch is refused", f"<p>{html.escape(str(e))}</p>", status=400)


def base_url(request: Request) -> str:
    """The tool's public address: `[lti] tool_url` (behind a proxy), else the request's own."""
    configured = str(tool.section().get("tool_url") or "").rstrip("/")
    return configured or str(request.base_url).rstrip("/")


async def params_of(request: Request) -> dict[str, str]:
    out = {k: v for k, v in request.query_params.items()}
    if request.method == "POST":
        form = await request.form()
        out.update({k: v for k, v in form.items() if isinstance(v, str)})
    return out


async def login(request: Request) -> Response:
    if tool.problem():
        return page("LTI is not set up on this server", f"<p>{html.escape(tool.problem())}</p>", status=503)
    try:
        url, state = tool.login(await params_of(request), f"{base_url(request)}/lti/launch")
    except tool.LaunchRefused as e:
        return refused(e)
    response = RedirectResponse(url, status_code=302)
    secure = request.url.scheme == "https"  # a launch is a cross-site form post: SameSite=None needs https
    response.set_cookie(
        STATE_COOKIE,
        state,
        max_age=tool.LOGIN_TTL_S,
        path="/lti",
        httponly=True,
        secure=secure,
        samesite="none" if secure else "lax",
    )
    return response


def landing(request: Request, accepted: tool.Launch, ticket: str) -> str:
    """Where an accepted launch opens: the target the platform launched when it is a view of this
    app (a placed link), else the class board (the home page when the board is off)."""
    ours = urlsplit(base_url(request))
    target = urlsplit(accepted.target)
    if accepted.kind == tool.RESOURCE_LINK and (target.scheme, target.netloc) == (ours.scheme, ours.netloc):
        path = target.path if target.path not in ("", "/", "/lti/launch") else ""
        query = target.query
    else:
        path, query = "", ""
    if not path:
        path = "/board" if board_enabled() and accepted.course else "/"
    query = "&".join(q for q in (query, urlencode({TICKET: ticket})) if q)
    return f"{ours.path.rstrip('/')}{path}?{query}"


async def launch(request: Request) -> Response:
    if tool.problem():
        return page("LTI is not set up on this server", f"<p>{html.escape(tool.problem())}</p>", status=503)
    form = await params_of(request)
    try:
        accepted = tool.launch(form.get("id_token", ""), form.get("state", ""), request.cookies.get(STATE_COOKIE))
    except tool.LaunchRefused as e:
        response = refused(e)
    else:
        response = RedirectResponse(landing(request, accepted, tool.ticket_for(accepted)), status_code=303)
        hours = settings.number("BERT_EXPLORER_SIGNIN_HOURS")
        secure = request.url.scheme == "https"
        response.set_cookie(
            IDENTITY_COOKIE,
            tool.identity_cookie(accepted, hours),
            max_age=int(hours * 3600),
            path="/",
            httponly=True,
            secure=secure,
            samesite="none" if secure else "lax",
        )
    response.delete_cookie(STATE_COOKIE, path="/lti")
    return response


async def key_set(request: Request) -> Response:
    if tool.problem():
        return JSONResponse({"error": tool.problem()}, status_code=503)
    return JSONResponse(tool.jwks(), headers={"Cache-Control": "max-age=300"})


async def deep_link(request: Request) -> Response:
    """The instructor's pick (a path of this app and its title) posted back to the platform."""
    q = request.query_params
    path = q.get("path", "/")
    if not path.startswith("/") or path.startswith("//"):
        return refused(tool.LaunchRefused("Only a view of this app can be placed in the course."))
    try:
        return_url, token = tool.deep_link_response(
            q.get("token", ""), f"{base_url(request)}{path}", q.get("title", "")
        )
    except tool.LaunchRefused as e:
        return refused(e)
    body = (
        f"<form id='f' method='post' action='{html.escape(return_url, quote=True)}'>"
        f"<input type='hidden' name='JWT' value='{html.escape(token, quote=True)}'>"
        "<p>Placing the link in your course…</p><button type='submit'>Continue</button></form>"
        "<script>document.getElementById('f').submit()</script>"
    )
    return page("Placing the link in your course", body)


def routes() -> list[Route]:
    return [
        Route("/lti/login", login, methods=["GET", "POST"]),
        Route("/lti/launch", launch, methods=["POST"]),
        Route("/lti/jwks", key_set, methods=["GET"]),
        Route("/lti/deep-link", deep_link, methods=["GET"]),
    ]
