"""Request body limits per route, enforced while the body streams in (pure ASGI middleware).

`BodyLimit` answers 413 at once when Content-Length declares more than the route's limit (nothing is
read but, for a browser's form, its first SNIFF_BYTES), and, for a body without one (chunked), as soon
as the bytes read pass it: the application never holds more than the limit plus one chunk. Which limit
applies is `BodyLimits.for_request`: uploads get VSANDX_MAX_UPLOAD_BYTES (streamed to disk by the
intake), the trackers' webhooks their own bound, the UI's forms and every other route (JSON) a few
kilobytes. A browser's form post (HTML accepted, not the JSON API) is answered with a page instead of
JSON (`RefusalPage`, service.api.error_pages) naming the file and the limit.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from starlette.types import ASGIApp, Message, Receive, Scope, Send

SNIFF_BYTES = 16 * 1024  # of a browser's form refused by its length: enough for the parts before the file's
_FILENAME = re.compile(rb'content-disposition:[^\r\n]*?;\s*filename="([^"\r\n]*)"', re.IGNORECASE)


@dataclass(frozen=True)
class BodyLimits:
    """`default` bytes for any route not named; `exact[(method, path)]`; `prefixes[path prefix]` (any
    method), the longest matching prefix winning."""

    default: int
    exact: Mapping[tuple[str, str], int] = field(default_factory=dict)
    prefixes: Mapping[str, int] = field(default_factory=dict)

    def for_request(self, method: str, path: str) -> int:
        path = path.rstrip("/") or "/"
        if (method, path) in self.exact:
            return self.exact[(method, path)]
        best = max((p for p in self.prefixes if path.startswith(p)), key=len, default=None)
        return self.prefixes[best] if best is not None else self.default


class RefusalPage(Protocol):
    """The HTML answer to a browser's refused form post: over its limit, or from another site
    (service.api.error_pages)."""

    def wants(self, scope: Scope) -> bool:
        """True for a browser's page or form (HTML accepted, not the JSON API)."""
        ...

    def too_large(self, scope: Scope, limit: int, filename: str | None) -> bytes:
        """The page: what was refused (the file's name when the body's first part named one), the limit."""
        ...

    def forbidden(self, scope: Scope, why: str) -> bytes:
        """The page for a form refused as another site's (service.api.csrf.OriginCheck): why, what to do."""
        ...


class BodyLimit:
    """413 for a request body over its route's limit: at once from Content-Length (nothing read, but
    the first SNIFF_BYTES for a browser's form, to name its file), else as soon as the streamed body
    passes it (chunked bodies). JSON, or `html`'s page for a browser's form. `limits` may be a plain
    number of bytes (one limit for every route)."""

    def __init__(self, app: ASGIApp, limits: BodyLimits | int, html: RefusalPage | None = None) -> None:
        self.app, self.html = app, html
        self.limits = limits if isinstance(limits, BodyLimits) else BodyLimits(limits)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD"):  # their bodies are never read
            await self.app(scope, receive, send)
            return
        limit = self.limits.for_request(scope["method"], scope["path"])
        page = self.html is not None and self.html.wants(scope)
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > limit):
            await self._reject(scope, send, limit, await _head(receive) if page else b"")
            return
        seen, over, started, head = 0, False, False, bytearray()

        async def receive_() -> Message:
            nonlocal seen, over
            message = await receive()
            if message["type"] == "http.request":
                body = message.get("body", b"")
                seen += len(body)
                if page and len(head) < SNIFF_BYTES:
                    head.extend(body[: SNIFF_BYTES - len(head)])
                if seen > limit:
                    over = True
                    raise _TooLarge
            return message

        async def send_(message: Message) -> None:
            nonlocal started
            if over:  # whatever the app answered to the truncated body, the answer is 413
                if message["type"] == "http.response.start" and not started:
                    started = True
                    await self._reject(scope, send, limit, bytes(head))
                return
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive_, send_)
        except _TooLarge:
            if not started:
                await self._reject(scope, send, limit, bytes(head))

    async def _reject(self, scope: Scope, send: Send, limit: int, head: bytes) -> None:
        if self.html is not None and self.html.wants(scope):
            body, kind = self.html.too_large(scope, limit, filename_in(head)), b"text/html; charset=utf-8"
        else:
            body = json.dumps({"detail": f"request body larger than the limit of {limit} bytes"}).encode()
            kind = b"application/json"
        headers = [(b"content-type", kind), (b"content-length", str(len(body)).encode()), (b"connection", b"close")]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": body})


async def _head(receive: Receive) -> bytes:
    """Up to SNIFF_BYTES of the body (a chunk more at most): where a form's file part names its file."""
    got = bytearray()
    while len(got) < SNIFF_BYTES:
        message = await receive()
        if message["type"] != "http.request":
            break
        got += message.get("body", b"")
        if not message.get("more_body", False):
            break
    return bytes(got[:SNIFF_BYTES])


def filename_in(head: bytes) -> str | None:
    """The file name of a multipart body's first file part among its first bytes, as a browser writes it
    (`filename="…"`, `"` sent as %22); None when there is none."""
    m = _FILENAME.search(head)
    return m[1].decode("utf-8", "replace").replace("%22", '"')[:255] if m and m[1] else None


def size_words(n: int) -> str:
    """A limit in words: "512 MB (536,870,912 bytes)"; "1,000 bytes" under a MiB."""
    return f"{n / (1 << 20):.4g} MB ({n:,} bytes)" if n >= 1 << 20 else f"{n:,} bytes"


class _TooLarge(Exception):
    pass
