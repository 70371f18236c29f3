"""Tracker deliveries on Celery are job rows like the embedded queue's (service.queue.webhook_jobs): a
real `vsandx worker` on the real Redis takes them through queued, running, done or failed, and the API
process's /metrics counts each state (`vsandx_jobs{kind="webhook"}`), promtool finding nothing to say.
The worker warns once at its start, not per task, when SMTP is set and VSANDX_PUBLIC_URL is left at its
default. A delivery the broker does not take is failed, not left queued; a lost one is sent again."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient
from sqlalchemy import select

from service.app import create_app
from service.queue.celery_app import DIAGNOSES
from service.queue.celery_queue import CeleryQueue
from service.queue.webhook_jobs import KIND, Integrations
from service.store import job_store
from service.store.db import Database
from service.store.tables import Job, utcnow
from service.trackers.notify import DEFAULT_PUBLIC_URL
from tests.conftest import require
from tests.service.api.test_metrics import promtool_check
from tests.service.deliveries import SECRET, bz_body, mail_settings, tsettings
from tests.service.kit import redis_available, redis_env, settings_of, start_worker, stop_process, until

BZ, OK = "/api/v1/webhooks/bugzilla", {"X-Vsandx-Webhook-Secret": SECRET}
WATCHED = {"product": "vSAN", "component": "Performance", "keywords": [], "summary": "slow", "status": "NEW",
           "creator": "rep@bugs.example", "last_change_time": "2026-11-22T08:00:00Z"}  # fmt: skip


class GatedBugzilla:
    """Bugzilla's REST bug read, held until `gate` is set: bug 102 is a Firefox bug (the delivery is done,
    nothing to do), any other is gone (404: the delivery fails, no retry)."""

    def __init__(self) -> None:
        self.gate, self.reads = threading.Event(), 0
        outer = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a: Any) -> None:
                pass

            def do_GET(self) -> None:
                outer.reads += 1
                outer.gate.wait(120)
                m = re.match(r"/rest/bug/(\d+)", self.path)
                body: dict[str, Any]
                if m and m[1] == "102":
                    code, body = 200, {"bugs": [{**WATCHED, "id": 102, "product": "Firefox"}], "faults": []}
                else:
                    code, body = 404, {"error": True, "code": 101, "message": "Bug does not exist."}
                raw = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.gate.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def bugzilla() -> Iterator[GatedBugzilla]:
    b = GatedBugzilla()
    yield b
    b.close()


def jobs(text: str) -> dict[str, float]:
    """vsandx_jobs{kind="webhook",queue="celery",status=…} of an exposition, by status."""
    found = re.findall(r'^vsandx_jobs\{kind="webhook",queue="celery",status="(\w+)"\} (\S+)$', text, re.M)
    return {status: float(n) for status, n in found}


def test_celery_deliveries_are_counted_through_their_life(
    tmp_path: Path, model_dir: Path, bugzilla: GatedBugzilla
) -> None:
    require("Redis at 127.0.0.1:6379", redis_available(), "start it: redis-server --daemonize yes")
    env = {"VSANDX_DATA_DIR": str(tmp_path / "var"), "VSANDX_MODEL_URI": str(model_dir), **redis_env("hooks"),
           "VSANDX_BUGZILLA_URL": bugzilla.url, "VSANDX_BUGZILLA_API_KEY": "bz-key",
           "VSANDX_BUGZILLA_WEBHOOK_SECRET": SECRET, "VSANDX_BUGZILLA_PRODUCTS": "vSAN",
           "VSANDX_BUGZILLA_COMPONENTS": "Performance", "VSANDX_SMTP_HOST": "127.0.0.1", "VSANDX_SMTP_PORT": "9",
           "VSANDX_PUBLIC_URL": DEFAULT_PUBLIC_URL}  # fmt: skip
    integ = Integrations(tsettings(bugzilla.url), mail_settings(9, public_url="https://vsandx.example"))
    log = tmp_path / "worker.log"
    worker = None
    try:
        with TestClient(create_app(settings_of(env), integ)) as c:
            for bug in (102, 103):  # no worker yet: both wait in the broker, queued in the database
                r = c.post(BZ, content=bz_body(bug_id=bug), headers=OK)
                assert r.status_code == 200 and r.json()["status"] == "queued", r.text
            assert jobs(c.get("/metrics").text) == {"queued": 2, "running": 0, "done": 0, "failed": 0}
            worker = start_worker(env, "--queues", DIAGNOSES, "--concurrency", "1", log=log)
            # one slot: the first delivery is held at the bug's read, the other waits its turn
            until(lambda: bugzilla.reads == 1, timeout=120)
            assert jobs(c.get("/metrics").text) == {"queued": 1, "running": 1, "done": 0, "failed": 0}
            bugzilla.gate.set()
            until(lambda: jobs(c.get("/metrics").text) == {"queued": 0, "running": 0, "done": 1, "failed": 1}, 120)
            with c.app.state.database.session() as db:  # type: ignore[attr-defined]
                rows = db.scalars(select(Job).where(Job.kind == KIND)).all()
            assert sorted((j.status, j.attempts) for j in rows) == [("done", 1), ("failed", 1)]
            (failed,) = [j for j in rows if j.status == "failed"]
            assert "HTTP 404" in (failed.error or "")
            text = c.get("/metrics").text
            assert 'vsandx_jobs{kind="diagnose",queue="celery",status="queued"} 0.0' in text
            assert promtool_check(text) == ""
    finally:
        if worker is not None:
            stop_process(worker)
        print(log.read_text()[-3000:] if log.exists() else "")
    # the worker warned once at its start, before either task, and not again for each
    warned = [line for line in log.read_text().splitlines() if "VSANDX_PUBLIC_URL" in line]
    assert len(warned) == 1 and "WARNING" in warned[0] and DEFAULT_PUBLIC_URL in warned[0], warned


def _webhook_row(database: Database, settings: Any, age_s: float = 0.0) -> str:
    from service.queue.webhook_jobs import submit

    with database.session() as db:
        job_id = submit(db, settings, {"source": "bugzilla", "body": "{}", "headers": {}})
        row = db.get(Job, job_id)
        assert row is not None
        row.created_at = utcnow() - timedelta(seconds=age_s)
        db.commit()
    return job_id


def test_a_lost_delivery_is_sent_again_and_a_refused_one_failed(tmp_path: Path) -> None:
    require("Redis at 127.0.0.1:6379", redis_available(), "start it: redis-server --daemonize yes")
    env = {"VSANDX_DATA_DIR": str(tmp_path / "var"), **redis_env("lost-hooks")}
    settings = settings_of(env, lease_s=60, task_time_limit_s=50)
    database = Database(settings.sqlalchemy_url)
    job_id = _webhook_row(database, settings, age_s=120)  # recorded, but the broker never got its message
    queue = CeleryQueue(database, settings)
    rd = redis.Redis.from_url(str(settings.broker_url))
    key = f"{settings.redis_key_prefix}{DIAGNOSES}"
    try:
        assert queue.reap() == [job_id] and rd.llen(key) == 1
        message = json.loads(rd.lrange(key, 0, 0)[0])
        assert message["headers"]["task"] == "vsandx.webhook" and message["headers"]["id"] == job_id
        assert queue.reap() == [] and rd.llen(key) == 1  # not again within the lease
    finally:
        rd.delete(key)
        queue.stop()
    # a broker that does not answer: the route gets the error (503) and the row is failed, not queued
    down = settings_of(env, broker_url="redis://127.0.0.1:9/0")
    dead = CeleryQueue(database, down)
    try:
        with pytest.raises(Exception):  # noqa: B017 (kombu's OperationalError or redis's ConnectionError)
            dead.submit_webhook({"source": "github", "body": "{}", "headers": {}})
    finally:
        dead.stop()
    with database.session() as db:
        (row,) = db.scalars(select(Job).where(Job.kind == KIND, Job.id != job_id)).all()
        assert row.status == "failed" and "broker did not take" in (row.error or "")
        assert job_store.jobs_by_kind(db)[(KIND, "queued")] == 1  # the lost one, sent again, still waiting
    database.dispose()
