"""The upload form without JavaScript (issue 20 item 6): the browser posts the form itself, to POST
/upload, and ends on the diagnosis page (303), not on the API's JSON; the page's CSRF token and the
API key are checked as the other forms' are; a refused upload shows the upload page with the reason."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from tests.service.kit import service_settings


@pytest.fixture
def client(tmp_path: Path, model_dir: Path) -> Iterator[TestClient]:
    with TestClient(create_app(service_settings(tmp_path / "var", model_dir))) as c:
        yield c


def _form(c: TestClient) -> tuple[str, str]:
    """The upload page's form action and CSRF token, as a browser without JavaScript sees them."""
    page = c.get("/").text
    action = re.search(r'<form id="upload"[^>]*action="([^"]+)"', page)
    token = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert action is not None and token is not None
    return action.group(1), token.group(1)


def test_form_post_without_js_ends_on_the_diagnosis_page(client: TestClient, bundles: list[Path]) -> None:
    action, token = _form(client)
    assert not action.startswith("/api/")  # the JSON API is for scripts and upload.js
    r = client.post(action, data={"csrf_token": token}, files={"bundle": (bundles[0].name, bundles[0].read_bytes())},
                    headers={"accept": "text/html", "origin": "http://testserver"}, follow_redirects=False)  # fmt: skip
    assert r.status_code == 303, r.text
    m = re.fullmatch(r"/diagnoses/([^/?#]+)", r.headers["location"])
    assert m is not None
    page = client.get(r.headers["location"])
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert client.get(f"/api/v1/diagnoses/{m.group(1)}").json()["id"] == m.group(1)


def test_form_post_needs_the_page_token(client: TestClient, bundles: list[Path]) -> None:
    action, token = _form(client)
    files = {"bundle": (bundles[0].name, bundles[0].read_bytes())}
    assert client.post(action, files=files, follow_redirects=False).status_code == 403  # no token
    evil = client.post(action, data={"csrf_token": token}, files=files, headers={"origin": "https://evil.example"},
                       follow_redirects=False)  # fmt: skip
    assert evil.status_code == 403
    assert client.get("/api/v1/diagnoses").json()["items"] == []


def test_an_unreadable_upload_shows_the_form_with_the_reason(client: TestClient) -> None:
    action, token = _form(client)
    r = client.post(action, data={"csrf_token": token}, files={"bundle": ("notes.tgz", b"not an archive")},
                    follow_redirects=False)  # fmt: skip
    assert r.status_code == 422 and r.headers["content-type"].startswith("text/html")
    assert 'id="error"' in r.text and "notes.tgz" in r.text and 'id="upload"' in r.text


def test_form_post_checks_the_api_key(tmp_path: Path, model_dir: Path, bundles: list[Path]) -> None:
    with TestClient(create_app(service_settings(tmp_path / "var", model_dir, api_keys=["s3cret"]))) as c:
        action, token = _form(c)
        files = {"bundle": (bundles[0].name, bundles[0].read_bytes())}
        assert c.post(action, data={"csrf_token": token}, files=files, follow_redirects=False).status_code == 401
        ok = c.post(action, data={"csrf_token": token, "api_key": "s3cret"}, files=files, follow_redirects=False)
        assert ok.status_code == 303


def test_the_json_api_is_unchanged(client: TestClient, bundles: list[Path]) -> None:
    r = client.post("/api/v1/diagnoses", files={"bundle": (bundles[0].name, bundles[0].read_bytes())},
                    headers={"accept": "text/html"})  # fmt: skip
    assert r.status_code == 202 and r.json()["status_url"].startswith("/api/v1/diagnoses/")
