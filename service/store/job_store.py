"""Jobs, the queue's source of truth in every mode: created queued, claimed with a lease by a
compare-and-set, finished exactly once by the attempt that holds them (the `jobs` table).

Every function takes the session first; none raises HTTP errors.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from service.store.db import raced
from service.store.tables import Job, RetrainDecision, utcnow


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
        return raced(db.get(Job, job_id, populate_existing=True), f"job {job_id}")


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


STATUSES = ("queued", "running", "done", "failed")


def jobs_by_kind(db: Session) -> dict[tuple[str, str], int]:
    """Jobs per (kind, status), every status of every kind there is (diagnose, webhook: rows on either
    queue; train: Celery's training runs; each row kept by whichever process runs it) and of the
    retrains (kind `retrain`), zeros included."""
    rows = db.execute(select(Job.kind, Job.status, func.count()).group_by(Job.kind, Job.status)).all()
    retrains = db.execute(select(RetrainDecision.status, func.count()).group_by(RetrainDecision.status)).all()
    out = {(kind, status): 0 for kind in ("diagnose", "webhook", "train", "retrain") for status in STATUSES}
    out.update({(k, s): n for k, s, n in rows})
    out.update({("retrain", s): n for s, n in retrains})
    return out


def queue_depth(db: Session, kind: str = "diagnose") -> dict[str, int]:
    """Jobs per status (queued, running, done, failed)."""
    rows = db.execute(select(Job.status, func.count()).where(Job.kind == kind).group_by(Job.status)).all()
    return {"queued": 0, "running": 0, "done": 0, "failed": 0} | {s: n for s, n in rows}
