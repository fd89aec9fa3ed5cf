"""Who may see the dashboard: its token (the login form's cookie, or a header), the loopback Host
check when it has none, the same-origin check on actions, and the Content-Security-Policy every
page carries.

With a token (always when bound off loopback) every route but /static and /login needs it: the
cookie set when the login form posts it (never a token in a URL), or an ``Authorization: Bearer`` /
``X-PhysLab-Token`` header. Without a token (loopback only) the Host header must name a loopback host
(no DNS rebinding) and actions must come with a same-origin ``Origin`` (if any), so another web page
cannot post them.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs

from fastapi import APIRouter, FastAPI, Request, Response
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse

from physlab.web import render
from physlab.web.dashboard import dashboard

COOKIE = "physlab_token"
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
# The pages load only their own script and stylesheet: injected markup could not run a script even
# if it got past the templates' escaping.
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; "
       "base-uri 'none'; form-action 'self'; frame-ancestors 'none'")

Next = Callable[[Request], Awaitable[Response]]
router = APIRouter()


def own_path(path: str) -> bool:
    """A path on this server to go back to after the login (never another site: ``//host``,
    ``/\\host``, a scheme)."""
    # no whitespace or backslash anywhere: browsers drop tabs and newlines and read \\ as /, so
    # "/\t/evil.example" would leave the site
    return len(path) < 2000 and re.fullmatch(r"/(?!/)[^\s\\\x00-\x1f\x7f]*", path) is not None


def _matches(given: str, token: str) -> bool:
    return bool(given) and secrets.compare_digest(given.encode(), token.encode())


def authorised(request: Request, token: str | None) -> bool:
    if token is None:
        return True
    given = (request.cookies.get(COOKIE) or request.headers.get("x-physlab-token")
             or request.headers.get("authorization", "").removeprefix("Bearer ").strip())
    return _matches(given, token)


def _host(request: Request) -> str:
    """The Host header's host, without its port (an IPv6 host keeps its brackets)."""
    host = request.headers.get("host") or ""
    return host.split("]")[0] + "]" if host.startswith("[") else host.rsplit(":", 1)[0]


def _cross_origin(request: Request) -> bool:
    origin = request.headers.get("origin")
    if request.method != "POST" or not origin:
        return False
    return origin.split("://", 1)[-1] != request.headers.get("host")


async def content_security_policy(request: Request, call_next: Next) -> Response:
    response = await call_next(request)
    response.headers.setdefault("Content-Security-Policy", CSP)
    return response


async def guard(request: Request, call_next: Next) -> Response:
    token = dashboard(request).token
    path = request.url.path
    if token is None and _host(request) not in LOOPBACK_HOSTS:  # also in tests (their clients name 127.0.0.1)
        return PlainTextResponse("host not allowed", status_code=403)
    if path.startswith("/static/") or path == "/login" or authorised(request, token):
        if _cross_origin(request):
            return PlainTextResponse("cross-origin action refused", status_code=403)
        return await call_next(request)
    if path.startswith("/api/"):
        return JSONResponse({"detail": "token required"}, status_code=401)
    return HTMLResponse(render.login_page("", path if request.method == "GET" and own_path(path) else "/"),
                        status_code=401)


@router.get("/login")
def login_form(request: Request) -> Any:
    """The token form; a token in this URL is not taken (history, proxies and logs keep URLs)."""
    if dashboard(request).token is None:
        return RedirectResponse("/", status_code=303)
    return HTMLResponse(render.login_page(), status_code=401)


@router.post("/login")
async def login(request: Request) -> Any:
    """The form's token, posted: a cookie and a redirect to the page asked for."""
    token = dashboard(request).token
    # the form's two fields read with the standard library: FastAPI's Form() needs
    # python-multipart, a dependency for one urlencoded body
    form = parse_qs((await request.body())[:4096].decode("utf-8", "replace"))
    given, goto = (form.get("token") or [""])[0], (form.get("next") or ["/"])[0]
    if token is None:
        return RedirectResponse("/", status_code=303)
    if _matches(given, token):
        resp = RedirectResponse(goto if own_path(goto) else "/", status_code=303)
        resp.set_cookie(COOKIE, token, httponly=True, samesite="strict")
        return resp
    return HTMLResponse(render.login_page("wrong token" if given else "", own_path(goto) and goto or "/"),
                        status_code=401)


def install(app: FastAPI) -> None:
    """The guard's middleware and its login routes (the guard added last: it runs first, around the
    policy header's)."""
    app.middleware("http")(content_security_policy)
    app.middleware("http")(guard)
    app.include_router(router)
