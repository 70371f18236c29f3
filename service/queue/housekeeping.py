"""Periodic upkeep of the service: bundle retention, spool files of uploads that never finished, and
the feedback retrain check.

One `housekeeping` call does both; it runs every VSANDX_HOUSEKEEPING_S in the API's maintenance thread
(embedded default), and in a deployment with a broker as the `vsandx.housekeeping` task that
`vsandx beat` schedules on the diagnoses queue (then set VSANDX_HOUSEKEEPING_IN_API=false so several
API replicas do not repeat it). The retrain check catches what the per-feedback trigger cannot: feedback
given back by a failed retrain, a retrain whose worker died (older than VSANDX_RETRAIN_TIMEOUT_S), a
threshold lowered since. Both steps are idempotent, so a duplicate run changes nothing.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from service.queue import retraining
from service.queue.protocol import RetrainQueue
from service.store import bundle_store
from service.store.db import Database
from vsandx.settings import ServiceSettings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Upkeep:
    purged: int  # bundles whose bytes the retention period removed
    retrain_id: int | None  # a retrain this round queued
    spool_removed: int = 0  # partial uploads left by a killed API process


def housekeeping(database: Database, settings: ServiceSettings, queue: RetrainQueue) -> Upkeep:
    """Purge expired bundles and stale spool files, then queue a retrain when enough unused feedback waits (sent through
    `queue`'s `submit_retrain`: the training queue, or a thread of the API process without a broker)."""
    with database.session() as db:
        purged = bundle_store.purge_expired(db, settings)
        opened = retraining.maybe_trigger(db, settings)
        retrain_id = opened.id if opened is not None else None
    spool = bundle_store.sweep_spool(settings)
    if retrain_id is not None:
        queue.submit_retrain(retrain_id)
    if purged or retrain_id is not None or spool:
        log.info(
            "housekeeping: purged %d bundle(s), %d stale spool file(s); retrain queued: %s",
            len(purged), spool, retrain_id,
        )  # fmt: skip
    return Upkeep(len(purged), retrain_id, spool)
