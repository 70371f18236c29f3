"""Diagnoses, unique by (bundle sha256, model name, model version), and the diagnosis resources the
API answers with: one job and its diagnosis, a filtered page of them, the verdict counts (the
`diagnoses` table, read through `jobs`).

Every function takes the session first; none raises HTTP errors (service.api.diagnoses turns results
into those).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from service.schemas import DiagnosisList, DiagnosisResource, ModelOut, status_url
from service.store.db import raced
from service.store.tables import Diagnosis, Job, utcnow


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
        return raced(find_diagnosis(db, sha256, model["name"], model["version"]), f"diagnosis of {sha256}")
    return row


def find_diagnosis(db: Session, sha256: str, model_name: str, model_version: str) -> Diagnosis | None:
    return db.scalars(
        select(Diagnosis).where(
            Diagnosis.sha256 == sha256, Diagnosis.model_name == model_name, Diagnosis.model_version == model_version
        )
    ).first()


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
