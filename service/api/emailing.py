"""Send a finished diagnosis's report by email, on an engineer's request: `POST
/api/v1/diagnoses/{id}/email` here, and the diagnosis page's form (service.api.ui), both through
`email_diagnosis`.

The report is the one a tracker's delivery sends (service.trackers.report_mail: each finding's chart,
the first VSANDX_MAIL_MAX_CHARTS inline, its onset in words, links to VSANDX_PUBLIC_URL), built from the
charts stored with the diagnosis: no request parses a bundle or runs matplotlib.

Sent synchronously, in the request's worker thread, with the SMTP timeout capped at SEND_TIMEOUT_S per
operation: the engineer learns there and then whether the server took it (and which address it
refused). Tracker reports go the other way, in the queued webhook job, because their delivery must
answer the tracker at once. Each (diagnosis, recipients) report goes out once: asking again answers
`sent: false` (the sent log, service.trackers.ledgers, keyed by the Message-ID), which also keeps the
route from being used to flood an inbox. At most MAX_RECIPIENTS addresses, each one plain address.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Final

from fastapi import APIRouter, Depends, HTTPException

from service.api.deps import DatabaseDep, Notify, Settings
from service.api.diagnoses import ERRORS, require_api_key
from service.schemas import API_PREFIX, EmailIn, EmailOut, ErrorOut
from service.store import chart_store, diagnosis_store
from service.store.db import Database
from service.store.tables import Base, SentMessage
from service.trackers.ledgers import SqlSentLog
from service.trackers.notify import MailError, NotifySettings, SendResult, chosen_recipients, send_to
from vsandx.settings import ServiceSettings

log = logging.getLogger(__name__)
router = APIRouter(prefix=API_PREFIX, tags=["diagnoses"])
SEND_TIMEOUT_S: Final = 15.0  # per SMTP operation, while a request waits
PURPOSE: Final = "on request"  # in the Message-ID: distinct from a tracker's report to the same people


class EmailRefused(Exception):
    """Why a report was not sent, with the HTTP status that says so."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def email_diagnosis(database: Database, settings: ServiceSettings, notify: NotifySettings, job_id: str,
                    to: Sequence[str]) -> SendResult:  # fmt: skip
    """Send diagnosis `job_id`'s report to `to`. Raises EmailRefused: 503 (email not configured), 404,
    409 (not finished), 422 (an address, or how many), 502 (the SMTP server failed or refused)."""
    if not notify.smtp_host:
        raise EmailRefused(503, "email is not configured on this service (VSANDX_SMTP_HOST is not set)")
    with database.session() as db:  # closed before the SMTP conversation
        res = diagnosis_store.get_diagnosis(db, job_id)
    if res is None:
        raise EmailRefused(404, f"no diagnosis {job_id}")
    if res.status != "done" or not res.diagnosis:
        raise EmailRefused(409, f"diagnosis {job_id} is {res.status}: only a finished diagnosis can be sent")
    try:
        addresses = chosen_recipients(to)
    except ValueError as e:  # InvalidAddress too
        raise EmailRefused(422, str(e)) from e
    doc = res.diagnosis
    key = chart_store.key_of(doc)
    charts = chart_store.report_charts(settings, key, notify.mail_max_charts) if key else []
    quick = notify.model_copy(update={"smtp_timeout_s": min(notify.smtp_timeout_s, SEND_TIMEOUT_S)})
    sent_log = SqlSentLog(database.session, Base.metadata.tables[SentMessage.__tablename__])
    try:
        out = send_to(doc, diagnosis_id=job_id, to=addresses, settings=quick, sent_log=sent_log, charts=charts,
                      context=f"bundle {res.filename}", purpose=PURPOSE)  # fmt: skip
    except MailError as e:
        raise EmailRefused(502, f"the report was not sent: {e}") from e
    log.info("diagnosis %s %s to %s as %s", job_id, "emailed" if out.sent else "was already emailed", out.to,
             out.message_id)  # fmt: skip
    return out


@router.post(
    "/diagnoses/{job_id}/email",
    response_model=EmailOut,
    dependencies=[Depends(require_api_key)],
    responses={401: ERRORS[401], 404: {"model": ErrorOut, "description": "no such diagnosis"},
               409: {"model": ErrorOut, "description": "the diagnosis is not done"},
               422: {"model": ErrorOut, "description": "an address is not one plain address, or more than 5"},
               502: {"model": ErrorOut, "description": "the SMTP server failed or refused every address"},
               503: {"model": ErrorOut, "description": "email is not configured (VSANDX_SMTP_HOST)"}},
)  # fmt: skip
def email_report(job_id: str, body: EmailIn, database: DatabaseDep, settings: Settings, notify: Notify) -> EmailOut:
    """Email a finished diagnosis's report (each finding with its chart and onset, links to the web
    UI) to up to 5 addresses. Sent before the answer; the same report to the same addresses goes out
    once (`sent: false` after that)."""
    try:
        out = email_diagnosis(database, settings, notify, job_id, body.to)
    except EmailRefused as e:
        raise HTTPException(e.code, str(e)) from e
    return EmailOut(message_id=out.message_id, sent=out.sent, to=out.to, refused=out.refused)
