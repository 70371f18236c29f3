"""`create_app(settings)`: the FastAPI application — JSON API, health, metrics, the bug trackers'
webhooks, the UI when present — with its database (migrated here), model holder, queue (embedded, or
Celery when a broker is set) and a maintenance thread (champion hot reload, housekeeping, re-queueing
jobs a broker lost)."""

from __future__ import annotations

import importlib
import importlib.util
import logging
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI

from diagnosis.serving import ModelHolder
from service.api.csrf import OriginCheck
from service.api.deps import WebhookContext
from service.api.diagnoses import api, ops
from service.api.emailing import router as email_api
from service.api.feedback import router as feedback_api
from service.api.limits import BodyLimit, BodyLimits, RefusalPage
from service.api.metrics import Metrics, MetricsMiddleware
from service.api.webhooks import router as webhook_api
from service.queue.embedded import EmbeddedQueue
from service.queue.housekeeping import housekeeping
from service.queue.protocol import Queue
from service.queue.watchdog import allow_exit
from service.queue.webhook_jobs import Integrations
from service.schemas import API_PREFIX
from service.store.db import Database, get_database
from service.store.tables import Base, WebhookDelivery
from service.trackers.ledgers import SqlDeliveryLedger
from service.trackers.notify import public_url_warning
from service.trackers.webhooks import WEBHOOK_MAX_BODY
from vsandx.settings import ServiceSettings, get_service_settings

log = logging.getLogger(__name__)
STATIC = Path(__file__).resolve().parent / "api" / "static"


def make_queue(database: Database, settings: ServiceSettings, holder: ModelHolder,
               integrations: Integrations | None = None) -> Queue:  # fmt: skip
    if settings.broker_url:
        from service.queue.celery_queue import CeleryQueue  # Celery only when a broker is configured

        return CeleryQueue(database, settings)  # the Celery workers read the tracker settings themselves
    return EmbeddedQueue(database, settings, holder, integrations)


def _maintain(s: ServiceSettings, database: Database, holder: ModelHolder, queue: Queue, stop: threading.Event) -> None:
    """Champion hot reload every model_poll_s, housekeeping (retention, retrain check) every
    housekeeping_s unless `vsandx beat` does it, lost broker jobs re-sent."""
    next_upkeep = 0.0
    while not stop.wait(max(0.5, min(s.model_poll_s, s.lease_s / 2, 30.0))):
        try:
            holder.maybe_refresh()
            if s.housekeeping_in_api and time.monotonic() >= next_upkeep:
                housekeeping(database, s, queue)
                next_upkeep = time.monotonic() + s.housekeeping_s
            queue.reap()
        except Exception:  # keep maintaining whatever one round hit
            log.exception("maintenance round failed")


def create_app(settings: ServiceSettings | None = None, integrations: Integrations | None = None) -> FastAPI:
    """`integrations`: the bug trackers and SMTP (default: from VSANDX_* variables)."""
    s = settings or get_service_settings()
    allow_exit(False)  # a diagnosis over its limits in an API worker thread fails; it cannot end the API
    database = get_database(s)
    holder = ModelHolder(s)
    integrations = integrations or Integrations.from_env()
    if (why := public_url_warning(integrations.notify)) is not None:
        log.warning(why)
    queue = make_queue(database, s, holder, integrations)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        holder.refresh()  # a missing or refused model is reported by /ready, not fatal
        queue.start()
        stop = threading.Event()
        t = threading.Thread(target=_maintain, args=(s, database, holder, queue, stop), name="vsandx-maintenance",
                             daemon=True)  # fmt: skip
        t.start()
        try:
            yield
        finally:
            stop.set()
            queue.stop()
            t.join(5)

    app = FastAPI(
        title="vsandx",
        summary="Machine-learning diagnostics for VMware vSAN performance bundles",
        version="1",
        lifespan=lifespan,
    )
    # the parts routes take through service.api.deps (its only reader)
    app.state.settings, app.state.database, app.state.holder, app.state.queue = s, database, holder, queue
    app.state.notify = integrations.notify
    metrics = app.state.metrics = Metrics(database, holder, lambda: queue.name)
    ledger = SqlDeliveryLedger(database.session, Base.metadata.tables[WebhookDelivery.__tablename__])

    def enqueue(job: dict[str, Any]) -> None:  # the worker runs service.queue.webhook_jobs on it
        queue.submit_webhook(job)

    app.state.webhooks = WebhookContext(integrations.trackers, ledger, enqueue)
    app.include_router(api)
    app.include_router(feedback_api)
    app.include_router(email_api)
    app.include_router(webhook_api)
    app.include_router(ops)
    pages = _include_ui(app)
    app.add_middleware(BodyLimit, limits=body_limits(s), html=pages)
    app.add_middleware(
        OriginCheck, public_url=integrations.notify.public_url, exempt=(f"{API_PREFIX}/webhooks/",), html=pages
    )
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    return app


def body_limits(s: ServiceSettings) -> BodyLimits:
    """Uploads (the API's and the UI's form without JavaScript, POST /upload) stream to disk
    (VSANDX_MAX_UPLOAD_BYTES); the trackers' webhooks are bounded by what they send
    (service.trackers.webhooks.WEBHOOK_MAX_BODY); the UI's feedback form carries one field per component
    (VSANDX_MAX_FORM_BYTES); everything else is a small JSON body (VSANDX_MAX_JSON_BYTES)."""
    return BodyLimits(
        default=s.max_json_bytes,
        exact={("POST", f"{API_PREFIX}/diagnoses"): s.max_upload_bytes, ("POST", "/upload"): s.max_upload_bytes},
        prefixes={f"{API_PREFIX}/webhooks/": WEBHOOK_MAX_BODY, "/diagnoses/": s.max_form_bytes},
    )


def _include_ui(app: FastAPI) -> RefusalPage | None:
    """The HTML pages (service.api.ui), their error pages (service.api.error_pages: the page for a
    browser's refused form, returned for the body limits) and their assets, when that part of the
    service is installed."""
    pages: RefusalPage | None = None
    if importlib.util.find_spec("service.api.ui") is not None:
        ui: Any = importlib.import_module("service.api.ui")
        app.include_router(ui.router)
        errors: Any = importlib.import_module("service.api.error_pages")
        errors.install(app)
        pages = errors.ErrorPages()
    if STATIC.is_dir():
        from fastapi.staticfiles import StaticFiles

        app.mount("/static", StaticFiles(directory=STATIC), name="static")
    return pages
