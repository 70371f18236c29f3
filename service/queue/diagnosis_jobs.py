"""Running diagnosis jobs on any queue: claim, execute, wait.

The jobs table is the source of truth in every mode. A worker *claims* a job (queued, or running with
an expired lease) by a compare-and-set in the database, runs it, and completes it only while its
attempt still holds the job, so a job finishes exactly once however often it is delivered.

Embedded queue (VSANDX_BROKER_URL unset, service.queue.embedded): worker threads in the API process,
woken at once when the API accepts a job, and any number of `vsandx worker` processes on the same
database, polling every VSANDX_POLL_S. A worker that dies (killed, machine restarted) leaves its job
`running` with a lease; when the lease (VSANDX_LEASE_S) runs out, any worker claims it again. Nothing
accepted is lost because nothing lives outside the database. With Celery the same `execute` runs inside
the task. Each diagnosis's time is observed here, where it runs, into the database
(service.store.metric_store), so /metrics shows every worker's. The embedded queue's workers also run
the bug trackers' webhook deliveries (jobs of kind `webhook`, service.queue.webhook_jobs), which build
on this module.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from contextlib import AbstractContextManager
from datetime import UTC, datetime

from sqlalchemy.orm import Session

from diagnosis.serving import ModelHolder, ModelUnavailable
from pipeline.errors import BundleError
from service.queue.doorbell import process_alive
from service.queue.watchdog import process_watchdog
from service.store import bundle_store, chart_store, diagnosis_store, job_store, metric_store
from service.store.db import Database
from service.store.tables import Job
from vsandx.settings import ServiceSettings

log = logging.getLogger(__name__)
FINISHED = ("done", "failed")
ORPHAN_CHECK_S = 1.0
MAX_POLL_S = 0.05  # without a notifier, a waiting request looks at its job at least this often
FALLBACK_POLL_S = 0.25  # with one, the database is still looked at this often


def worker_name(tag: str = "") -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{tag or threading.current_thread().name}"


def owner_is_dead(owner: str) -> bool:
    """A lease owner `host:pid:…` of this machine whose process no longer exists."""
    host, _, rest = owner.partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname() or not pid.isdigit() or int(pid) == os.getpid():
        return False
    return not process_alive(int(pid))


def recover_orphans(db: Session) -> list[str]:
    """Jobs left running by a dead worker process of this machine become claimable now."""
    found = job_store.expire_dead_leases(db, socket.gethostname(), owner_is_dead)
    if found:
        log.warning("taking over %d job(s) whose worker process died: %s", len(found), ", ".join(found))
    return found


class Transient(Exception):
    """Worth retrying later: the database or broker hiccuped, or no model is loaded yet."""


def execute(db: Session, settings: ServiceSettings, holder: ModelHolder, job: Job) -> str:
    """Run a claimed job to its end; returns the final status ("done" / "failed" / "lost" when another
    attempt took it over). Bad bundles and refused models fail the job with the reason; transient
    errors raise Transient after giving the job back to the queue."""
    attempt, job_id, sha, filename, created = job.attempts, job.id, job.sha256, job.filename, job.created_at
    try:
        holder.maybe_refresh()
        predictor = holder.get()
    except ModelUnavailable as e:
        job_store.requeue_job(db, job_id, attempt)
        raise Transient(str(e)) from e
    found = diagnosis_store.find_diagnosis(db, sha, predictor.name, predictor.version)
    if found is None:
        path = bundle_store.bundle_path(settings, sha)
        if path is None:
            return _fail(db, job_id, attempt, f"{filename}: the uploaded bytes are no longer stored (retention)")
        t0 = time.monotonic()
        with _watched(settings, db, job_id, attempt, filename):
            try:
                doc, parsed = predictor.diagnose_stored(path, sha, name=filename)  # streamed, not re-hashed
            except BundleError as e:
                return _fail(db, job_id, attempt, e.for_upload(filename, path), t0)
            except MemoryError:
                return _fail(db, job_id, attempt, f"{filename}: out of memory while reading the bundle", t0)
            except Exception as e:  # the model failed on this bundle (SchemaMismatch, a bug): fail it, go on
                log.exception("diagnosis of %s failed", filename)
                return _fail(db, job_id, attempt, f"{filename}: diagnosis failed: {type(e).__name__}: {e}", t0)
            chart_store.draw(settings, doc, parsed)  # before the diagnosis shows: from this parse, not another
            del parsed
        found = diagnosis_store.record_diagnosis(db, sha, doc)
        _observe(db, metric_store.DIAGNOSIS_SECONDS, time.monotonic() - t0, outcome="done")
    if job_store.complete_job(db, job_id, attempt, found.id):
        _observe(db, metric_store.UPLOAD_TO_DIAGNOSIS, (datetime.now(UTC) - created).total_seconds())
        return "done"
    log.warning("job %s attempt %d finished after another attempt took it over; result kept once", job_id, attempt)
    return "lost"


def _fail(db: Session, job_id: str, attempt: int, reason: str, started: float | None = None) -> str:
    """Fail the job; `started` (monotonic): when its diagnosis began, observed as a failed one."""
    if started is not None:
        _observe(db, metric_store.DIAGNOSIS_SECONDS, time.monotonic() - started, outcome="failed")
    return "failed" if job_store.fail_job(db, job_id, attempt, reason) else "lost"


def _observe(db: Session, spec: metric_store.HistogramSpec, value: float, **labels: str) -> None:
    """Record where the work ran, in the database, on a session of its own (a metric never fails a job)."""
    with Session(db.get_bind()) as own:
        metric_store.observe(own, spec, value, **labels)


def _watched(
    settings: ServiceSettings, db: Session, job_id: str, attempt: int, filename: str
) -> AbstractContextManager[None]:
    """The diagnosis under the process watchdog: past its memory or time limit the job fails with the
    reason (recorded from the watchdog's thread, on a session of its own) and is not retried."""

    def breach(why: str) -> None:
        with Session(db.get_bind()) as own:
            job_store.fail_job(own, job_id, attempt, f"{filename}: {why}")

    dog = process_watchdog(settings.job_memory_limit_mb << 20, settings.task_time_limit_s)
    return dog.guard(f"job {job_id} ({filename})", breach)


class Notifier:
    """In-process wake-ups: workers sleep on `idle`; waiters on a job's event."""

    def __init__(self) -> None:
        self._work = threading.Condition()
        self._pending = 0
        self._done: dict[str, threading.Event] = {}
        self._lock = threading.Lock()

    def submitted(self) -> None:
        with self._work:
            self._pending += 1
            self._work.notify()

    def idle(self, timeout: float) -> None:
        with self._work:
            if self._pending == 0:
                self._work.wait(timeout)
            self._pending = max(0, self._pending - 1)

    def wake_all(self) -> None:
        with self._work:
            self._work.notify_all()

    def finished(self, job_id: str) -> None:
        with self._lock:
            ev = self._done.pop(job_id, None)
        if ev is not None:
            ev.set()

    def event(self, job_id: str) -> threading.Event:
        with self._lock:
            return self._done.setdefault(job_id, threading.Event())

    def forget(self, job_id: str) -> None:
        with self._lock:
            self._done.pop(job_id, None)


def wait_for_job(database: Database, job_id: str, timeout: float, notifier: Notifier | None, poll_s: float) -> str:
    """Block until the job is done or failed, or `timeout` passes; returns its last status. With a
    notifier (embedded queue) the finishing worker wakes us and the row is only re-read as a fallback;
    without one (Celery) the row is polled from `poll_s` up to every MAX_POLL_S."""
    ev = notifier.event(job_id) if notifier else None
    deadline = time.monotonic() + timeout
    delay = poll_s
    try:
        while True:
            with database.session() as db:
                state = job_store.lease_holder(db, job_id)
            status = state[0] if state else "missing"
            left = deadline - time.monotonic()
            if status in FINISHED or status == "missing" or left <= 0:
                return status
            if ev is not None:
                ev.wait(min(left, max(delay, FALLBACK_POLL_S)))
            else:
                time.sleep(min(left, delay))
                delay = min(delay * 1.25, MAX_POLL_S)
    finally:
        if notifier:
            notifier.forget(job_id)
