"""What the Bugzilla and GitHub integrations share: settings, errors, which attachments are bundles,
REST calls, and delivery idempotency / staleness (size-capped downloads: service.trackers.attachments).

Nothing here knows about the web framework: webhook handlers take the raw body and a headers mapping
and return plain values or raise a `TrackerError` subclass (`Unauthorized` -> 401, `BadPayload` -> 400).

Deliveries: each one has a key (Bugzilla: bug id + event time + change set; GitHub: X-GitHub-Delivery,
which a redelivery keeps, and the signed body's digest, since the signature does not cover that header)
and a subject (the bug or issue). `admit` refuses a key seen before (a replay) and an event older than
`tracker_stale_after_s` or older than the newest event admitted for the same subject (a late,
out-of-order delivery), then records it in a `DeliveryLedger`.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import Enum
from http import HTTPStatus
from typing import Annotated, Final, Protocol

import httpx
from pydantic import SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

Names = Annotated[list[str], NoDecode]  # env: comma-separated


class TrackerSettings(BaseSettings):
    """Bug tracker integration; env VSANDX_*. A tracker whose URL / secret is unset is off."""

    model_config = SettingsConfigDict(env_prefix="VSANDX_", env_file=".env", extra="ignore")

    bugzilla_url: str | None = None  # e.g. https://bugzilla.example.com (REST under /rest)
    bugzilla_api_key: SecretStr | None = None
    bugzilla_webhook_secret: SecretStr | None = None
    # Bugzilla's webhook form lets the admin add one header with a value (API key header / value):
    # the secret travels there. Never in the URL, where proxies and access logs keep it.
    bugzilla_secret_header: str = "X-Vsandx-Webhook-Secret"
    # Relevance: product in the list (empty: any) and (component in the list or a keyword in the
    # list; both empty: any). Case-insensitive.
    bugzilla_products: Names = ["vSAN"]
    bugzilla_components: Names = ["Performance"]
    bugzilla_keywords: Names = ["vsan-perf", "performance"]
    bugzilla_actions: Names = ["create", "attachment", "modify"]

    github_api_url: str = "https://api.github.com"
    github_token: SecretStr | None = None
    github_webhook_secret: SecretStr | None = None
    github_labels: Names = ["vsan-performance"]
    github_title_keywords: Names = ["vsan perf", "vsan latency", "vsan performance"]
    # Links in an issue body are only followed to these hosts (and redirects only to them).
    github_download_hosts: Names = [
        "github.com",
        "objects.githubusercontent.com",
        "user-images.githubusercontent.com",
        "private-user-images.githubusercontent.com",
    ]

    tracker_max_attachment_bytes: int = 512 * 1024 * 1024  # VSANDX_MAX_UPLOAD_BYTES' default
    tracker_max_attachments: int = 5  # bundles taken from one bug / issue
    tracker_timeout_s: float = 30.0  # connect / read / write / pool, each
    tracker_stale_after_s: float = 7 * 86400.0

    @field_validator("bugzilla_products", "bugzilla_components", "bugzilla_keywords", "bugzilla_actions",
                     "github_labels", "github_title_keywords", "github_download_hosts", mode="before")  # fmt: skip
    @classmethod
    def _split(cls, v: object) -> object:
        return [x.strip() for x in v.split(",") if x.strip()] if isinstance(v, str) else v


class TrackerError(Exception):
    """Base of this module's errors. `plain`: the reason in words for the people on the bug or issue
    (no URL, header or byte dump: those stay in the message, for the log); empty when there is none."""

    def __init__(self, message: str, plain: str = "") -> None:
        super().__init__(message)
        self.plain = plain


class Unauthorized(TrackerError):
    """Missing or wrong webhook secret / signature."""


class BadPayload(TrackerError):
    """The webhook body is not the payload expected."""


class TrackerHTTPError(TrackerError):
    """A tracker's REST API failed; `transient` says whether a retry may succeed."""

    def __init__(self, message: str, transient: bool, plain: str = "", status: int | None = None) -> None:
        super().__init__(message, plain)
        self.transient, self.status = transient, status


class TooLarge(TrackerError):
    """An attachment is over tracker_max_attachment_bytes (`over_limit`: known before the download), or
    its download grew past the size announced."""

    def __init__(self, message: str, plain: str = "", over_limit: bool = False) -> None:
        super().__init__(message, plain)
        self.over_limit = over_limit


BUNDLE_SUFFIXES: Final = (".tgz", ".tar.gz", ".tar", ".zip")
ARCHIVE_TYPES: Final = frozenset({"application/gzip", "application/x-gzip", "application/x-compressed-tar",
                                  "application/x-tar", "application/zip", "application/x-zip-compressed",
                                  "application/x-gtar"})  # fmt: skip


def is_bundle(file_name: str, content_type: str | None) -> bool:
    """A support bundle by name (.tgz/.tar.gz/.tar/.zip) or by an archive content type; the pipeline
    sniffs the content itself, this only decides what is worth downloading."""
    ctype = (content_type or "").split(";", 1)[0].strip().lower()
    return file_name.lower().endswith(BUNDLE_SUFFIXES) or ctype in ARCHIVE_TYPES


def header(headers: Mapping[str, str], name: str) -> str | None:
    """A header's value, whatever the case of the mapping's keys."""
    want = name.lower()
    for k, v in headers.items():
        if k.lower() == want:
            return v
    return None


def client(timeout_s: float, base_url: str = "", headers: Mapping[str, str] | None = None,
           transport: httpx.BaseTransport | None = None, **kw: object) -> httpx.Client:  # fmt: skip
    return httpx.Client(base_url=base_url, headers=dict(headers or {}), timeout=httpx.Timeout(timeout_s),
                        transport=transport, **kw)  # type: ignore[arg-type]  # fmt: skip


def request(http: httpx.Client, method: str, url: str, what: str, **kw: object) -> httpx.Response:
    """One REST call; transport failures and unsuccessful answers become TrackerHTTPError."""
    try:
        r = http.request(method, url, **kw)  # type: ignore[arg-type]
    except httpx.HTTPError as e:
        raise TrackerHTTPError(f"{what}: {type(e).__name__}: {e}", transient=True) from e
    check(r, what)
    return r


def check(r: httpx.Response, what: str) -> None:
    """Raise TrackerHTTPError naming the call for an unsuccessful answer."""
    if r.is_success:
        return
    try:
        text = r.read()[:300].decode("utf-8", "replace")
    except (httpx.HTTPError, httpx.StreamError):
        text = ""
    transient = r.status_code in (408, 425, 429) or r.status_code >= 500
    raise TrackerHTTPError(f"{what}: HTTP {r.status_code} {text!r}", transient,
                           f"the server answered {status_words(r.status_code)}", r.status_code)  # fmt: skip


def status_words(code: int) -> str:
    """`404 Not Found`: an HTTP status with its reason phrase."""
    try:
        return f"{code} {HTTPStatus(code).phrase}"
    except ValueError:
        return f"HTTP status {code}"


def too_big(size: int | None, limit: int) -> str:
    """Why a file of `size` bytes (None: not said) is not downloaded, in words."""
    if size is None:
        return "the server does not say how large it is, and vsandx downloads only files of a known size"
    return f"it is {size_words(size)}, over the {size_words(limit)} limit (VSANDX_TRACKER_MAX_ATTACHMENT_BYTES)"


def size_words(n: int) -> str:
    """A byte count for people: 512 MiB, 1.5 GiB, 300 KiB, 12 bytes."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f}".removesuffix(".0") + f" {unit}"
    return f"{n} bytes"


def parse_time(value: object) -> datetime:
    """ISO 8601 (with Z, an offset, or none: UTC) -> an aware UTC datetime."""
    if not isinstance(value, str) or not value:
        raise BadPayload(f"event time {value!r} is not an ISO 8601 timestamp")
    try:
        t = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as e:
        raise BadPayload(f"event time {value!r} is not an ISO 8601 timestamp") from e
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)


@dataclass(frozen=True)
class Delivery:
    source: str  # bugzilla | github
    key: str  # idempotency key, at most 80 characters
    subject: str  # the bug or issue: bugzilla:<id>, github:<owner>/<repo>#<n>
    time: datetime  # when the event happened (tracker's clock), UTC
    # further keys naming the same event (GitHub: the signed body's digest, since the delivery id is not
    # signed): a delivery is a replay when any of its keys was admitted before, and claims them all
    also: tuple[str, ...] = ()

    @property
    def keys(self) -> tuple[str, ...]:
        return (self.key, *self.also)


def delivery_key(source: str, *parts: object) -> str:
    return f"{source}:" + hashlib.sha256("\0".join(map(str, parts)).encode()).hexdigest()[:64]


class DeliveryLedger(Protocol):
    """Deliveries admitted so far; the service backs it with a table (key unique, subject indexed)."""

    def seen(self, key: str) -> bool: ...

    def newest(self, subject: str) -> datetime | None: ...

    def claim(self, delivery: Delivery) -> bool:
        """Record every one of its keys at once; False (nothing recorded) when one of them was recorded
        already (a concurrent duplicate)."""
        ...

    def forget(self, key: str) -> None:
        """Undo a claim whose work could not be queued, so the tracker's retry is admitted."""
        ...


class MemoryLedger:
    """A process-local DeliveryLedger (tests, embedded single-process use)."""

    def __init__(self) -> None:
        self._keys: dict[str, Delivery] = {}
        self._lock = threading.Lock()

    def seen(self, key: str) -> bool:
        with self._lock:
            return key in self._keys

    def newest(self, subject: str) -> datetime | None:
        with self._lock:
            times = [d.time for d in self._keys.values() if d.subject == subject]
        return max(times) if times else None

    def claim(self, delivery: Delivery) -> bool:
        with self._lock:
            if any(k in self._keys for k in delivery.keys):
                return False
            self._keys.update(dict.fromkeys(delivery.keys, delivery))
            return True

    def forget(self, key: str) -> None:
        with self._lock:
            self._keys.pop(key, None)


class Admission(Enum):
    ACCEPT = "accept"
    REPLAY = "replay"  # this delivery was admitted before
    STALE = "stale"  # too old, or older than an event already admitted for the same bug / issue


def is_stale(event_time: datetime, now: datetime, max_age_s: float, newest: datetime | None) -> bool:
    """Older than max_age_s, or strictly older than the newest admitted event of its subject (events of
    the same second are distinct changes and both count)."""
    return now - event_time > timedelta(seconds=max_age_s) or (newest is not None and event_time < newest)


def admit(d: Delivery, ledger: DeliveryLedger, max_age_s: float, now: datetime | None = None) -> Admission:
    """Decide and, when accepted, record the delivery. Only an accepted delivery may start work."""
    if any(ledger.seen(k) for k in d.keys):
        return Admission.REPLAY
    if is_stale(d.time, now or datetime.now(UTC), max_age_s, ledger.newest(d.subject)):
        return Admission.STALE
    return Admission.ACCEPT if ledger.claim(d) else Admission.REPLAY
