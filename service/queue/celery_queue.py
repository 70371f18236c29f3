"""The API's side of Celery (VSANDX_BROKER_URL set): `CeleryQueue` sends a job's task to the broker,
waits by watching the job's row, re-sends what a broker lost and answers the readiness probe. The
app and its tasks are in service.queue.celery_app.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from typing import Any

from service.queue import training_jobs, webhook_jobs
from service.queue.celery_app import DIAGNOSES, TRAINING, make_celery, send_retrain
from service.queue.diagnosis_jobs import wait_for_job
from service.queue.webhook_jobs import KIND
from service.store import job_store
from service.store.db import Database
from vsandx.settings import ServiceSettings

log = logging.getLogger(__name__)


class CeleryQueue:
    """The API's side: send a job's task; wait by watching the job's row; re-send what a broker lost."""

    name = "celery"

    def __init__(self, database: Database, settings: ServiceSettings) -> None:
        self.database, self.settings = database, settings
        self.app = make_celery(settings)
        self._ping: tuple[float, str] = (0.0, "")
        self._resent: dict[str, float] = {}
        self._lock = threading.Lock()

    def start(self) -> None:
        pass

    def stop(self, timeout: float = 10.0) -> None:
        self.app.pool.force_close_all()

    def submit(self, job_id: str) -> None:
        """Best effort: a job the broker did not take stays queued in the database and is re-sent by
        `reap`, so an accepted upload is never lost."""
        try:
            self.app.send_task(
                "vsandx.diagnose",
                args=[job_id],
                queue=DIAGNOSES,
                retry=True,
                retry_policy={"max_retries": 2, "interval_start": 0.1, "interval_step": 0.5},
            )
        except Exception as e:  # kombu raises OperationalError and others when the broker is down
            log.error("could not send job %s to the broker (it stays queued and is re-sent): %s", job_id, e)

    def submit_webhook(self, job: Mapping[str, Any]) -> str:
        """Record a tracker delivery's job (a `webhook` row, its JSON in the store: service.queue.webhook_jobs)
        and send its task to the diagnoses queue; raises when either fails (the route answers 503 and the
        tracker retries; a row the broker did not take is failed, never left queued). Returns the job id,
        also the task's id. No result is kept: the job's row and the worker's log say what it did, and not
        subscribing to a result keeps a broken broker's answer fast (a tracker gives up after about 10 s)."""
        with self.database.session() as db:
            job_id = webhook_jobs.submit(db, self.settings, job)
        try:
            self._send_webhook(job_id, dict(job))
        except Exception as e:
            with self.database.session() as db:
                job_store.fail_job(db, job_id, 0, f"the broker did not take the delivery: {type(e).__name__}: {e}")
            raise
        return job_id

    def _send_webhook(self, job_id: str, job: dict[str, Any] | None) -> None:
        """`job` None: the worker reads the delivery from the store (a re-sent job)."""
        policy = {"max_retries": 2, "interval_start": 0.1, "interval_step": 0.5}
        self.app.send_task("vsandx.webhook", args=[job], kwargs={"job_id": job_id}, task_id=job_id, queue=DIAGNOSES,
                           retry=True, retry_policy=policy, ignore_result=True)  # fmt: skip

    def wait(self, job_id: str, timeout: float) -> str:
        return wait_for_job(self.database, job_id, timeout, None, self.settings.poll_s)

    def submit_training(self, preset: str) -> str:
        """Record a training run (a `train` job row: service.queue.training_jobs) and send it to the
        training queue; returns its id, the task's id. A run the broker did not take is failed."""
        with self.database.session() as db:
            job_id = training_jobs.submit(db, self.settings, preset)
        try:
            self.app.send_task("vsandx.train", args=[preset], kwargs={"job_id": job_id}, task_id=job_id, queue=TRAINING)
        except Exception as e:
            with self.database.session() as db:
                job_store.fail_job(db, job_id, 0, f"the broker did not take the training run: {type(e).__name__}: {e}")
            raise
        return job_id

    def submit_retrain(self, retrain_id: int) -> str:
        return send_retrain(self.app, retrain_id)

    def training_status(self, task_id: str) -> dict[str, Any]:
        res = self.app.AsyncResult(task_id)
        state = str(res.state)  # PENDING (queued or unknown), STARTED, RETRY, SUCCESS, FAILURE
        out: dict[str, Any] = {"id": task_id, "state": state}
        if state == "SUCCESS":
            out["result"] = res.result
        elif state == "FAILURE":
            out["error"] = repr(res.result)
        return out

    def reap(self) -> list[str]:
        """Re-send jobs (diagnoses and tracker deliveries) queued longer than a lease without being
        claimed, or running past their lease (their worker died with the message), each at most once per
        lease. Duplicates are harmless: a job is claimed by compare-and-set."""
        now = time.monotonic()
        with self.database.session() as db:
            stale = [(j, "diagnose") for j in job_store.stale_jobs(db, queued_for_s=self.settings.lease_s)]
            stale += [(j, KIND) for j in job_store.stale_jobs(db, queued_for_s=self.settings.lease_s, kind=KIND)]
        self._resent = {j: t for j, t in self._resent.items() if now - t < 2 * self.settings.lease_s}
        again = [(j, k) for j, k in stale if now - self._resent.get(j, -1e9) >= self.settings.lease_s]
        for job_id, kind in again:
            if kind == KIND:
                try:
                    self._send_webhook(job_id, None)
                except Exception as e:  # as submit: it stays in the database and is tried again
                    log.error("could not send webhook job %s to the broker: %s", job_id, e)
            else:
                self.submit(job_id)
            self._resent[job_id] = now
        return [j for j, _ in again]

    def unready(self) -> str | None:
        """Why an accepted job would not be sent (None when the broker answers)."""
        text = self.ping()
        return None if "reachable" in text and "unreachable" not in text else text

    def ping(self) -> str:
        with self._lock:
            at, text = self._ping
            if time.monotonic() - at < 5.0:
                return text
            try:
                with self.app.connection_for_write() as conn:
                    conn.ensure_connection(max_retries=1, timeout=2)
                text = f"celery, broker {conn.as_uri()} reachable"
            except Exception as e:  # any transport error means unreachable
                text = f"celery, broker unreachable: {e}"
            self._ping = (time.monotonic(), text)
            return text
