"""The webhook routes' logic without the web framework: `accept(source, body, headers, …)` decides what
to answer and whether to queue work; `run(job, …)` is the queued task's body.

A route reads the raw body (at most `WEBHOOK_MAX_BODY` bytes), calls `accept`, queues `answer.job`
when there is one, and returns `answer.status` with `answer.payload` as JSON, quickly. Replays, stale
and unwatched events answer 200 so the tracker does not retry them; only a bad secret / signature
(401), a malformed or oversized payload (400 / 413) or an unconfigured tracker (503) are errors. A 400
names the content type that came and those accepted: GitHub's JSON or form (service.trackers.github
.payload_of: the signature is checked over the form as sent, the job carries the JSON inside it).
`Answer.outcome` is the answer as a metric's label, from a fixed list (OUTCOMES).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import httpx

from service.trackers import bugzilla, github
from service.trackers.base import Admission, BadPayload, DeliveryLedger, TrackerSettings, Unauthorized, admit, header
from service.trackers.flow import ChartOf, Diagnose, Outcome, bundle_chart, handle_bugzilla, handle_github
from service.trackers.notify import NotifySettings, SentLog

Source = Literal["bugzilla", "github"]
# Bugzilla's payloads are a few KB. GitHub caps a delivery at 25 MB, but an issues event is the issue (its
# body at most 65536 characters), its labels, the repository and the sender: tens of KB. 1 MiB leaves a
# wide margin and is what the app's body limit (service.app.body_limits) holds these routes to.
WEBHOOK_MAX_BODY = 1024 * 1024
# GitHub's headers the task needs to parse the payload again (the signature was checked on receipt).
GITHUB_TASK_HEADERS = ("X-GitHub-Event", "X-GitHub-Delivery")


@dataclass(frozen=True)
class Answer:
    status: int
    payload: dict[str, Any]
    job: dict[str, Any] | None = field(default=None)  # JSON-serialisable arguments of `run`, or None
    claimed: tuple[str, ...] = ()  # the ledger keys admitting it recorded (forgotten when queuing fails)

    @property
    def outcome(self) -> str:
        """What became of the delivery, one of OUTCOMES (a metric's label: never a value from the request)."""
        got = self.payload.get("status") if self.status == 200 else _ERRORS.get(self.status)
        return got if isinstance(got, str) and got in OUTCOMES else "other"


# 200's statuses, then the errors; "queue_failed" is the route's (a 503 when queuing fails)
OUTCOMES = ("queued", "ignored", "stale", "replay", "unauthorized", "bad_payload", "too_large", "unconfigured",
            "queue_failed", "other")  # fmt: skip
_ERRORS = {401: "unauthorized", 400: "bad_payload", 413: "too_large", 503: "unconfigured"}


def _configured(source: Source, s: TrackerSettings) -> str | None:
    if source == "bugzilla" and not (s.bugzilla_url and s.bugzilla_webhook_secret):
        return "Bugzilla is not configured (VSANDX_BUGZILLA_URL, VSANDX_BUGZILLA_WEBHOOK_SECRET)"
    if source == "github" and not s.github_webhook_secret:
        return "GitHub is not configured (VSANDX_GITHUB_WEBHOOK_SECRET)"
    return None


def accept(source: Source, body: bytes, headers: Mapping[str, str], settings: TrackerSettings,
           ledger: DeliveryLedger, now: datetime | None = None) -> Answer:  # fmt: skip
    """Authenticate, parse, filter and admit one delivery; never raises for bad input."""
    if len(body) > WEBHOOK_MAX_BODY:
        return Answer(413, {"error": f"payload over {WEBHOOK_MAX_BODY} bytes"})
    if why := _configured(source, settings):
        return Answer(503, {"error": why})
    try:
        if source == "bugzilla":
            bev = bugzilla.receive(body, headers, settings)
            delivery, wanted, subject = bev.delivery, bugzilla.wanted(bev, settings), f"bug {bev.bug_id}"
            hdrs: dict[str, str] = {}
        else:
            body = github.verified_payload(body, headers, settings)  # the JSON, from a form body too
            gev = github.parse_event(body, headers)
            if gev is None:
                return Answer(200, {"status": "ignored", "reason": "not an issues event"})
            delivery, subject = gev.delivery, f"{gev.repo}#{gev.number}"
            # the payload is signed, so its labels and title can be trusted to filter before queuing
            wanted = github.is_relevant(gev, settings)[0]
            hdrs = {h: header(headers, h) or "" for h in GITHUB_TASK_HEADERS}
    except Unauthorized as e:
        return Answer(401, {"error": str(e)})
    except BadPayload as e:
        return Answer(400, {"error": _bad(source, str(e), headers)})
    if not wanted:
        return Answer(200, {"status": "ignored", "reason": f"event on {subject} is not watched"})
    verdict = admit(delivery, ledger, settings.tracker_stale_after_s, now)
    if verdict is not Admission.ACCEPT:
        return Answer(200, {"status": verdict.value, "delivery": delivery.key})
    job = {"source": source, "body": body.decode("utf-8", "replace"), "headers": hdrs}
    return Answer(200, {"status": "queued", "delivery": delivery.key}, job, delivery.keys)


def _bad(source: Source, why: str, headers: Mapping[str, str]) -> str:
    """A 400's message: the reason, and the content type that came with what was accepted."""
    if "content type" in why:
        return why
    got = github.content_type(headers) or "none"
    accepted = github.ACCEPTED if source == "github" else "application/json"
    return f"{why} (content type {got!r}; accepted: {accepted})"


def run(
    job: Mapping[str, Any], *, trackers: TrackerSettings, notify: NotifySettings, diagnose: Diagnose,
    sent_log: SentLog, chart: ChartOf = bundle_chart, transport: httpx.BaseTransport | None = None,
) -> Outcome:  # fmt: skip
    """The task: the work an accepted delivery queued (`Answer.job`). Raises TrackerHTTPError /
    MailError; retry when their `.transient` is true, fail otherwise."""
    body = str(job["body"]).encode()
    kw: dict[str, Any] = dict(trackers=trackers, notify=notify, diagnose=diagnose, sent_log=sent_log, chart=chart,
                              transport=transport)  # fmt: skip
    if job["source"] == "bugzilla":
        return handle_bugzilla(bugzilla.parse_event(body), **kw)
    ev = github.parse_event(body, dict(job.get("headers") or {}))
    if ev is None:
        raise BadPayload("queued GitHub job is not an issues event")
    return handle_github(ev, **kw)
