"""Prometheus metrics (prometheus_client), one registry per app: HTTP requests and latencies (by
route template), webhook deliveries by tracker and outcome, the API process's `process_*`, and, read
from the database at scrape time so that every worker's work counts (embedded threads, `vsandx
worker` processes, Celery workers on any host): jobs of every kind by status, the diagnosis latency
histograms the workers observe (service.store.metric_store), diagnoses by verdict and the served
model."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, ProcessCollector, generate_latest
from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from diagnosis.serving import ModelHolder
from service.store import diagnosis_store, job_store, metric_store
from service.store.db import Database

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# Label values come from these alone, never from the request: an attacker sending random methods or
# paths must not grow the registry (each new label set is a time series kept forever).
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
OTHER_METHOD = "other"
UNMATCHED = "unmatched"
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 2.0, 5.0, 10.0, 30.0)


class StateCollector(Collector):
    def __init__(self, database: Database, holder: ModelHolder, queue_name: Callable[[], str]) -> None:
        self.database, self.holder, self.queue_name = database, holder, queue_name

    def collect(self) -> Iterator[Metric]:
        depth = GaugeMetricFamily(
            "vsandx_jobs",
            "Jobs by kind (diagnose; webhook: a tracker delivery's work; train: a training run on Celery; "
            "retrain) and status",
            labels=["queue", "kind", "status"],
        )
        verdicts = GaugeMetricFamily(
            "vsandx_diagnoses_by_verdict", "Finished diagnoses by fault found (none = healthy)", labels=["verdict"]
        )
        with self.database.session() as db:
            for (kind, status), n in sorted(job_store.jobs_by_kind(db).items()):
                depth.add_metric([self.queue_name(), kind, status], n)
            for fault, n in sorted(diagnosis_store.verdict_counts(db).items()):
                verdicts.add_metric([fault], n)
            histograms = [(spec, metric_store.read(db, spec)) for spec in metric_store.HISTOGRAMS]
        yield depth
        yield verdicts
        for spec, got in histograms:
            family = HistogramMetricFamily(spec.name, spec.help, labels=list(spec.labels))
            for h in got:
                family.add_metric([h.labels[k] for k in spec.labels], h.buckets, h.total)
            yield family
        queued = GaugeMetricFamily("vsandx_queue_depth", "Jobs waiting or running", labels=["queue"])
        queued.add_metric(
            [self.queue_name()],
            sum(s.value for s in depth.samples if s.labels["status"] in ("queued", "running")),
        )
        yield queued
        info = self.holder.current_model_info()
        model = GaugeMetricFamily("vsandx_model_info", "The served model (1 when loaded)", labels=["name", "version"])
        model.add_metric([str(info.get("name", "")), str(info.get("version", ""))], 1.0 if info["ready"] else 0.0)
        yield model


class Metrics:
    def __init__(self, database: Database, holder: ModelHolder, queue_name: Callable[[], str]) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "vsandx_http_requests", "HTTP requests", ["method", "route", "status"], registry=self.registry
        )
        self.latency = Histogram(
            "vsandx_http_request_duration_seconds",
            "HTTP request latency",
            ["method", "route"],
            buckets=BUCKETS,
            registry=self.registry,
        )
        # labels: the tracker (the route's own) and service.trackers.webhooks.OUTCOMES, never the request's
        self.webhooks = Counter(
            "vsandx_webhook_deliveries",
            "Tracker webhook deliveries by tracker and outcome (queued, ignored, stale, replay, unauthorized, "
            "bad_payload, too_large, unconfigured, queue_failed)",
            ["tracker", "outcome"],
            registry=self.registry,
        )
        self.registry.register(StateCollector(database, holder, queue_name))
        ProcessCollector(registry=self.registry)  # process_*: this API process (/proc; nothing elsewhere)

    def render(self) -> bytes:
        return generate_latest(self.registry)


def labels_of(scope: Scope) -> tuple[str, str]:
    """(method, route) labels: a known method or "other"; the matched route's template (the app's own,
    a bounded set) or "unmatched" — never the raw path or method the client sent."""
    method = str(scope.get("method", ""))
    route: Any = scope.get("route")
    path = getattr(route, "path", None)
    return (method if method in METHODS else OTHER_METHOD), (path if isinstance(path, str) and path else UNMATCHED)


class MetricsMiddleware:
    """Pure ASGI: counts every HTTP request by route template (not raw path: ids stay out of labels)."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app, self.metrics = app, metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        t0 = time.perf_counter()
        status = 500

        async def send_(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_)
        finally:
            method, path = labels_of(scope)
            self.metrics.requests.labels(method, path, str(status)).inc()
            self.metrics.latency.labels(method, path).observe(time.perf_counter() - t0)
