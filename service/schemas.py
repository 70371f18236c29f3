"""Pydantic shapes of the API's input and output (the diagnosis document itself is interface.md's)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

API_PREFIX = "/api/v1"
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
    database: str
    queue: str
    model: dict[str, Any]


class ErrorOut(BaseModel):
    detail: str
