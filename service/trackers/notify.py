"""Emailed diagnosis reports: a multipart/alternative message (text, and HTML with the key chart inline
as a `cid:` PNG), sent over SMTP to the bug's reporter and the team.

Safety: every address passes `parse_address` (no control characters, one plain addr_spec), headers are
set through the email package's header registry (which refuses CR/LF in any header value), and the
SMTP envelope is built from the validated addresses, never from header text. A tracker's data can
therefore neither add a header nor a recipient.

Idempotency: the Message-ID is derived from (diagnosis id, recipients, purpose); `send_report` asks a
`SentLog` whether that id went out already and records it after the server accepted it, so a retried
task does not send twice. (A crash between the server's acceptance and the record can still repeat one
message: SMTP offers no transaction spanning both.)
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import re
import smtplib
import ssl
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.headerregistry import Address
from email.message import EmailMessage
from email.utils import format_datetime, getaddresses
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Protocol
from urllib.parse import quote

from pydantic import SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from diagnosis.digest import clean, headline, html_report, text_report

if TYPE_CHECKING:
    from pipeline.tensors import BundleTensors

log = logging.getLogger(__name__)


class NotifySettings(BaseSettings):
    """SMTP and report settings; env VSANDX_*. No `smtp_host`: reports are not emailed."""

    model_config = SettingsConfigDict(env_prefix="VSANDX_", env_file=".env", extra="ignore")

    smtp_host: str | None = None
    smtp_port: int = 587
    # STARTTLS required (the send fails if the server does not offer it); the certificate is verified
    # against the system CA store, or against `smtp_ca_file` alone when that is set.
    smtp_starttls: bool = True
    smtp_ssl: bool = False  # implicit TLS (port 465) instead of STARTTLS
    smtp_ca_file: Path | None = None
    smtp_user: str | None = None
    smtp_password: SecretStr | None = None
    smtp_allow_plain_auth: bool = False  # log in over an unencrypted connection (development only)
    smtp_timeout_s: float = 30.0  # per socket operation: connect, each command, the data transfer
    mail_from: str = "vsandx@localhost"
    team_emails: Annotated[list[str], NoDecode] = []  # env: comma-separated
    public_url: str = "http://127.0.0.1:8000"  # where engineers reach the web UI

    @field_validator("team_emails", mode="before")
    @classmethod
    def _split(cls, v: object) -> object:
        return [x.strip() for x in re.split(r"[,;]", v) if x.strip()] if isinstance(v, str) else v


class InvalidAddress(ValueError):
    """An email address that is malformed or carries anything beyond one plain address."""


class MailError(RuntimeError):
    """Sending failed; `transient` says whether a later retry may succeed."""

    def __init__(self, message: str, transient: bool) -> None:
        super().__init__(message)
        self.transient = transient


class SentLog(Protocol):
    """Which messages went out (keyed by Message-ID); the service backs it with a table."""

    def was_sent(self, key: str) -> bool: ...

    def mark_sent(self, key: str) -> None: ...


class MemorySentLog:
    """A process-local SentLog (tests, one-shot CLI use)."""

    def __init__(self) -> None:
        self._keys: set[str] = set()
        self._lock = threading.Lock()

    def was_sent(self, key: str) -> bool:
        with self._lock:
            return key in self._keys

    def mark_sent(self, key: str) -> None:
        with self._lock:
            self._keys.add(key)


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# A conservative addr_spec: dot-atom local part, LDH domain labels. Quoted local parts and IP-literal
# domains are refused on purpose: no tracker reporter needs them and they widen what a header holds.
_ADDR = re.compile(
    r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
    r"@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)*[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
)


def parse_address(raw: str) -> Address:
    """`a@b.c` or `Name <a@b.c>` as an Address; raises InvalidAddress for anything else."""
    if _CONTROL.search(raw):
        raise InvalidAddress(f"address {raw!r} contains control characters")
    parsed = getaddresses([raw.strip()])
    if len(parsed) != 1 or not _ADDR.fullmatch(parsed[0][1]) or len(parsed[0][1]) > 254:
        raise InvalidAddress(f"{raw!r} is not one plain email address")
    name, spec = parsed[0]
    local, domain = spec.rsplit("@", 1)
    return Address(display_name=name[:100], username=local, domain=domain)


def recipients(reporter: str | None, team: Iterable[str]) -> tuple[list[Address], list[str]]:
    """(the valid, de-duplicated recipients, reporter first; why each other one was refused)."""
    out: dict[str, Address] = {}
    refused: list[str] = []
    for raw in [reporter] if reporter else []:
        try:
            a = parse_address(raw)
        except InvalidAddress as e:
            refused.append(f"reporter: {e}")
            continue
        out.setdefault(a.addr_spec.lower(), a)
    for raw in team:
        try:
            a = parse_address(raw)
        except InvalidAddress as e:
            refused.append(f"team: {e}")
            continue
        out.setdefault(a.addr_spec.lower(), a)
    return list(out.values()), refused


def message_id(diagnosis_id: str, to: Sequence[Address], purpose: str, domain: str) -> str:
    """Deterministic: the same report to the same people for the same reason has the same id."""
    who = ",".join(sorted({a.addr_spec.lower() for a in to}))
    digest = hashlib.sha256(f"{diagnosis_id}\0{who}\0{purpose}".encode()).hexdigest()[:40]
    return f"<vsandx.{digest}@{domain}>"


def diagnosis_url(public_url: str, diagnosis_id: str) -> str:
    """The diagnosis page of the web UI (service.api.ui's /diagnoses/{job_id})."""
    return f"{public_url.rstrip('/')}/diagnoses/{quote(diagnosis_id, safe='')}"


def one_line(text: str, limit: int = 160) -> str:
    """Tracker text fit for a header: control characters (CR/LF included) become spaces."""
    flat = " ".join(_CONTROL.sub(" ", text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def build_report(
    doc: Mapping[str, Any], *, diagnosis_id: str, sender: Address, to: Sequence[Address], url: str | None,
    chart_png: bytes | None = None, chart_title: str = "", context: str | None = None,
    purpose: str = "diagnosis", now: datetime | None = None,
) -> EmailMessage:  # fmt: skip
    """The message: multipart/alternative [text/plain, multipart/related [text/html, image/png]].
    `context` (e.g. "Bug 123: summary", tracker data) goes into the subject as one sanitised line."""
    if not to:
        raise ValueError("a report needs at least one recipient")
    digest = hashlib.sha256(diagnosis_id.encode()).hexdigest()[:16]
    cid = f"chart.{digest}@vsandx" if chart_png else None
    note = "The key chart is attached inline (HTML view)." if chart_png else None
    msg = EmailMessage()
    msg["Subject"] = one_line(f"[vsandx] {f'{context} — ' if context else ''}{headline(doc)}", 200)
    msg["From"] = sender
    msg["To"] = list(to)
    msg["Date"] = format_datetime(now or datetime.now(UTC))
    msg["Message-ID"] = message_id(diagnosis_id, to, purpose, sender.domain)
    msg["Auto-Submitted"] = "auto-generated"  # RFC 3834: no vacation replies to the service
    msg["X-Vsandx-Diagnosis"] = one_line(diagnosis_id, 100)
    msg.set_content(text_report(doc, url, note))
    msg.add_alternative(html_report(doc, url, cid, chart_title), subtype="html")
    if chart_png and cid:
        html_part = list(msg.iter_parts())[1]
        html_part.add_related(chart_png, "image", "png", cid=f"<{cid}>", filename="chart.png",
                              disposition="inline")  # fmt: skip
    return msg


def _tls_context(s: NotifySettings) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(s.smtp_ca_file) if s.smtp_ca_file else None)


def _open(s: NotifySettings) -> smtplib.SMTP:
    host, port, t = s.smtp_host or "", s.smtp_port, s.smtp_timeout_s
    if s.smtp_ssl:
        smtp: smtplib.SMTP = smtplib.SMTP_SSL(host, port, timeout=t, context=_tls_context(s))
    else:
        smtp = smtplib.SMTP(host, port, timeout=t)
    try:
        _secure_and_login(smtp, s)
    except BaseException:
        smtp.close()
        raise
    return smtp


def _secure_and_login(smtp: smtplib.SMTP, s: NotifySettings) -> None:
    host, port = s.smtp_host, s.smtp_port
    if not s.smtp_ssl and s.smtp_starttls:
        smtp.ehlo()
        if not smtp.has_extn("starttls"):
            raise MailError(f"SMTP server {host}:{port} does not offer STARTTLS and VSANDX_SMTP_STARTTLS "
                            "is on: not sending in clear text", transient=False)  # fmt: skip
        smtp.starttls(context=_tls_context(s))
        smtp.ehlo()
    if s.smtp_user:
        if not (s.smtp_ssl or s.smtp_starttls or s.smtp_allow_plain_auth):
            raise MailError(f"refusing to send the SMTP password to {host}:{port} without TLS "
                            "(VSANDX_SMTP_ALLOW_PLAIN_AUTH to allow)", transient=False)  # fmt: skip
        smtp.login(s.smtp_user, s.smtp_password.get_secret_value() if s.smtp_password else "")


def deliver(msg: EmailMessage, s: NotifySettings) -> dict[str, tuple[int, bytes]]:
    """Hand one built message to the SMTP server; the envelope comes from its From/To Address objects.
    Returns the recipients the server refused (the others got it); raises MailError."""
    if not s.smtp_host:
        raise MailError("VSANDX_SMTP_HOST is not set: email is disabled", transient=False)
    sender = msg["From"].addresses[0].addr_spec
    rcpts = [a.addr_spec for a in msg["To"].addresses]
    where = f"{s.smtp_host}:{s.smtp_port}"
    try:
        smtp = _open(s)
        try:
            return smtp.send_message(msg, from_addr=sender, to_addrs=rcpts)
        finally:
            with contextlib.suppress(smtplib.SMTPException, OSError):
                smtp.quit()
    except MailError:
        raise
    except ssl.SSLCertVerificationError as e:
        raise MailError(f"SMTP server {where}: certificate not trusted ({e.verify_message})", False) from e
    except smtplib.SMTPRecipientsRefused as e:
        raise MailError(f"SMTP server {where} refused every recipient: {sorted(e.recipients)}", False) from e
    except smtplib.SMTPResponseException as e:
        transient = 400 <= e.smtp_code < 500
        raise MailError(f"SMTP server {where} answered {e.smtp_code} {e.smtp_error!r}", transient) from e
    except (smtplib.SMTPException, OSError) as e:
        raise MailError(f"SMTP server {where}: {type(e).__name__}: {e}", transient=True) from e


@dataclass
class SendResult:
    message_id: str
    sent: bool  # False: it had gone out before (or nobody to send to)
    to: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # invalid addresses and server refusals


def send_report(
    doc: Mapping[str, Any], *, diagnosis_id: str, reporter: str | None, settings: NotifySettings,
    sent_log: SentLog, chart_png: bytes | None = None, chart_title: str = "", context: str | None = None,
    purpose: str = "diagnosis",
) -> SendResult:  # fmt: skip
    """Build and send the report once per (diagnosis, recipients, purpose). Raises MailError."""
    try:
        sender = parse_address(settings.mail_from)
    except InvalidAddress as e:
        raise MailError(f"VSANDX_MAIL_FROM: {e}", transient=False) from e
    to, refused = recipients(reporter, settings.team_emails)
    for r in refused:
        log.warning("report %s: %s", diagnosis_id, r)
    if not to:
        return SendResult("", False, [], refused)
    url = diagnosis_url(settings.public_url, diagnosis_id)
    msg = build_report(doc, diagnosis_id=diagnosis_id, sender=sender, to=to, url=url, chart_png=chart_png,
                       chart_title=chart_title, context=context, purpose=purpose)  # fmt: skip
    mid = str(msg["Message-ID"])
    addrs = [a.addr_spec for a in to]
    if sent_log.was_sent(mid):
        log.info("report %s to %s already sent as %s", diagnosis_id, addrs, mid)
        return SendResult(mid, False, addrs, refused)
    bounced = deliver(msg, settings)
    sent_log.mark_sent(mid)
    refused += [f"server refused {r}: {code} {text!r}" for r, (code, text) in bounced.items()]
    return SendResult(mid, True, [a for a in addrs if a not in bounced], refused)


def key_chart_png(bundle: BundleTensors, doc: Mapping[str, Any]) -> tuple[bytes, str] | None:
    """(PNG, title) of the first finding's chart, drawn from the parsed bundle (pipeline BundleTensors);
    None when there is no finding or no data."""
    from diagnosis.chart_render import chart_png
    from diagnosis.charts import charts_for

    charts = charts_for(bundle, dict(doc))
    if not charts:
        return None
    return chart_png(charts[0]), clean(charts[0].title)
