"""GitHub issues: the webhook (`issues` events, X-Hub-Signature-256), bundle links in the issue body,
size-checked, streamed downloads, and the comment back.

Files attached to an issue are links in its body (github.com/user-attachments/files/…, or
github.com/<owner>/<repo>/files/…) that redirect to objects.githubusercontent.com. Only links to
`github_download_hosts` are followed, every redirect hop is held to the same list, and the API token
is sent to the API host alone, never to a download host.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from types import TracebackType
from typing import Any, BinaryIO
from urllib.parse import parse_qsl, unquote, urlsplit

import httpx

from service.trackers.attachments import capped_chunks, reader
from service.trackers.base import (
    BadPayload,
    Delivery,
    TooLarge,
    TrackerHTTPError,
    TrackerSettings,
    Unauthorized,
    client,
    header,
    is_bundle,
    parse_time,
    request,
    size_words,
    too_big,
)

ACTIONS = frozenset({"opened", "labeled", "reopened", "edited"})
FORM = "application/x-www-form-urlencoded"
ACCEPTED = f"application/json or {FORM} (GitHub's two content types)"
MAX_FORM_FIELDS = 16  # GitHub's form has one field; a body of thousands of empty fields is refused early
_REPO = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
_MD_LINK = re.compile(r"\[([^\]\r\n]{0,200})\]\((https?://[^\s)]+)\)")
_BARE = re.compile(r"https?://[^\s<>()\[\]\"']+")


def verify_signature(body: bytes, headers: Mapping[str, str], secret: str | None) -> None:
    """X-Hub-Signature-256 must be `sha256=` + HMAC-SHA256(secret, raw body), compared in constant time."""
    if not secret:
        raise Unauthorized("VSANDX_GITHUB_WEBHOOK_SECRET is not set: GitHub webhooks are refused")
    got = header(headers, "X-Hub-Signature-256")
    if not got:
        raise Unauthorized("missing X-Hub-Signature-256 header")
    want = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(got.strip().encode(), want.encode()):
        raise Unauthorized("X-Hub-Signature-256 does not match the body")


@dataclass(frozen=True)
class IssueEvent:
    delivery_id: str
    action: str
    repo: str  # owner/name
    number: int
    title: str
    body: str
    labels: tuple[str, ...]
    label: str | None  # the label a `labeled` event added
    user: str
    time: datetime  # the issue's updated_at
    url: str
    body_sha256: str = ""  # of the signed JSON payload (the same in a JSON and a form-encoded delivery)

    @property
    def delivery(self) -> Delivery:
        # GitHub keeps X-GitHub-Delivery on a redelivery, so it is a replay key. It is not signed, though:
        # the same signed body sent again under a new id is a replay too, so the body's digest is another.
        also = (f"github-body:{self.body_sha256}",) if self.body_sha256 else ()
        return Delivery("github", f"github:{self.delivery_id}"[:80], f"github:{self.repo}#{self.number}", self.time,
                        also)  # fmt: skip


def parse_event(body: bytes, headers: Mapping[str, str]) -> IssueEvent | None:
    """An `issues` event; None for any other event (ping included), which is acknowledged and dropped."""
    if (header(headers, "X-GitHub-Event") or "").strip() != "issues":
        return None
    delivery = (header(headers, "X-GitHub-Delivery") or "").strip()
    if not re.fullmatch(r"[A-Za-z0-9-]{1,64}", delivery):
        raise BadPayload("missing or malformed X-GitHub-Delivery header")
    try:
        data = json.loads(body)
        issue, repo = data["issue"], str(data["repository"]["full_name"])
        label = data.get("label")
        ev = IssueEvent(
            delivery, str(data["action"]), repo, int(issue["number"]), str(issue.get("title") or ""),
            str(issue.get("body") or ""), tuple(str(x["name"]) for x in issue.get("labels") or []),
            str(label["name"]) if isinstance(label, Mapping) else None, str((issue.get("user") or {}).get("login", "")),
            parse_time(issue.get("updated_at") or issue.get("created_at")), str(issue.get("html_url") or ""),
            hashlib.sha256(body).hexdigest(),
        )  # fmt: skip
    except (ValueError, KeyError, TypeError) as e:
        raise BadPayload(f"not a GitHub issues payload: {type(e).__name__}: {e}") from e
    if not _REPO.fullmatch(ev.repo) or ev.number <= 0:
        raise BadPayload(f"bad repository {ev.repo!r} or issue number {ev.number}")
    return ev


def content_type(headers: Mapping[str, str]) -> str:
    """The media type of the body, lower case, without parameters ("" when the header is missing)."""
    return (header(headers, "Content-Type") or "").split(";", 1)[0].strip().lower()


def payload_of(body: bytes, headers: Mapping[str, str]) -> bytes:
    """The JSON payload of a delivery in either of GitHub's content types: `application/json` (the body)
    or `application/x-www-form-urlencoded` (its one `payload` field, the form GitHub's settings page
    preselects). A missing Content-Type is read as JSON. BadPayload names any other type."""
    ctype = content_type(headers)
    if ctype in ("", "application/json") or (ctype.startswith("application/") and ctype.endswith("+json")):
        return body
    if ctype != FORM:
        raise BadPayload(f"content type {ctype!r} is not accepted: send {ACCEPTED}")
    try:  # percent-escapes are UTF-8; the raw body is ASCII, every other byte escaped
        fields = parse_qsl(body.decode("ascii"), keep_blank_values=True, max_num_fields=MAX_FORM_FIELDS,
                           encoding="utf-8", errors="strict")  # fmt: skip
    except (UnicodeDecodeError, ValueError) as e:
        raise BadPayload(f"content type {FORM!r}: the form cannot be read ({type(e).__name__}: {e})") from e
    payloads = [value for name, value in fields if name == "payload"]
    if len(payloads) != 1:
        raise BadPayload(f"content type {FORM!r}: expected one `payload` field, found {len(payloads)}")
    return payloads[0].encode()


def receive(body: bytes, headers: Mapping[str, str], settings: TrackerSettings) -> IssueEvent | None:
    """The webhook route's whole job before queuing: verify the signature over the body as sent, then
    take the JSON out of it (`payload_of`) and parse that."""
    return parse_event(verified_payload(body, headers, settings), headers)


def verified_payload(body: bytes, headers: Mapping[str, str], settings: TrackerSettings) -> bytes:
    """The delivery's JSON payload once its signature (over the raw body, form or JSON) checks out."""
    secret = settings.github_webhook_secret.get_secret_value() if settings.github_webhook_secret else None
    verify_signature(body, headers, secret)
    return payload_of(body, headers)


def is_relevant(ev: IssueEvent, settings: TrackerSettings) -> tuple[bool, str]:
    """(relevant, why): a watched label, or a title keyword. A `labeled` event counts only when the
    label it added is watched (other labels change nothing)."""
    watched = {x.lower() for x in settings.github_labels}
    if ev.action not in ACTIONS:
        return False, f"action {ev.action!r} is not watched"
    if ev.action == "labeled" and (ev.label or "").lower() not in watched:
        return False, f"label {ev.label!r} is not watched"
    hit = sorted(x for x in ev.labels if x.lower() in watched)
    if hit:
        return True, f"labels {hit}"
    title = ev.title.lower()
    words = [k for k in settings.github_title_keywords if k.lower() in title]
    if words:
        return True, f"title mentions {words}"
    return False, "no watched label or title keyword"


@dataclass(frozen=True)
class Link:
    name: str
    url: str


def _allowed(url: str, hosts: list[str]) -> bool:
    parts = urlsplit(url)
    return parts.scheme in ("https", "http") and (parts.hostname or "").lower() in {h.lower() for h in hosts}


def bundle_links(text: str, settings: TrackerSettings) -> list[Link]:
    """Links in an issue body to bundles on an allowed host, in order, each once."""
    found: dict[str, str] = {}
    for m in _MD_LINK.finditer(text):
        found.setdefault(m.group(2), m.group(1).strip())
    for m in _BARE.finditer(text):
        found.setdefault(m.group(0).rstrip(".,;"), "")
    out = []
    for url, label in found.items():
        tail = unquote(urlsplit(url).path.rsplit("/", 1)[-1])
        name = label if is_bundle(label, None) else tail
        if _allowed(url, settings.github_download_hosts) and is_bundle(name, None):
            out.append(Link(name, url))
    return out


class GitHubClient:
    """The REST API (token, api host only) and a separate unauthenticated client for downloads."""

    def __init__(self, settings: TrackerSettings, transport: httpx.BaseTransport | None = None) -> None:
        self.settings = settings
        token = settings.github_token.get_secret_value() if settings.github_token else ""
        self.api = client(settings.tracker_timeout_s, settings.github_api_url.rstrip("/"),
                          {"Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json",
                           "X-GitHub-Api-Version": "2022-11-28"}, transport)  # fmt: skip
        self.files = client(settings.tracker_timeout_s, transport=transport, follow_redirects=True,
                            max_redirects=5, event_hooks={"request": [self._hop]})  # fmt: skip

    def _hop(self, req: httpx.Request) -> None:
        if not _allowed(str(req.url), self.settings.github_download_hosts):
            plain = (f"it leads to {req.url.host}, and vsandx downloads only from the hosts its administrator "
                     "listed in VSANDX_GITHUB_DOWNLOAD_HOSTS")  # fmt: skip
            raise TrackerHTTPError(f"download of {req.url} refused: host not in VSANDX_GITHUB_DOWNLOAD_HOSTS", False,
                                   plain)  # fmt: skip

    def __enter__(self) -> GitHubClient:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.api.close()
        self.files.close()

    def size(self, link: Link) -> int | None:
        """Content-Length from a HEAD (after redirects); None when the server does not say."""
        r = request(self.files, "HEAD", link.url, f"HEAD {link.url}")
        length = r.headers.get("content-length")
        return int(length) if length and length.isdigit() else None

    @contextmanager
    def open(self, link: Link) -> Iterator[BinaryIO]:
        """The linked file as a stream: size-checked by HEAD first (refused over the limit or when
        unknown), then cut off (the connection dropped) as soon as the body grows past the size announced.
        Reading raises TooLarge / TrackerHTTPError naming the link."""
        limit = self.settings.tracker_max_attachment_bytes
        size = self.size(link)
        if size is None or size > limit:
            raise TooLarge(f"{link.name} ({link.url}): size {size} unknown or over the {limit} byte limit",
                           too_big(size, limit), over_limit=True)  # fmt: skip
        refusal = f"{link.name} ({link.url}): more than the {size} bytes announced (limit {limit})"
        plain = f"the server sent more than the {size_words(size)} it announced, so the download was stopped"
        with capped_chunks(self.files, link.url, size, f"GET {link.url}", refusal, plain) as chunks:
            yield reader(chunks)

    def comment(self, repo: str, number: int, text: str) -> int:
        if not _REPO.fullmatch(repo):
            raise ValueError(f"bad repository name {repo!r}")
        what = f"GitHub POST comment on {repo}#{number}"
        r = request(self.api, "POST", f"/repos/{repo}/issues/{int(number)}/comments", what, json={"body": text})
        try:
            data: Any = r.json()
            return int(data["id"])
        except (ValueError, KeyError, TypeError) as e:
            raise TrackerHTTPError(f"{what}: unexpected answer ({type(e).__name__}: {e})", transient=False) from e
