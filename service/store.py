"""Plain functions over the tables: bundles by sha256 (with retention), jobs (the queue's source of
truth, claimed with leases), diagnoses (unique by bundle and model version), listing and counts.

Every function takes the session first; none raises HTTP errors (service.api turns results into those).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from sqlalchemy import func, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from service.schemas import DiagnosisList, DiagnosisResource, ModelOut, status_url
from service.tables import Bundle, Diagnosis, Feedback, Job, utcnow
from vsandx.settings import ServiceSettings

CHUNK = 1 << 20
T = TypeVar("T")


class UploadTooLarge(ValueError):
    def __init__(self, limit: int) -> None:
        super().__init__(f"upload larger than the limit of {limit} bytes")
        self.limit = limit


# ------------------------------------------------------------------------------------------ bundles
class Vanished(RuntimeError):
    """A row another writer created while this one tried to (an IntegrityError) is gone again."""


def _raced(row: T | None, what: str) -> T:
    if row is None:
        raise Vanished(f"{what} was created concurrently and is gone again")
    return row


def _bundle_file(settings: ServiceSettings, sha256: str) -> Path:
    return settings.bundles_dir / sha256[:2] / sha256


def bundle_path(settings: ServiceSettings, sha256: str) -> Path | None:
    """Where an upload's bytes are kept, or None (unknown, or purged by retention)."""
    if len(sha256) != 64 or not all(c in "0123456789abcdef" for c in sha256):
        return None
    p = _bundle_file(settings, sha256)
    return p if p.is_file() else None


def spool_upload(settings: ServiceSettings, src: BinaryIO, max_bytes: int) -> tuple[Path, str, int]:
    """Copy an upload stream to a temporary file next to the store, hashing it; (path, sha256, size).
    Raises UploadTooLarge past `max_bytes` (the partial file is removed)."""
    tmp_dir = settings.bundles_dir / "tmp"
    tmp_dir.mkdir(parents=True, exist_ok=True)
    h, size = hashlib.sha256(), 0
    fd, name = tempfile.mkstemp(dir=tmp_dir)
    try:
        with os.fdopen(fd, "wb") as out:
            while chunk := src.read(CHUNK):
                size += len(chunk)
                if size > max_bytes:
                    raise UploadTooLarge(max_bytes)
                h.update(chunk)
                out.write(chunk)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise
    return Path(name), h.hexdigest(), size


SPOOL_STALE_S = 3600  # a spool file untouched this long belongs to an upload whose API process died


def sweep_spool(settings: ServiceSettings, now: float | None = None) -> int:
    """Remove spool files of uploads that never finished (the API process was killed mid-upload): an
    upload in progress writes every chunk, so its file is never this old. Returns how many went."""
    tmp_dir, now = settings.bundles_dir / "tmp", now if now is not None else time.time()
    gone = 0
    for p in tmp_dir.glob("*") if tmp_dir.is_dir() else ():
        try:
            if p.is_file() and now - p.stat().st_mtime > SPOOL_STALE_S:
                p.unlink()
                gone += 1
        except FileNotFoundError:  # kept or removed by its own upload meanwhile
            continue
    return gone


def keep_bundle(db: Session, settings: ServiceSettings, spooled: Path, sha256: str, size: int, filename: str) -> Bundle:
    """Move a spooled upload to its place by content and record it (a known sha256 only refreshes
    its retention clock). Commits."""
    final = _bundle_file(settings, sha256)
    final.parent.mkdir(parents=True, exist_ok=True)
    if final.is_file():
        spooled.unlink(missing_ok=True)
    else:
        shutil.move(spooled, final)  # same filesystem: an atomic rename
    now = utcnow()
    row = db.get(Bundle, sha256)
    if row is None:
        row = Bundle(sha256=sha256, size=size, filename=filename[:255], first_seen=now, last_seen=now)
        db.add(row)
        try:
            db.commit()
        except IntegrityError:  # the same bytes uploaded concurrently
            db.rollback()
            row = _raced(db.get(Bundle, sha256), f"bundle {sha256}")
    if row.last_seen != now:
        row.last_seen, row.purged_at = now, None
        db.commit()
    return row


def purge_expired(db: Session, settings: ServiceSettings, now: datetime | None = None) -> list[str]:
    """Delete the bytes of bundles not uploaded again within the retention period, with no unfinished
    job and no engineer feedback (they are training data); their rows, jobs and diagnoses stay.
    Returns the purged sha256s."""
    if settings.retention_days <= 0:
        return []
    cutoff = (now or utcnow()) - timedelta(days=settings.retention_days)
    busy = select(Job.sha256).where(Job.status.in_(("queued", "running")))
    labelled = select(Feedback.sha256)
    rows = db.scalars(
        select(Bundle).where(
            Bundle.last_seen < cutoff,
            Bundle.purged_at.is_(None),
            Bundle.sha256.not_in(busy),
            Bundle.sha256.not_in(labelled),
        )
    ).all()
    for row in rows:
        _bundle_file(settings, row.sha256).unlink(missing_ok=True)
        row.purged_at = now or utcnow()
    db.commit()
    return [r.sha256 for r in rows]


# --------------------------------------------------------------------------------------------- jobs
def create_job(db: Session, sha256: str, filename: str, kind: str = "diagnose", job_id: str | None = None) -> Job:
    """A queued job (a new id, or `job_id`: see ensure_job). Commits."""
    job = Job(
        id=job_id or str(uuid.uuid4()),
        kind=kind,
        status="queued",
        sha256=sha256,
        filename=filename[:255],
        created_at=utcnow(),
        attempts=0,
    )
    db.add(job)
    db.commit()
    return job


def ensure_job(db: Session, job_id: str, sha256: str, filename: str, kind: str = "diagnose") -> Job:
    """The job `job_id`, created queued when it does not exist yet (a deterministic id makes a repeated
    request, e.g. a retried tracker task, land on the same job and diagnosis resource)."""
    found = db.get(Job, job_id, populate_existing=True)
    if found is not None:
        return found
    try:
        return create_job(db, sha256, filename, kind, job_id)
    except IntegrityError:  # created concurrently
        db.rollback()
        return _raced(db.get(Job, job_id, populate_existing=True), f"job {job_id}")


def claim_job(
    db: Session, owner: str, lease_s: float, max_attempts: int, job_id: str | None = None, kind: str = "diagnose"
) -> Job | None:
    """Take a queued job, or a running one whose lease expired (its worker died), for `lease_s`
    seconds: a compare-and-set on (status, attempts), so two workers never both win. With `job_id`,
    only that job. A job whose workers died `max_attempts` times is failed instead."""
    now = utcnow()
    claimable = or_(Job.status == "queued", (Job.status == "running") & (Job.lease_until < now))
    q = select(Job.id, Job.status, Job.attempts).where(claimable, Job.kind == kind)
    q = q.where(Job.id == job_id) if job_id else q.order_by(Job.created_at).limit(8)
    for jid, status, attempts in db.execute(q).all():
        if attempts >= max_attempts:
            fail_job(db, jid, attempts, f"gave up after {attempts} attempts: the worker died each time")
            continue
        res = db.execute(
            update(Job)
            .where(Job.id == jid, Job.status == status, Job.attempts == attempts)
            .values(
                status="running",
                attempts=attempts + 1,
                lease_owner=owner[:255],
                lease_until=now + timedelta(seconds=lease_s),
                started_at=now,
            )
        )
        db.commit()
        if res.rowcount == 1:  # type: ignore[attr-defined]
            return db.get(Job, jid, populate_existing=True)
    return None


def expire_dead_leases(db: Session, host: str, dead: Callable[[str], bool]) -> list[str]:
    """End at once the leases held by workers of `host` that `dead(lease_owner)` says are gone (a
    killed process of this machine), so their jobs are claimed without waiting for the lease."""
    rows = db.execute(
        select(Job.id, Job.lease_owner).where(Job.status == "running", Job.lease_owner.startswith(f"{host}:"))
    ).all()
    expired = []
    for jid, holder in rows:
        if holder and dead(holder):
            res = db.execute(
                update(Job)
                .where(Job.id == jid, Job.status == "running", Job.lease_owner == holder)
                .values(lease_until=utcnow() - timedelta(seconds=1))
            )
            if res.rowcount == 1:  # type: ignore[attr-defined]
                expired.append(jid)
    db.commit()
    return expired


def lease_holder(db: Session, job_id: str) -> tuple[str, datetime | None] | None:
    """(status, lease_until) of a job, or None when unknown."""
    row = db.execute(select(Job.status, Job.lease_until).where(Job.id == job_id)).first()
    return (row[0], row[1]) if row else None


def record_diagnosis(db: Session, sha256: str, document: Mapping[str, Any]) -> Diagnosis:
    """The diagnosis of a bundle by a model version, stored once (a second writer gets the first's)."""
    model = document["model"]
    key = (
        Diagnosis.sha256 == sha256,
        Diagnosis.model_name == model["name"],
        Diagnosis.model_version == model["version"],
    )
    found = db.scalars(select(Diagnosis).where(*key)).first()
    if found is not None:
        return found
    faults = {f["fault"] for f in document.get("findings", ())}
    row = Diagnosis(
        sha256=sha256,
        model_name=model["name"],
        model_version=model["version"],
        faults=" " + " ".join(sorted(faults)) + " ",
        document=dict(document),
        created_at=utcnow(),
    )
    db.add(row)
    try:
        db.commit()
    except IntegrityError:
        db.rollback()
        return _raced(find_diagnosis(db, sha256, model["name"], model["version"]), f"diagnosis of {sha256}")
    return row


def find_diagnosis(db: Session, sha256: str, model_name: str, model_version: str) -> Diagnosis | None:
    return db.scalars(
        select(Diagnosis).where(
            Diagnosis.sha256 == sha256, Diagnosis.model_name == model_name, Diagnosis.model_version == model_version
        )
    ).first()


def complete_job(db: Session, job_id: str, attempt: int, diagnosis_id: int | None) -> bool:
    """Mark the job done with its diagnosis (None for a job that makes none, e.g. a tracker delivery),
    only if this attempt still holds it (exactly once)."""
    return _finish(db, job_id, attempt, status="done", diagnosis_id=diagnosis_id, error=None)


def fail_job(db: Session, job_id: str, attempt: int, error: str) -> bool:
    return _finish(db, job_id, attempt, status="failed", error=error[:4000])


def requeue_job(db: Session, job_id: str, attempt: int) -> bool:
    """Give a claimed job back to the queue (a transient error); its attempt is not counted."""
    res = db.execute(
        update(Job)
        .where(Job.id == job_id, Job.status == "running", Job.attempts == attempt)
        .values(status="queued", attempts=attempt - 1, lease_owner=None, lease_until=None)
    )
    db.commit()
    return res.rowcount == 1  # type: ignore[attr-defined]


def retry_later(db: Session, job_id: str, attempt: int, delay_s: float, error: str) -> bool:
    """After a transient error: keep the job running, held by nobody, with a lease that ends in
    `delay_s`, so any worker claims it again then (the attempt counts). The error stays visible."""
    res = db.execute(
        update(Job)
        .where(Job.id == job_id, Job.status == "running", Job.attempts == attempt)
        .values(lease_owner=None, lease_until=utcnow() + timedelta(seconds=delay_s), error=error[:4000])
    )
    db.commit()
    return res.rowcount == 1  # type: ignore[attr-defined]


def _finish(db: Session, job_id: str, attempt: int, **values: Any) -> bool:
    res = db.execute(
        update(Job)
        .where(Job.id == job_id, Job.status.in_(("queued", "running")), Job.attempts == attempt)
        .values(finished_at=utcnow(), lease_owner=None, lease_until=None, **values)
    )
    db.commit()
    return res.rowcount == 1  # type: ignore[attr-defined]


def stale_jobs(db: Session, queued_for_s: float, kind: str = "diagnose") -> list[str]:
    """Jobs a broker may have lost: queued for longer than `queued_for_s`, or running past their lease."""
    now = utcnow()
    q = select(Job.id).where(
        Job.kind == kind,
        or_(
            (Job.status == "queued") & (Job.created_at < now - timedelta(seconds=queued_for_s)),
            (Job.status == "running") & (Job.lease_until < now),
        ),
    )
    return list(db.scalars(q.order_by(Job.created_at).limit(100)))


# ---------------------------------------------------------------------------------------- reading
def to_resource(job: Job) -> DiagnosisResource:
    d = job.diagnosis
    return DiagnosisResource(
        id=job.id,
        status=job.status,  # type: ignore[arg-type]
        filename=job.filename,
        sha256=job.sha256,
        created_at=job.created_at,
        started_at=job.started_at,
        finished_at=job.finished_at,
        attempts=job.attempts,
        error=job.error,
        model=ModelOut(name=d.model_name, version=d.model_version) if d else None,
        faults=d.faults.split() if d else [],
        status_url=status_url(job.id),
        diagnosis=d.document if d else None,
    )


def get_diagnosis(db: Session, job_id: str) -> DiagnosisResource | None:
    job = db.get(Job, job_id, populate_existing=True)
    return to_resource(job) if job is not None and job.kind == "diagnose" else None


def list_diagnoses(
    db: Session,
    fault: str | None = None,
    status: str | None = None,
    sha256: str | None = None,
    limit: int = 50,
    offset: int = 0,
) -> DiagnosisList:
    """Newest first; `fault` keeps diagnoses with that verdict on some component."""
    q = select(Job).where(Job.kind == "diagnose")
    if status:
        q = q.where(Job.status == status)
    if sha256:
        q = q.where(Job.sha256 == sha256)
    if fault:
        q = q.join(Diagnosis, Job.diagnosis_id == Diagnosis.id).where(
            Diagnosis.faults.contains(f" {fault} ", autoescape=True)
        )
    total = db.scalar(select(func.count()).select_from(q.subquery())) or 0
    jobs = db.scalars(q.order_by(Job.created_at.desc(), Job.id).limit(limit).offset(offset)).unique().all()
    return DiagnosisList(items=[to_resource(j) for j in jobs], total=total, limit=limit, offset=offset)


def queue_depth(db: Session, kind: str = "diagnose") -> dict[str, int]:
    """Jobs per status (queued, running, done, failed)."""
    rows = db.execute(select(Job.status, func.count()).where(Job.kind == kind).group_by(Job.status)).all()
    return {"queued": 0, "running": 0, "done": 0, "failed": 0} | {s: n for s, n in rows}


def verdict_counts(db: Session) -> dict[str, int]:
    """Finished diagnoses per fault found (a diagnosis with two faults counts for both; healthy = none)."""
    rows = db.execute(
        select(Diagnosis.faults, func.count())
        .select_from(Job)
        .join(Diagnosis, Job.diagnosis_id == Diagnosis.id)
        .where(Job.status == "done")
        .group_by(Diagnosis.faults)
    ).all()
    out: dict[str, int] = {}
    for faults, n in rows:
        for f in faults.split() or ["none"]:
            out[f] = out.get(f, 0) + n
    return out
