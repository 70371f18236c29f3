"""Histograms kept in the database, so that an observation made where the work runs reaches /metrics
whichever process made it: an embedded worker thread of the API, a `vsandx worker` process, a Celery
pool child on another host. Each observation adds one to its bucket's row (an UPDATE, or the INSERT of
a new row); a scrape reads the rows and hands them to Prometheus as cumulative buckets
(service.api.metrics). Rows are never deleted, so the counts only grow, as a Prometheus counter must.

prometheus_client's own multiprocess mode (PROMETHEUS_MULTIPROC_DIR) shares one directory between
the processes of one machine only, and must be set before the library is imported; the database is
shared already by everything that runs a job.
"""

from __future__ import annotations

import bisect
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session

from service.store.tables import MetricBucket

log = logging.getLogger(__name__)
INF = "+Inf"


@dataclass(frozen=True)
class HistogramSpec:
    name: str  # the metric's name, without _bucket / _sum / _count
    help: str
    labels: tuple[str, ...]  # label names; their values must come from a bounded set (never a request's)
    buckets: tuple[float, ...]  # upper bounds, ascending, +Inf implied


# a diagnosis: reading a bundle of a few MB to a few hundred, the model, the charts (limit 120 s by default)
WORK_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0)
DIAGNOSIS_SECONDS = HistogramSpec(
    "vsandx_diagnosis_seconds",
    "Time a worker spent on one diagnosis (reading the bundle, the model, the charts), by outcome (done, failed)",
    ("outcome",),
    WORK_BUCKETS,
)
UPLOAD_TO_DIAGNOSIS = HistogramSpec(
    "vsandx_upload_to_diagnosis_seconds",
    "From upload (or a tracker's download) to finished diagnosis, every job, observed by the worker finishing it",
    (),
    (0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0),
)
HISTOGRAMS = (DIAGNOSIS_SECONDS, UPLOAD_TO_DIAGNOSIS)


def label_key(spec: HistogramSpec, labels: Mapping[str, str]) -> str:
    if set(labels) != set(spec.labels):
        raise ValueError(f"{spec.name} takes labels {spec.labels}, got {sorted(labels)}")
    return ",".join(f"{k}={labels[k]}" for k in spec.labels)


def bound(spec: HistogramSpec, value: float) -> str:
    """The upper bound of the bucket `value` falls in: the first bound >= value, else +Inf."""
    i = bisect.bisect_left(spec.buckets, value)
    return repr(float(spec.buckets[i])) if i < len(spec.buckets) else INF


def observe(db: Session, spec: HistogramSpec, value: float, **labels: str) -> None:
    """Add one observation (committed at once). Never raises for a database error: a metric lost is
    logged, and the work it measured is not failed for it."""
    if math.isnan(value):
        return
    key, le = label_key(spec, labels), bound(spec, value)
    where = (MetricBucket.metric == spec.name, MetricBucket.labels == key, MetricBucket.le == le)
    add = update(MetricBucket).where(*where).values(count=MetricBucket.count + 1, total=MetricBucket.total + value)
    try:
        for _ in range(2):  # a concurrent first INSERT of the same row: the UPDATE then finds it
            if db.execute(add).rowcount:  # type: ignore[attr-defined]
                db.commit()
                return
            try:
                db.add(MetricBucket(metric=spec.name, labels=key, le=le, count=1, total=value))
                db.commit()
                return
            except IntegrityError:
                db.rollback()
    except SQLAlchemyError as e:
        db.rollback()
        log.warning("metric %s not recorded: %s", spec.name, e)


@dataclass(frozen=True)
class Histogram:
    labels: dict[str, str]
    buckets: list[tuple[str, int]]  # (bound, cumulative count), ascending, ending with +Inf
    total: float


def read(db: Session, spec: HistogramSpec) -> list[Histogram]:
    """Every label set's histogram, cumulative over `spec.buckets` (rows of bounds no longer in the
    list count in the next bound up)."""
    rows = db.execute(
        select(MetricBucket.labels, MetricBucket.le, MetricBucket.count, MetricBucket.total).where(
            MetricBucket.metric == spec.name
        )
    ).all()
    by_labels: dict[str, list[tuple[float, int, float]]] = {}
    for key, le, count, total in rows:
        by_labels.setdefault(key, []).append((math.inf if le == INF else float(le), int(count), float(total)))
    out = []
    for key, got in sorted(by_labels.items()):
        labels = dict(x.split("=", 1) for x in key.split(",")) if key else {}
        cumulative = [(repr(float(b)), sum(n for le, n, _ in got if le <= b)) for b in spec.buckets]
        cumulative.append((INF, sum(n for _, n, _ in got)))
        out.append(Histogram(labels, cumulative, sum(t for _, _, t in got)))
    return out
