"""Housekeeping (retention, the feedback retrain check): the function, and `vsandx beat` scheduling it
for a real Celery worker on the real local Redis; `vsandx worker --ping` as a container healthcheck."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest

from service.queue.housekeeping import housekeeping
from service.schemas import FeedbackIn
from service.store import bundle_store, feedback
from service.store.db import Database
from service.store.tables import Bundle, RetrainDecision, utcnow
from tests.attacks.bounds import bounded
from tests.conftest import REPO, require
from tests.service.kit import done_job, redis_available, redis_env, start_worker, stop_process, until
from vsandx.settings import ServiceSettings


class _Queue:
    def __init__(self) -> None:
        self.sent: list[int] = []

    def submit_retrain(self, retrain_id: int) -> str:
        self.sent.append(retrain_id)
        return str(retrain_id)


def _age(database: Database, sha: str, days: float) -> None:
    with database.session() as db:
        row = db.get(Bundle, sha)
        assert row is not None
        row.last_seen = utcnow() - timedelta(days=days)
        db.commit()


def test_spool_files_of_killed_uploads_are_swept(tmp_path: Path) -> None:
    """An API process killed mid-upload leaves its spool file; the next housekeeping removes it once it
    is an hour old, never a file an upload in progress is still writing."""
    settings = ServiceSettings(data_dir=tmp_path / "var")
    database = Database(settings.sqlalchemy_url)
    tmp = settings.bundles_dir / "tmp"
    tmp.mkdir(parents=True)
    stale, live = tmp / "tmpdead", tmp / "tmplive"
    stale.write_bytes(b"x" * 1000)
    live.write_bytes(b"y")
    old = time.time() - bundle_store.SPOOL_STALE_S - 60
    os.utime(stale, (old, old))
    with bounded("housekeeping sweeps a killed upload's spool file"):
        assert housekeeping(database, settings, _Queue()).spool_removed == 1
    assert not stale.exists() and live.exists()
    assert housekeeping(database, settings, _Queue()).spool_removed == 0
    database.dispose()


def _ping(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "cli.main", "worker", "--ping"]
    return subprocess.run(cmd, env={**os.environ, **env}, cwd=REPO, capture_output=True, text=True, timeout=60)


def test_purges_expired_bundles_and_queues_a_retrain_once(tmp_path: Path) -> None:
    settings = ServiceSettings(data_dir=tmp_path / "var", retention_days=7, retrain_min_feedback=2)
    database = Database(settings.sqlalchemy_url)
    with database.session() as db:
        jobs = [done_job(db, settings, f"bundle {i}".encode()) for i in range(3)]
    shas = [hashlib.sha256(f"bundle {i}".encode()).hexdigest() for i in range(3)]
    _age(database, shas[2], days=30)
    queue = _Queue()
    first = housekeeping(database, settings, queue)
    assert first.purged == 1 and first.retrain_id is None and queue.sent == []  # no feedback yet
    with database.session() as db:
        for j in jobs[:2]:
            feedback.record_feedback(db, j, FeedbackIn(author="eng"))
    _age(database, shas[0], days=30)  # labelled: training data, never purged
    second = housekeeping(database, settings, queue)
    assert second.purged == 0 and second.retrain_id is not None and queue.sent == [second.retrain_id]
    assert housekeeping(database, settings, queue).retrain_id is None  # the feedback is taken; one is active
    with database.session() as db:
        row = db.get(RetrainDecision, second.retrain_id)
        assert row is not None and row.trigger == "feedback" and row.feedback_count == 2
    database.dispose()


def test_beat_schedules_housekeeping_for_a_celery_worker(tmp_path: Path) -> None:
    require("Redis at 127.0.0.1:6379", redis_available(), "start it: redis-server --daemonize yes")
    env = {"VSANDX_DATA_DIR": str(tmp_path / "var"), "VSANDX_HOUSEKEEPING_S": "1", "VSANDX_RETENTION_DAYS": "7",
           **redis_env("beat")}  # fmt: skip
    settings = ServiceSettings.model_validate({k.removeprefix("VSANDX_").lower(): v for k, v in env.items()})
    database = Database(settings.sqlalchemy_url)
    with database.session() as db:
        done_job(db, settings, b"an old upload")
    sha = hashlib.sha256(b"an old upload").hexdigest()
    _age(database, sha, days=30)
    worker = start_worker(env, "--queues", "diagnoses", "--concurrency", "1", log=tmp_path / "worker.log")
    beat = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "beat", "--log-level", "info"],
        env={**os.environ, **env},
        cwd=REPO,
        stdout=open(tmp_path / "beat.log", "ab"),  # noqa: SIM115 (the child owns it)
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:

        def purged() -> bool:
            with database.session() as db:
                row = db.get(Bundle, sha, populate_existing=True)
                return row is not None and row.purged_at is not None

        until(purged, timeout=60, every=0.25)
        assert (tmp_path / "var" / "run").is_dir()  # beat keeps its schedule state under the data folder
        ping = _ping(env)
        assert ping.returncode == 0, ping.stderr
        assert "vsandx-diagnoses-" in ping.stderr
    finally:
        stop_process(beat)
        stop_process(worker)
        database.dispose()
        print((tmp_path / "beat.log").read_text()[-2000:], (tmp_path / "worker.log").read_text()[-2000:])
    stopped = _ping(env)
    assert stopped.returncode == 1 and "no Celery worker of this host answered" in stopped.stderr


def test_beat_needs_a_broker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cli.main import main
    from vsandx.settings import get_service_settings

    monkeypatch.delenv("VSANDX_BROKER_URL", raising=False)
    monkeypatch.setenv("VSANDX_DATA_DIR", str(tmp_path / "var"))
    get_service_settings.cache_clear()
    try:
        assert main(["beat"]) == 2
    finally:
        get_service_settings.cache_clear()
