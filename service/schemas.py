"""Pydantic shapes of the API's input and output (the diagnosis document itself is interface.md's)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

API_PREFIX = "/api/v1"
# The largest offset, page or row id a query parameter may carry: row ids are 32-bit INTEGER columns on
# PostgreSQL and SQLite stops at 2**63 - 1, so anything larger must answer 422, never reach the driver.
MAX_INT = 2**31 - 1
Status = Literal["queued", "running", "done", "failed"]


def status_url(job_id: str) -> str:
    return f"{API_PREFIX}/diagnoses/{job_id}"


class ModelOut(BaseModel):
    name: str
    version: str


class DiagnosisResource(BaseModel):
    """One upload's diagnosis: the job's state and, once done, interface.md's document."""

    id: str
    status: Status
    filename: str
    sha256: str
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    attempts: int = 0
    error: str | None = None
    model: ModelOut | None = None
    faults: list[str] = Field(default_factory=list, description="non-none verdicts, once done")
    status_url: str
    diagnosis: dict[str, Any] | None = Field(None, description="the vsandx.diagnosis/1 document, once done")


class Accepted(BaseModel):
    """202: the upload is stored and queued; poll status_url."""

    id: str
    status: Status
    status_url: str


class DiagnosisList(BaseModel):
    items: list[DiagnosisResource]
    total: int
    limit: int
    offset: int


class Health(BaseModel):
    status: Literal["ok"] = "ok"


class Readiness(BaseModel):
    ready: bool
    reason: str | None = None  # why not ready, in words
    database: str
    queue: str
    model: dict[str, Any]


class ErrorOut(BaseModel):
    detail: str


def retrain_url(retrain_id: int) -> str:
    return f"{API_PREFIX}/model/retrains/{retrain_id}"


class FeedbackIn(BaseModel):
    """An engineer's verdict on a finished diagnosis. Components left out of `labels` are confirmed (the
    model's verdict stands); a fault the model missed is a `none` verdict given its fault here."""

    author: str = Field(min_length=1, max_length=255, pattern=r"\S", description="who gives the feedback")
    labels: dict[str, str] = Field(
        default_factory=dict,
        description='component id -> "none" or a fault id its kind can carry (corrections and missed faults)',
        examples=[{"nic:esx-02.lab.local/vmnic1": "none", "disk:esx-01.lab.local/naa.5000c5": "disk.latency"}],
    )
    comment: str | None = Field(None, max_length=4000)


class FeedbackOut(BaseModel):
    id: int
    sha256: str
    diagnosis_model: ModelOut = Field(description="the model whose diagnosis was judged")
    author: str
    labels: dict[str, str] = Field(description="every component's label, as labels.json's `components`")
    corrections: dict[str, str] = Field(description="the labels that differ from the model's verdicts")
    comment: str | None = None
    created_at: datetime
    retrain_id: int | None = Field(None, description="the retrain that used it first, once one has")
    retrain_url: str | None = None


class FeedbackList(BaseModel):
    items: list[FeedbackOut]


class RetrainIn(BaseModel):
    requested_by: str | None = Field(None, max_length=255)


class RetrainOut(BaseModel):
    """A retrain and its promotion decision: the candidate becomes champion only if it is at least as
    good on the field test set and better on the feedback set."""

    id: int
    trigger: Literal["feedback", "demand"]
    status: Status
    requested_by: str | None = None
    feedback_count: int
    champion_version: str | None = None
    candidate_version: str | None = None
    promoted: bool | None = None
    reason: str | None = None
    metrics: dict[str, Any] = Field(default_factory=dict)
    mlflow_run_id: str | None = None
    error: str | None = None
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    url: str


class RetrainList(BaseModel):
    items: list[RetrainOut]
    total: int


class EmailIn(BaseModel):
    """Send a finished diagnosis's report by email (service.api.emailing): at most 5 plain addresses."""

    to: list[str] = Field(min_length=1, max_length=5, description='plain addresses: "a@x.org" or "Name <a@x.org>"')


class EmailOut(BaseModel):
    message_id: str
    sent: bool = Field(description="false: this report had already gone to these addresses (sent once only)")
    to: list[str] = Field(description="the addresses the SMTP server accepted")
    refused: list[str] = Field(default_factory=list, description="addresses the SMTP server refused, and why")
