"""The JSON API of engineer feedback and retraining, under /api/v1: feedback on a diagnosis (which may
queue a retrain), retrains on demand and their decisions. Routes call service.store.feedback and
service.queue.retraining; HTTP errors are made here."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Path, Query, Request, Response, status

from service.api.deps import Db, QueueDep, Settings
from service.api.diagnoses import ERRORS, require_api_key
from service.queue import retraining
from service.schemas import (
    API_PREFIX,
    MAX_INT,
    ErrorOut,
    FeedbackIn,
    FeedbackList,
    FeedbackOut,
    RetrainIn,
    RetrainList,
    RetrainOut,
    retrain_url,
)
from service.store import feedback

router = APIRouter(prefix=API_PREFIX)
NOT_FOUND: dict[int | str, dict[str, Any]] = {404: {"model": ErrorOut, "description": "no such diagnosis"}}


@router.post(
    "/diagnoses/{job_id}/feedback",
    status_code=status.HTTP_201_CREATED,
    response_model=FeedbackOut,
    tags=["feedback"],
    dependencies=[Depends(require_api_key)],
    responses={401: ERRORS[401], **NOT_FOUND, 409: {"model": ErrorOut, "description": "the diagnosis is not done"},
               422: {"model": ErrorOut, "description": "a component or label this diagnosis cannot take (named)"}},
)  # fmt: skip
def give_feedback(job_id: str, body: FeedbackIn, db: Db, settings: Settings, queue: QueueDep) -> FeedbackOut:
    """Confirm or correct the verdicts of a finished diagnosis (components left out are confirmed; a
    fault the model missed is a correction of a `none`). When enough new feedback has come in
    (VSANDX_RETRAIN_MIN_FEEDBACK), a retrain is queued: the answer's `retrain_url` follows it."""
    try:
        row = feedback.record_feedback(db, job_id, body)
    except feedback.InvalidFeedback as e:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(e)) from e
    except feedback.UnknownDiagnosis as e:
        raise HTTPException(status.HTTP_404_NOT_FOUND, str(e)) from e
    except feedback.NotFinished as e:
        raise HTTPException(status.HTTP_409_CONFLICT, str(e)) from e
    opened = retraining.after_feedback(db, settings, queue)
    out = feedback.get_feedback(db, row.id)
    if out is None:  # deleted between the two statements: nothing the client can act on
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"feedback {row.id} on {job_id} is gone")
    if opened is not None:  # a retrain that failed at once has given the feedback back already: name it anyway
        out = out.model_copy(update={"retrain_id": opened.id, "retrain_url": retrain_url(opened.id)})
    return out


@router.get("/diagnoses/{job_id}/feedback", response_model=FeedbackList, tags=["feedback"], responses=NOT_FOUND)
def list_feedback(job_id: str, db: Db) -> FeedbackList:
    """Every feedback on this diagnosis's bundle, newest first (the newest one labels it for training)."""
    items = feedback.feedback_for(db, job_id)
    if items is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no diagnosis {job_id}")
    return FeedbackList(items=items)


@router.post(
    "/model/retrains",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=RetrainOut,
    tags=["model"],
    dependencies=[Depends(require_api_key)],
    responses={401: ERRORS[401], 409: {"model": ErrorOut, "description": "a retrain is queued or running"}},
)
def request_retrain(
    request: Request, response: Response, db: Db, settings: Settings, queue: QueueDep, body: RetrainIn | None = None
) -> RetrainOut:
    """Retrain now with every feedback-labelled bundle; the candidate replaces the champion only if it is
    at least as good on the field test set and better on the feedback set."""
    opened = retraining.open_retrain(db, settings, "demand", (body.requested_by if body else None) or None)
    if opened is None:
        raise HTTPException(status.HTTP_409_CONFLICT, "a retrain is already queued or running")
    queue.submit_retrain(opened.id)
    response.headers["Location"] = str(request.url_for("get_retrain", retrain_id=opened.id))
    return retraining.to_out(opened)


@router.get("/model/retrains", response_model=RetrainList, tags=["model"])
def list_retrains(
    db: Db, limit: Annotated[int, Query(ge=1, le=500)] = 50, offset: Annotated[int, Query(ge=0, le=MAX_INT)] = 0
) -> RetrainList:
    """Retrains and their promotion decisions, newest first."""
    return retraining.list_retrains(db, limit, offset)


@router.get("/model/retrains/{retrain_id}", response_model=RetrainOut, tags=["model"], responses=NOT_FOUND)
def get_retrain(retrain_id: Annotated[int, Path(ge=1, le=MAX_INT)], db: Db) -> RetrainOut:
    """One retrain: its status and, once done, the decision with both models' metrics."""
    got = retraining.get_retrain(db, retrain_id)
    if got is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no retrain {retrain_id}")
    return got
