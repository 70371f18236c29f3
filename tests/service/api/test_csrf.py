"""Cross-site request forgery: which requests count as another site's, the form token, and the Origin
check in front of every unsafe route of the application (the webhooks excepted)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from service.api import csrf
from service.app import create_app
from service.queue.webhook_jobs import Integrations
from service.trackers.base import TrackerSettings
from service.trackers.notify import NotifySettings
from tests.attacks.bounds import bounded
from tests.service.kit import service_settings

PUBLIC = "https://vsandx.example.com"


@pytest.mark.parametrize(
    ("headers", "host", "refused"),
    [
        ({}, "127.0.0.1:8000", False),  # no browser headers: curl, a tracker
        ({"origin": "http://127.0.0.1:8000"}, "127.0.0.1:8000", False),  # the page's own origin
        ({"origin": "HTTPS://VSANDX.example.com"}, "10.0.0.5:8000", False),  # VSANDX_PUBLIC_URL behind a proxy
        ({"origin": "https://evil.example"}, "127.0.0.1:8000", True),
        ({"origin": "http://127.0.0.1:8001"}, "127.0.0.1:8000", True),  # another port is another origin
        ({"origin": "null"}, "127.0.0.1:8000", True),  # sandboxed frame, data: URL
        ({"referer": "https://evil.example/page"}, "127.0.0.1:8000", True),  # no Origin: the Referer decides
        ({"referer": "http://127.0.0.1:8000/diagnoses/x"}, "127.0.0.1:8000", False),
        ({"origin": "http://127.0.0.1:8000", "sec-fetch-site": "cross-site"}, "127.0.0.1:8000", True),
    ],
)
def test_cross_site(headers: dict[str, str], host: str, refused: bool) -> None:
    assert (csrf.cross_site(headers, host, PUBLIC) is not None) == refused


def test_form_token() -> None:
    token = csrf.new_token()
    assert csrf.token_for(token) == token and csrf.token_for("short") != "short" and csrf.token_for(None)
    assert csrf.token_ok(token, token)
    assert not csrf.token_ok(None, token) and not csrf.token_ok(token, None) and not csrf.token_ok("", "")
    assert not csrf.token_ok(csrf.new_token(), token) and not csrf.token_ok("x", "x")


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    notify = NotifySettings(_env_file=None, public_url=PUBLIC)  # type: ignore[call-arg]
    integrations = Integrations(TrackerSettings(_env_file=None), notify)  # type: ignore[call-arg]
    with TestClient(create_app(service_settings(tmp_path / "var", None), integrations)) as c:
        yield c


def test_cross_origin_writes_are_refused_before_the_route(client: TestClient) -> None:
    evil = {"origin": "https://evil.example"}
    with bounded("cross-origin writes"):
        upload = client.post("/api/v1/diagnoses", files={"bundle": ("a.tgz", b"x" * 100)}, headers=evil)
        assert upload.status_code == 403 and "evil.example" in upload.json()["detail"]
        assert client.get("/api/v1/diagnoses").json()["total"] == 0  # nothing stored
        assert client.post("/api/v1/model/retrains", headers=evil).status_code == 403
        assert client.post("/diagnoses/x/feedback", data={"author": "a"}, headers=evil).status_code == 403
        assert client.post("/model/retrains", data={}, headers={"origin": "null"}).status_code == 403
        assert client.get("/api/v1/diagnoses", headers=evil).status_code == 200  # reading stays open
        own = client.post("/api/v1/model/training", headers={"origin": PUBLIC})
        assert own.status_code == 409  # its own origin reaches the route (training needs a Celery worker)
        hook = client.post("/api/v1/webhooks/github", content=b"{}", headers=evil)  # signed server-to-server
        assert hook.status_code == 503  # GitHub is not configured: the webhook route answered


def test_a_browser_form_refused_as_another_sites_gets_a_page(client: TestClient) -> None:
    """An engineer behind a proxy the service does not know sees why, and what to set; scripts keep JSON."""
    browser = {"origin": "https://proxy.example", "accept": "text/html,application/xhtml+xml"}
    page = client.post("/upload", files={"bundle": ("a.tgz", b"x" * 100)}, headers=browser)
    assert page.status_code == 403 and page.headers["content-type"].startswith("text/html")
    assert "proxy.example" in page.text and "VSANDX_PUBLIC_URL" in page.text and 'href="/"' in page.text
    api = client.post("/api/v1/diagnoses", files={"bundle": ("a.tgz", b"x")}, headers=browser)
    assert api.status_code == 403 and "proxy.example" in api.json()["detail"]  # the API answers JSON
    assert client.get("/api/v1/diagnoses").json()["total"] == 0
