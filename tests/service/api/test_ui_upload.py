"""The upload form without JavaScript (issue 20 item 6): the browser posts the form itself, to POST
/upload, and ends on the diagnosis page (303), not on the API's JSON; the page's CSRF token and the
API key are checked as the other forms' are; a refused upload shows the upload page with the reason, and
one refused before the route runs (over the size limit, not a form) the error page: HTML with the status
and the reason in words, never the API's JSON, which the API keeps."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


BROWSER = {"accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", "origin": "http://testserver"}


def _refusal(r: Any) -> str:
    """The plain-words reason of an HTML refusal page (the error template's or the upload form's)."""
    assert r.headers["content-type"].startswith("text/html"), r.text[:300]
    m = re.search(r'<p[^>]*id="error"[^>]*>(.*?)</p>', r.text, re.S)
    assert m is not None, r.text[:1000]
    return html.unescape(m.group(1))


def test_a_form_over_the_size_limit_gets_a_page_naming_the_file_and_the_limit(tmp_path: Path, model_dir: Path) -> None:
    """JavaScript off, a bundle over VSANDX_MAX_UPLOAD_BYTES: a 413 page, not the API's JSON, saying which
    file and what the limit is, with the way back to the form; scripts posting to the API keep the JSON."""
    with TestClient(create_app(service_settings(tmp_path / "var", model_dir, max_upload_bytes=3 << 20))) as c:
        action, token = _form(c)
        files = {"bundle": ('cluster "A".tgz', b"x" * (4 << 20))}
        r = c.post(action, data={"csrf_token": token}, files=files, headers=BROWSER, follow_redirects=False)
        assert r.status_code == 413
        why = _refusal(r)
        assert 'The file cluster "A".tgz is larger than the upload limit of 3 MB (3,145,728 bytes)' in why, why
        assert re.search(r'<a id="back" href="/">Back to the upload form</a>', r.text)
        # sent without a length (chunked): cut while it streams, the same page
        chunked = c.post(action, content=iter([_part(token, "big.tgz"), b"x" * (4 << 20), b"\r\n--b--\r\n"]),
                         headers={**BROWSER, "content-type": "multipart/form-data; boundary=b"})  # fmt: skip
        assert chunked.status_code == 413 and "The file big.tgz is larger" in _refusal(chunked)
        api = c.post("/api/v1/diagnoses", files=files, headers=BROWSER)
        assert api.status_code == 413 and "3145728 bytes" in api.json()["detail"]
        assert c.get("/api/v1/diagnoses").json()["items"] == []


def _part(token: str, name: str) -> bytes:
    """A form's body up to its file's bytes, as a browser sends it (the token field first)."""
    return (f'--b\r\nContent-Disposition: form-data; name="csrf_token"\r\n\r\n{token}\r\n'
            f'--b\r\nContent-Disposition: form-data; name="bundle"; filename="{name}"\r\n'
            "Content-Type: application/gzip\r\n\r\n").encode()  # fmt: skip


def test_every_refused_form_gets_a_page(client: TestClient) -> None:
    """No file chosen, an empty file, a file that is no archive, a stale token, a body that is no form:
    each an HTML page with the status and the reason in words, and the way back to the form."""
    action, token = _form(client)
    cases = [  # (form, files, content type, status, words)
        ({"csrf_token": token}, {"bundle": ("", b"")}, None, 422, "No file was chosen"),
        ({"csrf_token": token}, {"bundle": ("empty.tgz", b"")}, None, 422, "empty.tgz: the upload is empty"),
        ({"csrf_token": token}, {"bundle": ("notes.tgz", b"plain words")}, None, 422, "notes.tgz"),
        ({"csrf_token": "x" * 40}, {"bundle": ("a.tgz", b"x")}, None, 403, "security token"),
        (None, None, "multipart/form-data", 400, "The form could not be read: Missing boundary"),
    ]
    for data, files, ctype, status, words in cases:
        headers = BROWSER | ({"content-type": ctype} if ctype else {})
        r = client.post(action, data=data, files=files, headers=headers, content=None if data else b"x")
        assert r.status_code == status, (words, r.status_code, r.text[:300])
        assert words in _refusal(r), (words, _refusal(r))
        assert 'id="upload"' in r.text or '<a id="back" href="/">' in r.text  # the form, or the way back to it
    # the API answers the same mistakes in JSON
    r = client.post("/api/v1/diagnoses", content=b"x", headers={**BROWSER, "content-type": "multipart/form-data"})
    assert r.status_code == 400 and r.json()["detail"] == "Missing boundary in multipart."
    assert client.post("/api/v1/diagnoses", headers=BROWSER).json()["detail"][0]["loc"] == ["body", "bundle"]
    assert client.get("/api/v1/diagnoses").json()["items"] == []
