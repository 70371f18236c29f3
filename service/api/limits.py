"""Request body limits per route, enforced while the body streams in (pure ASGI middleware).

`BodyLimit` answers 413 at once when Content-Length declares more than the route's limit (nothing is
read), and, for a body without one (chunked), as soon as the bytes read pass it: the application never
holds more than the limit plus one chunk. Which limit applies is `BodyLimits.for_request`: uploads get
VSANDX_MAX_UPLOAD_BYTES (streamed to disk by the intake), the trackers' webhooks their own bound, the UI's
forms and every other route (JSON) a few kilobytes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from starlette.types import ASGIApp, Message, Receive, Scope, Send


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


class BodyLimit:
    """413 for a request body over its route's limit: at once from Content-Length (nothing read), else
    as soon as the streamed body passes it (chunked bodies). `limits` may be a plain number of bytes
    (one limit for every route)."""

    def __init__(self, app: ASGIApp, limits: BodyLimits | int) -> None:
        self.app = app
        self.limits = limits if isinstance(limits, BodyLimits) else BodyLimits(limits)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD"):  # their bodies are never read
            await self.app(scope, receive, send)
            return
        limit = self.limits.for_request(scope["method"], scope["path"])
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > limit):
            await _reject(send, limit)
            return
        seen, over, started = 0, False, False

        async def receive_() -> Message:
            nonlocal seen, over
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    over = True
                    raise _TooLarge
            return message

        async def send_(message: Message) -> None:
            nonlocal started
            if over:  # whatever the app answered to the truncated body, the answer is 413
                if message["type"] == "http.response.start" and not started:
                    started = True
                    await _reject(send, limit)
                return
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive_, send_)
        except _TooLarge:
            if not started:
                await _reject(send, limit)


async def _reject(send: Send, limit: int) -> None:
    body = json.dumps({"detail": f"request body larger than the limit of {limit} bytes"}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": 413, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class _TooLarge(Exception):
    pass
