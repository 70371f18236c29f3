"""The embedded queue (no broker): jobs in the database, worker threads in the API process and
`vsandx worker` processes of this machine, woken through the doorbell (service.queue.doorbell).

`work_loop` is one worker: it claims diagnosis jobs (service.queue.diagnosis_jobs.execute) and, with a WebhookWorker,
the bug trackers' queued deliveries (service.queue.webhook_jobs). `EmbeddedQueue` is the API's side: the
service.queue.protocol.Queue protocol without a broker (no training queue: `vsandx train` runs training; a
retrain runs in a thread of this process).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from typing import Any

from sqlalchemy.exc import OperationalError

from diagnosis.serving import ModelHolder, ModelUnavailable
from service.queue import retraining
from service.queue.diagnosis_jobs import (
    FALLBACK_POLL_S,
    ORPHAN_CHECK_S,
    Notifier,
    Transient,
    execute,
    recover_orphans,
    wait_for_job,
    worker_name,
)
from service.queue.doorbell import Doorbell
from service.queue.protocol import NoTrainingQueue
from service.queue.webhook_jobs import Integrations, WebhookWorker, submit
from service.store import job_store
from service.store.db import Database
from vsandx.settings import ServiceSettings

log = logging.getLogger(__name__)
NO_TRAINING = "training runs on a Celery worker (set VSANDX_BROKER_URL); without one, run `vsandx train`"


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
                job = job_store.claim_job(db, owner or worker_name(), settings.lease_s, settings.max_attempts)
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
        """Queue a tracker delivery's work (service.queue.webhook_jobs); raises when it cannot be recorded."""
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

    def submit_training(self, preset: str) -> str:
        raise NoTrainingQueue(NO_TRAINING)

    def training_status(self, task_id: str) -> dict[str, Any]:
        raise NoTrainingQueue("training runs on a Celery worker (set VSANDX_BROKER_URL)")

    def submit_retrain(self, retrain_id: int) -> str:
        """No training queue: the retrain runs in a thread of this process."""
        return retraining.run_in_thread(self.database, self.settings, retrain_id)

    def reap(self) -> list[str]:
        """Nothing to re-send: a job lives in the database only, and a lost one's lease brings it back."""
        return []
