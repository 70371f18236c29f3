"""The JSON API under /api/v1, plus health, readiness and metrics. Routes are a few lines each and
call plain functions (service.store, service.store.intake); HTTP errors are made here and nowhere else."""

from __future__ import annotations

import secrets
from typing import Annotated, Any

from fastapi import APIRouter, Depends, File, HTTPException, Query, Request, Response, Security, UploadFile, status
from fastapi.responses import JSONResponse
from fastapi.security import APIKeyHeader
from sqlalchemy import text

from diagnosis.serving import ModelUnavailable
from service.api.deps import Db, Holder, MetricsDep, Pipeline, QueueDep, Settings
from service.api.metrics import CONTENT_TYPE
from service.queue.protocol import NoTrainingQueue
from service.schemas import (
    API_PREFIX,
    MAX_INT,
    Accepted,
    DiagnosisList,
    DiagnosisResource,
    ErrorOut,
    Health,
    Readiness,
    status_url,
)
from service.store import bundle_store, diagnosis_store
from service.store.intake import UnreadableBundle, accept_upload
from vsandx.faults import FAULT_IDS
from vsandx.settings import ServiceSettings

api = APIRouter(prefix=API_PREFIX, tags=["diagnoses"])
ops = APIRouter(tags=["operations"])
_key_header = APIKeyHeader(name="X-API-Key", auto_error=False, description="needed when VSANDX_API_KEYS is set")


def key_accepted(settings: ServiceSettings, key: str | None) -> bool:
    """No keys configured, or `key` is one of them (compared in constant time)."""
    return not settings.api_keys or any(secrets.compare_digest(key or "", k) for k in settings.api_keys)


def require_api_key(settings: Settings, key: Annotated[str | None, Security(_key_header)] = None) -> None:
    """Write endpoints: open when no keys are configured, else X-API-Key must be one of them."""
    if not key_accepted(settings, key):
        raise HTTPException(status.HTTP_401_UNAUTHORIZED, "missing or wrong X-API-Key", {"WWW-Authenticate": "APIKey"})


ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorOut, "description": "API keys are configured and X-API-Key is missing or wrong"},
    413: {"model": ErrorOut, "description": "the upload is larger than VSANDX_MAX_UPLOAD_BYTES"},
    422: {"model": ErrorOut, "description": "the upload is not a readable bundle (the reason is named)"},
    503: {"model": ErrorOut, "description": "no model can be served yet"},
}


@api.post(
    "/diagnoses",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=DiagnosisResource | Accepted,
    responses={201: {"model": DiagnosisResource, "description": "diagnosed within the wait bound"}, **ERRORS},
    dependencies=[Depends(require_api_key)],
)
def upload_bundle(
    request: Request,
    response: Response,
    db: Db,
    settings: Settings,
    holder: Holder,
    queue: QueueDep,
    pipeline: Pipeline,
    bundle: Annotated[UploadFile, File(description="a vSAN support bundle: .tgz, .tar, .zip")],
    wait: Annotated[bool, Query(description="answer with the diagnosis when it is ready within the bound")] = False,
    timeout: Annotated[float | None, Query(gt=0, description="seconds to wait (capped by the server)")] = None,
) -> DiagnosisResource | Accepted:
    """Upload a bundle. 202 with a status URL; with `?wait=true`, 201 and the diagnosis when it is
    ready within the bound, 422 if the bundle turns out unreadable, else still 202."""
    try:
        holder.get()
        job = accept_upload(db, settings, bundle.file, bundle.filename, pipeline)
    except ModelUnavailable as e:
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, f"no model to serve: {e}") from e
    except UnreadableBundle as e:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(e)) from e
    except bundle_store.UploadTooLarge as e:
        raise HTTPException(status.HTTP_413_CONTENT_TOO_LARGE, str(e)) from e
    queue.submit(job.id)
    response.headers["Location"] = str(request.url_for("get_diagnosis", job_id=job.id))
    if wait:  # the worker that runs it observes its latency (vsandx_upload_to_diagnosis_seconds)
        queue.wait(job.id, min(timeout or settings.wait_timeout_s, settings.wait_timeout_s))
    res = diagnosis_store.get_diagnosis(db, job.id) if wait else None
    if res is None or res.status in ("queued", "running"):
        return Accepted(id=job.id, status="queued" if res is None else res.status, status_url=status_url(job.id))
    if res.status == "failed":
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, res.error or "diagnosis failed")
    response.status_code = status.HTTP_201_CREATED
    return res


@api.get("/diagnoses/{job_id}", response_model=DiagnosisResource, responses={404: {"model": ErrorOut}})
def get_diagnosis(job_id: str, db: Db) -> DiagnosisResource:
    """One diagnosis: its status and, once done, the vsandx.diagnosis/1 document."""
    res = diagnosis_store.get_diagnosis(db, job_id)
    if res is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no diagnosis {job_id}")
    return res


@api.get("/diagnoses", response_model=DiagnosisList)
def list_diagnoses(
    db: Db,
    fault: Annotated[str | None, Query(description="a fault id: diagnoses that found it")] = None,
    status_: Annotated[str | None, Query(alias="status", pattern="^(queued|running|done|failed)$")] = None,
    sha256: Annotated[str | None, Query(pattern="^[0-9a-f]{64}$")] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0, le=MAX_INT)] = 0,
) -> DiagnosisList:
    """Newest first, filtered by fault found, status or bundle."""
    if fault is not None and fault not in FAULT_IDS:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, f"unknown fault {fault!r}; one of {FAULT_IDS}")
    return diagnosis_store.list_diagnoses(db, fault=fault, status=status_, sha256=sha256, limit=limit, offset=offset)


@api.get("/model", tags=["model"])
def served_model(holder: Holder) -> dict[str, Any]:
    """The model diagnoses are made with now: name, version, where it came from, the training report."""
    return holder.current_model_info()


@api.post(
    "/model/training",
    status_code=status.HTTP_202_ACCEPTED,
    tags=["model"],
    dependencies=[Depends(require_api_key)],
    responses={409: {"model": ErrorOut}},
)
def start_training(
    queue: QueueDep, preset: Annotated[str, Query(pattern="^(smoke|quick|full)$")] = "quick"
) -> dict[str, Any]:
    """Queue a training run on the training queue (Celery); the new model becomes champion only if it
    is at least as good, and the service picks it up by itself."""
    try:
        task_id = queue.submit_training(preset)
    except NoTrainingQueue as e:
        raise HTTPException(status.HTTP_409_CONFLICT, str(e)) from e
    return {"id": task_id, "state": "PENDING", "status_url": f"{API_PREFIX}/model/training/{task_id}"}


@api.get("/model/training/{task_id}", tags=["model"], responses={409: {"model": ErrorOut}})
def training_status(queue: QueueDep, task_id: str) -> dict[str, Any]:
    """A training run's Celery state (PENDING, STARTED, SUCCESS with the version, FAILURE)."""
    try:
        return queue.training_status(task_id)
    except NoTrainingQueue as e:
        raise HTTPException(status.HTTP_409_CONFLICT, str(e)) from e


@ops.get("/health", response_model=Health)
def health() -> Health:
    """Liveness: the process answers."""
    return Health()


@ops.get("/ready", response_model=Readiness, responses={503: {"model": Readiness}})
def ready(db: Db, holder: Holder, queue: QueueDep) -> Any:
    """Readiness: the database answers and a model is loaded."""
    try:
        db.execute(text("SELECT 1"))
        database = "ok"
    except Exception as e:  # any driver error means not ready
        database = f"error: {e}"
    model = holder.current_model_info()
    reasons = ([] if database == "ok" else [f"database: {database}"]) + (
        [] if model["ready"] else [f"no model to serve: {model['error'] or 'not loaded yet'}"]
    )
    if (why := queue.unready()) is not None:
        reasons.append(f"queue: {why}")
    body = Readiness(
        ready=not reasons, reason="; ".join(reasons) or None, database=database,
        queue=queue.ping(), model=model,
    )  # fmt: skip
    return JSONResponse(body.model_dump(mode="json"), status_code=200 if body.ready else 503)


@ops.get("/metrics", response_class=Response, responses={200: {"content": {CONTENT_TYPE: {}}}})
def metrics(metrics: MetricsDep) -> Response:
    """Prometheus metrics."""
    return Response(metrics.render(), media_type=CONTENT_TYPE)
