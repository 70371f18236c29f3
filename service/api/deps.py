"""What a route may take from the application, as FastAPI dependencies with typed `Annotated` aliases.

`create_app` (service.app) puts the service's parts on `app.state`; this module is the only reader of
it, so a route names what it needs in its signature (`settings: Settings`, `queue: QueueDep`, …) and
never reaches into the request. A part the application lacks is a `MissingPart` (500), not an
AttributeError deep in a route.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from diagnosis.serving import ModelHolder
from pipeline.config import PipelineConfig
from service.api.metrics import Metrics
from service.queue.protocol import Queue
from service.store.db import Database
from service.trackers.base import DeliveryLedger, TrackerSettings
from service.trackers.notify import NotifySettings
from vsandx.settings import ServiceSettings

T = TypeVar("T")


@dataclass
class WebhookContext:
    """The bug trackers' webhook routes' side (service.api.webhooks): the tracker settings, the
    delivery ledger, and `enqueue(job)`, which hands an admitted delivery's job to the worker queue."""

    settings: TrackerSettings
    ledger: DeliveryLedger
    enqueue: Callable[[dict[str, Any]], None]


class MissingPart(RuntimeError):
    """The application was built without a part a route needs (a bug in wiring, not in the request)."""


def _part(request: Request, name: str, kind: type[T]) -> T:
    got = getattr(request.app.state, name, None)
    if not isinstance(got, kind):
        raise MissingPart(f"the application has no {kind.__name__} as app.state.{name}")
    return got


def get_settings(request: Request) -> ServiceSettings:
    return _part(request, "settings", ServiceSettings)


def get_database(request: Request) -> Database:
    return _part(request, "database", Database)


def get_holder(request: Request) -> ModelHolder:
    return _part(request, "holder", ModelHolder)


def get_queue(request: Request) -> Queue:
    queue: Queue | None = getattr(request.app.state, "queue", None)
    if queue is None:
        raise MissingPart("the application has no queue as app.state.queue")
    return queue


def get_metrics(request: Request) -> Metrics:
    return _part(request, "metrics", Metrics)


def get_webhooks(request: Request) -> WebhookContext:
    return _part(request, "webhooks", WebhookContext)


def get_notify(request: Request) -> NotifySettings:
    """SMTP and the emailed report's settings (the service's Integrations.notify)."""
    return _part(request, "notify", NotifySettings)


def get_pipeline(holder: Annotated[ModelHolder, Depends(get_holder)]) -> PipelineConfig:
    """The pipeline configuration the service resolved once from its settings (the served model reads
    uploads with it; the upload check too)."""
    return holder.config


Settings = Annotated[ServiceSettings, Depends(get_settings)]
DatabaseDep = Annotated[Database, Depends(get_database)]
Holder = Annotated[ModelHolder, Depends(get_holder)]
QueueDep = Annotated[Queue, Depends(get_queue)]
MetricsDep = Annotated[Metrics, Depends(get_metrics)]
Webhooks = Annotated[WebhookContext, Depends(get_webhooks)]
Notify = Annotated[NotifySettings, Depends(get_notify)]
Pipeline = Annotated[PipelineConfig, Depends(get_pipeline)]


def get_db(database: DatabaseDep) -> Iterator[Session]:
    """A session on the app's database, closed after the request."""
    with database.session() as session:
        yield session


Db = Annotated[Session, Depends(get_db)]
