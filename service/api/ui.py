"""The engineer's web pages, rendered on the server: upload, the list of diagnoses, one diagnosis with
its charts, a feedback form and a "send by email" form, the served model with its retrain decisions.
Each route reads what it needs (service.api.pages) and fills a template. The upload page posts to the
JSON API from the browser (static/upload.js) to show progress; without JavaScript its form posts to
`POST /upload`, which takes the bundle through the same intake and answers 303 to the diagnosis page.
The feedback, email and "retrain now" forms are plain HTML forms."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlencode

import jinja2
from fastapi import APIRouter, File, Form, Query, Request, UploadFile
from fastapi import Path as PathParam
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from diagnosis.serving import ModelHolder, ModelUnavailable
from service.api import csrf, emailing, pages
from service.api.deps import DatabaseDep, Db, Holder, Notify, Pipeline, QueueDep, Settings
from service.api.diagnoses import key_accepted
from service.api.limits import size_words
from service.queue import retraining
from service.queue.protocol import Queue
from service.schemas import MAX_INT
from service.store import bundle_store
from service.store import feedback as fb
from service.store.db import Database
from service.store.intake import UnreadableBundle, accept_upload
from service.trackers.notify import MAX_RECIPIENTS, NotifySettings
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
NO_FILE = "No file was chosen: choose a support bundle (.tgz, .tar or .zip) and send the form again."
FORGED = "The form's security token is missing or stale (did it come from this page?): reload the page, send it again."


def _page(request: Request, name: str, context: dict[str, Any], status_code: int = 200) -> HTMLResponse:
    """A filled template; every page carries the CSRF token its forms send back (service.api.csrf)."""
    token = csrf.token_for(request.cookies.get(csrf.COOKIE))
    page = templates.TemplateResponse(request, name, context | {"csrf_token": token}, status_code=status_code)
    page.set_cookie(csrf.COOKIE, token, httponly=True, samesite="lax", secure=request.url.scheme == "https")
    return page


class _Forged(PermissionError):
    pass


def _forged(request: Request, form: dict[str, str]) -> bool:
    return not csrf.token_ok(form.get(csrf.FIELD), request.cookies.get(csrf.COOKIE))


def _not_found(request: Request, what: str) -> HTMLResponse:
    return _page(request, "error.html", {"title": "Not found", "message": what}, 404)


@router.get("/", response_class=HTMLResponse)
def upload_page(request: Request, settings: Settings, holder: Holder) -> HTMLResponse:
    return _page(request, "upload.html", pages.upload(settings, holder.current_model_info()))


@router.post("/upload", response_class=HTMLResponse)
def upload_form(
    request: Request, db: Db, settings: Settings, holder: Holder, queue: QueueDep, pipeline: Pipeline,
    bundle: Annotated[UploadFile | None, File()] = None,
    csrf_token: Annotated[str | None, Form()] = None,
    api_key: Annotated[str | None, Form()] = None,
) -> Response:  # fmt: skip
    """The upload form posted without JavaScript: the bundle goes through the API's intake (streamed to
    the store, checked, queued), then 303 to its diagnosis page, which refreshes itself until done. A
    refusal shows the form again with the reason (a body over the limit: service.api.error_pages)."""
    error, code = None, 200
    try:
        if not csrf.token_ok(csrf_token, request.cookies.get(csrf.COOKIE)):
            error, code = FORGED, 403
        elif not key_accepted(settings, api_key):
            error, code = "The API key is missing or wrong.", 401
        elif bundle is None or not bundle.filename:
            error, code = NO_FILE, 422
        else:
            holder.get()
            job = accept_upload(db, settings, bundle.file, bundle.filename, pipeline)
            queue.submit(job.id)
            return RedirectResponse(f"/diagnoses/{job.id}", status_code=303)
    except ModelUnavailable as e:
        error, code = f"No model to serve yet: {e}", 503
    except UnreadableBundle as e:
        error, code = str(e), 422
    except bundle_store.UploadTooLarge as e:
        name = bundle.filename if bundle else "the file"
        error, code = f"{name} is larger than the upload limit of {size_words(e.limit)}: nothing was stored.", 413
    ctx = pages.upload(settings, holder.current_model_info())
    return _page(request, "upload.html", ctx | {"upload_error": error}, code)


@router.get("/diagnoses", response_class=HTMLResponse)
def list_page(
    request: Request, db: Db, fault: str | None = None, status: str | None = None,
    page: Annotated[int, Query(ge=1, le=pages.MAX_PAGE)] = 1,
) -> HTMLResponse:  # fmt: skip
    return _page(request, "list.html", pages.listing(db, fault, status, page))


def _detail(db: Session, settings: ServiceSettings, notify: NotifySettings, job_id: str) -> dict[str, Any] | None:
    ctx = pages.detail(db, settings, job_id)
    return None if ctx is None else ctx | {"mail_on": bool(notify.smtp_host), "max_to": MAX_RECIPIENTS}


@router.get("/diagnoses/{job_id}", response_class=HTMLResponse)
def detail_page(
    request: Request, db: Db, settings: Settings, notify: Notify, job_id: str,
    feedback: Annotated[int | None, Query(ge=1, le=MAX_INT)] = None,
    retrain: Annotated[int | None, Query(ge=1, le=MAX_INT)] = None,
    emailed: Annotated[str | None, Query(pattern="^(sent|again)$")] = None,
) -> HTMLResponse:  # fmt: skip
    ctx = _detail(db, settings, notify, job_id)
    if ctx is None:
        return _not_found(request, f"No diagnosis {job_id}.")
    return _page(request, "detail.html", ctx | {"thanks": feedback, "retrain": retrain, "emailed": emailed})


@router.post("/diagnoses/{job_id}/feedback", response_class=HTMLResponse)
async def feedback_form(
    request: Request, job_id: str, settings: Settings, database: DatabaseDep, queue: QueueDep, notify: Notify
) -> Response:
    """The detail page's feedback form: stored as the API stores it, then back to the page (303)."""
    form = {k: v for k, v in (await request.form()).multi_items() if isinstance(v, str)}
    return await run_in_threadpool(_give_feedback, request, job_id, form, _Parts(settings, database, queue, notify))


@dataclass(frozen=True)
class _Parts:
    """What the forms' work (run off the event loop) needs of the application."""

    settings: ServiceSettings
    database: Database
    queue: Queue
    notify: NotifySettings


def _give_feedback(request: Request, job_id: str, form: dict[str, str], parts: _Parts) -> Response:
    settings = parts.settings
    with parts.database.session() as db:
        try:
            if _forged(request, form):
                raise _Forged(FORGED)
            if not key_accepted(settings, form.get("api_key")):
                raise PermissionError("the API key is missing or wrong")
            row = fb.record_feedback(db, job_id, pages.feedback_in(form))
        except fb.UnknownDiagnosis:
            return _not_found(request, f"No diagnosis {job_id}.")
        except (PermissionError, ValueError) as e:  # InvalidFeedback, NotFinished, ValidationError
            ctx = _detail(db, settings, parts.notify, job_id) or {}
            code = 403 if isinstance(e, _Forged) else 401 if isinstance(e, PermissionError) else 422
            return _page(request, "detail.html", ctx | {"feedback_error": pages.form_error(e), "form": form}, code)
        opened = retraining.after_feedback(db, settings, parts.queue)
    query = {"feedback": row.id} | ({"retrain": opened.id} if opened else {})
    return RedirectResponse(f"/diagnoses/{job_id}?{urlencode(query)}#feedback", status_code=303)


@router.post("/diagnoses/{job_id}/email", response_class=HTMLResponse)
async def email_form(
    request: Request, job_id: str, settings: Settings, database: DatabaseDep, queue: QueueDep, notify: Notify
) -> Response:
    """The detail page's "send by email" form: `to` (addresses separated by commas, semicolons or lines),
    sent as the API sends it (service.api.emailing), then back to the page (303)."""
    form = {k: v for k, v in (await request.form()).multi_items() if isinstance(v, str)}
    return await run_in_threadpool(_send_email, request, job_id, form, _Parts(settings, database, queue, notify))


def _send_email(request: Request, job_id: str, form: dict[str, str], parts: _Parts) -> Response:
    try:
        if _forged(request, form):
            raise emailing.EmailRefused(403, FORGED)
        if not key_accepted(parts.settings, form.get("api_key")):
            raise emailing.EmailRefused(401, "The API key is missing or wrong.")
        to = [a.strip() for a in re.split(r"[,;\n]", form.get("to", "")) if a.strip()]
        out = emailing.email_diagnosis(parts.database, parts.settings, parts.notify, job_id, to)
    except emailing.EmailRefused as e:
        with parts.database.session() as db:
            ctx = _detail(db, parts.settings, parts.notify, job_id)
        if ctx is None:
            return _not_found(request, f"No diagnosis {job_id}.")
        return _page(request, "detail.html", ctx | {"email_error": str(e), "email_to": form.get("to", "")}, e.code)
    query = {"emailed": "sent" if out.sent else "again"}
    return RedirectResponse(f"/diagnoses/{job_id}?{urlencode(query)}#email", status_code=303)


@router.get("/diagnoses/{job_id}/charts/{k}.png")
def chart_png(
    request: Request, db: Db, settings: Settings, job_id: str, k: Annotated[int, PathParam(ge=0, le=MAX_INT)]
) -> Response:
    png = pages.chart_png(db, settings, job_id, k)
    if png is None:
        return _not_found(request, f"No chart {k} for diagnosis {job_id}.")
    return Response(png, media_type="image/png")


def _model_ctx(settings: ServiceSettings, info: dict[str, Any], db: Session) -> dict[str, Any]:
    ctx = pages.model(info, retraining.list_retrains(db, 20).items)
    return ctx | {"need_key": bool(settings.api_keys), "min_feedback": settings.retrain_min_feedback}


@router.get("/model", response_class=HTMLResponse)
def model_page(request: Request, db: Db, settings: Settings, holder: Holder) -> HTMLResponse:
    return _page(request, "model.html", _model_ctx(settings, holder.current_model_info(), db))


@router.post("/model/retrains", response_class=HTMLResponse)
async def retrain_form(
    request: Request, settings: Settings, database: DatabaseDep, queue: QueueDep, holder: Holder, notify: Notify
) -> Response:
    """The model page's "retrain now" form."""
    form = {k: v for k, v in (await request.form()).multi_items() if isinstance(v, str)}
    return await run_in_threadpool(_retrain_now, request, form, _Parts(settings, database, queue, notify), holder)


def _retrain_now(request: Request, form: dict[str, str], parts: _Parts, holder: ModelHolder) -> Response:
    settings = parts.settings
    with parts.database.session() as db:
        error, code = None, 200
        if _forged(request, form):
            error, code = FORGED, 403
        elif not key_accepted(settings, form.get("api_key")):
            error, code = "The API key is missing or wrong.", 401
        elif (opened := retraining.open_retrain(db, settings, "demand", form.get("requested_by") or None)) is None:
            error, code = "A retrain is already queued or running.", 409
        else:
            parts.queue.submit_retrain(opened.id)
            return RedirectResponse("/model#retrains", status_code=303)
        ctx = _model_ctx(settings, holder.current_model_info(), db)
        return _page(request, "model.html", ctx | {"retrain_error": error}, code)


@router.get("/model/report/{name}")
def report_image(request: Request, name: str, holder: Holder) -> Response:
    path = pages.report_file(holder.current_model_info(), name)
    return FileResponse(path, media_type="image/png") if path else _not_found(request, f"No figure {name}.")
