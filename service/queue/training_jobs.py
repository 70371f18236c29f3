"""A training run (`POST /api/v1/model/training`, the Celery task `vsandx.train`) as a row of the jobs
table, kind `train`, so that /metrics counts training runs like every other job
(`vsandx_jobs{kind="train"}`: queued while the message waits on the training queue, running, done or
failed) from the database every process shares. The row's id is the task's id (the status route asks
Celery for it); its `sha256` points at the request (`{"preset": …}` as JSON) in the content store, as a
tracker delivery's does (service.queue.webhook_jobs).

A run is claimed by compare-and-set like a diagnosis, so a redelivered message never trains twice at
once; a run whose worker process died on this machine is taken over at once (recover_orphans), one
whose worker vanished elsewhere when its lease (the task's time limit and a lease more) ends.
"""

from __future__ import annotations

import io
import json
from typing import Any

from sqlalchemy.orm import Session

from service.queue.diagnosis_jobs import recover_orphans, worker_name
from service.store import bundle_store, job_store
from service.store.db import Database
from vsandx.settings import ServiceSettings

KIND = "train"


def submit(db: Session, settings: ServiceSettings, preset: str) -> str:
    """A queued `train` row for a run of `preset`; its id (the task's id to send)."""
    raw = json.dumps({"preset": preset}).encode()
    spooled, sha256, size = bundle_store.spool_upload(settings, io.BytesIO(raw), 1024)
    bundle_store.keep_bundle(db, settings, spooled, sha256, size, f"train-{preset}.json")
    return job_store.create_job(db, sha256, f"train-{preset}.json", kind=KIND).id


def train(settings: ServiceSettings, preset: str) -> dict[str, Any]:
    """Train and register a model of `preset` (training.run); promoted only if it beats the champion."""
    from training.config import TrainConfig
    from training.run import run_training

    done = run_training(TrainConfig.preset(preset), settings, progress=False)
    return {"version": done.version, "champion": done.champion, "report": str(done.report)}


def run(database: Database, settings: ServiceSettings, job_id: str, lease_s: float, preset: str) -> dict[str, Any]:
    """Claim run `job_id`, train, then mark it done (or failed with the error, which is raised again
    for Celery's FAILURE state). A run finished or held by a live attempt (a duplicate message) is not
    started again: its state is returned."""
    with database.session() as db:
        recover_orphans(db)
        job = job_store.claim_job(db, worker_name("celery"), lease_s, settings.max_attempts, job_id=job_id, kind=KIND)
        if job is None:
            state = job_store.lease_holder(db, job_id)
            return {"job_id": job_id, "status": state[0] if state else "missing", "skipped": True}
        attempt = job.attempts
    try:
        done = train(settings, preset)
    except BaseException as e:
        with database.session() as db:
            job_store.fail_job(db, job_id, attempt, f"{type(e).__name__}: {e}")
        raise
    with database.session() as db:
        job_store.complete_job(db, job_id, attempt, None)
    return done
