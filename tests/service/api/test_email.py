"""'Send this diagnosis by email' against the real application (embedded queue, a small model) and a real
local SMTP server (aiosmtpd): the API route (`POST /api/v1/diagnoses/{id}/email`) and the diagnosis
page's form (CSRF token, API key), what each refuses, and the message that arrives."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from service.queue.webhook_jobs import Integrations
from service.trackers.base import TrackerSettings
from service.trackers.notify import NotifySettings
from tests.service.deliveries import mail_settings
from tests.service.fakes import SmtpServer
from tests.service.kit import service_settings

PUBLIC = "https://vsandx.example"
KEY = {"X-API-Key": "k3y"}


def integrations(notify: NotifySettings) -> Integrations:
    return Integrations(TrackerSettings(_env_file=None), notify)  # type: ignore[call-arg]


@pytest.fixture
def smtp() -> Iterator[SmtpServer]:
    with SmtpServer() as s:
        yield s


@pytest.fixture
def client(tmp_path: Path, model_dir: Path, smtp: SmtpServer) -> Iterator[TestClient]:
    settings = service_settings(tmp_path / "var", model_dir, api_keys=["k3y"])
    with TestClient(create_app(settings, integrations(mail_settings(smtp.port, public_url=PUBLIC)))) as c:
        yield c


def diagnosed(c: TestClient, bundle: Path) -> dict[str, Any]:
    r = c.post("/api/v1/diagnoses?wait=true", files={"bundle": (bundle.name, bundle.read_bytes())}, headers=KEY)
    assert r.status_code == 201, r.text
    res: dict[str, Any] = r.json()
    assert res["diagnosis"]["findings"], "the test needs a bundle the small model finds a fault in"
    return res


def test_the_api_sends_the_report(client: TestClient, smtp: SmtpServer, bundles: list[Path]) -> None:
    res = diagnosed(client, bundles[0])
    url = f"/api/v1/diagnoses/{res['id']}/email"
    assert client.post(url, json={"to": ["eng@perf.example"]}).status_code == 401  # a write: the key rules
    r = client.post(url, json={"to": ["Eng One <eng@perf.example>", "ENG@perf.example", "b@x.org"]}, headers=KEY)
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["sent"] and out["to"] == ["eng@perf.example", "b@x.org"] and out["refused"] == []
    (got,) = smtp.received
    assert got.rcpt_tos == ["eng@perf.example", "b@x.org"]  # those given, not the team list
    msg = got.message
    assert msg["Message-ID"] == out["message_id"] and msg["X-Vsandx-Diagnosis"] == res["id"]
    subject = str(msg["Subject"])
    assert subject.startswith(f"[vsandx] bundle {bundles[0].name} — ") and len(subject) < 120
    findings = res["diagnosis"]["findings"]
    pngs = [p for p in msg.walk() if p.get_content_type() == "image/png"]
    assert len(pngs) == min(4, len(findings)) and all(p.get_content().startswith(b"\x89PNG") for p in pngs)
    text, page = msg.get_body(("plain",)), msg.get_body(("html",))
    assert text is not None and page is not None
    plain, rich = text.get_content(), page.get_content()
    assert plain.count("Onset: ") == len(findings) and rich.count("Onset: ") == len(findings)
    assert f"{PUBLIC}/diagnoses/{res['id']}" in plain and f'href="{PUBLIC}/diagnoses/{res["id"]}"' in rich
    assert "127.0.0.1" not in plain + rich
    # the same report to the same people goes once
    again = client.post(url, json={"to": ["b@x.org", "eng@perf.example"]}, headers=KEY)
    assert again.status_code == 200 and again.json()["sent"] is False and len(smtp.received) == 1
    # refused before anything is sent
    for bad in ([], ["nobody"], ["a@b.c\r\nBcc: evil@x.example"], ["a@b.c, evil@x.example"],
                [f"u{k}@x.org" for k in range(6)], ["x" * 400 + "@x.org"]):  # fmt: skip
        r = client.post(url, json={"to": bad}, headers=KEY)
        assert r.status_code == 422, (bad, r.text)
    assert client.post(url, json={"to": "a@x.org"}, headers=KEY).status_code == 422
    assert client.post("/api/v1/diagnoses/nope/email", json={"to": ["a@x.org"]}, headers=KEY).status_code == 404
    assert len(smtp.received) == 1


def test_not_done_and_mail_off(tmp_path: Path, model_dir: Path, bundles: list[Path], smtp: SmtpServer) -> None:
    idle = service_settings(tmp_path / "a", model_dir, embedded_workers=0, worker_processes=0)
    with TestClient(create_app(idle, integrations(mail_settings(smtp.port, public_url=PUBLIC)))) as c:
        r = c.post("/api/v1/diagnoses", files={"bundle": (bundles[0].name, bundles[0].read_bytes())})
        assert r.status_code == 202
        r = c.post(f"/api/v1/diagnoses/{r.json()['id']}/email", json={"to": ["a@x.org"]})
        assert r.status_code == 409 and "queued" in r.json()["detail"]
    off = integrations(NotifySettings(_env_file=None))  # type: ignore[call-arg]
    with TestClient(create_app(service_settings(tmp_path / "b", model_dir), off)) as c:
        res = diagnosed(c, bundles[0])
        r = c.post(f"/api/v1/diagnoses/{res['id']}/email", json={"to": ["a@x.org"]})
        assert r.status_code == 503 and "VSANDX_SMTP_HOST" in r.json()["detail"]
        page = c.get(f"/diagnoses/{res['id']}").text
        assert 'id="email-off"' in page and 'id="email-form"' not in page
    assert smtp.received == []


def _token(page: str) -> str:
    found = re.search(r'<form id="email-form".*?name="csrf_token" value="([^"]+)"', page, re.S)
    assert found is not None
    return found.group(1)


def test_the_page_form(client: TestClient, smtp: SmtpServer, bundles: list[Path]) -> None:
    res = diagnosed(client, bundles[1])
    page = client.get(f"/diagnoses/{res['id']}").text
    assert 'id="email-form"' in page and 'id="email-api-key"' in page and 'name="to"' in page
    token, url = _token(page), f"/diagnoses/{res['id']}/email"
    form = {"to": "eng@perf.example; Ops <ops@perf.example>", "api_key": "k3y"}
    assert client.post(url, data=form).status_code == 403  # no token
    forged = client.post(url, data=form | {"csrf_token": token}, headers={"origin": "https://evil.example"})
    assert forged.status_code == 403
    wrong = client.post(url, data=form | {"csrf_token": token, "api_key": "nope"})
    assert wrong.status_code == 401 and "API key" in wrong.text
    bad = client.post(url, data=form | {"csrf_token": token, "to": "<script>@x, eng@perf.example"})
    assert bad.status_code == 422 and 'id="email-error"' in bad.text and "<script>@x" not in bad.text
    assert html.escape("<script>@x", quote=False) in bad.text  # kept in the field, as text
    assert smtp.received == []
    ok = client.post(url, data=form | {"csrf_token": token}, follow_redirects=False)
    assert ok.status_code == 303 and ok.headers["location"] == f"/diagnoses/{res['id']}?emailed=sent#email"
    (got,) = smtp.received
    assert got.rcpt_tos == ["eng@perf.example", "ops@perf.example"]
    assert str(got.message["Subject"]).startswith(f"[vsandx] bundle {bundles[1].name}")
    shown = client.get(ok.headers["location"]).text
    assert 'id="email-sent"' in shown and "The report was sent." in shown
    again = client.post(url, data=form | {"csrf_token": token}, follow_redirects=False)
    assert again.headers["location"].endswith("?emailed=again#email") and len(smtp.received) == 1
