"""The Celery app and its tasks (with service.queue.celery_queue, the only modules importing Celery):
`vsandx.diagnose`, `vsandx.webhook` (a tracker's delivery: service.queue.webhook_jobs), `vsandx.train`,
`vsandx.retrain`, `vsandx.housekeeping`. The worker and beat processes (`vsandx worker` / `vsandx beat`
with VSANDX_BROKER_URL set) start from service.queue.celery_procs; the API's side is
service.queue.celery_queue.

Delivery is at least once (acks_late, reject_on_worker_lost); the jobs table makes the effect exactly
once: a task claims its job row by compare-and-set, a diagnosis is unique by (bundle sha256, model
version), a job is completed only by the attempt that holds it. Time limits stay below the lease and
the broker's visibility timeout, so a slow live task is never taken for a dead one. Only transient
errors (database/broker hiccups, no model loaded yet) are retried, with exponential backoff.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from celery import Celery, Task
from celery.exceptions import SoftTimeLimitExceeded
from celery.signals import worker_init, worker_process_init
from sqlalchemy.exc import OperationalError

from diagnosis.serving import ModelHolder
from service.queue.diagnosis_jobs import FINISHED, Transient, execute, recover_orphans, worker_name
from service.store import job_store
from service.store.db import Database, database_for
from service.trackers.notify import NotifySettings, public_url_warning
from vsandx.settings import ServiceSettings, get_service_settings

if TYPE_CHECKING:
    from service.queue.webhook_jobs import WebhookWorker

log = logging.getLogger(__name__)
DIAGNOSES, TRAINING = "diagnoses", "training"
TRAIN_TIME_LIMIT_S = 3000.0  # capped below the visibility timeout
WEBHOOK_TIME_LIMIT_S = 1800.0  # a delivery may diagnose several bundles; capped below the visibility timeout
# a pool child loads the served model (worker_process_init) before it reports up; Celery's default
# 4 s killed a replacement child still loading on a busy machine (CI), and on a slow disk every one
PROC_START_S = 120.0


def check_limits(s: ServiceSettings) -> None:
    """A live task must never look dead: its time limit ends before its lease, the lease before the
    broker redelivers the message."""
    if not s.task_time_limit_s < s.lease_s <= s.visibility_timeout_s:
        raise ValueError(
            f"need task_time_limit_s ({s.task_time_limit_s}) < lease_s ({s.lease_s}) <= visibility_timeout_s "
            f"({s.visibility_timeout_s})"
        )


def make_celery(s: ServiceSettings) -> Celery:
    check_limits(s)
    app = Celery("vsandx", broker=s.broker_url, backend=s.result_backend or s.broker_url, set_as_current=False)
    transport: dict[str, Any] = {"visibility_timeout": s.visibility_timeout_s}
    if s.redis_key_prefix:
        transport["global_keyprefix"] = s.redis_key_prefix
    app.conf.update(
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        worker_proc_alive_timeout=PROC_START_S,
        task_time_limit=s.task_time_limit_s,
        task_soft_time_limit=max(s.task_time_limit_s - 5.0, 0.8 * s.task_time_limit_s),
        task_routes={
            "vsandx.diagnose": {"queue": DIAGNOSES},
            "vsandx.webhook": {"queue": DIAGNOSES},
            "vsandx.train": {"queue": TRAINING},
            "vsandx.retrain": {"queue": TRAINING},
            "vsandx.housekeeping": {"queue": DIAGNOSES},
        },
        # `vsandx beat`: housekeeping every housekeeping_s; a late one is dropped, not piled up
        beat_schedule={
            "housekeeping": {
                "task": "vsandx.housekeeping",
                "schedule": s.housekeeping_s,
                "options": {"queue": DIAGNOSES, "expires": s.housekeeping_s},
            }
        },
        task_default_queue=DIAGNOSES,
        task_track_started=True,
        broker_transport_options=transport,
        result_backend_transport_options=transport,
        result_expires=24 * 3600,
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
        worker_cancel_long_running_tasks_on_connection_loss=True,
    )
    register_tasks(app, s)
    return app


class _Context:
    """Per worker process: settings, database and the served model (made after the fork)."""

    settings: ServiceSettings | None = None
    database: Database | None = None
    holder: ModelHolder | None = None
    webhooks: WebhookWorker | None = None

    @classmethod
    def get_webhooks(cls) -> WebhookWorker:
        """The tracker and SMTP side (VSANDX_BUGZILLA_*, VSANDX_GITHUB_*, VSANDX_SMTP_*, …), made once."""
        from service.queue.webhook_jobs import WebhookWorker

        settings, database, holder = cls.get()
        if cls.webhooks is None:
            cls.webhooks = WebhookWorker(database, settings, holder)
        return cls.webhooks

    @classmethod
    def get(cls) -> tuple[ServiceSettings, Database, ModelHolder]:
        if cls.settings is None:
            cls.settings = get_service_settings()
        if cls.database is None:
            cls.database = database_for(cls.settings.sqlalchemy_url)
        if cls.holder is None:
            cls.holder = ModelHolder(cls.settings)
        return cls.settings, cls.database, cls.holder


@worker_process_init.connect
def _after_fork(**kwargs: Any) -> None:
    """A pool child must not share the parent's database connections; load the model once, here."""
    database_for.cache_clear()
    _Context.database = _Context.holder = _Context.webhooks = None
    _, _, holder = _Context.get()
    holder.refresh()


@worker_init.connect
def _warn_at_start(**kwargs: Any) -> None:
    """Once per worker, before its pool starts (never per task): it mails the reports, so it warns as the API does."""
    if (why := public_url_warning(NotifySettings())) is not None:
        log.warning(why)


TRANSIENT = (Transient, OperationalError, ConnectionError, TimeoutError)


def register_tasks(app: Celery, s: ServiceSettings) -> None:
    train_limit = min(TRAIN_TIME_LIMIT_S, 0.9 * s.visibility_timeout_s)
    webhook_limit = min(WEBHOOK_TIME_LIMIT_S, 0.9 * s.visibility_timeout_s)
    # at least once, acknowledged after the work; transient errors retried with jittered backoff
    durable: dict[str, Any] = {
        "acks_late": True,
        "reject_on_worker_lost": True,
        "autoretry_for": TRANSIENT,
        "retry_backoff": True,
        "retry_backoff_max": 60,
        "retry_jitter": True,
        "max_retries": s.max_retries,
    }
    # training runs: redelivered if their worker dies, never retried on an error (a run is long)
    long_running: dict[str, Any] = {
        "acks_late": True,
        "reject_on_worker_lost": True,
        "time_limit": train_limit,
        "soft_time_limit": 0.95 * train_limit,
    }

    @app.task(bind=True, name="vsandx.diagnose", **durable)
    def diagnose(self: Task, job_id: str) -> str:
        """Diagnose job `job_id` (its upload is in the store); returns the job's final status."""
        settings, database, holder = _Context.get()
        with database.session() as db:
            recover_orphans(db)
            job = job_store.claim_job(db, worker_name("celery"), settings.lease_s, settings.max_attempts, job_id=job_id)
            if job is None:
                state = job_store.lease_holder(db, job_id)
                if state is None or state[0] in FINISHED:
                    return state[0] if state else "missing"  # done already: a duplicate delivery
                until = state[1] or datetime.now(UTC)
                # another attempt holds the lease (perhaps a worker that died): look again when it ends
                raise self.retry(countdown=max(0.5, (until - datetime.now(UTC)).total_seconds() + 0.5))
            try:
                return execute(db, settings, holder, job)
            except SoftTimeLimitExceeded:
                job_store.fail_job(
                    db,
                    job_id,
                    job.attempts,
                    f"{job.filename}: diagnosis took longer than {settings.task_time_limit_s:.0f} s",
                )
                return "failed"

    @app.task(
        bind=True, name="vsandx.webhook", time_limit=webhook_limit, soft_time_limit=0.95 * webhook_limit, **durable
    )
    def webhook(self: Task, job: dict[str, Any] | None, job_id: str | None = None) -> dict[str, Any]:
        """One admitted tracker delivery (service.trackers.webhooks.Answer.job; None: its job row's stored
        copy): diagnose the bundles, comment once, email once. With `job_id` (what the API sends) it claims,
        runs and finishes that `webhook` job row (WebhookWorker.run_task); transient errors (network, 5xx,
        a 4xx SMTP answer, no model yet) run it again after a backoff, others fail it with the reason. The
        sent_messages table makes a retry or a redelivered message send nothing twice."""
        from service.queue.webhook_jobs import WebhookFailed

        worker = _Context.get_webhooks()
        if job_id is not None:
            status, again_in = worker.run_task(job_id, job)
            if again_in is not None:  # the row bounds the attempts; this only stops a message looping
                raise self.retry(countdown=again_in, max_retries=2 * (worker.settings.max_retries + 1))
            return {"job_id": job_id, "status": status}
        try:  # a message queued before deliveries had job rows
            return worker.run(job or {})
        except WebhookFailed as e:
            log.error("webhook delivery failed: %s", e)
            return {"failed": str(e)}
        except SoftTimeLimitExceeded:
            log.error("webhook delivery took longer than %.0f s", 0.95 * webhook_limit)
            return {"failed": f"took longer than {0.95 * webhook_limit:.0f} s"}

    @app.task(bind=True, name="vsandx.train", **long_running)
    def train(self: Task, preset: str = "quick", job_id: str | None = None) -> dict[str, Any]:
        """Train and register a model (training queue); promotes it only if it beats the champion. With
        `job_id` (what the API sends) its `train` job row is claimed and finished (service.queue.training_jobs)."""
        from service.queue import training_jobs

        settings, database, _ = _Context.get()
        if job_id is None:  # a message sent before training runs had job rows
            return training_jobs.train(settings, preset)
        return training_jobs.run(database, settings, job_id, train_limit + settings.lease_s, preset)

    @app.task(bind=True, name="vsandx.housekeeping", autoretry_for=TRANSIENT, retry_backoff=True, max_retries=3)
    def housekeeping_task(self: Task) -> dict[str, Any]:
        """Retention and the feedback retrain check (service.queue.housekeeping), scheduled by `vsandx beat`."""
        from service.queue.housekeeping import housekeeping

        settings, database, _ = _Context.get()
        done = housekeeping(database, settings, _RetrainSender(self.app))
        return {"purged": done.purged, "retrain_id": done.retrain_id}

    @app.task(bind=True, name="vsandx.retrain", **long_running)
    def retrain(self: Task, retrain_id: int) -> str:
        """Retrain with engineer feedback and record the promotion decision (service.queue.retraining)."""
        from service.queue.retraining import run_retrain

        settings, database, _ = _Context.get()
        return run_retrain(database, settings, retrain_id)


def send_retrain(app: Celery, retrain_id: int) -> str:
    """Send a queued retrain (service.queue.retraining) to the training queue; returns the task id."""
    return str(app.send_task("vsandx.retrain", args=[retrain_id], queue=TRAINING).id)


class _RetrainSender:
    """What housekeeping needs from a queue (service.queue.protocol.RetrainQueue), inside a task (the API's side
    is CeleryQueue)."""

    def __init__(self, app: Celery) -> None:
        self.app = app

    def submit_retrain(self, retrain_id: int) -> str:
        return send_retrain(self.app, retrain_id)


def app_for(settings: ServiceSettings) -> Celery:
    """The app as a worker or beat process of `settings` runs it (its tasks read these settings)."""
    _Context.settings = settings
    return make_celery(settings)
