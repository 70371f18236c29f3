"""A browser's refused page or form gets the error template (status, the reason in words, the way back
to the form it came from) wherever FastAPI would answer JSON; the JSON API and the operators'
endpoints keep their JSON whatever the client accepts, and scripts (no HTML in Accept) get JSON."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from service.api.error_pages import back_link, wants_html
from service.app import create_app
from tests.service.kit import service_settings

BROWSER = {"accept": "text/html,application/xhtml+xml,*/*;q=0.8", "origin": "http://testserver"}


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(service_settings(tmp_path / "var", None, max_form_bytes=2048))) as c:
        yield c


def test_who_gets_a_page() -> None:
    assert wants_html("/upload", "text/html,application/xhtml+xml")
    assert wants_html("/diagnoses/x/feedback", "TEXT/HTML")
    assert not wants_html("/upload", "*/*") and not wants_html("/upload", "")  # curl, scripts
    for path in ("/api/v1/diagnoses", "/metrics", "/health", "/ready", "/docs", "/openapi.json", "/static/x.css"):
        assert not wants_html(path, "text/html"), path
    assert back_link("/upload") == ("/", "Back to the upload form")
    assert back_link("/diagnoses/abc/feedback") == ("/diagnoses/abc", "Back to the page")
    assert back_link("/model/retrains") == ("/model", "Back to the page")
    assert back_link("/x") == ("/", "Back to the page")


def _reason(text: str) -> str:
    m = re.search(r'<p[^>]*id="error"[^>]*>(.*?)</p>', text, re.S)
    assert m is not None, text[:500]
    return html.unescape(m.group(1))


def test_a_feedback_form_over_its_limit_gets_a_page_back_to_its_diagnosis(client: TestClient) -> None:
    body = {"csrf_token": "t" * 43, "comment": "x" * 4096}
    r = client.post("/diagnoses/abc/feedback", data=body, headers=BROWSER)
    assert r.status_code == 413 and r.headers["content-type"].startswith("text/html")
    assert "more than this page's limit of 2,048 bytes; nothing was saved" in _reason(r.text)
    assert '<a id="back" href="/diagnoses/abc">Back to the page</a>' in r.text
    script = client.post("/diagnoses/abc/feedback", data=body)  # no HTML accepted: the JSON answer
    assert script.status_code == 413 and "2048 bytes" in script.json()["detail"]


def test_pages_and_the_api_answer_their_own_way(client: TestClient) -> None:
    page = client.get("/diagnoses?page=0", headers=BROWSER)
    assert page.status_code == 422 and page.headers["content-type"].startswith("text/html")
    assert "page: Input should be greater than or equal to 1" in _reason(page.text)
    lost = client.get("/no/such/page", headers=BROWSER)
    assert lost.status_code == 404 and _reason(lost.text) == "Not Found."
    assert client.get("/diagnoses?page=0").json()["detail"][0]["loc"] == ["query", "page"]
    api = client.get("/api/v1/diagnoses?limit=0", headers=BROWSER)
    assert api.status_code == 422 and api.json()["detail"][0]["loc"] == ["query", "limit"]
    assert client.get("/api/v1/nothing", headers=BROWSER).json() == {"detail": "Not Found"}
