"""Request body limits per route: the route picks its limit, a declared length over it is refused before
anything is read, a chunked body as soon as it passes it (the app never holds more than the limit plus
a chunk), and in the application the JSON and form routes take kilobytes while uploads take their own."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from service.app import body_limits, create_app
from service.limits import BodyLimit, BodyLimits
from service.webhooks import WEBHOOK_MAX_BODY
from tests.service.kit import service_settings

CHUNK = 64 * 1024


def test_the_route_picks_its_limit() -> None:
    limits = body_limits(service_settings(Path("/nonexistent"), None, max_upload_bytes=10**9))
    assert limits.for_request("POST", "/api/v1/diagnoses") == 10**9
    assert limits.for_request("POST", "/api/v1/diagnoses/") == 10**9
    assert limits.for_request("POST", "/api/v1/diagnoses/abc/feedback") == 64 * 1024  # JSON: kilobytes
    assert limits.for_request("POST", "/api/v1/model/retrains") == 64 * 1024
    assert limits.for_request("PUT", "/api/v1/diagnoses") == 64 * 1024  # only the upload itself
    assert limits.for_request("POST", "/api/v1/webhooks/github") == WEBHOOK_MAX_BODY
    assert limits.for_request("POST", "/diagnoses/abc/feedback") == 1024 * 1024  # the UI's form
    assert limits.for_request("POST", "/anything/else") == 64 * 1024
    assert BodyLimits(5, prefixes={"/a/": 7, "/a/b/": 9}).for_request("POST", "/a/b/c") == 9  # longest prefix


def _run(limit: int, headers: list[tuple[bytes, bytes]], chunks: int) -> tuple[list[dict[str, Any]], int]:
    """BodyLimit around an app that reads the whole body; (messages sent, chunks the client gave)."""
    sent: list[dict[str, Any]] = []
    given = 0

    async def app(scope: Any, receive: Any, send: Any) -> None:
        while (await receive())["more_body"]:
            pass
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"read it all"})

    async def receive() -> dict[str, Any]:
        nonlocal given
        given += 1
        return {"type": "http.request", "body": b"x" * CHUNK, "more_body": given < chunks}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/api/v1/diagnoses/x/feedback", "headers": headers}
    asyncio.run(BodyLimit(app, limit)(scope, receive, send))
    return sent, given


def test_a_declared_length_over_the_limit_is_refused_unread() -> None:
    sent, given = _run(1000, [(b"content-length", str(400 * 2**20).encode())], 6400)
    assert sent[0]["status"] == 413 and given == 0 and "1000 bytes" in json.loads(sent[1]["body"])["detail"]


def test_a_chunked_body_is_cut_as_soon_as_it_passes_the_limit() -> None:
    sent, given = _run(3 * CHUNK, [], 6400)  # 400 MiB offered without a length
    assert [m["status"] for m in sent if "status" in m] == [413] and given == 4  # the limit and one chunk more
    sent, given = _run(3 * CHUNK, [], 3)  # at the limit: read in full
    assert sent[0]["status"] == 200 and given == 3


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(service_settings(tmp_path / "var", None, max_json_bytes=4096))) as c:
        yield c


def test_feedback_json_and_forms_take_kilobytes(client: TestClient) -> None:
    big = {"author": "x" * 5000, "labels": {}}
    r = client.post("/api/v1/diagnoses/abc/feedback", json=big)
    assert r.status_code == 413 and "4096" in r.json()["detail"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted while streaming
        yield b'{"author": "'
        for _ in range(16):
            yield b"x" * 1024
        yield b'", "labels": {}}'

    r = client.post("/api/v1/diagnoses/abc/feedback", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413
    small = client.post("/api/v1/diagnoses/abc/feedback", json={"author": "x", "labels": {}})
    assert small.status_code == 404  # under the limit it reaches the route
    form = client.post("/diagnoses/abc/feedback", content=b"x" * (1024 * 1024 + 1),
                       headers={"content-type": "application/x-www-form-urlencoded"})  # fmt: skip
    assert form.status_code == 413
