"""SQL tables (SQLAlchemy 2 declarative): uploaded bundles, jobs, diagnoses, engineer feedback and retrains;
the histograms every worker process adds to (service.store.metric_store).

A *job* is one request to diagnose one upload; it is the API's diagnosis resource (its id is the
resource id) and the queue's source of truth: status, attempts and a lease. A *diagnosis* is the
result of one model version on one bundle, unique by (bundle sha256, model name, model version), so
running a job twice (a redelivered message, a worker that died after writing) stores it once.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Dialect,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


class UTCDateTime(TypeDecorator[datetime]):
    """Aware UTC datetimes on every database (SQLite hands back naive ones)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        value = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def utcnow() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    type_annotation_map = {datetime: UTCDateTime}  # noqa: RUF012


class Bundle(Base):
    """An upload's bytes, stored once by content under <data_dir>/bundles/<sha[:2]>/<sha>."""

    __tablename__ = "bundles"

    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    size: Mapped[int] = mapped_column(BigInteger)
    filename: Mapped[str] = mapped_column(String(255))  # the first name it was uploaded under
    first_seen: Mapped[datetime] = mapped_column(UTCDateTime)
    last_seen: Mapped[datetime] = mapped_column(UTCDateTime)  # retention counts from here
    purged_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)


class Diagnosis(Base):
    __tablename__ = "diagnoses"
    __table_args__ = (UniqueConstraint("sha256", "model_name", "model_version", name="uq_diagnosis_bundle_model"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    sha256: Mapped[str] = mapped_column(String(64), ForeignKey("bundles.sha256"), index=True)
    model_name: Mapped[str] = mapped_column(String(255))
    model_version: Mapped[str] = mapped_column(String(1024))
    # " fault-a fault-b " (non-none verdicts, space-delimited) so a LIKE filter works on any database
    faults: Mapped[str] = mapped_column(Text, default=" ")
    document: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)


class Job(Base):
    __tablename__ = "jobs"
    __table_args__ = (Index("ix_jobs_queue", "kind", "status", "created_at"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    kind: Mapped[str] = mapped_column(String(16), default="diagnose")  # diagnose | train
    status: Mapped[str] = mapped_column(String(16), default="queued")  # queued | running | done | failed
    sha256: Mapped[str] = mapped_column(String(64), ForeignKey("bundles.sha256"), index=True)
    filename: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    attempts: Mapped[int] = mapped_column(Integer, default=0)  # claims so far (each worker start)
    lease_owner: Mapped[str | None] = mapped_column(String(255), default=None)
    lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    error: Mapped[str | None] = mapped_column(Text, default=None)
    diagnosis_id: Mapped[int | None] = mapped_column(ForeignKey("diagnoses.id"), default=None, index=True)

    diagnosis: Mapped[Diagnosis | None] = relationship(lazy="joined")


class WebhookDelivery(Base):
    """A tracker delivery admitted once (service.trackers.ledgers.SqlDeliveryLedger): replays and stale events
    are told apart by key and by the newest event time per subject (a bug or an issue)."""

    __tablename__ = "webhook_deliveries"

    key: Mapped[str] = mapped_column(String(80), primary_key=True)
    source: Mapped[str] = mapped_column(String(16))  # bugzilla | github
    subject: Mapped[str] = mapped_column(String(255), index=True)
    event_time: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    received_at: Mapped[datetime] = mapped_column(UTCDateTime)


class SentMessage(Base):
    """An email (by Message-ID) or tracker comment (`comment:…`) that went out, so that a retried task
    never sends it twice (service.trackers.ledgers.SqlSentLog)."""

    __tablename__ = "sent_messages"

    key: Mapped[str] = mapped_column(String(512), primary_key=True)
    sent_at: Mapped[datetime] = mapped_column(UTCDateTime)


class RetrainDecision(Base):
    """One retrain (engineer feedback or on demand) and its promotion decision (service.queue.retraining):
    the queue's source of truth for it (status) and the record the model page lists."""

    __tablename__ = "retrain_decisions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    trigger: Mapped[str] = mapped_column(String(16))  # feedback | demand
    status: Mapped[str] = mapped_column(String(16), default="queued", index=True)  # queued|running|done|failed
    requested_by: Mapped[str | None] = mapped_column(String(255), default=None)
    feedback_count: Mapped[int] = mapped_column(Integer, default=0)  # feedbacks this retrain consumed
    champion_version: Mapped[str | None] = mapped_column(String(64), default=None)  # when it was judged
    candidate_version: Mapped[str | None] = mapped_column(String(64), default=None)
    # {candidate,champion}_{field,feedback}_{exact_match,component_accuracy}, set sizes
    metrics: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    promoted: Mapped[bool | None] = mapped_column(Boolean, default=None)
    reason: Mapped[str | None] = mapped_column(Text, default=None)
    mlflow_run_id: Mapped[str | None] = mapped_column(String(64), default=None)
    error: Mapped[str | None] = mapped_column(Text, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)


class Feedback(Base):
    """An engineer's labels for one diagnosed bundle (service.store.feedback): every component's label in the
    shape of the simulator's labels.json `components` ({component id: "none" | fault id}), the model's
    verdicts with the engineer's corrections applied. The bundle becomes labelled training data."""

    __tablename__ = "feedback"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    sha256: Mapped[str] = mapped_column(String(64), ForeignKey("bundles.sha256"), index=True)
    diagnosis_id: Mapped[int] = mapped_column(ForeignKey("diagnoses.id"), index=True)  # what was judged
    author: Mapped[str] = mapped_column(String(255))
    labels: Mapped[dict[str, str]] = mapped_column(JSON)
    comment: Mapped[str | None] = mapped_column(Text, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)
    # the retrain that first used it (None: not yet; it counts towards VSANDX_RETRAIN_MIN_FEEDBACK)
    retrain_id: Mapped[int | None] = mapped_column(ForeignKey("retrain_decisions.id"), default=None, index=True)


class MetricBucket(Base):
    """One bucket of a histogram that worker processes (embedded, Celery, on any host) observe into and
    /metrics reads: the observations of `metric` with `labels` that fell in (previous bound, `le`]."""

    __tablename__ = "metric_buckets"

    metric: Mapped[str] = mapped_column(String(64), primary_key=True)
    labels: Mapped[str] = mapped_column(String(255), primary_key=True)  # `name=value,…`, sorted; bounded values
    le: Mapped[str] = mapped_column(String(16), primary_key=True)  # the bucket's upper bound, or +Inf
    count: Mapped[int] = mapped_column(BigInteger, default=0)
    total: Mapped[float] = mapped_column(Float, default=0.0)  # the sum of those observations
