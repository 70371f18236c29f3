"""A real Celery worker process (`vsandx worker`) on the real local Redis: the API hands it the job,
the diagnosis comes back through the database, a duplicate delivery changes nothing, a bad bundle fails
without retries."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from service.app import create_app
from service.queue.celery_app import DIAGNOSES, check_limits
from service.store.tables import Diagnosis
from tests.conftest import require
from tests.service.kit import redis_available, redis_env, settings_of, start_worker, stop_process, until
from vsandx.settings import ServiceSettings


@pytest.fixture
def celery_env(tmp_path: Path, model_dir: Path) -> dict[str, str]:
    require("Redis at 127.0.0.1:6379", redis_available(), "start it: redis-server --daemonize yes")
    return {"VSANDX_DATA_DIR": str(tmp_path / "var"), "VSANDX_MODEL_URI": str(model_dir), **redis_env("tasks")}


@pytest.fixture
def worker(celery_env: dict[str, str], tmp_path: Path) -> Iterator[None]:
    p = start_worker(celery_env, "--queues", DIAGNOSES, "--concurrency", "1", log=tmp_path / "worker.log")
    yield
    stop_process(p)
    print((tmp_path / "worker.log").read_text()[-3000:])


def test_celery_worker_diagnoses_through_redis(
    celery_env: dict[str, str], worker: None, bundles: list[Path], tmp_path: Path
) -> None:
    settings = settings_of(celery_env, wait_timeout_s=60)
    with TestClient(create_app(settings)) as c:
        assert c.get("/ready").json()["queue"].startswith("celery, broker")
        r = c.post("/api/v1/diagnoses?wait=true", files={"bundle": ("a.tgz", bundles[0].read_bytes())})
        assert r.status_code == 201, r.text
        res = r.json()
        assert res["diagnosis"]["schema"] == "vsandx.diagnosis/1" and res["attempts"] == 1
        # the message delivered again (at-least-once): the task sees the job done and does nothing
        queue = c.app.state.queue  # type: ignore[attr-defined]
        again = queue.app.send_task("vsandx.diagnose", args=[res["id"]], queue=DIAGNOSES)
        assert again.get(timeout=30) == "done"
        assert c.get(res["status_url"]).json() == res
        with c.app.state.database.session() as db:  # type: ignore[attr-defined]
            assert db.scalar(select(func.count()).select_from(Diagnosis)) == 1
        # an archive with no performance data: failed with the reason, once, no retries
        import io
        import tarfile

        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tf:
            info = tarfile.TarInfo("x/readme.txt")
            info.size = 2
            tf.addfile(info, io.BytesIO(b"hi"))
        r = c.post("/api/v1/diagnoses?wait=true", files={"bundle": ("empty.tgz", buf.getvalue())})
        assert r.status_code == 422 and "no vSAN performance data" in r.json()["detail"]
        (failed,) = c.get("/api/v1/diagnoses?status=failed").json()["items"]
        assert failed["attempts"] == 1


# The first pool child writes its pid to VSANDX_TEST_FIRST_CHILD; every later one (a replacement) takes 6 s
# to start, as the served model loading on a busy machine. Celery waits 4 s by default for a replacement
# to report up, then kills it and starts another, which it kills in turn: no diagnosis ever again.
SLOW_REPLACEMENT = """
import os, time
from celery.signals import worker_process_init
def _slow(**kwargs):
    try:
        fd = os.open(os.environ["VSANDX_TEST_FIRST_CHILD"], os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        time.sleep(6)
        return
    os.write(fd, str(os.getpid()).encode()); os.close(fd)
worker_process_init.connect(_slow, weak=False)
"""


def test_a_replacement_pool_child_slow_to_load_the_model_still_diagnoses(
    celery_env: dict[str, str], bundles: list[Path], tmp_path: Path
) -> None:
    log, first = tmp_path / "worker.log", tmp_path / "first.pid"
    env = celery_env | {"VSANDX_TEST_FIRST_CHILD": str(first)}
    p = start_worker(env, "--queues", DIAGNOSES, "--concurrency", "1", log=log, prelude=SLOW_REPLACEMENT)
    try:
        os.kill(int(until(lambda: first.exists() and first.read_text().strip(), timeout=60)), signal.SIGKILL)
        with TestClient(create_app(settings_of(celery_env, wait_timeout_s=60))) as c:
            r = c.post("/api/v1/diagnoses?wait=true", files={"bundle": ("a.tgz", bundles[0].read_bytes())})
            assert r.status_code == 201, (r.text, log.read_text()[-3000:])
    finally:
        stop_process(p)
    assert "Timed out waiting for UP message" not in log.read_text()


def test_time_limits_stay_below_lease_and_visibility_timeout() -> None:
    check_limits(ServiceSettings())
    with pytest.raises(ValueError, match="task_time_limit_s"):
        check_limits(ServiceSettings(task_time_limit_s=200, lease_s=150))
    with pytest.raises(ValueError, match="visibility_timeout_s"):
        check_limits(ServiceSettings(lease_s=7200))


def test_training_runs_go_to_their_own_queue(celery_env: dict[str, str]) -> None:
    import redis

    settings = settings_of(celery_env)
    with TestClient(create_app(settings)) as c:
        r = c.post("/api/v1/model/training?preset=smoke")
        assert r.status_code == 202, r.text
        # no worker consumes the training queue here: the message waits there, not among diagnoses
        rd = redis.Redis.from_url(str(settings.broker_url))
        prefix = settings.redis_key_prefix
        assert rd.llen(f"{prefix}training") == 1 and rd.llen(f"{prefix}diagnoses") == 0
        assert c.get(r.json()["status_url"]).json()["state"] == "PENDING"
        assert c.post("/api/v1/model/training?preset=huge").status_code == 422
        rd.delete(f"{prefix}training")


def test_lost_jobs_are_sent_again_once_per_lease(celery_env: dict[str, str]) -> None:
    import io
    from datetime import timedelta

    import redis

    from service.queue.celery_queue import CeleryQueue
    from service.store import bundle_store, job_store
    from service.store.db import Database
    from service.store.tables import Job, utcnow

    settings = settings_of(celery_env, lease_s=60, task_time_limit_s=50)
    database = Database(settings.sqlalchemy_url)
    with database.session() as db:
        spooled, sha, size = bundle_store.spool_upload(settings, io.BytesIO(b"bytes"), 100)
        bundle_store.keep_bundle(db, settings, spooled, sha, size, "b.tgz")
        job = job_store.create_job(db, sha, "b.tgz")  # accepted, but the broker never got it
        row = db.get(Job, job.id)
        assert row is not None
        row.created_at = utcnow() - timedelta(seconds=120)
        db.commit()
    queue = CeleryQueue(database, settings)
    rd = redis.Redis.from_url(str(settings.broker_url))
    key = f"{settings.redis_key_prefix}{DIAGNOSES}"
    try:
        assert queue.reap() == [job.id] and rd.llen(key) == 1
        assert queue.reap() == [] and rd.llen(key) == 1  # not again within the lease
    finally:
        rd.delete(key)
        queue.stop()
        database.dispose()
