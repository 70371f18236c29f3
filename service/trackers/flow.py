"""Where a comment is posted: what a webhook delivery does against the trackers once admitted
(service.trackers.base.admit): re-read the bug or issue, decide relevance, download its bundles
(size-checked first), have each diagnosed, comment back once and email the reporter and the team once
per diagnosis. Plain functions over the tracker clients and SMTP, with no database, queue or model of
their own: how the service runs this as a queued job (storage, the served model, retries) is
service.queue.webhook_jobs. Runs in a worker, never in the webhook request.

The caller supplies `diagnose(file_name, stream) -> (diagnosis_id, document, stored path)`: the service
copies the download's stream into its store the way an upload is (never whole in memory) and runs (or
reuses) its diagnosis; tests pass a Predictor. A bundle that cannot be read raises `BundleError` or
`ValueError` there and is reported, not retried; a download refused while it streams (past its size,
a bad answer) raises `TooLarge` / `TrackerHTTPError` from the stream's reads, and is reported too. The comment and each
email are recorded in a `SentLog` (keys `comment:…` and Message-IDs), so repeating the whole task
after a crash posts and sends nothing twice.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, BinaryIO

import httpx

from diagnosis.digest import code_block, text_report
from pipeline.config import PipelineConfig
from pipeline.errors import BundleError
from service.trackers import wording
from service.trackers.base import TooLarge, TrackerHTTPError, TrackerSettings
from service.trackers.bugzilla import BugEvent, BugzillaClient, pick_bundles
from service.trackers.bugzilla import is_relevant as bug_relevant
from service.trackers.github import GitHubClient, IssueEvent, bundle_links
from service.trackers.github import is_relevant as issue_relevant
from service.trackers.notify import (
    MailError,
    NotifySettings,
    ReportChart,
    SendResult,
    SentLog,
    diagnosis_url,
    report_charts,
    send_report,
)
from service.trackers.wording import Tracker

log = logging.getLogger(__name__)
# (file name, the download as a stream) -> (diagnosis id, document, where the bundle is now stored)
Diagnose = Callable[[str, BinaryIO], tuple[str, Mapping[str, Any], Path]]
# (the stored bundle, its diagnosis) -> each finding's chart for the emailed report
ChartOf = Callable[[Path, Mapping[str, Any]], list[ReportChart]]


@dataclass
class Report:
    name: str  # the attachment's file name
    diagnosis_id: str
    doc: Mapping[str, Any]
    charts: list[ReportChart] = field(default_factory=list)  # each finding's, drawn only when mail is on


@dataclass
class Outcome:
    subject: str
    relevant: bool
    reason: str
    reports: list[Report] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # bundles not taken, and why
    comment_id: int | None = None  # None: not posted now (nothing to say, or posted before)
    mails: list[SendResult] = field(default_factory=list)
    mail_errors: list[str] = field(default_factory=list)
    asked: bool = False  # the comment asking for a bundle went out now (a relevant bug / issue had none)


def bundle_chart(path: Path, doc: Mapping[str, Any], config: PipelineConfig | None = None) -> list[ReportChart]:
    """Each finding's chart drawn from the stored bundle (streamed from disk), read with `config`: the
    configuration the diagnosis was made with (the service's, resolved once; default: from the
    VSANDX_PIPELINE_* settings), so the chart shows the grid the verdict saw. The service draws charts
    from the diagnosis's own parse (service.store.chart_store); this is the fallback for a diagnosis stored
    without them, and for tests."""
    from pipeline.api import load_bundle

    try:
        return report_charts(load_bundle(path, config or PipelineConfig.from_settings()), doc)
    except (BundleError, OSError):
        return []


MAX_COMMENT = 60000  # Bugzilla refuses comments over 65535 characters, GitHub over 65536


def comment_text(reports: list[Report], refused: list[str], public_url: str, markdown: bool = False) -> str:
    """The tracker comment: one section per diagnosed bundle, then what was not taken. Cut to what the
    trackers accept when it is longer, ending with the link to every diagnosis. `markdown` (GitHub, which
    renders comments): the report — bundle and tracker text — goes verbatim into a code block, so that
    a component or file name cannot become a link, an image, a mention or HTML; the links follow it."""
    parts = []
    for r in reports:
        body = text_report(r.doc, diagnosis_url(public_url, r.diagnosis_id))
        parts.append(f"Bundle {r.name}\n{body}" if len(reports) > 1 or r.name else body)
    if refused:
        parts.append("Not diagnosed:\n" + "\n".join(f"- {x}" for x in refused))
    text = "\n\n".join(parts).strip() + "\n"
    links = "\n".join(diagnosis_url(public_url, r.diagnosis_id) for r in reports)
    if markdown:
        after = f"\nEvery diagnosis, with its charts:\n{links}\n" if links else ""
        room = MAX_COMMENT - len(after) - 2 * len(code_block(""))  # the fences, however long
        if len(text) > room:
            cut = "\n[cut: the report is too long for a comment]\n"
            text = text[: room - len(cut) - 1].rstrip() + cut
        return code_block(text) + after
    if len(text) <= MAX_COMMENT:
        return text
    tail = f"\n[cut: the report is too long for a comment; every diagnosis is at]\n{links}\n"
    return text[: MAX_COMMENT - len(tail) - 1].rstrip() + "\n" + tail


def comment_key(subject: str, item: str) -> str:
    """SentLog key of one item (a diagnosis id, or a refusal) told on one bug / issue."""
    return f"comment:{subject}:{hashlib.sha256(item.encode()).hexdigest()[:32]}"


def _take(name: str, download: Callable[[], AbstractContextManager[BinaryIO]], diagnose: Diagnose, out: Outcome,
          chart: ChartOf | None, tracker: Tracker, url: str = "") -> None:  # fmt: skip
    """Stream one bundle into `diagnose` and draw its chart from where it was stored. A refused download
    (size, host, HTTP, a bad answer: before or while streaming) is reported in plain words (the log
    keeps the technical message: service.trackers.wording); a transient failure raises for the task's
    retry."""
    try:
        with download() as stream:
            did, doc, stored = diagnose(name, stream)
    except (TooLarge, TrackerHTTPError) as e:
        if getattr(e, "transient", False):
            raise  # the task retries; a refused download (host, size, 404) is reported instead
        out.refused.append(wording.refused_download(tracker, name, e, url))
        return
    except (BundleError, ValueError) as e:
        out.refused.append(wording.unreadable(tracker, name, str(e), url))
        return
    out.reports.append(Report(name, did, doc, chart(stored, doc) if chart and doc.get("findings") else []))


def _ask(out: Outcome, post: Callable[[str], int], tracker: Tracker, limit: int, sent_log: SentLog) -> Outcome:
    """A relevant bug or issue with no bundle: one comment asking for one (what, how to collect it),
    however often it is edited or its delivery replayed (keyed in the sent log like every comment)."""
    key = comment_key(out.subject, "ask-for-bundle")
    if not sent_log.was_sent(key):
        out.comment_id = post(wording.ask_for_bundle(tracker, limit))
        out.asked = True
        sent_log.mark_sent(key)
    return out


def _finish(out: Outcome, post: Callable[[str], int], reporter: str | None, context: str, *,
            notify: NotifySettings, sent_log: SentLog, markdown: bool = False) -> Outcome:  # fmt: skip
    if not out.reports and not out.refused:
        return out
    # Each diagnosis and refusal is told once: a later event (a new attachment) comments on what is new.
    keys = {id(r): comment_key(out.subject, "d:" + r.diagnosis_id) for r in out.reports}
    new = [r for r in out.reports if not sent_log.was_sent(keys[id(r)])]
    new_refused = [x for x in out.refused if not sent_log.was_sent(comment_key(out.subject, "r:" + x))]
    if new or new_refused:
        out.comment_id = post(comment_text(new, new_refused, notify.public_url, markdown))
        for k in [keys[id(r)] for r in new] + [comment_key(out.subject, "r:" + x) for x in new_refused]:
            sent_log.mark_sent(k)
    if not notify.smtp_host:
        return out
    for r in out.reports:
        try:
            out.mails.append(send_report(r.doc, diagnosis_id=r.diagnosis_id, reporter=reporter, settings=notify,
                                         sent_log=sent_log, charts=r.charts, context=context,
                                         purpose=out.subject))  # fmt: skip
        except MailError as e:
            if e.transient:
                raise  # the task retries; the comment and mails already sent are recorded
            out.mail_errors.append(str(e))
    return out


def handle_bugzilla(
    event: BugEvent, *, trackers: TrackerSettings, notify: NotifySettings, diagnose: Diagnose,
    sent_log: SentLog, chart: ChartOf = bundle_chart, transport: httpx.BaseTransport | None = None,
) -> Outcome:  # fmt: skip
    """Everything after admission for one Bugzilla delivery. Raises TrackerHTTPError / MailError
    (see `.transient`) for the task's retry policy."""
    with BugzillaClient(trackers, transport) as bz:
        bug = bz.get_bug(event.bug_id)
        relevant, why = bug_relevant(bug, trackers)
        out = Outcome(f"bugzilla:{bug.id}", relevant, why)
        if not relevant:
            return out
        picked = pick_bundles(bz.attachments(bug.id), trackers)
        if not picked.bundles and not picked.refused:
            return _ask(out, lambda text: bz.comment(bug.id, text), "bugzilla", trackers.tracker_max_attachment_bytes,
                        sent_log)  # fmt: skip
        out.refused += picked.refused
        for a in picked.bundles:
            _take(a.file_name, partial(bz.open, a), diagnose, out, chart if notify.smtp_host else None, "bugzilla")
        return _finish(out, lambda text: bz.comment(bug.id, text), bug.reporter, f"Bug {bug.id}: {bug.summary}",
                       notify=notify, sent_log=sent_log)  # fmt: skip


def handle_github(
    event: IssueEvent, *, trackers: TrackerSettings, notify: NotifySettings, diagnose: Diagnose,
    sent_log: SentLog, chart: ChartOf = bundle_chart, transport: httpx.BaseTransport | None = None,
) -> Outcome:  # fmt: skip
    """Everything after admission for one GitHub delivery. GitHub does not give the reporter's email:
    the report goes to the team list only."""
    relevant, why = issue_relevant(event, trackers)
    out = Outcome(f"github:{event.repo}#{event.number}", relevant, why)
    if not relevant:
        return out
    links = bundle_links(event.body, trackers)
    for extra in links[trackers.tracker_max_attachments :]:
        out.refused.append(wording.too_many("github", extra.name, trackers.tracker_max_attachments, extra.url))
    with GitHubClient(trackers, transport) as gh:
        if not links:
            return _ask(out, lambda text: gh.comment(event.repo, event.number, text), "github",
                        trackers.tracker_max_attachment_bytes, sent_log)  # fmt: skip
        for link in links[: trackers.tracker_max_attachments]:
            _take(link.name, partial(gh.open, link), diagnose, out, chart if notify.smtp_host else None, "github",
                  link.url)  # fmt: skip
        return _finish(out, lambda text: gh.comment(event.repo, event.number, text), None,
                       f"{event.repo}#{event.number}: {event.title}", notify=notify, sent_log=sent_log,
                       markdown=True)  # fmt: skip
