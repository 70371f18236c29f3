"""A webhook delivery as a job of the queue: the service's side of the tracker work. What a delivery
does against the trackers (re-read, download, comment, email) is service.trackers.flow, which knows
no database, queue or model; this module supplies what it needs from the service (`diagnose`: store
the download like an upload and run or reuse its diagnosis job with the served model; `chart`: each
finding's stored chart; the `sent_messages` table as its sent log) and runs it under the queue's rules:
leases, retries with backoff, exactly one effect.

Every queued delivery is a `webhook` row of the jobs table (`submit`), on either queue: the embedded
queue's workers `claim` and `execute` it (service.queue.embedded.work_loop), the Celery task
`vsandx.webhook` (service.queue.celery_app) runs `WebhookWorker.run_task` on it; both end in
`WebhookWorker.run(job)`. The row's status is what /metrics counts (`vsandx_jobs{kind="webhook"}`). The
route that queues a delivery is service.api.webhooks.

A tracker's bundle becomes a diagnosis job whose id is derived from (bundle sha256, model name, model
version), so a retried task lands on the same diagnosis resource: the comment (keyed by that id) and
the emails (Message-ID from that id) are found in the sent log and not sent again. The diagnosis runs
inline in the worker that runs the delivery (no second queue hop: a one-slot worker cannot deadlock).

Errors: transient ones (network, 5xx, 4xx SMTP answers, no model yet, database hiccups) raise
`service.queue.diagnosis_jobs.Transient`, which the Celery task retries with backoff and the embedded
queue retries after a delay; the others raise `WebhookFailed` (the job fails with the reason, no retry).
"""

from __future__ import annotations

import io
import json
import logging
import random
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import httpx
from sqlalchemy.orm import Session

from diagnosis.digest import findings_of
from diagnosis.serving import ModelHolder, ModelUnavailable
from service.queue.diagnosis_jobs import FINISHED, Transient, execute, wait_for_job, worker_name
from service.store import bundle_store, chart_store, diagnosis_store, job_store
from service.store.db import Database
from service.store.intake import store_upload
from service.store.tables import Base, Job, SentMessage, utcnow
from service.trackers import webhooks
from service.trackers.base import BadPayload, TrackerHTTPError, TrackerSettings
from service.trackers.flow import Outcome, bundle_chart
from service.trackers.ledgers import SqlSentLog
from service.trackers.notify import MailError, NotifySettings, ReportChart
from vsandx.settings import ServiceSettings

log = logging.getLogger(__name__)
KIND = "webhook"  # Job.kind of a queued delivery (on either queue)
# Tracker diagnosis job ids: uuid5 of "sha256 \0 model name \0 model version" in this namespace.
JOB_NAMESPACE = uuid.UUID("5b0c7e36-3f5e-4d8e-9a57-1f0e2c4d6a10")
MAX_PAYLOAD = 8 * webhooks.WEBHOOK_MAX_BODY  # the queued job as JSON (escapes may grow the body)
BACKOFF_MAX_S = 60.0  # the Celery task's retry_backoff_max


@dataclass(frozen=True)
class Integrations:
    """The outside world a delivery's work talks to; from VSANDX_* variables (and .env) by default."""

    trackers: TrackerSettings
    notify: NotifySettings
    transport: httpx.BaseTransport | None = None  # tests only: an httpx transport for the trackers

    @classmethod
    def from_env(cls) -> Integrations:
        return cls(TrackerSettings(), NotifySettings())


class WebhookFailed(RuntimeError):
    """A delivery whose work cannot succeed by trying again (bad credentials, a bug gone, bad payload)."""


def backoff_s(attempt: int) -> float:
    """Delay before attempt `attempt + 1`: exponential from 1 s, capped, with jitter (as Celery's)."""
    return min(BACKOFF_MAX_S, 2.0 ** max(0, attempt - 1)) * random.uniform(0.5, 1.0)


def summary(out: Outcome) -> dict[str, Any]:
    """What a finished delivery did, JSON-serialisable (the Celery task's result, the worker's log)."""
    return {
        "subject": out.subject,
        "relevant": out.relevant,
        "reason": out.reason,
        "diagnoses": [
            {"name": r.name, "id": r.diagnosis_id, "faults": sorted({str(f.get("fault")) for f in findings_of(r.doc)})}
            for r in out.reports
        ],
        "refused": out.refused,
        "comment_id": out.comment_id,
        "asked_for_bundle": out.asked,
        "mails_sent": [m.message_id for m in out.mails if m.sent],
        "mail_errors": out.mail_errors,
    }


class WebhookWorker:
    """Runs queued deliveries in a worker process (Celery or embedded) on the service's database, bundle
    store and served model."""

    def __init__(self, database: Database, settings: ServiceSettings, holder: ModelHolder,
                 integrations: Integrations | None = None) -> None:  # fmt: skip
        self.database, self.settings, self.holder = database, settings, holder
        self.integrations = integrations or Integrations.from_env()
        self.sent_log = SqlSentLog(database.session, Base.metadata.tables[SentMessage.__tablename__])
        trackers = self.integrations.trackers
        # a delivery may diagnose several bundles: its lease covers one diagnosis each, and the rest
        self.lease_s = settings.lease_s * (1 + max(1, trackers.tracker_max_attachments))

    # ------------------------------------------------------------------------------- the task body
    def run(self, job: Mapping[str, Any]) -> dict[str, Any]:
        """The queued work of one delivery; raises Transient (retry later) or WebhookFailed."""
        i = self.integrations
        try:
            out = webhooks.run(job, trackers=i.trackers, notify=i.notify, diagnose=self.diagnose,
                               sent_log=self.sent_log, chart=self.report_charts, transport=i.transport)  # fmt: skip
        except (TrackerHTTPError, MailError) as e:
            if e.transient:
                raise Transient(str(e)) from e
            raise WebhookFailed(str(e)) from e
        except (BadPayload, KeyError, TypeError) as e:
            raise WebhookFailed(f"queued delivery unusable: {type(e).__name__}: {e}") from e
        done = summary(out)
        log.info("webhook %s: %s", out.subject, json.dumps(done))
        return done

    def diagnose(self, name: str, src: BinaryIO) -> tuple[str, Mapping[str, Any], Path]:
        """`flow.Diagnose` (service.trackers.flow): stream the download into the store like an upload
        (spooled and hashed chunk by chunk, removed when refused), diagnose it with the served model (or
        find the diagnosis made before); (diagnosis resource id, document, stored bundle). Raises
        ValueError for a bundle that cannot be read (reported on the bug), Transient to retry, and what
        the stream's reads raise (TooLarge, TrackerHTTPError: service.trackers.attachments)."""
        try:
            self.holder.maybe_refresh()
            model = self.holder.get()
        except ModelUnavailable as e:
            raise Transient(f"no model to serve: {e}") from e
        with self.database.session() as db:
            sha256, clean = store_upload(db, self.settings, src, name, self.holder.config)
            job_id = str(uuid.uuid5(JOB_NAMESPACE, f"{sha256}\0{model.name}\0{model.version}"))
            job_store.ensure_job(db, job_id, sha256, clean)
            doc = self._result(db, job_id)
        stored = bundle_store.bundle_path(self.settings, sha256)
        if stored is None:  # kept just now (its retention clock refreshed): only a removal by hand gets here
            raise Transient(f"bundle {sha256} left the store before its report was made")
        return job_id, doc, stored

    def report_charts(self, stored: Path, doc: Mapping[str, Any]) -> list[ReportChart]:
        """`flow.ChartOf`: each finding's chart as stored when the diagnosis was made (the PNGs of as many
        as a report shows inline); drawn from the stored bundle again only for a diagnosis made before
        charts were stored with diagnoses."""
        key = chart_store.key_of(doc)
        if key is None or chart_store.load(self.settings, key) is None:
            return bundle_chart(stored, doc, self.holder.config)
        return chart_store.report_charts(self.settings, key, self.integrations.notify.mail_max_charts)

    def _result(self, db: Session, job_id: str) -> Mapping[str, Any]:
        s = self.settings
        for _ in range(3):
            res = diagnosis_store.get_diagnosis(db, job_id)
            if res is None:
                raise Transient(f"diagnosis job {job_id} vanished")
            if res.status == "done" and res.diagnosis is not None:
                return res.diagnosis
            if res.status == "failed":
                raise ValueError(res.error or "diagnosis failed")
            job = job_store.claim_job(db, worker_name("tracker"), s.lease_s, s.max_attempts, job_id=job_id)
            if job is not None:
                execute(db, s, self.holder, job)  # Transient (it gave the job back) goes up: retry
            else:  # another worker holds it (the same bundle on two bugs at once): its result will do
                wait_for_job(self.database, job_id, s.task_time_limit_s, None, s.poll_s)
        raise Transient(f"diagnosis job {job_id} is still running elsewhere")

    # ---------------------------------------------------------------------- the embedded queue
    def claim(self, db: Session, owner: str) -> Job | None:
        """A queued delivery, or one whose retry delay or lease is over. After 1 + max_retries tries
        claim_job fails it (only a worker dying every time gets there: see execute)."""
        return job_store.claim_job(db, owner, self.lease_s, 1 + self.settings.max_retries, kind=KIND)

    def execute(self, db: Session, job: Job, payload: Mapping[str, Any] | None = None) -> str:
        """Run a claimed delivery (`payload`: the delivery as its message carried it; else read from the
        store): "done", "failed", "retry" (a transient error: claimable again after a backoff) or "lost"
        (another attempt took it over)."""
        attempt, job_id = job.attempts, job.id
        path = bundle_store.bundle_path(self.settings, job.sha256)
        try:
            if payload is None:
                if path is None:
                    raise WebhookFailed("the queued delivery is no longer stored (retention)")
                payload = json.loads(path.read_bytes())
            self.run(payload)
        except Transient as e:
            if attempt > self.settings.max_retries:
                return _fail(db, job_id, attempt, f"gave up after {attempt} attempts: {e}")
            delay = backoff_s(attempt)
            log.warning("webhook job %s attempt %d: %s; again in %.1f s", job_id, attempt, e, delay)
            return "retry" if job_store.retry_later(db, job_id, attempt, delay, str(e)) else "lost"
        except WebhookFailed as e:
            return _fail(db, job_id, attempt, str(e))
        except Exception as e:  # a bug: fail it with the reason rather than retry it blindly
            log.exception("webhook job %s failed", job_id)
            return _fail(db, job_id, attempt, f"{type(e).__name__}: {e}")
        return "done" if job_store.complete_job(db, job_id, attempt, None) else "lost"

    # ---------------------------------------------------------------------------------- Celery
    def run_task(self, job_id: str, payload: Mapping[str, Any] | None) -> tuple[str, float | None]:
        """The Celery task `vsandx.webhook` on the delivery's job row: claim it (compare-and-set), run it,
        finish it, as an embedded worker does, so its status (queued, running, done, failed) is in the
        database for every process (the API's /metrics). Returns (status, seconds after which the task
        must run again, or None): "retry" after a transient error, "busy" while another attempt holds
        the job; a finished job (a redelivered message) is left as it is."""
        with self.database.session() as db:
            job = job_store.claim_job(db, worker_name("celery"), self.lease_s, 1 + self.settings.max_retries,
                                      job_id=job_id, kind=KIND)  # fmt: skip
            if job is not None:
                status = self.execute(db, job, payload)
                if status != "retry":
                    return status, None
            state = job_store.lease_holder(db, job_id)
        if state is None or state[0] in FINISHED:
            return (state[0] if state else "missing"), None
        until = state[1] or utcnow()
        return ("retry" if job is not None else "busy"), max(0.5, (until - utcnow()).total_seconds() + 0.5)


def submit(db: Session, settings: ServiceSettings, job: Mapping[str, Any]) -> str:
    """Record a delivery's job (either queue): its JSON kept in the content store, a queued `webhook` job
    row pointing at it. Returns the job id; raises on any failure (the route then answers 503)."""
    raw = json.dumps(dict(job), ensure_ascii=False).encode()
    name = f"webhook-{job.get('source', 'unknown')}.json"
    spooled, sha256, size = bundle_store.spool_upload(settings, io.BytesIO(raw), MAX_PAYLOAD)
    bundle_store.keep_bundle(db, settings, spooled, sha256, size, name)
    return job_store.create_job(db, sha256, name, kind=KIND).id


def _fail(db: Session, job_id: str, attempt: int, reason: str) -> str:
    log.error("webhook job %s failed: %s", job_id, reason)
    return "failed" if job_store.fail_job(db, job_id, attempt, reason) else "lost"
