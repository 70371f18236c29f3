"""SQL tables (SQLAlchemy 2 declarative): uploaded bundles, jobs, diagnoses.

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
    DateTime,
    Dialect,
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
