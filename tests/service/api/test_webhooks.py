"""The tracker webhooks inside the real application (create_app): the SQL delivery ledger, the service's
own queue. No worker runs here (embedded_workers=0), so what a delivery queued stays in the jobs table to
be counted: the route only authenticates, filters, admits and queues, and answers at once."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from service.app import create_app
from service.queue.webhook_jobs import KIND, Integrations
from service.store import bundle_store
from service.store.tables import Job, WebhookDelivery
from service.trackers.notify import NotifySettings
from service.trackers.webhooks import WEBHOOK_MAX_BODY
from tests.attacks.bounds import bounded
from tests.service.deliveries import SECRET, bz_body, gh_body, gh_headers, tsettings
from tests.service.fakes import free_port
from tests.service.kit import service_settings

BZ, GH = "/api/v1/webhooks/bugzilla", "/api/v1/webhooks/github"
OK = {"X-Vsandx-Webhook-Secret": SECRET}


def integrations(**kw: Any) -> Integrations:
    return Integrations(tsettings(**kw), NotifySettings(_env_file=None))  # type: ignore[call-arg]


def make_client(data_dir: Path, integ: Integrations | None = None, **kw: Any) -> TestClient:
    # a model folder that does not exist: webhooks are accepted with no model (the work waits for one)
    settings = service_settings(data_dir, data_dir.parent / "no-model", embedded_workers=0, **kw)
    return TestClient(create_app(settings, integ or integrations()))


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with make_client(tmp_path / "var") as c:
        yield c


def queued(c: TestClient) -> list[dict[str, Any]]:
    """The queued deliveries' jobs, as the worker will read them back from the store."""
    state: Any = c.app.state  # type: ignore[attr-defined]
    with state.database.session() as db:
        jobs = db.scalars(select(Job).where(Job.kind == KIND).order_by(Job.created_at)).all()
        assert all(j.status == "queued" for j in jobs)
        paths = [bundle_store.bundle_path(state.settings, j.sha256) for j in jobs]
    assert all(p is not None for p in paths)
    return [json.loads(p.read_bytes()) for p in paths if p is not None]


def admitted(c: TestClient) -> int:
    with c.app.state.database.session() as db:  # type: ignore[attr-defined]
        return int(db.scalar(select(func.count()).select_from(WebhookDelivery)) or 0)


def test_bugzilla_webhook(client: TestClient, tmp_path: Path) -> None:
    with bounded("Bugzilla deliveries: secrets, replays, stale and oversized bodies"):
        body = bz_body(bug_id=101, when=datetime.now(UTC) - timedelta(minutes=1))
        # the secret is checked first: wrong or missing, nothing is admitted or queued
        for headers in ({}, {"X-Vsandx-Webhook-Secret": SECRET + "x"}, {"X-Other": SECRET}):
            r = client.post(BZ, content=body, headers=headers)
            assert r.status_code == 401 and "secret" in r.json()["error"].lower()
        assert queued(client) == [] and admitted(client) == 0
        assert client.post(BZ, content=b"{not json", headers=OK).status_code == 400

        r = client.post(BZ, content=body, headers=OK)
        assert r.status_code == 200 and r.json()["status"] == "queued", r.text
        assert queued(client) == [{"source": "bugzilla", "body": body.decode(), "headers": {}}]
        # the tracker sends it again (a retry after a timeout, a replay): acknowledged, no second job
        r = client.post(BZ, content=body, headers=OK)
        assert (r.status_code, r.json()["status"]) == (200, "replay") and len(queued(client)) == 1
        # an older change of the same bug arriving late, and one past VSANDX_TRACKER_STALE_AFTER_S
        late = bz_body(bug_id=101, when=datetime.now(UTC) - timedelta(minutes=5), change_set="late")
        old = bz_body(bug_id=7, when=datetime.now(UTC) - timedelta(days=30))
        for stale in (late, old):
            r = client.post(BZ, content=stale, headers=OK)
            assert (r.status_code, r.json()["status"]) == (200, "stale")
        # a comment changes nothing a diagnosis depends on; a status change neither
        status_change = bz_body(bug_id=101, action="modify", change_set="m", changes=[{"field": "status"}])
        for boring in (bz_body(bug_id=101, action="comment", change_set="c"), status_change):
            r = client.post(BZ, content=boring, headers=OK)
            assert (r.status_code, r.json()["status"]) == (200, "ignored")
        assert len(queued(client)) == 1 and admitted(client) == 1
        # oversize bodies: declared (refused before reading) and chunked (refused while reading)
        big = b"{" + b" " * WEBHOOK_MAX_BODY + b"}"
        assert client.post(BZ, content=big, headers=OK).status_code == 413

        def chunks() -> Iterator[bytes]:
            for _ in range(WEBHOOK_MAX_BODY // 65536 + 2):
                yield b" " * 65536

        r = client.post(BZ, content=chunks(), headers=OK)
        assert r.status_code == 413 and len(queued(client)) == 1

        # the ledger is the database's: a restarted service still knows the delivery
        with make_client(tmp_path / "var") as again:
            assert again.post(BZ, content=body, headers=OK).json()["status"] == "replay"
            assert len(queued(again)) == 1


def test_github_webhook(client: TestClient) -> None:
    with bounded("GitHub deliveries: signatures, a changed body, redelivery"):
        body = gh_body()
        r = client.post(GH, content=body, headers=gh_headers(body, secret="not-the-secret"))
        assert r.status_code == 401 and "X-Hub-Signature-256" in r.json()["error"]
        r = client.post(GH, content=body + b" ", headers=gh_headers(body))  # the body was changed on the way
        assert r.status_code == 401
        ping = b'{"zen": "Design for failure."}'
        assert client.post(GH, content=ping, headers=gh_headers(ping, event="ping")).json()["status"] == "ignored"
        # an issue about something else (no vSAN performance label or title): acknowledged, not queued
        other = gh_body(labels=("docs",), title="Typo in the README")
        r = client.post(GH, content=other, headers=gh_headers(other, delivery="other-1"))
        assert (r.status_code, r.json()["status"]) == (200, "ignored")
        assert queued(client) == [] and admitted(client) == 0

        r = client.post(GH, content=body, headers=gh_headers(body, delivery="gh-1"))
        assert (r.status_code, r.json()["status"]) == (200, "queued")
        (job,) = queued(client)
        assert job["source"] == "github" and job["body"] == body.decode()
        assert job["headers"] == {"X-GitHub-Event": "issues", "X-GitHub-Delivery": "gh-1"}
        # GitHub's "Redeliver" keeps X-GitHub-Delivery: a replay
        assert client.post(GH, content=body, headers=gh_headers(body, delivery="gh-1")).json()["status"] == "replay"
        assert len(queued(client)) == 1


def test_unconfigured_tracker_is_503(tmp_path: Path) -> None:
    integ = integrations(bugzilla_url=None, github_webhook_secret=None)
    with make_client(tmp_path / "var", integ) as c:
        body = bz_body()
        r = c.post(BZ, content=body, headers=OK)
        assert r.status_code == 503 and "VSANDX_BUGZILLA_URL" in r.json()["error"]
        gh = gh_body()
        assert c.post(GH, content=gh, headers=gh_headers(gh)).status_code == 503
        assert queued(c) == [] and admitted(c) == 0


def test_queue_failure_is_503_and_the_delivery_stays_unclaimed(tmp_path: Path) -> None:
    """Celery with a broker nobody listens on: the job cannot be queued, so the answer is 503 and the
    delivery is not recorded: the tracker's retry is admitted, not taken for a replay."""
    broker = f"redis://127.0.0.1:{free_port()}/0"
    with make_client(tmp_path / "var", broker_url=broker) as c:
        assert c.app.state.queue.name == "celery"  # type: ignore[attr-defined]
        body = bz_body()
        for _ in range(2):  # the second is the tracker's retry: not a replay, the claim was undone
            t0 = time.monotonic()
            r = c.post(BZ, content=body, headers=OK)
            assert r.status_code == 503 and "could not queue" in r.json()["error"], r.text
            assert time.monotonic() - t0 < 8.0  # before the tracker gives up on us (GitHub: 10 s)
            assert admitted(c) == 0
        gh = gh_body()
        assert c.post(GH, content=gh, headers=gh_headers(gh, delivery="g-503")).status_code == 503
        assert admitted(c) == 0


def test_github_body_replayed_under_new_delivery_ids_queues_one_job(client: TestClient) -> None:
    """The signature covers the body, not X-GitHub-Delivery: a captured delivery sent again with new ids
    (3 times) creates no second job, hence no second comment or email."""
    gh = gh_body()
    with bounded("a signed GitHub body under new delivery ids"):
        answers = [client.post(GH, content=gh, headers=gh_headers(gh, delivery=f"new-{k}")).json() for k in range(4)]
    assert [a["status"] for a in answers] == ["queued", "replay", "replay", "replay"]
    assert len(queued(client)) == 1
