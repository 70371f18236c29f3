"""The HTTP API on the embedded defaults: upload (fast path and asynchronous), the diagnosis resource,
listing and filters, refusals (unreadable, too large, no key, no model), health, readiness, metrics, docs."""

from __future__ import annotations

import asyncio
import io
import re
import tarfile
from collections.abc import Iterable, Iterator, MutableMapping
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from starlette.routing import Mount

from service.api.limits import BodyLimit
from service.app import create_app
from service.store import diagnosis_store
from tests.attacks.bounds import bounded
from tests.service.kit import service_settings, until
from vsandx.faults import LABELS


@pytest.fixture
def client(tmp_path: Path, model_dir: Path) -> Iterator[TestClient]:
    with TestClient(create_app(service_settings(tmp_path / "var", model_dir))) as c:
        yield c


def _upload(c: TestClient, path: Path, query: str = "", **kw: Any) -> Any:
    return c.post(f"/api/v1/diagnoses{query}", files={"bundle": (path.name, path.read_bytes())}, **kw)


def test_fast_path_returns_the_diagnosis(client: TestClient, bundles: list[Path], model_dir: Path) -> None:
    r = _upload(client, bundles[0], "?wait=true")
    assert r.status_code == 201, r.text
    res = r.json()
    assert res["status"] == "done" and res["filename"] == bundles[0].name and res["attempts"] == 1
    doc = res["diagnosis"]
    assert doc["schema"] == "vsandx.diagnosis/1" and doc["bundle"]["sha256"] == res["sha256"]
    assert len(doc["bundle"]["hosts"]) == 4 and all(c["verdict"] in LABELS for c in doc["components"])
    assert doc["model"] == res["model"] == {"name": "logreg", "version": f"file:{model_dir.resolve()}"}
    assert res["faults"] == sorted({f["fault"] for f in doc["findings"]})
    assert r.headers["location"].endswith(res["status_url"])
    assert client.get(res["status_url"]).json() == res


def test_async_path_and_listing(client: TestClient, bundles: list[Path]) -> None:
    r = _upload(client, bundles[0])  # the small model finds faults in this one
    assert r.status_code == 202, r.text
    acc = r.json()
    assert set(acc) == {"id", "status", "status_url"} and acc["status"] == "queued"
    done = until(lambda: (x := client.get(acc["status_url"]).json())["status"] == "done" and x)
    assert done["diagnosis"]["bundle"]["sha256"] == done["sha256"] and done["finished_at"]
    again = _upload(client, bundles[0], "?wait=true").json()  # same bytes: same diagnosis, a new resource
    assert again["id"] != acc["id"] and again["diagnosis"] == done["diagnosis"]
    listing = client.get("/api/v1/diagnoses").json()
    assert listing["total"] == 2 and [i["id"] for i in listing["items"]] == [again["id"], acc["id"]]
    assert done["faults"], "the test needs a bundle the model finds a fault in"
    fault = done["faults"][0]
    assert client.get(f"/api/v1/diagnoses?fault={fault}").json()["total"] == 2
    other = next(f for f in LABELS[1:] if f not in done["faults"])
    assert client.get(f"/api/v1/diagnoses?fault={other}").json()["total"] == 0
    assert client.get("/api/v1/diagnoses?status=failed").json()["total"] == 0
    assert client.get("/api/v1/diagnoses?fault=no.such").status_code == 422
    assert client.get("/api/v1/diagnoses?status=weird").status_code == 422
    assert client.get("/api/v1/diagnoses/nope").status_code == 404


def _tgz(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_unreadable_bundles_are_refused_with_the_reason(client: TestClient, tmp_path: Path) -> None:
    for payload, reason in [
        (b"hello, not an archive", "not a directory, tar, tgz or zip"),
        (b"\x1f\x8b" + b"garbage" * 50, "damaged"),
        (b"", "empty"),
    ]:
        r = client.post("/api/v1/diagnoses", files={"bundle": ("esx-dump.tgz", payload)})
        assert r.status_code == 422 and "esx-dump.tgz" in r.json()["detail"] and reason in r.json()["detail"], r.text
    assert client.get("/api/v1/diagnoses").json()["total"] == 0
    store_dir = tmp_path / "var" / "bundles"
    assert not [p for p in store_dir.rglob("*") if p.is_file()]  # nothing kept of a refused upload
    # opens as an archive, but holds no performance data: the job fails, naming the reason
    r = client.post("/api/v1/diagnoses?wait=true", files={"bundle": ("notes.tgz", _tgz({"a/readme.txt": b"hi"}))})
    assert r.status_code == 422 and "notes.tgz" in r.json()["detail"] and "no vSAN performance data" in r.text
    (failed,) = client.get("/api/v1/diagnoses?status=failed").json()["items"]
    assert failed["error"] == r.json()["detail"] and failed["diagnosis"] is None
    assert client.post("/api/v1/diagnoses", files={"other": ("x.tgz", b"x")}).status_code == 422


def test_upload_limit(tmp_path: Path, model_dir: Path, bundles: list[Path]) -> None:
    settings = service_settings(tmp_path / "var", model_dir, max_upload_bytes=100_000)
    with TestClient(create_app(settings)) as c:
        r = _upload(c, bundles[0])
        assert r.status_code == 413 and "100000" in r.json()["detail"]

        def chunks() -> Iterator[bytes]:  # no Content-Length: caught while streaming
            yield b"--xx\r\nContent-Disposition: form-data; name=bundle; filename=a.tgz\r\n\r\n"
            for _ in range(50):
                yield b"\0" * 4096

        r = c.post("/api/v1/diagnoses", content=chunks(), headers={"content-type": "multipart/form-data; boundary=xx"})
        assert r.status_code == 413
        assert c.get("/api/v1/diagnoses").json()["total"] == 0


def test_oversized_upload_is_refused_before_the_body_is_read() -> None:
    sent: list[dict[str, Any]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("the app must not be called")

    async def receive() -> dict[str, Any]:
        raise AssertionError("the body must not be read")

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(dict(message))

    scope = {"type": "http", "method": "POST", "path": "/api/v1/diagnoses", "headers": [(b"content-length", b"1001")]}
    with bounded("an upload over the limit, declared"):
        asyncio.run(BodyLimit(app, 1000)(scope, receive, send))
    assert sent[0]["status"] == 413


def test_paging_bounds_answer_422(client: TestClient) -> None:
    with bounded("huge offsets and ids"):
        for url in (f"/api/v1/diagnoses?offset={2**63}", f"/api/v1/diagnoses?offset={2**31}",
                    "/api/v1/diagnoses?offset=-1", "/api/v1/diagnoses?limit=0", "/api/v1/diagnoses?limit=501",
                    f"/api/v1/model/retrains?offset={2**63}", f"/api/v1/model/retrains/{2**63}"):  # fmt: skip
            assert client.get(url).status_code == 422, url  # 2**63 was a 500: too large for SQLite
        assert client.get(f"/api/v1/diagnoses?offset={2**31 - 1}").json()["items"] == []
        assert client.get(f"/api/v1/model/retrains/{2**31 - 1}").status_code == 404


def test_sql_wildcards_in_filters_match_literally(client: TestClient, bundles: list[Path]) -> None:
    """Issue 18's held row "SQL wildcards in filters": the API refuses a filter that is not a fault id,
    a status or a sha256 (422), the UI drops it (the list unfiltered, the wildcard never selected), and
    the store, which finds a fault with LIKE, escapes `%` and `_`: only the fault itself matches."""
    done = _upload(client, bundles[0], "?wait=true").json()
    fault = done["faults"][0]
    wild = ["%", "_", "%%", f"{fault[:-1]}_", f"%{fault[1:]}", f"{fault[:3]}%", "none%"]
    with bounded("SQL wildcards in the filters"):
        for w in wild:
            for q in ({"fault": w}, {"status": w}, {"sha256": w}, {"sha256": w * 64}):
                assert client.get("/api/v1/diagnoses", params=q).status_code == 422, q
            page = client.get("/diagnoses", params={"fault": w, "status": w}).text
            assert f'href="/diagnoses/{done["id"]}"' in page and "selected>" not in page, w
        with client.app.state.database.session() as db:  # type: ignore[attr-defined]
            assert [diagnosis_store.list_diagnoses(db, fault=w).total for w in wild] == [0] * len(wild)
            assert diagnosis_store.list_diagnoses(db, fault=fault).total == 1


def _write_routes(routes: Iterable[Any]) -> Iterator[tuple[str, str]]:
    """(method, path) of every route of the app that takes a write method, included routers too."""
    for r in routes:
        inner = getattr(r, "original_router", None) or r
        if inner is not r or (isinstance(r, Mount) and r.routes):
            yield from _write_routes(inner.routes)
        for method in sorted(set(getattr(r, "methods", None) or ()) - {"GET", "HEAD"}):
            yield method, r.path


WEBHOOKS = {("POST", "/api/v1/webhooks/bugzilla"), ("POST", "/api/v1/webhooks/github")}  # trackers' signatures
UI_FORMS = {
    ("POST", "/diagnoses/{job_id}/feedback"),
    ("POST", "/diagnoses/{job_id}/email"),
    ("POST", "/model/retrains"),
    ("POST", "/upload"),  # the upload form without JavaScript (multipart, with the bundle)
}  # `api_key` form field


def test_api_keys_guard_every_write_route(tmp_path: Path, model_dir: Path, bundles: list[Path]) -> None:
    """Issue 18's held row "API keys on every write route": with VSANDX_API_KEYS set, every route of
    the app that writes (found in the app, so a new one is tried too) answers 401 without a key or
    with a wrong one, and nothing is stored: the API's with X-API-Key, the UI's forms with their
    `api_key` field (CSRF token given); the webhooks take their trackers' signatures instead
    (api/test_webhooks.py). Reading stays open. The requests within the bounds."""
    settings = service_settings(tmp_path / "var", model_dir, api_keys=["k1", "k2"])
    with TestClient(create_app(settings)) as c:
        writes = set(_write_routes(c.app.routes))  # type: ignore[attr-defined]
        assert writes > WEBHOOKS | UI_FORMS and ("POST", "/api/v1/diagnoses") in writes
        done = _upload(c, bundles[0], "?wait=true", headers={"X-API-Key": "k2"}).json()
        assert done["status"] == "done"
        page = c.get(f"/diagnoses/{done['id']}").text
        token = re.search(r'name="csrf_token" value="([^"]+)"', page)
        assert token is not None
        form = {
            "csrf_token": token.group(1),
            "author": "mallory",
            f"label:{done['diagnosis']['components'][0]['id']}": "none",
        }
        with bounded("writes without an API key"):
            for method, path in sorted(writes - WEBHOOKS):
                url = path.replace("{job_id}", done["id"])
                for key in (None, "wrong"):
                    if (method, path) in UI_FORMS:
                        files = {"bundle": (bundles[1].name, bundles[1].read_bytes())} if path == "/upload" else None
                        r = c.request(method, url, data=form | ({"api_key": key} if key else {}), files=files)
                    elif path == "/api/v1/diagnoses":
                        r = _upload(c, bundles[1], headers={"X-API-Key": key} if key else {})
                    else:
                        r = c.request(
                            method, url, json={"author": "mallory", "labels": {}}, headers={"X-API-Key": key or ""}
                        )
                    assert r.status_code == 401, (method, url, key, r.status_code, r.text[:300])
        assert c.get("/api/v1/diagnoses").json()["total"] == 1  # reading is open; nothing was added
        assert c.get(f"{done['status_url']}/feedback").json()["items"] == []
        assert c.get("/api/v1/model/retrains").json()["total"] == 0


def test_health_readiness_metrics_and_docs(client: TestClient, bundles: list[Path], model_dir: Path) -> None:
    assert client.get("/health").json() == {"status": "ok"}
    ready = client.get("/ready")
    assert ready.status_code == 200 and ready.json()["ready"] and ready.json()["model"]["name"] == "logreg"
    res = _upload(client, bundles[0], "?wait=true").json()
    text = client.get("/metrics").text
    assert 'vsandx_http_requests_total{method="POST",route="/api/v1/diagnoses",status="201"} 1.0' in text
    assert 'vsandx_http_request_duration_seconds_count{method="POST",route="/api/v1/diagnoses"} 1.0' in text
    assert (
        'vsandx_jobs{kind="diagnose",queue="embedded",status="done"} 1.0' in text
        and 'vsandx_queue_depth{queue="embedded"} 0.0' in text
    )
    assert 'vsandx_jobs{kind="webhook",queue="embedded",status="queued"} 0.0' in text
    assert 'vsandx_diagnosis_seconds_count{outcome="done"} 1.0' in text  # observed by the worker that ran it
    assert "process_resident_memory_bytes" in text
    assert f'vsandx_model_info{{name="logreg",version="file:{model_dir.resolve()}"}} 1.0' in text
    for fault in res["faults"] or ["none"]:
        assert f'vsandx_diagnoses_by_verdict{{verdict="{fault}"}} 1.0' in text
    assert "vsandx_upload_to_diagnosis_seconds_count 1.0" in text
    spec = client.get("/openapi.json").json()
    assert {"/api/v1/diagnoses", "/api/v1/diagnoses/{job_id}", "/health", "/ready", "/metrics"} <= set(spec["paths"])
    assert "X-API-Key" in str(spec["components"]["securitySchemes"])
    assert client.get("/docs").status_code == 200
    assert client.get("/api/v1/model").json()["version"] == f"file:{model_dir.resolve()}"
    r = client.post("/api/v1/model/training")  # training needs a Celery worker
    assert r.status_code == 409 and "vsandx train" in r.json()["detail"]


def test_the_service_on_postgresql(tmp_path: Path, model_dir: Path, bundles: list[Path]) -> None:
    from tests.service.kit import pg_schema

    with pg_schema() as url:
        settings = service_settings(tmp_path / "var", model_dir, database_url=url)
        app = create_app(settings)
        with TestClient(app) as c:
            res = _upload(c, bundles[0], "?wait=true").json()
            assert res["status"] == "done" and res["diagnosis"]["schema"] == "vsandx.diagnosis/1"
            assert _upload(c, bundles[0], "?wait=true").json()["diagnosis"] == res["diagnosis"]
            assert res["faults"] and c.get(f"/api/v1/diagnoses?fault={res['faults'][0]}").json()["total"] == 2
        app.state.database.dispose()


def test_no_model_is_not_ready_and_refuses_uploads(tmp_path: Path, bundles: list[Path]) -> None:
    empty = tmp_path / "no-model"
    empty.mkdir()
    with TestClient(create_app(service_settings(tmp_path / "var", empty))) as c:
        r = c.get("/ready")
        assert (
            r.status_code == 503 and not r.json()["ready"] and "not a saved vsandx model" in r.json()["model"]["error"]
        )
        r = _upload(c, bundles[0])
        assert r.status_code == 503 and "not a saved vsandx model" in r.json()["detail"]
        assert c.get("/health").status_code == 200
