"""Retraining from engineer feedback: when to retrain, the decision rows, running one on a worker.

A retrain is queued when the feedbacks no retrain has used yet reach VSANDX_RETRAIN_MIN_FEEDBACK
(looked at as each feedback is stored), or on demand (API, model page). Its row in retrain_decisions
is its source of truth: queued → running → done (with the decision) | failed. Opening one claims every
unused feedback for it (a conditional update, so two triggers never both take them); a failed retrain
gives them back. The work — datasets, the warm-started sweep, the judgement and the `champion` alias —
is training.retrain's; this module records its decision. It runs on the Celery `training` queue when a
broker is set (service.queue.celery_app), else in a thread of the API process.
"""

from __future__ import annotations

import logging
import threading
from datetime import timedelta
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from service.queue.protocol import RetrainQueue
from service.schemas import RetrainList, RetrainOut, retrain_url
from service.store import feedback
from service.store.db import Database
from service.store.tables import Feedback, RetrainDecision, utcnow
from vsandx.settings import ServiceSettings

log = logging.getLogger(__name__)
ACTIVE = ("queued", "running")


def to_out(row: RetrainDecision) -> RetrainOut:
    """The API's view of a retrain row: its columns, one to one, and its URL."""
    cols = {f: getattr(row, f) for f in RetrainOut.model_fields if f not in ("url", "metrics")}
    return RetrainOut(**cols, metrics=dict(row.metrics or {}), url=retrain_url(row.id))


def active(db: Session, settings: ServiceSettings) -> RetrainDecision | None:
    """A queued or running retrain younger than retrain_timeout_s (an older one's worker died)."""
    since = utcnow() - timedelta(seconds=settings.retrain_timeout_s)
    q = select(RetrainDecision).where(RetrainDecision.status.in_(ACTIVE), RetrainDecision.created_at > since)
    return db.scalars(q.order_by(RetrainDecision.id).limit(1)).first()


def open_retrain(
    db: Session, settings: ServiceSettings, trigger: str, requested_by: str | None = None, at_least: int = 0
) -> RetrainDecision | None:
    """A queued retrain holding every unused feedback; None when one is active already, or when fewer
    than `at_least` feedbacks were left to claim (another trigger took them first)."""
    if active(db, settings) is not None:
        return None
    row = RetrainDecision(trigger=trigger, status="queued", requested_by=requested_by, feedback_count=0,
                          metrics={}, created_at=utcnow())  # fmt: skip
    db.add(row)
    db.flush()
    res = db.execute(update(Feedback).where(Feedback.retrain_id.is_(None)).values(retrain_id=row.id))
    claimed = int(res.rowcount)  # type: ignore[attr-defined]
    if claimed < at_least:
        db.rollback()
        return None
    row.feedback_count = claimed
    db.commit()
    return row


def maybe_trigger(db: Session, settings: ServiceSettings) -> RetrainDecision | None:
    """Open a retrain when enough new feedback has come in (VSANDX_RETRAIN_MIN_FEEDBACK; 0 = never)."""
    need = settings.retrain_min_feedback
    if need <= 0 or feedback.unconsumed(db) < need:
        return None
    return open_retrain(db, settings, "feedback", at_least=need)


def after_feedback(db: Session, settings: ServiceSettings, queue: RetrainQueue) -> RetrainDecision | None:
    """What follows a stored feedback: a retrain queued (and sent) when there is enough new feedback."""
    opened = maybe_trigger(db, settings)
    if opened is not None:
        queue.submit_retrain(opened.id)
    return opened


def get_retrain(db: Session, retrain_id: int) -> RetrainOut | None:
    row = db.get(RetrainDecision, retrain_id, populate_existing=True)
    return to_out(row) if row else None


def list_retrains(db: Session, limit: int = 50, offset: int = 0) -> RetrainList:
    total = db.scalar(select(func.count()).select_from(RetrainDecision)) or 0
    rows = db.scalars(select(RetrainDecision).order_by(RetrainDecision.id.desc()).limit(limit).offset(offset)).all()
    return RetrainList(items=[to_out(r) for r in rows], total=total)


def _claim(db: Session, retrain_id: int) -> RetrainDecision | None:
    res = db.execute(
        update(RetrainDecision)
        .where(RetrainDecision.id == retrain_id, RetrainDecision.status == "queued")
        .values(status="running", started_at=utcnow())
    )
    db.commit()
    return db.get(RetrainDecision, retrain_id, populate_existing=True) if res.rowcount == 1 else None  # type: ignore[attr-defined]


def _finish(db: Session, retrain_id: int, **values: Any) -> None:
    db.execute(update(RetrainDecision).where(RetrainDecision.id == retrain_id).values(finished_at=utcnow(), **values))
    if values.get("status") == "failed":  # its feedback counts towards the next one
        db.execute(update(Feedback).where(Feedback.retrain_id == retrain_id).values(retrain_id=None))
    db.commit()


def run_retrain(database: Database, settings: ServiceSettings, retrain_id: int) -> str:
    """The worker's side: claim the queued retrain, train and judge a candidate on every feedback-labelled
    bundle, record the decision. Returns the final status ("skipped": not queued, e.g. a duplicate)."""
    from training.config import TrainConfig
    from training.datasets import LabelledBundle
    from training.retrain import retrain

    with database.session() as db:
        row = _claim(db, retrain_id)
        if row is None:
            return "skipped"
        trigger = row.trigger
        items, gone = feedback.labelled_bundles(db, settings)
    try:
        done = retrain(
            settings,
            TrainConfig.preset(settings.retrain_preset),
            [LabelledBundle(sha, path, labels) for sha, path, labels in items],
            holdout=settings.retrain_feedback_holdout,
            trigger=trigger,
            tags={"retrain_id": str(retrain_id)},
        )
    except Exception as e:  # any failure of the training run fails this retrain, with the reason
        log.exception("retrain %d failed", retrain_id)
        with database.session() as db:
            _finish(db, retrain_id, status="failed", error=f"{type(e).__name__}: {e}"[:4000])
        return "failed"
    reason = done.reason + (f" ({gone} feedback bundle(s) no longer stored were left out)" if gone else "")
    with database.session() as db:
        _finish(db, retrain_id, status="done", promoted=done.promoted, reason=reason, metrics=done.metrics,
                candidate_version=done.candidate_version, champion_version=done.champion_version,
                mlflow_run_id=done.run_id)  # fmt: skip
    log.info("retrain %d: candidate version %s %s", retrain_id, done.candidate_version,
             "promoted" if done.promoted else "not promoted")  # fmt: skip
    return "done"


_threads: list[threading.Thread] = []


def run_in_thread(database: Database, settings: ServiceSettings, retrain_id: int) -> str:
    """A queued retrain without a training queue (the embedded queue's submit_retrain): run it in a
    thread of this process; the thread's name."""
    t = threading.Thread(
        target=run_retrain, args=(database, settings, retrain_id), name=f"vsandx-retrain-{retrain_id}", daemon=True
    )
    t.start()
    _threads[:] = [x for x in _threads if x.is_alive()] + [t]
    return t.name


def running_threads() -> list[threading.Thread]:
    """The embedded retrains still running in this process (tests wait on them)."""
    return [t for t in _threads if t.is_alive()]
