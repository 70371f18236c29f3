"""Training runs on Celery are `train` job rows (service.queue.training_jobs): queued while the message
waits on the training queue (counted by the API's /metrics), then claimed, running, done or failed by
the task, once however often the message is delivered."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient

from service.app import create_app
from service.queue import training_jobs
from service.queue.celery_app import TRAINING
from service.store import job_store
from service.store.db import Database
from service.store.tables import Job
from tests.conftest import require
from tests.service.kit import redis_available, redis_env, service_settings, settings_of


def test_a_training_run_is_counted_while_it_waits(tmp_path: Path) -> None:
    require("Redis at 127.0.0.1:6379", redis_available(), "start it: redis-server --daemonize yes")
    settings = settings_of({"VSANDX_DATA_DIR": str(tmp_path / "var"), **redis_env("train-jobs")})
    rd = redis.Redis.from_url(str(settings.broker_url))
    key = f"{settings.redis_key_prefix}{TRAINING}"
    try:
        with TestClient(create_app(settings)) as c:
            r = c.post("/api/v1/model/training?preset=smoke")
            assert r.status_code == 202, r.text
            (raw,) = rd.lrange(key, 0, -1)  # no worker on the training queue: the message waits there
            message = json.loads(raw)
            assert message["headers"]["id"] == r.json()["id"] and message["headers"]["task"] == "vsandx.train"
            assert 'vsandx_jobs{kind="train",queue="celery",status="queued"} 1.0' in c.get("/metrics").text
            assert c.get(r.json()["status_url"]).json()["state"] == "PENDING"
    finally:
        rd.delete(key)


def _run(database: Database, settings: Any, job_id: str, monkeypatch: pytest.MonkeyPatch,
         train: Any) -> dict[str, Any]:  # fmt: skip
    monkeypatch.setattr(training_jobs, "train", train)
    return training_jobs.run(database, settings, job_id, 60.0, "smoke")


def test_the_task_takes_a_run_through_running_to_done_or_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = service_settings(tmp_path / "var", None)
    database = Database(settings.sqlalchemy_url)
    with database.session() as db:
        ok, bad = training_jobs.submit(db, settings, "smoke"), training_jobs.submit(db, settings, "quick")
        assert job_store.jobs_by_kind(db)[("train", "queued")] == 2
    seen: list[str] = []

    def train(s: Any, preset: str) -> dict[str, Any]:
        with database.session() as db:  # what /metrics reads while the run trains
            seen.extend(k for (kind, k), n in job_store.jobs_by_kind(db).items() if kind == "train" and n)
        return {"version": "7"}

    assert _run(database, settings, ok, monkeypatch, train) == {"version": "7"}
    assert seen == ["queued", "running"]
    # the message delivered again: the finished run is not trained again
    assert _run(database, settings, ok, monkeypatch, train)["skipped"] is True and len(seen) == 2

    def broken(s: Any, preset: str) -> dict[str, Any]:
        raise RuntimeError("no datasets")

    with pytest.raises(RuntimeError):
        _run(database, settings, bad, monkeypatch, broken)
    with database.session() as db:
        counts = job_store.jobs_by_kind(db)
        assert [counts[("train", s)] for s in ("queued", "running", "done", "failed")] == [0, 0, 1, 1]
        assert "RuntimeError: no datasets" in (db.get(Job, bad).error or "")  # type: ignore[union-attr]
    database.dispose()
