"""A tracker's webhook, end to end: the delivery reaches the application, a worker re-reads the bug or
issue on a local fake Bugzilla / GitHub server, stores and diagnoses its bundle the way an upload is
(the diagnosis is in the API and the UI), comments back with the link and emails the report through a
real local SMTP server (aiosmtpd). With real Redis and a real Celery worker process, and on the
embedded queue; replays, redeliveries and retries send nothing twice."""

from __future__ import annotations

import re
from collections.abc import Iterator
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from diagnosis.digest import fault_title
from service.app import create_app
from service.queue.celery_app import DIAGNOSES
from service.queue.webhook_jobs import KIND, Integrations
from service.store.tables import Job
from tests.conftest import require
from tests.service.deliveries import (
    LIMIT,
    SECRET,
    bz_body,
    fill_bugzilla,
    gh_body,
    gh_headers,
    mail_settings,
    tsettings,
)
from tests.service.fakes import FakeTracker, SmtpServer
from tests.service.kit import (
    redis_available,
    redis_env,
    service_settings,
    settings_of,
    start_worker,
    stop_process,
    until,
)

BZ, GH = "/api/v1/webhooks/bugzilla", "/api/v1/webhooks/github"
OK = {"X-Vsandx-Webhook-Secret": SECRET}
PUBLIC = "https://vsandx.example"
TEAM = ["team@perf.example", "lead@perf.example"]  # mail_settings' team list


def link_id(text: str) -> str:
    """The diagnosis id of the (one) link to the web UI in a comment or an email."""
    (found,) = set(re.findall(rf"{re.escape(PUBLIC)}/diagnoses/([0-9a-f-]{{36}})", text))
    return found


def diagnosis(c: TestClient, did: str, name: str) -> dict[str, Any]:
    """The diagnosis resource the comment links to, through the API and the UI page."""
    res = c.get(f"/api/v1/diagnoses/{did}").json()
    assert res["status"] == "done" and res["filename"] == name, res
    assert c.get(f"/diagnoses/{did}").status_code == 200
    listed = c.get("/api/v1/diagnoses").json()
    assert [i["id"] for i in listed["items"]] == [did]  # one diagnosis, and the queued deliveries are not ones
    doc: dict[str, Any] = res["diagnosis"]
    assert doc["findings"], "the test needs a bundle the model finds a fault in"
    return doc


def check_comment(text: str, doc: dict[str, Any], did: str) -> None:
    assert f"{PUBLIC}/diagnoses/{did}" in text
    for f in doc["findings"]:
        assert f["component"] in text and f["recommendation"] in text and fault_title(f["fault"]) in text


def check_mail(msg: EmailMessage, doc: dict[str, Any], did: str, to: list[str]) -> None:
    """multipart/alternative: a text part and an HTML part (with the key chart inline), both with the
    findings and the link; addressed to `to` and nobody else."""
    assert msg.get_content_type() == "multipart/alternative"
    assert [a.addr_spec for a in msg["To"].addresses] == to and msg["Cc"] is None and msg["Bcc"] is None
    assert msg["From"].addresses[0].addr_spec == "vsandx@diag.example"
    assert msg["X-Vsandx-Diagnosis"] == did
    text, html = msg.get_body(("plain",)), msg.get_body(("html",))
    assert text is not None and html is not None
    plain, page = text.get_content(), html.get_content()
    assert link_id(plain) == did and f'href="{PUBLIC}/diagnoses/{did}"' in page
    for f in doc["findings"]:
        assert f["component"] in plain and f["recommendation"] in plain and fault_title(f["fault"]) in plain
        assert f["component"] in page and fault_title(f["fault"]) in page
    assert any(p.get_content_type() == "image/png" for p in msg.walk()) and 'src="cid:' in page


def webhook_jobs(c: TestClient) -> list[Job]:
    with c.app.state.database.session() as db:  # type: ignore[attr-defined]
        return list(db.scalars(select(Job).where(Job.kind == KIND).order_by(Job.created_at)))


def diagnose_jobs(c: TestClient) -> list[Job]:
    with c.app.state.database.session() as db:  # type: ignore[attr-defined]
        return list(db.scalars(select(Job).where(Job.kind == "diagnose")))


def all_finished(c: TestClient, n: int) -> list[Job]:
    """Wait until `n` deliveries were run to their end on the embedded queue."""
    return until(lambda: (j := webhook_jobs(c)) and len(j) == n and all(x.status in ("done", "failed") for x in j)
                 and j, timeout=90)  # fmt: skip


# ----------------------------------------------------------------------------- Celery and Redis
@pytest.fixture
def tracker() -> Iterator[FakeTracker]:
    with FakeTracker() as t:
        yield t


@pytest.fixture
def smtp() -> Iterator[SmtpServer]:
    with SmtpServer() as s:
        yield s


def test_bugzilla_through_redis_and_a_celery_worker(
    tmp_path: Path, model_dir: Path, bundles: list[Path], tracker: FakeTracker, smtp: SmtpServer
) -> None:
    require("Redis at 127.0.0.1:6379", redis_available(), "start it: redis-server --daemonize yes")
    fill_bugzilla(tracker, bundles[0])
    # the worker process takes every setting from its environment, as in production
    env = {"VSANDX_DATA_DIR": str(tmp_path / "var"), "VSANDX_MODEL_URI": str(model_dir), **redis_env("webhooks"),
           "VSANDX_BUGZILLA_URL": tracker.url, "VSANDX_BUGZILLA_API_KEY": tracker.api_key,
           "VSANDX_BUGZILLA_WEBHOOK_SECRET": SECRET, "VSANDX_BUGZILLA_PRODUCTS": "vSAN",
           "VSANDX_BUGZILLA_COMPONENTS": "Performance", "VSANDX_TRACKER_MAX_ATTACHMENT_BYTES": str(LIMIT),
           "VSANDX_SMTP_HOST": "127.0.0.1", "VSANDX_SMTP_PORT": str(smtp.port), "VSANDX_SMTP_STARTTLS": "false",
           "VSANDX_MAIL_FROM": "vsandx <vsandx@diag.example>", "VSANDX_TEAM_EMAILS": ",".join(TEAM),
           "VSANDX_PUBLIC_URL": PUBLIC}  # fmt: skip
    log = tmp_path / "worker.log"
    worker = start_worker(env, "--queues", DIAGNOSES, "--concurrency", "1", log=log)
    integ = Integrations(tsettings(tracker.url), mail_settings(smtp.port, public_url=PUBLIC))
    try:
        with TestClient(create_app(settings_of(env), integ)) as c:
            body = bz_body(bug_id=101)
            r = c.post(BZ, content=body, headers=OK)
            # queued, not done in the request: answered before any comment or mail (the worker makes them)
            assert r.status_code == 200 and r.json()["status"] == "queued", r.text
            assert not tracker.comments and not smtp.received
            until(lambda: tracker.comments and smtp.received, timeout=120)
            ((bug, text),) = tracker.comments
            did = link_id(text)
            assert bug == "101" and "huge.tgz" in text  # the attachment over the limit is named, not fetched
            doc = diagnosis(c, did, bundles[0].name)
            check_comment(text, doc, did)
            (mail,) = smtp.received
            assert mail.rcpt_tos == ["rep@bugs.example", *TEAM]  # the bug's reporter, then the team
            msg = mail.message
            check_mail(msg, doc, did, ["rep@bugs.example", *TEAM])
            assert "Bug 101: VMs slow" in msg["Subject"]  # the summary's CR/LF did not make a header
            # the tracker delivers the same event again: acknowledged, nothing queued
            assert c.post(BZ, content=body, headers=OK).json()["status"] == "replay"
            # the task itself runs again (a redelivered message, a retry): it finds what it sent
            job = {"source": "bugzilla", "body": body.decode(), "headers": {}}
            celery = c.app.state.queue.app  # type: ignore[attr-defined]
            again = celery.send_task("vsandx.webhook", args=[job], queue=DIAGNOSES).get(timeout=90)
            assert [d["id"] for d in again["diagnoses"]] == [did] and again["comment_id"] is None
            assert again["mails_sent"] == [] and again["relevant"]
            assert len(tracker.comments) == 1 and len(smtp.received) == 1
            assert [j.id for j in diagnose_jobs(c)] == [did]
    finally:
        stop_process(worker)
        print(log.read_text()[-4000:])


# ------------------------------------------------------------------------------ embedded queue
def embedded(tmp_path: Path, model_dir: Path, integ: Integrations) -> TestClient:
    return TestClient(create_app(service_settings(tmp_path / "var", model_dir), integ))


def test_github_on_the_embedded_queue(
    tmp_path: Path, model_dir: Path, bundles: list[Path], tracker: FakeTracker, smtp: SmtpServer
) -> None:
    tracker.files["lab.tgz"] = bundles[0].read_bytes()
    integ = Integrations(tsettings(tracker.url), mail_settings(smtp.port, public_url=PUBLIC))
    with embedded(tmp_path, model_dir, integ) as c:
        raw = gh_body(body=f"Slow VMs since Monday. Bundle: [lab.tgz]({tracker.url}/files/lab.tgz)")
        r = c.post(GH, content=raw, headers=gh_headers(raw, delivery="e2e-1"))
        assert r.status_code == 200 and r.json()["status"] == "queued", r.text
        until(lambda: tracker.comments and smtp.received, timeout=90)
        ((where, text),) = tracker.comments
        did = link_id(text)
        assert where == "o/r#5"
        doc = diagnosis(c, did, "lab.tgz")
        check_comment(text, doc, did)
        (mail,) = smtp.received
        assert mail.rcpt_tos == TEAM  # GitHub does not tell the reporter's email: the team only
        check_mail(mail.message, doc, did, TEAM)
        auth = [h.get("authorization") for m, p, h in tracker.requests if p.startswith("/repos/")]
        assert auth == ["Bearer gh-token"]
        assert c.post(GH, content=raw, headers=gh_headers(raw, delivery="e2e-1")).json()["status"] == "replay"
        # another event on the issue (edited) with the same bundle: run, but nothing new to tell
        edited = gh_body(action="edited", body=f"Bundle again: {tracker.url}/files/lab.tgz")
        assert c.post(GH, content=edited, headers=gh_headers(edited, delivery="e2e-2")).json()["status"] == "queued"
        assert [j.status for j in all_finished(c, 2)] == ["done", "done"]
        assert len(tracker.comments) == 1 and len(smtp.received) == 1
        assert [j.id for j in diagnose_jobs(c)] == [did]


def test_a_transient_mail_failure_is_retried_without_a_second_comment(
    tmp_path: Path, model_dir: Path, bundles: list[Path], tracker: FakeTracker
) -> None:
    fill_bugzilla(tracker, bundles[0])
    smtp = SmtpServer()  # its port is chosen, nothing listens there yet: connection refused
    integ = Integrations(tsettings(tracker.url), mail_settings(smtp.port, public_url=PUBLIC))
    with embedded(tmp_path, model_dir, integ) as c:
        assert c.post(BZ, content=bz_body(bug_id=101), headers=OK).json()["status"] == "queued"
        (job,) = until(lambda: (j := webhook_jobs(c)) and j[0].error and j, timeout=90)
        assert job.status == "running" and "SMTP server" in (job.error or ""), job.error
        assert len(tracker.comments) == 1  # the comment went out before the mail failed
        with smtp:  # the mail server is back: the retry sends the report, and comments nothing again
            (job,) = all_finished(c, 1)
            assert job.status == "done" and job.attempts >= 2
            assert len(smtp.received) == 1 and len(tracker.comments) == 1
            check_mail(smtp.received[0].message, diagnosis(c, link_id(tracker.comments[0][1]), bundles[0].name),
                       link_id(tracker.comments[0][1]), ["rep@bugs.example", *TEAM])  # fmt: skip


def test_unwatched_bug_and_bad_credentials(
    tmp_path: Path, model_dir: Path, bundles: list[Path], tracker: FakeTracker, smtp: SmtpServer
) -> None:
    fill_bugzilla(tracker, bundles[0])
    integ = Integrations(tsettings(tracker.url), mail_settings(smtp.port, public_url=PUBLIC))
    with embedded(tmp_path / "a", model_dir, integ) as c:
        # bug 102 is a Firefox bug: the payload only names it; the worker reads it and leaves it alone
        assert c.post(BZ, content=bz_body(bug_id=102), headers=OK).json()["status"] == "queued"
        assert [j.status for j in all_finished(c, 1)] == ["done"]
        assert [p.split("?")[0] for p in tracker.paths()] == ["/rest/bug/102"]
        assert tracker.comments == [] and smtp.received == [] and diagnose_jobs(c) == []
    # a wrong API key: Bugzilla answers 401, which no retry mends: failed at once, with the reason
    bad = Integrations(tsettings(tracker.url, bugzilla_api_key="wrong"), integ.notify)
    with embedded(tmp_path / "b", model_dir, bad) as c:
        assert c.post(BZ, content=bz_body(bug_id=101), headers=OK).json()["status"] == "queued"
        (job,) = all_finished(c, 1)
        assert job.status == "failed" and job.attempts == 1 and "HTTP 401" in (job.error or "")
        assert tracker.comments == [] and smtp.received == []
