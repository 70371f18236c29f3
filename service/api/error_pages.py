"""The HTML answer a browser gets when its page or form is refused (issue 20 item 6): the error
template with the status code, what was wrong in plain words and a link back to the form, where the
default would be the JSON meant for scripts. For a request that accepts HTML outside the JSON API
(`/api/v1/…`, the docs, health and metrics keep their JSON): a body over its limit (service.api.limits
asks `ErrorPages`, 413, naming the file and the limit) and the HTTP and validation errors raised before
a route runs (an unreadable form: 400 or 422). The routes' own refusals are their pages' business
(service.api.ui)."""

from __future__ import annotations

from http import HTTPStatus

from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler, request_validation_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, Response
from starlette.exceptions import HTTPException
from starlette.types import Scope

from service.api.limits import size_words
from service.api.ui import templates

JSON_PATHS = ("/api/", "/docs", "/redoc", "/openapi.json", "/metrics", "/health", "/ready", "/static/")
UPLOAD = "/upload"


def wants_html(path: str, accept: str) -> bool:
    """A browser's page or form: HTML accepted, outside the JSON API and the operators' endpoints."""
    return not path.startswith(JSON_PATHS) and "text/html" in accept.lower()


def back_link(path: str) -> tuple[str, str]:
    """(href, words) of the page a refused form came from: the upload form for POST /upload, else the
    page one level up (/diagnoses/{id} for its feedback and email forms, /model for its retrain form)."""
    if path.rstrip("/") == UPLOAD:
        return "/", "Back to the upload form"
    return path.rstrip("/").rpartition("/")[0] or "/", "Back to the page"


def render(scope: Scope, title: str, message: str) -> bytes:
    href, words = back_link(scope["path"])
    page = templates.env.get_template("error.html")
    return page.render(request=Request(scope), title=title, message=message, back_href=href, back=words).encode()


class ErrorPages:
    """service.api.limits.RefusalPage: the page for a body over its limit."""

    def wants(self, scope: Scope) -> bool:
        accept = next((v.decode("latin-1") for k, v in scope["headers"] if k.lower() == b"accept"), "")
        return wants_html(scope["path"], accept)

    def too_large(self, scope: Scope, limit: int, filename: str | None) -> bytes:
        if scope["path"].rstrip("/") == UPLOAD:
            what = f"The file {filename}" if filename else "The file"
            message = (f"{what} is larger than the upload limit of {size_words(limit)}: it was not uploaded and "
                       "nothing was stored. Upload a smaller bundle, or ask the service's administrator to raise "
                       "the limit (VSANDX_MAX_UPLOAD_BYTES).")  # fmt: skip
            return render(scope, "Bundle too large", message)
        message = f"The form sent more than this page's limit of {size_words(limit)}; nothing was saved."
        return render(scope, "Form too large", message)

    def forbidden(self, scope: Scope, why: str) -> bytes:
        message = (f"The service refused this form as another site's ({why}); nothing was saved. Open the form "
                   "from the service's own pages and send it again. If you reach the service through another "
                   "address (a proxy, another host name), its administrator should set VSANDX_PUBLIC_URL to "
                   "that address.")  # fmt: skip
        return render(scope, "Refused: not sent from this service", message)


def _plain(exc: RequestValidationError) -> str:
    """Validation errors in words: "bundle: Field required; page: …"."""
    parts = [f"{e['loc'][-1] if e.get('loc') else 'form'}: {e.get('msg', 'invalid')}" for e in exc.errors()]
    return "The form could not be used (" + "; ".join(parts[:5]) + "). Go back, fill it in again and send it."


async def _http_error(request: Request, exc: Exception) -> Response:
    if not isinstance(exc, HTTPException):  # registered for HTTPException alone (no assert in a request path)
        raise exc
    if not wants_html(request.url.path, request.headers.get("accept", "")):
        return await http_exception_handler(request, exc)
    title = HTTPStatus(exc.status_code).phrase if exc.status_code in HTTPStatus._value2member_map_ else "Error"
    detail = (exc.detail if isinstance(exc.detail, str) else title).rstrip(".")
    message = f"The form could not be read: {detail}." if exc.status_code == 400 else f"{detail}."
    page = render(request.scope, title, message)
    return HTMLResponse(page, exc.status_code, headers=exc.headers)


async def _invalid(request: Request, exc: Exception) -> Response:
    if not isinstance(exc, RequestValidationError):  # registered for RequestValidationError alone
        raise exc
    if not wants_html(request.url.path, request.headers.get("accept", "")):
        return await request_validation_exception_handler(request, exc)
    return HTMLResponse(render(request.scope, "The form could not be used", _plain(exc)), 422)


def install(app: FastAPI) -> None:
    """HTML for a browser's refused page or form, the default JSON handlers for everything else."""
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _invalid)
