"""The engineer's web pages, rendered on the server: upload, the list of diagnoses, one diagnosis with
its charts, the served model. Each route reads what it needs (service.pages) and fills a template.
The upload page posts to the JSON API from the browser (static/upload.js) to show progress."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import jinja2
from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import FileResponse, HTMLResponse, Response
from fastapi.templating import Jinja2Templates
from sqlalchemy.orm import Session

from service import pages
from service.db import get_db
from vsandx.faults import FAULTS
from vsandx.settings import ServiceSettings

TEMPLATES = Path(__file__).resolve().parent / "templates"
_env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True, trim_blocks=True,
                          lstrip_blocks=True)  # fmt: skip
_env.filters["stamp"] = pages.stamp
_env.filters["pct"] = lambda v: f"{100 * float(v or 0):.0f} %"
_env.globals["fault_title"] = pages.fault_title
_env.globals["FAULTS"] = FAULTS
templates = Jinja2Templates(env=_env)
router = APIRouter(include_in_schema=False)
Db = Annotated[Session, Depends(get_db)]


def _settings(request: Request) -> ServiceSettings:
    settings: ServiceSettings = request.app.state.settings
    return settings


def _model_info(request: Request) -> dict[str, Any]:
    info: dict[str, Any] = request.app.state.holder.current_model_info()
    return info


def _page(request: Request, name: str, context: dict[str, Any], status_code: int = 200) -> HTMLResponse:
    return templates.TemplateResponse(request, name, context, status_code=status_code)


def _not_found(request: Request, what: str) -> HTMLResponse:
    return _page(request, "error.html", {"title": "Not found", "message": what}, 404)


@router.get("/", response_class=HTMLResponse)
def upload_page(request: Request) -> HTMLResponse:
    return _page(request, "upload.html", pages.upload(_settings(request), _model_info(request)))


@router.get("/diagnoses", response_class=HTMLResponse)
def list_page(
    request: Request, db: Db, fault: str | None = None, status: str | None = None,
    page: Annotated[int, Query(ge=1)] = 1,
) -> HTMLResponse:  # fmt: skip
    return _page(request, "list.html", pages.listing(db, fault, status, page))


@router.get("/diagnoses/{job_id}", response_class=HTMLResponse)
def detail_page(request: Request, db: Db, job_id: str) -> HTMLResponse:
    ctx = pages.detail(db, _settings(request), job_id)
    return _page(request, "detail.html", ctx) if ctx else _not_found(request, f"No diagnosis {job_id}.")


@router.get("/diagnoses/{job_id}/charts/{k}.png")
def chart_png(request: Request, db: Db, job_id: str, k: int) -> Response:
    png = pages.chart_png(db, _settings(request), job_id, k)
    if png is None:
        return _not_found(request, f"No chart {k} for diagnosis {job_id}.")
    return Response(png, media_type="image/png")


@router.get("/model", response_class=HTMLResponse)
def model_page(request: Request) -> HTMLResponse:
    return _page(request, "model.html", pages.model(_model_info(request)))


@router.get("/model/report/{name}")
def report_image(request: Request, name: str) -> Response:
    path = pages.report_file(_model_info(request), name)
    return FileResponse(path, media_type="image/png") if path else _not_found(request, f"No figure {name}.")
