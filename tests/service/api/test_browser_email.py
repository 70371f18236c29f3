"""'Send this diagnosis by email' in real headless Chromium: the service runs (uvicorn, a small model,
SMTP to a real local server), the engineer opens a finished diagnosis, types two addresses in the form
and sends; the page says so and the server got the report. Skipped locally without Chromium, a failure
under CI (test_browser.py's `browser` fixture)."""

from __future__ import annotations

import json
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from service.app import create_app
from service.queue.webhook_jobs import Integrations
from service.trackers.base import TrackerSettings
from tests.service.api.test_browser import _shot, browser, serving  # noqa: F401  (browser: a fixture)
from tests.service.deliveries import mail_settings
from tests.service.fakes import SmtpServer
from tests.service.kit import service_settings

PUBLIC = "https://vsandx.example"


@pytest.fixture
def mailing(tmp_path: Path, model_dir: Path) -> Iterator[tuple[str, SmtpServer]]:
    """(the service's URL, the SMTP server it sends to)."""
    with SmtpServer() as smtp:
        notify = mail_settings(smtp.port, public_url=PUBLIC)
        app = create_app(service_settings(tmp_path / "var", model_dir),
                         Integrations(TrackerSettings(_env_file=None), notify))  # type: ignore[call-arg]  # fmt: skip
        with serving(app) as url:
            yield url, smtp


def _upload(server: str, bundle: Path) -> dict[str, Any]:
    boundary = uuid.uuid4().hex
    body = (f'--{boundary}\r\nContent-Disposition: form-data; name="bundle"; filename="{bundle.name}"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n").encode() + bundle.read_bytes() + \
        f"\r\n--{boundary}--\r\n".encode()  # fmt: skip
    req = urllib.request.Request(f"{server}/api/v1/diagnoses?wait=true", body, method="POST",
                                 headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})  # fmt: skip
    with urllib.request.urlopen(req, timeout=120) as r:
        got: dict[str, Any] = json.load(r)
    return got


def test_send_a_diagnosis_by_email(mailing: tuple[str, SmtpServer], browser: Any, bundles: list[Path]) -> None:  # noqa: F811
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    server, smtp = mailing
    res = _upload(server, bundles[0])
    assert res["status"] == "done" and res["diagnosis"]["findings"]
    browser.get(f"{server}/diagnoses/{res['id']}")
    to = browser.find_element(By.ID, "email-to")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'});", to)
    assert to.is_displayed() and not browser.find_elements(By.ID, "email-api-key")  # no keys configured
    to.send_keys("eng@perf.example, Ops Lead <ops@perf.example>")
    browser.find_element(By.ID, "email-submit").click()
    sent = WebDriverWait(browser, 30, poll_frequency=0.1).until(lambda d: d.find_elements(By.ID, "email-sent"))
    assert "The report was sent." in sent[0].text and browser.current_url.endswith("?emailed=sent#email")
    _shot(browser, "email")
    (got,) = smtp.received
    assert got.rcpt_tos == ["eng@perf.example", "ops@perf.example"]
    msg = got.message
    assert len(str(msg["Subject"])) < 120 and str(msg["Subject"]).startswith(f"[vsandx] bundle {bundles[0].name}")
    pngs = [p for p in msg.walk() if p.get_content_type() == "image/png"]
    assert len(pngs) == min(4, len(res["diagnosis"]["findings"]))
    # a second, wrong address: the page says why, the field keeps what was typed
    to = browser.find_element(By.ID, "email-to")
    to.send_keys("not an address")
    browser.find_element(By.ID, "email-submit").click()
    error = WebDriverWait(browser, 30, poll_frequency=0.1).until(lambda d: d.find_elements(By.ID, "email-error"))
    assert "not one plain email address" in error[0].text
    assert browser.find_element(By.ID, "email-to").get_attribute("value") == "not an address"
    assert len(smtp.received) == 1
