"""Cross-site request forgery: a page on another site must not make an engineer's browser write to
the service (the API is open by default, and an internal service is reachable from the browser even
when it is not from the attacker).

Two independent checks:

- `OriginCheck` (pure ASGI middleware, every unsafe method except the trackers' webhooks, which are
  server-to-server and signed): a request whose Origin — or, without one, Referer — is neither the
  request's own host nor VSANDX_PUBLIC_URL's origin, or that the browser marks `Sec-Fetch-Site:
  cross-site`, is answered 403 before its body is read. Clients that send neither header (curl, the
  trackers) are not browsers and pass.
- The UI's forms carry a token (double submit): every page sets a random token in a cookie and puts
  the same value in a hidden field; a form POST whose field does not equal the cookie is refused
  (`token_ok`). Another site can neither read the cookie nor set it.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Mapping
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from service.api.limits import RefusalPage

COOKIE = "vsandx_csrf"
FIELD = "csrf_token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_TOKEN = re.compile(r"[A-Za-z0-9_-]{32,64}")


def new_token() -> str:
    return secrets.token_urlsafe(32)


def token_for(cookie: str | None) -> str:
    """The token a page embeds: the browser's current one when it has a well-formed one, else new."""
    return cookie if cookie and _TOKEN.fullmatch(cookie) else new_token()


def token_ok(field: str | None, cookie: str | None) -> bool:
    """The form's token equals the cookie's (compared in constant time); both must be well-formed."""
    if not field or not cookie or not _TOKEN.fullmatch(cookie):
        return False
    return secrets.compare_digest(field.encode(), cookie.encode())


def origin_of(url: str) -> str | None:
    """scheme://host[:port] in lower case, or None for anything that is not an http(s) URL."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        return None
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


def cross_site(headers: Mapping[str, str], host: str | None, public_url: str) -> str | None:
    """Why a browser request comes from another site, or None when it does not (or is no browser's).
    `headers` with lower-case names; `host`: the Host header the request was sent to."""
    if headers.get("sec-fetch-site", "").lower() == "cross-site":
        return "a cross-site request (Sec-Fetch-Site)"
    raw = headers.get("origin")
    if raw is None:
        raw = headers.get("referer")
        if raw is None:
            return None  # not a browser form, or one whose every header was stripped: the token decides
    origin = origin_of(raw)
    if origin is None:  # "null" (sandboxed frames, some redirects) or garbage
        return f"origin {raw[:100]!r} is not this service"
    own = {origin_of(public_url)}
    if host:
        own |= {f"http://{host.lower()}", f"https://{host.lower()}"}
    return None if origin in own else f"origin {origin[:100]!r} is not this service"


class OriginCheck:
    """403 for a cross-site unsafe request (see `cross_site`), except under `exempt` path prefixes."""

    def __init__(
        self, app: ASGIApp, public_url: str, exempt: tuple[str, ...] = (), html: RefusalPage | None = None
    ) -> None:
        self.app, self.public_url, self.exempt = app, public_url, exempt
        self.html = html  # a browser's form gets the error page (why, and what to set), scripts JSON

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in SAFE_METHODS or scope["path"].startswith(self.exempt):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        why = cross_site(headers, headers.get("host"), self.public_url)
        if why is None:
            await self.app(scope, receive, send)
            return
        if self.html is not None and self.html.wants(scope):
            body, kind = self.html.forbidden(scope, why), b"text/html; charset=utf-8"
        else:
            body, kind = json.dumps({"detail": f"refused: {why}"}).encode(), b"application/json"
        await send({"type": "http.response.start", "status": 403, "headers": [
            (b"content-type", kind), (b"content-length", str(len(body)).encode())]})  # fmt: skip
        await send({"type": "http.response.body", "body": body})
