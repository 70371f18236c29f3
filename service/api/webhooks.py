"""`POST /api/v1/webhooks/bugzilla` and `/github`: read the raw body (bounded), let
service.trackers.webhooks.accept decide, queue the work, answer at once.

The application provides a `WebhookContext` (service.api.deps, `app.state.webhooks`): the tracker
settings, the delivery ledger, and `enqueue(job)` which hands `Answer.job` to the worker queue (a Celery task calling
service.trackers.webhooks.run, or the embedded queue). When queuing fails, the delivery's claim is undone and
the answer is 503, so the tracker's own retry is admitted rather than taken for a replay.
"""

from __future__ import annotations

import logging

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from service.api.deps import WebhookContext, Webhooks
from service.api.metrics import Metrics
from service.trackers.webhooks import WEBHOOK_MAX_BODY, Source, accept

log = logging.getLogger(__name__)
router = APIRouter(prefix="/api/v1/webhooks", tags=["webhooks"])
__all__ = ["WebhookContext", "router"]


async def _body(request: Request) -> bytes | None:
    """The raw body (signatures are over these exact bytes); None past WEBHOOK_MAX_BODY."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > WEBHOOK_MAX_BODY:
        return None
    got = bytearray()
    async for chunk in request.stream():
        got += chunk
        if len(got) > WEBHOOK_MAX_BODY:
            return None
    return bytes(got)


def _count(request: Request, source: Source, outcome: str) -> None:
    """vsandx_webhook_deliveries_total{tracker, outcome}, when the app keeps metrics (service.app does)."""
    metrics = getattr(request.app.state, "metrics", None)
    if isinstance(metrics, Metrics):
        metrics.webhooks.labels(source, outcome).inc()


async def _handle(request: Request, ctx: WebhookContext, source: Source) -> JSONResponse:
    """Every answer counts once, by outcome (service.trackers.webhooks.OUTCOMES)."""
    body = await _body(request)  # JSON or a form (GitHub's `payload` field): bounded alike, decoded by accept
    if body is None:
        _count(request, source, "too_large")
        return JSONResponse({"error": f"payload over {WEBHOOK_MAX_BODY} bytes"}, 413)
    # the ledger may be a database: off the event loop
    answer = await run_in_threadpool(accept, source, body, dict(request.headers), ctx.settings, ctx.ledger)
    if answer.job is not None:
        try:
            await run_in_threadpool(ctx.enqueue, answer.job)
        except Exception as e:
            log.exception("%s webhook: could not queue delivery %s", source, answer.payload.get("delivery"))
            for key in answer.claimed:
                await run_in_threadpool(ctx.ledger.forget, key)
            _count(request, source, "queue_failed")
            return JSONResponse({"error": f"could not queue the work: {type(e).__name__}"}, 503)
    _count(request, source, answer.outcome)
    return JSONResponse(answer.payload, answer.status)


@router.post("/bugzilla")
async def bugzilla_webhook(request: Request, ctx: Webhooks) -> JSONResponse:
    return await _handle(request, ctx, "bugzilla")


@router.post("/github")
async def github_webhook(request: Request, ctx: Webhooks) -> JSONResponse:
    """JSON or `application/x-www-form-urlencoded` (the signature is over the body as sent)."""
    return await _handle(request, ctx, "github")
