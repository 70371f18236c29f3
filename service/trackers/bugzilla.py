"""Bugzilla: the webhook (Bugzilla 5.2 / Harmony / BMO payload), and the REST calls that re-read the
bug, fetch its bundle attachments and comment back.

The webhook payload is only a trigger: everything acted upon (product, component, keywords, reporter,
attachments) is re-read over the REST API with the API key, so a forged or stale payload cannot steer
the work beyond naming a bug id.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from types import TracebackType
from typing import Any, BinaryIO

import httpx

from service.trackers import wording
from service.trackers.attachments import NotTheAnswer, capped_chunks, json_b64_field, reader
from service.trackers.base import (
    BadPayload,
    Delivery,
    TooLarge,
    TrackerHTTPError,
    TrackerSettings,
    Unauthorized,
    client,
    delivery_key,
    header,
    is_bundle,
    parse_time,
    request,
    size_words,
    too_big,
)

BUG_FIELDS = "id,product,component,summary,keywords,creator,creator_detail,status,last_change_time"
ATTACHMENT_FIELDS = "id,file_name,content_type,size,is_obsolete,summary"
WATCHED_FIELDS = frozenset({"product", "component", "keywords"})  # a "modify" worth a new look


@dataclass(frozen=True)
class BugEvent:
    bug_id: int
    action: str  # create | modify | attachment | comment
    target: str  # bug | attachment | comment
    routing_key: str  # e.g. bug.create, attachment.create
    change_set: str
    time: datetime
    user: str | None
    webhook: str
    changed: frozenset[str] = frozenset()  # fields a modify touched

    @property
    def delivery(self) -> Delivery:
        return Delivery("bugzilla", delivery_key("bugzilla", self.bug_id, self.time.isoformat(), self.change_set),
                        f"bugzilla:{self.bug_id}", self.time)  # fmt: skip


def authenticate(headers: Mapping[str, str], settings: TrackerSettings) -> None:
    """The configured secret in `bugzilla_secret_header`, compared in constant time."""
    if settings.bugzilla_webhook_secret is None:
        raise Unauthorized("VSANDX_BUGZILLA_WEBHOOK_SECRET is not set: Bugzilla webhooks are refused")
    got = header(headers, settings.bugzilla_secret_header)
    if got is None:
        raise Unauthorized(f"missing {settings.bugzilla_secret_header} header")
    want = settings.bugzilla_webhook_secret.get_secret_value()
    if not hmac.compare_digest(got.strip().encode(), want.encode()):
        raise Unauthorized(f"wrong secret in {settings.bugzilla_secret_header}")


def parse_event(body: bytes) -> BugEvent:
    try:
        data = json.loads(body)
        event, bug = data["event"], data["bug"]
        bug_id = int(bug["id"])
        action = str(event.get("action") or "")
        target = str(event.get("target") or "bug")
        user = event.get("user")
    except (ValueError, KeyError, TypeError) as e:
        raise BadPayload(f"not a Bugzilla webhook payload: {type(e).__name__}: {e}") from e
    if bug_id <= 0 or not action:
        raise BadPayload("Bugzilla webhook payload without a bug id or an event action")
    changes = event.get("changes") or []
    changed = frozenset(str(c.get("field")) for c in changes if isinstance(c, Mapping))
    return BugEvent(
        bug_id, action, target, str(event.get("routing_key") or f"{target}.{action}"),
        str(event.get("change_set") or ""), parse_time(event.get("time")),
        str(user.get("login")) if isinstance(user, Mapping) and user.get("login") else None,
        str(data.get("webhook_name") or ""), changed,
    )  # fmt: skip


def receive(body: bytes, headers: Mapping[str, str], settings: TrackerSettings) -> BugEvent:
    """The webhook route's whole job before queuing: authenticate, then parse."""
    authenticate(headers, settings)
    return parse_event(body)


def wanted(event: BugEvent, settings: TrackerSettings) -> bool:
    """Whether the event may bring a new bundle or make the bug relevant (else it is acknowledged and
    dropped): a new bug, a new attachment, or a change to product / component / keywords."""
    if event.action not in settings.bugzilla_actions:
        return False
    return event.action != "modify" or bool(event.changed & WATCHED_FIELDS) or not event.changed


@dataclass(frozen=True)
class Bug:
    id: int
    product: str
    component: str
    summary: str
    keywords: tuple[str, ...]
    reporter: str | None  # the creator's email, when Bugzilla shows it
    status: str
    last_change_time: datetime | None


@dataclass(frozen=True)
class Attachment:
    id: int
    file_name: str
    content_type: str
    size: int | None
    is_obsolete: bool
    summary: str = ""


def is_relevant(bug: Bug, settings: TrackerSettings) -> tuple[bool, str]:
    """(relevant, why) by the configured product / component / keywords (TrackerSettings)."""
    low = {k.lower() for k in bug.keywords}
    products = {p.lower() for p in settings.bugzilla_products}
    if products and bug.product.lower() not in products:
        return False, f"product {bug.product!r} is not one of {settings.bugzilla_products}"
    comps = {c.lower() for c in settings.bugzilla_components}
    kws = {k.lower() for k in settings.bugzilla_keywords}
    if not comps and not kws:
        return True, f"product {bug.product!r}"
    if bug.component.lower() in comps:
        return True, f"product {bug.product!r}, component {bug.component!r}"
    if low & kws:
        return True, f"product {bug.product!r}, keywords {sorted(low & kws)}"
    return False, f"component {bug.component!r} and keywords {sorted(bug.keywords)} are not watched"


@dataclass
class Picked:
    bundles: list[Attachment] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # why each bundle-like attachment is not taken


def pick_bundles(attachments: list[Attachment], settings: TrackerSettings) -> Picked:
    """The bundle attachments to download, newest first, refusing from metadata alone those over the
    size limit (or of unknown size) before anything is downloaded."""
    out = Picked()
    limit = settings.tracker_max_attachment_bytes
    for a in sorted(attachments, key=lambda a: -a.id):
        if a.is_obsolete or not is_bundle(a.file_name, a.content_type):
            continue
        if a.size is None or a.size > limit:
            out.refused.append(wording.over_size("bugzilla", a.file_name, a.size, limit))
        elif len(out.bundles) >= settings.tracker_max_attachments:
            out.refused.append(wording.too_many("bugzilla", a.file_name, settings.tracker_max_attachments))
        else:
            out.bundles.append(a)
    return out


class BugzillaClient:
    """Bugzilla's REST API with the API key in X-BUGZILLA-API-KEY (kept out of URLs and logs)."""

    def __init__(self, settings: TrackerSettings, transport: httpx.BaseTransport | None = None) -> None:
        if not settings.bugzilla_url:
            raise TrackerHTTPError("VSANDX_BUGZILLA_URL is not set", transient=False)
        key = settings.bugzilla_api_key.get_secret_value() if settings.bugzilla_api_key else ""
        self.settings = settings
        self.http = client(settings.tracker_timeout_s, settings.bugzilla_url.rstrip("/") + "/rest",
                           {"X-BUGZILLA-API-KEY": key, "Accept": "application/json"}, transport)  # fmt: skip

    def __enter__(self) -> BugzillaClient:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.http.close()

    def _json(self, r: httpx.Response, what: str) -> Any:
        try:
            return r.json()
        except ValueError as e:
            raise TrackerHTTPError(f"{what}: answer is not JSON", transient=False) from e

    def get_bug(self, bug_id: int) -> Bug:
        what = f"Bugzilla GET bug {bug_id}"
        data = self._json(request(self.http, "GET", f"/bug/{bug_id}", what,
                                  params={"include_fields": BUG_FIELDS}), what)  # fmt: skip
        try:
            b = data["bugs"][0]
            detail = b.get("creator_detail") or {}
            creator = detail.get("email") or (b.get("creator") if "@" in str(b.get("creator")) else None)
            changed = b.get("last_change_time")
            return Bug(int(b["id"]), str(b.get("product", "")), str(b.get("component", "")),
                       str(b.get("summary", "")), tuple(map(str, b.get("keywords") or [])),
                       str(creator) if creator else None, str(b.get("status", "")),
                       parse_time(changed) if changed else None)  # fmt: skip
        except (KeyError, IndexError, TypeError, ValueError) as e:
            raise TrackerHTTPError(f"{what}: unexpected answer ({type(e).__name__}: {e})", transient=False) from e

    def attachments(self, bug_id: int) -> list[Attachment]:
        """Metadata only: `include_fields` leaves the data out."""
        what = f"Bugzilla GET attachments of bug {bug_id}"
        data = self._json(request(self.http, "GET", f"/bug/{bug_id}/attachment", what,
                                  params={"include_fields": ATTACHMENT_FIELDS}), what)  # fmt: skip
        try:
            rows = data["bugs"].get(str(bug_id)) or []
            return [Attachment(int(a["id"]), str(a.get("file_name", "")), str(a.get("content_type", "")),
                               int(a["size"]) if a.get("size") is not None else None, bool(a.get("is_obsolete")),
                               str(a.get("summary", ""))) for a in rows]  # fmt: skip
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise TrackerHTTPError(f"{what}: unexpected answer ({type(e).__name__}: {e})", transient=False) from e

    @contextmanager
    def open(self, a: Attachment) -> Iterator[BinaryIO]:
        """The attachment's bytes as a stream, decoded from the answer's base64 `data` as it arrives:
        refused before any transfer when its recorded size is over the limit, cut off (the connection
        dropped) as soon as the answer or its data grows past what that size allows. Reading raises
        TooLarge / TrackerHTTPError naming the attachment."""
        limit = self.settings.tracker_max_attachment_bytes
        if a.size is None or a.size > limit:
            raise TooLarge(f"Bugzilla attachment {a.id} ({a.file_name}): size {a.size} over the {limit} byte limit",
                           too_big(a.size, limit), over_limit=True)  # fmt: skip
        what, size = f"Bugzilla GET attachment {a.id} ({a.file_name})", a.size
        cap = size * 4 // 3 + 65536  # base64 and the JSON around it
        grew = f"Bugzilla sent more than the {size_words(size)} its record of the attachment gives"
        with capped_chunks(self.http, f"/bug/attachment/{a.id}", cap, what, f"{what}: answer over {cap} bytes",
                           grew, params={"include_fields": "id,data"}) as chunks:  # fmt: skip

            def data() -> Iterator[bytes]:
                got = 0
                try:
                    for piece in json_b64_field(chunks, ("attachments", str(a.id), "data")):
                        got += len(piece)
                        if got > size:
                            raise TrackerHTTPError(f"{what}: more than {size} bytes where the metadata said {size}",
                                                   False, grew)  # fmt: skip
                        yield piece
                except NotTheAnswer as e:
                    raise TrackerHTTPError(f"{what}: unexpected answer ({e})", False,
                                           "Bugzilla's answer could not be read") from e  # fmt: skip
                if got != size:
                    raise TrackerHTTPError(f"{what}: {got} bytes where the metadata said {size}", False,
                                           f"Bugzilla sent {size_words(got)} where its record gives "
                                           f"{size_words(size)}")  # fmt: skip

            yield reader(data())

    def comment(self, bug_id: int, text: str) -> int:
        """Post a comment as plain text (`is_markdown` off: Bugzilla 5.2 and BMO render Markdown only when
        asked, older versions ignore the field), so bundle names in it stay text; returns its id."""
        what = f"Bugzilla POST comment on bug {bug_id}"
        body = {"comment": text, "is_markdown": False}
        data = self._json(request(self.http, "POST", f"/bug/{bug_id}/comment", what, json=body), what)
        try:
            return int(data["id"])
        except (KeyError, TypeError, ValueError) as e:
            raise TrackerHTTPError(f"{what}: unexpected answer ({type(e).__name__}: {e})", transient=False) from e
