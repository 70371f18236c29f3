"""Running diagnosis jobs, and the embedded queue (no broker).

The jobs table is the source of truth in every mode. A worker *claims* a job (queued, or running with
an expired lease) by a compare-and-set in the database, runs it, and completes it only while its
attempt still holds the job, so a job finishes exactly once however often it is delivered.

Embedded queue (VSANDX_BROKER_URL unset): worker threads in the API process, woken at once when the
API accepts a job, and any number of `vsandx worker` processes on the same database, polling every
VSANDX_POLL_S. A worker that dies (killed, machine restarted) leaves its job `running` with a lease;
when the lease (VSANDX_LEASE_S) runs out, any worker claims it again. Nothing accepted is lost because
nothing lives outside the database. With Celery the same `execute` runs inside the task. The same
workers run the bug trackers' webhook deliveries (jobs of kind `webhook`, service.webhook_work).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from pipeline.errors import BundleError
from service import chart_store, store
from service.db import Database
from service.doorbell import Doorbell, process_alive
from service.serving import ModelHolder, ModelUnavailable
from service.tables import Job
from service.watchdog import process_watchdog
from vsandx.settings import ServiceSettings

if TYPE_CHECKING:
    from service.webhook_work import Integrations, WebhookWorker

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
    found = store.expire_dead_leases(db, socket.gethostname(), owner_is_dead)
    if found:
        log.warning("taking over %d job(s) whose worker process died: %s", len(found), ", ".join(found))
    return found


class Transient(Exception):
    """Worth retrying later: the database or broker hiccuped, or no model is loaded yet."""


def execute(db: Session, settings: ServiceSettings, holder: ModelHolder, job: Job) -> str:
    """Run a claimed job to its end; returns the final status ("done" / "failed" / "lost" when another
    attempt took it over). Bad bundles and refused models fail the job with the reason; transient
    errors raise Transient after giving the job back to the queue."""
    attempt, job_id, sha, filename = job.attempts, job.id, job.sha256, job.filename
    try:
        holder.maybe_refresh()
        predictor = holder.get()
    except ModelUnavailable as e:
        store.requeue_job(db, job_id, attempt)
        raise Transient(str(e)) from e
    found = store.find_diagnosis(db, sha, predictor.name, predictor.version)
    if found is None:
        path = store.bundle_path(settings, sha)
        if path is None:
            return _fail(db, job_id, attempt, f"{filename}: the uploaded bytes are no longer stored (retention)")
        with _watched(settings, db, job_id, attempt, filename):
            try:
                doc, parsed = predictor.diagnose_parsed(path, name=filename)
            except BundleError as e:
                return _fail(db, job_id, attempt, e.for_upload(filename, path))
            except MemoryError:
                return _fail(db, job_id, attempt, f"{filename}: out of memory while reading the bundle")
            except Exception as e:  # the model failed on this bundle (SchemaMismatch, a bug): fail it, go on
                log.exception("diagnosis of %s failed", filename)
                return _fail(db, job_id, attempt, f"{filename}: diagnosis failed: {type(e).__name__}: {e}")
            chart_store.draw(settings, doc, parsed)  # before the diagnosis shows: from this parse, not another
            del parsed
        found = store.record_diagnosis(db, sha, doc)
    if store.complete_job(db, job_id, attempt, found.id):
        return "done"
    log.warning("job %s attempt %d finished after another attempt took it over; result kept once", job_id, attempt)
    return "lost"


def _fail(db: Session, job_id: str, attempt: int, reason: str) -> str:
    return "failed" if store.fail_job(db, job_id, attempt, reason) else "lost"


def _watched(
    settings: ServiceSettings, db: Session, job_id: str, attempt: int, filename: str
) -> AbstractContextManager[None]:
    """The diagnosis under the process watchdog: past its memory or time limit the job fails with the
    reason (recorded from the watchdog's thread, on a session of its own) and is not retried."""

    def breach(why: str) -> None:
        with Session(db.get_bind()) as own:
            store.fail_job(own, job_id, attempt, f"{filename}: {why}")

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
                state = store.lease_holder(db, job_id)
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


def work_loop(
    database: Database,
    settings: ServiceSettings,
    holder: ModelHolder,
    stop: threading.Event,
    notifier: Notifier | None = None,
    owner: str | None = None,
    doorbell: Doorbell | None = None,
    webhooks: WebhookWorker | None = None,
) -> None:
    """Claim and run jobs until `stop` is set (the embedded queue's worker). Idle, it sleeps until
    `notifier` wakes it (a job accepted by this process, or rung through `doorbell`), looking at the
    queue anyway every FALLBACK_POLL_S; without a notifier it polls every poll_s. With `webhooks`, it
    also runs queued tracker deliveries (after the diagnoses waiting)."""
    backoff = settings.poll_s
    next_orphan_check = 0.0
    while not stop.is_set():
        try:
            holder.get()  # claim nothing while no model can be served
            with database.session() as db:
                if time.monotonic() >= next_orphan_check:
                    recover_orphans(db)
                    next_orphan_check = time.monotonic() + ORPHAN_CHECK_S
                job = store.claim_job(db, owner or worker_name(), settings.lease_s, settings.max_attempts)
                if job is None and webhooks is not None:
                    job = webhooks.claim(db, owner or worker_name())
                if job is None:
                    if notifier:
                        notifier.idle(FALLBACK_POLL_S)
                    else:
                        stop.wait(settings.poll_s)
                    continue
                job_id = job.id
                if webhooks is not None and job.kind != "diagnose":
                    status = webhooks.execute(db, job)
                else:
                    status = execute(db, settings, holder, job)
            log.info("job %s: %s", job_id, status)
            if notifier:
                notifier.finished(job_id)
            if doorbell:
                doorbell.ring("api", job_id)
            backoff = settings.poll_s
        except ModelUnavailable:  # the holder backs off (to 30 s) and logs each change of state once
            stop.wait(max(holder.retry_in(), settings.poll_s))
        except (Transient, OperationalError) as e:
            backoff = min(max(backoff * 2, 0.1), 5.0)
            log.warning("embedded worker: %s; retrying in %.1f s", e, backoff)
            stop.wait(backoff)
        except Exception:  # never let one bad round end the worker; the job's lease brings it back
            log.exception("embedded worker: unexpected error")
            stop.wait(1.0)


class EmbeddedQueue:
    """The default queue: jobs in the database, worker threads in this process and `vsandx worker`
    processes of this machine, woken through the doorbell."""

    name = "embedded"

    def __init__(self, database: Database, settings: ServiceSettings, holder: ModelHolder,
                 integrations: Integrations | None = None) -> None:  # fmt: skip
        from service.webhook_work import WebhookWorker  # it builds on this module

        self.database, self.settings, self.holder = database, settings, holder
        self.webhooks = WebhookWorker(database, settings, holder, integrations)
        self.notifier = Notifier()
        self.doorbell: Doorbell | None = None
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        try:
            self.doorbell = Doorbell(self.settings.data_dir / "run", "api")
            self.doorbell.listen(self.notifier.finished)
        except OSError as e:  # no loopback UDP: the slower polling still works
            log.warning("no doorbell (%s): waiting requests poll", e)
        for i in range(self.settings.embedded_workers):
            t = threading.Thread(
                target=work_loop,
                args=(
                    self.database,
                    self.settings,
                    self.holder,
                    self._stop,
                    self.notifier,
                    None,
                    self.doorbell,
                    self.webhooks,
                ),
                name=f"vsandx-worker-{i}",
                daemon=True,
            )
            t.start()
            self._threads.append(t)

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        self.notifier.wake_all()
        for t in self._threads:
            t.join(timeout)
        self._threads.clear()
        if self.doorbell is not None:
            self.doorbell.close()
            self.doorbell = None

    def submit(self, job_id: str) -> None:
        self.notifier.submitted()
        if self.doorbell is not None:
            self.doorbell.ring("worker", job_id)

    def submit_webhook(self, job: Mapping[str, Any]) -> str:
        """Queue a tracker delivery's work (service.webhook_work); raises when it cannot be recorded."""
        from service.webhook_work import submit

        with self.database.session() as db:
            job_id = submit(db, self.settings, job)
        self.submit(job_id)
        return job_id

    def wait(self, job_id: str, timeout: float) -> str:
        return wait_for_job(self.database, job_id, timeout, self.notifier, self.settings.poll_s)

    def ping(self) -> str:
        alive = sum(t.is_alive() for t in self._threads)
        procs = self.doorbell.count("worker") if self.doorbell else 0
        return f"embedded, {alive} worker thread(s) in this process and {procs} worker process(es) on this machine"

    def unready(self) -> str | None:
        """Why nothing would run an accepted job (None when a worker thread or process lives)."""
        if any(t.is_alive() for t in self._threads) or (self.doorbell and self.doorbell.count("worker")):
            return None
        return "no live worker thread or process on this machine (start `vsandx worker`)"
