"""Emailed diagnosis reports, sent over SMTP: to the bug's reporter and the team after a tracker's
delivery (`send_report`), or to the addresses an engineer gives (`send_to`: the API's and the diagnosis
page's "send by email"). The message itself (text, and HTML with each finding's chart inline as a
`cid:` PNG, up to a cap) is service.trackers.report_mail's.

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
import ipaddress
import logging
import re
import smtplib
import ssl
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from email.headerregistry import Address
from email.message import EmailMessage
from email.utils import getaddresses
from pathlib import Path
from typing import Annotated, Any, Final, Protocol
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

# the message is report_mail's; these names are re-exported for the callers of this module
from service.trackers.report_mail import ReportChart as ReportChart
from service.trackers.report_mail import build_report as build_report
from service.trackers.report_mail import diagnosis_url as diagnosis_url
from service.trackers.report_mail import key_chart_png as key_chart_png
from service.trackers.report_mail import message_id as message_id
from service.trackers.report_mail import one_line as one_line
from service.trackers.report_mail import report_charts as report_charts

log = logging.getLogger(__name__)
DEFAULT_PUBLIC_URL: Final = "http://127.0.0.1:8000"


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
    public_url: str = DEFAULT_PUBLIC_URL  # where engineers reach the web UI: every link in a report
    mail_max_charts: Annotated[int, Field(ge=0, le=12)] = 4  # charts inline in one report; the others are linked
    mail_max_chart_bytes: Annotated[int, Field(ge=0)] = 2 << 20  # and no more PNG than this in one report

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


MAX_RECIPIENTS: Final = 5  # addresses an engineer may send one report to (the API, the diagnosis page)


def chosen_recipients(raw: Sequence[str]) -> list[Address]:
    """The addresses an engineer typed, validated and de-duplicated; at most MAX_RECIPIENTS. Raises
    InvalidAddress (naming the first bad one) or ValueError (none, or too many)."""
    out: dict[str, Address] = {}
    for r in raw:
        a = parse_address(r)
        out.setdefault(a.addr_spec.lower(), a)
    if not out:
        raise ValueError("give at least one email address")
    if len(out) > MAX_RECIPIENTS:
        raise ValueError(f"at most {MAX_RECIPIENTS} addresses at once, not {len(out)}")
    return list(out.values())


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


def public_url_warning(s: NotifySettings) -> str | None:
    """Why the links of emailed reports would not reach anyone: SMTP is set but VSANDX_PUBLIC_URL is
    left at its default, or names this machine's loopback. None when all is well (or mail is off)."""
    if not s.smtp_host:
        return None
    host = (urlsplit(s.public_url).hostname or "").lower()
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if s.public_url.rstrip("/") != DEFAULT_PUBLIC_URL and not loopback:
        return None
    return (f"VSANDX_SMTP_HOST is set but VSANDX_PUBLIC_URL is {s.public_url!r}: the links in emailed reports "
            "point to this machine's loopback, where nobody who reads them can follow them; set "
            "VSANDX_PUBLIC_URL to the address engineers open the web UI at")  # fmt: skip


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
    sent_log: SentLog, charts: Sequence[ReportChart] = (), context: str | None = None,
    purpose: str = "diagnosis",
) -> SendResult:  # fmt: skip
    """The report to the reporter and the team, once per (diagnosis, recipients, purpose). Raises MailError."""
    to, refused = recipients(reporter, settings.team_emails)
    for r in refused:
        log.warning("report %s: %s", diagnosis_id, r)
    return send_to(doc, diagnosis_id=diagnosis_id, to=to, settings=settings, sent_log=sent_log, charts=charts,
                   context=context, purpose=purpose, refused=refused)  # fmt: skip


def send_to(
    doc: Mapping[str, Any], *, diagnosis_id: str, to: Sequence[Address], settings: NotifySettings,
    sent_log: SentLog, charts: Sequence[ReportChart] = (), context: str | None = None,
    purpose: str = "diagnosis", refused: Sequence[str] = (),
) -> SendResult:  # fmt: skip
    """Build and send the report to `to` (validated addresses) once per (diagnosis, recipients, purpose):
    a repeat finds its Message-ID in `sent_log` and sends nothing. Raises MailError."""
    try:
        sender = parse_address(settings.mail_from)
    except InvalidAddress as e:
        raise MailError(f"VSANDX_MAIL_FROM: {e}", transient=False) from e
    if not to:
        return SendResult("", False, [], list(refused))
    msg = build_report(doc, diagnosis_id=diagnosis_id, sender=sender, to=to,
                       url=diagnosis_url(settings.public_url, diagnosis_id), charts=charts, context=context,
                       purpose=purpose, max_inline=settings.mail_max_charts,
                       max_bytes=settings.mail_max_chart_bytes)  # fmt: skip
    mid = str(msg["Message-ID"])
    addrs = [a.addr_spec for a in to]
    if sent_log.was_sent(mid):
        log.info("report %s to %s already sent as %s", diagnosis_id, addrs, mid)
        return SendResult(mid, False, addrs, list(refused))
    bounced = deliver(msg, settings)
    sent_log.mark_sent(mid)
    out = list(refused) + [f"server refused {r}: {code} {text!r}" for r, (code, text) in bounced.items()]
    return SendResult(mid, True, [a for a in addrs if a not in bounced], out)
