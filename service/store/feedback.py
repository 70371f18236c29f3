"""Engineer feedback on diagnoses: checked against the diagnosis (its component ids, the faults each
kind can carry), stored with the bundle and its author as the label of every component (the model's
verdicts with the engineer's corrections applied: labels.json's `components` shape), and handed to
retraining as labelled bundles. Plain functions over the tables; service.api.diagnoses makes the HTTP errors.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from service.schemas import FeedbackIn, FeedbackOut, ModelOut, retrain_url
from service.store import bundle_store
from service.store.tables import Diagnosis, Feedback, Job, utcnow
from vsandx.faults import NONE, faults_for_kind
from vsandx.settings import ServiceSettings


class InvalidFeedback(ValueError):
    """A label the diagnosis cannot take; `field` names it as the request does (labels["<id>"])."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


class UnknownDiagnosis(LookupError):
    """No diagnosis with that id."""


class NotFinished(ValueError):
    """The diagnosis is queued, running or failed: there are no verdicts to confirm or correct yet."""


def allowed_labels(kind: str) -> tuple[str, ...]:
    return (NONE, *faults_for_kind(kind))


def corrected_labels(document: Mapping[str, Any], corrections: Mapping[str, str]) -> dict[str, str]:
    """Every component's label: its verdict in `document`, or the correction given for it."""
    comps = {str(c["id"]): c for c in document.get("components", [])}
    for cid, label in corrections.items():
        field = f'labels["{cid}"]'
        comp = comps.get(cid)
        if comp is None:
            raise InvalidFeedback(field, "no component with this id in the diagnosis")
        allowed = allowed_labels(str(comp["kind"]))
        if label not in allowed:
            raise InvalidFeedback(field, f"{label!r} cannot apply to a {comp['kind']}; one of {', '.join(allowed)}")
    return {cid: corrections.get(cid, str(c["verdict"])) for cid, c in comps.items()}


def _diagnosed(db: Session, job_id: str) -> tuple[Job, Diagnosis]:
    job = db.get(Job, job_id, populate_existing=True)
    if job is None or job.kind != "diagnose":
        raise UnknownDiagnosis(f"no diagnosis {job_id}")
    if job.status != "done" or job.diagnosis is None:
        raise NotFinished(f"diagnosis {job_id} is {job.status}: there are no verdicts to give feedback on yet")
    return job, job.diagnosis


def record_feedback(db: Session, job_id: str, given: FeedbackIn) -> Feedback:
    """Store an engineer's labels for the bundle of diagnosis `job_id`. Raises UnknownDiagnosis,
    NotFinished, or InvalidFeedback (a component or label the diagnosis cannot take)."""
    job, diagnosis = _diagnosed(db, job_id)
    row = Feedback(
        sha256=job.sha256,
        diagnosis_id=diagnosis.id,
        author=given.author.strip()[:255],
        labels=corrected_labels(diagnosis.document, given.labels),
        comment=(given.comment or "").strip() or None,
        created_at=utcnow(),
    )
    db.add(row)
    db.commit()
    return row


def to_out(row: Feedback, diagnosis: Diagnosis) -> FeedbackOut:
    verdicts = {str(c["id"]): str(c["verdict"]) for c in diagnosis.document.get("components", [])}
    return FeedbackOut(
        id=row.id,
        sha256=row.sha256,
        diagnosis_model=ModelOut(name=diagnosis.model_name, version=diagnosis.model_version),
        author=row.author,
        labels=row.labels,
        corrections={cid: lab for cid, lab in row.labels.items() if verdicts.get(cid) != lab},
        comment=row.comment,
        created_at=row.created_at,
        retrain_id=row.retrain_id,
        retrain_url=retrain_url(row.retrain_id) if row.retrain_id is not None else None,
    )


def feedback_for(db: Session, job_id: str) -> list[FeedbackOut] | None:
    """Every feedback on the bundle of diagnosis `job_id` (by any model version), newest first; None
    for an unknown diagnosis."""
    job = db.get(Job, job_id)
    if job is None or job.kind != "diagnose":
        return None
    rows = db.execute(
        select(Feedback, Diagnosis)
        .join(Diagnosis, Feedback.diagnosis_id == Diagnosis.id)
        .where(Feedback.sha256 == job.sha256)
        .order_by(Feedback.created_at.desc(), Feedback.id.desc())
    ).all()
    return [to_out(f, d) for f, d in rows]


def get_feedback(db: Session, feedback_id: int) -> FeedbackOut | None:
    row = db.get(Feedback, feedback_id, populate_existing=True)
    diagnosis = db.get(Diagnosis, row.diagnosis_id) if row else None
    return to_out(row, diagnosis) if row and diagnosis else None


def unconsumed(db: Session) -> int:
    """Feedbacks no retrain has used yet (what VSANDX_RETRAIN_MIN_FEEDBACK counts)."""
    return db.scalar(select(func.count()).select_from(Feedback).where(Feedback.retrain_id.is_(None))) or 0


def labelled_bundles(db: Session, settings: ServiceSettings) -> tuple[list[tuple[str, Path, dict[str, str]]], int]:
    """(sha256, stored upload, labels) of every bundle with feedback, its newest feedback's labels; and
    how many such bundles are left out because their bytes are no longer stored."""
    latest: dict[str, dict[str, str]] = {}
    for sha, labels in db.execute(select(Feedback.sha256, Feedback.labels).order_by(Feedback.created_at, Feedback.id)):
        latest[sha] = labels
    out, gone = [], 0
    for sha, labels in latest.items():
        path = bundle_store.bundle_path(settings, sha)
        if path is None:
            gone += 1
        else:
            out.append((sha, path, labels))
    return out, gone
