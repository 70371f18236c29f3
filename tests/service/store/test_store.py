"""The store on SQLite and on the real local PostgreSQL: migrations, bundles by sha256 and retention,
jobs claimed with leases (compare-and-set), diagnoses stored once, listing and counts."""

from __future__ import annotations

import io
import os
import socket
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import text
from sqlalchemy.orm import Session

from service.queue.diagnosis_jobs import recover_orphans
from service.store import bundle_store, diagnosis_store, job_store
from service.store.db import Database
from service.store.tables import Base, Bundle, Job, utcnow
from vsandx.settings import ServiceSettings


@pytest.fixture
def settings(tmp_path: Path) -> ServiceSettings:
    return ServiceSettings(data_dir=tmp_path / "var", retention_days=7)


def _bundle(db: Session, settings: ServiceSettings, payload: bytes, name: str = "b.tgz") -> str:
    spooled, sha, size = bundle_store.spool_upload(settings, io.BytesIO(payload), 1 << 20)
    bundle_store.keep_bundle(db, settings, spooled, sha, size, name)
    return sha


def _doc(sha: str, version: str, faults: list[str]) -> dict[str, object]:
    return {
        "schema": "vsandx.diagnosis/1",
        "bundle": {"sha256": sha},
        "model": {"name": "m", "version": version},
        "findings": [{"fault": f, "component": f"host:h{i}"} for i, f in enumerate(faults)],
    }


def test_migrations_match_the_tables(database: Database) -> None:
    with database.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert diff == []
    Database(database.url).dispose()  # migrating again is a no-op


def test_bundles_by_sha256_and_retention(database: Database, settings: ServiceSettings) -> None:
    with database.session() as db:
        sha = _bundle(db, settings, b"same bytes")
        assert _bundle(db, settings, b"same bytes", "again.tgz") == sha  # stored once
        path = bundle_store.bundle_path(settings, sha)
        assert path is not None and path.read_bytes() == b"same bytes"
        assert not list((settings.bundles_dir / "tmp").iterdir())
        assert bundle_store.bundle_path(settings, "../" + sha[3:]) is None
        with pytest.raises(bundle_store.UploadTooLarge):
            bundle_store.spool_upload(settings, io.BytesIO(b"x" * 100), 99)
        assert not list((settings.bundles_dir / "tmp").iterdir())  # the partial copy is gone
        busy = _bundle(db, settings, b"still queued")
        job_store.create_job(db, busy, "q.tgz")
        later = utcnow() + timedelta(days=8)
        assert bundle_store.purge_expired(db, settings, later) == [sha]  # the queued job's bundle stays
        assert bundle_store.bundle_path(settings, sha) is None and bundle_store.bundle_path(settings, busy) is not None
        row = db.get(Bundle, sha)
        assert row is not None and row.purged_at is not None


def test_claims_are_exclusive_and_leases_expire(database: Database, settings: ServiceSettings) -> None:
    with database.session() as db, database.session() as other:
        sha = _bundle(db, settings, b"bundle")
        job = job_store.create_job(db, sha, "b.tgz")
        first = job_store.claim_job(db, "w1", lease_s=60, max_attempts=3)
        assert first is not None and first.id == job.id and first.attempts == 1 and first.status == "running"
        assert job_store.claim_job(other, "w2", lease_s=60, max_attempts=3) is None  # leased
        db.execute(text("UPDATE jobs SET lease_until = :t"), {"t": utcnow() - timedelta(seconds=1)})
        db.commit()
        second = job_store.claim_job(other, "w2", lease_s=60, max_attempts=3, job_id=job.id)
        assert second is not None and second.attempts == 2
        d = diagnosis_store.record_diagnosis(db, sha, _doc(sha, "1", ["disk.failure"]))
        assert diagnosis_store.record_diagnosis(other, sha, _doc(sha, "1", ["disk.failure"])).id == d.id  # stored once
        assert not job_store.complete_job(db, job.id, 1, d.id)  # the first attempt lost the job
        assert job_store.complete_job(other, job.id, 2, d.id)
        assert not job_store.complete_job(other, job.id, 2, d.id)  # exactly once
        res = diagnosis_store.get_diagnosis(db, job.id)
        assert res is not None and res.status == "done" and res.faults == ["disk.failure"]
        assert res.model is not None and res.model.version == "1" and res.diagnosis is not None


def test_a_job_whose_worker_keeps_dying_fails(database: Database, settings: ServiceSettings) -> None:
    with database.session() as db:
        job = job_store.create_job(db, _bundle(db, settings, b"poison"), "p.tgz")
        for _ in range(2):
            assert job_store.claim_job(db, "w", lease_s=-1, max_attempts=2) is not None  # lease already over
        assert job_store.claim_job(db, "w", lease_s=60, max_attempts=2) is None
        res = diagnosis_store.get_diagnosis(db, job.id)
        assert res is not None and res.status == "failed" and "2 attempts" in (res.error or "")
        job2 = job_store.create_job(db, _bundle(db, settings, b"transient"), "t.tgz")
        claimed = job_store.claim_job(db, "w", lease_s=60, max_attempts=2)
        assert claimed is not None and claimed.id == job2.id
        assert job_store.requeue_job(db, job2.id, 1)  # a transient error does not count as an attempt
        again = job_store.claim_job(db, "w", lease_s=60, max_attempts=2)
        assert again is not None and again.attempts == 1


def test_dead_local_process_releases_its_lease(database: Database, settings: ServiceSettings) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    with database.session() as db:
        job = job_store.create_job(db, _bundle(db, settings, b"orphan"), "o.tgz")
        alive = job_store.create_job(db, _bundle(db, settings, b"mine"), "m.tgz")
        host = socket.gethostname()
        assert job_store.claim_job(db, f"{host}:{gone.pid}:w0", 600, 3, job_id=job.id) is not None
        assert job_store.claim_job(db, f"{host}:{os.getppid()}:w0", 600, 3, job_id=alive.id) is not None
        assert recover_orphans(db) == [job.id]
        retaken = job_store.claim_job(db, "w", 60, 3)
        assert retaken is not None and retaken.id == job.id and retaken.attempts == 2


def test_listing_filters_and_counts(database: Database, settings: ServiceSettings) -> None:
    with database.session() as db:
        ids = []
        for i, faults in enumerate([["net.packet_loss"], [], ["net.packet_loss", "disk.failure"]]):
            sha = _bundle(db, settings, f"bundle {i}".encode())
            job = job_store.create_job(db, sha, f"b{i}.tgz")
            claimed = job_store.claim_job(db, "w", 60, 3, job_id=job.id)
            assert claimed is not None
            job_store.complete_job(db, job.id, 1, diagnosis_store.record_diagnosis(db, sha, _doc(sha, "7", faults)).id)
            ids.append(job.id)
        job_store.create_job(db, sha, "pending.tgz")
        assert diagnosis_store.list_diagnoses(db).total == 4
        assert [r.id for r in diagnosis_store.list_diagnoses(db, fault="net.packet_loss").items] == [ids[2], ids[0]]
        assert [r.id for r in diagnosis_store.list_diagnoses(db, fault="disk.failure").items] == [ids[2]]
        assert diagnosis_store.list_diagnoses(db, fault="disk.hotspot").total == 0
        assert [r.filename for r in diagnosis_store.list_diagnoses(db, status="queued").items] == ["pending.tgz"]
        page = diagnosis_store.list_diagnoses(db, status="done", limit=1, offset=1)
        assert page.total == 3 and [r.id for r in page.items] == [ids[1]]
        assert diagnosis_store.list_diagnoses(db, sha256=sha).total == 2
        assert job_store.queue_depth(db) == {"queued": 1, "running": 0, "done": 3, "failed": 0}
        assert diagnosis_store.verdict_counts(db) == {"net.packet_loss": 2, "disk.failure": 1, "none": 1}
        assert db.get(Job, ids[0]) is not None
