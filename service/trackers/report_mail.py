"""The emailed report as a message: multipart/alternative [text/plain, multipart/related [text/html, one
image/png per inline chart]]. service.trackers.notify sends it.

Charts: one per finding, in the document's order, each with its onset in words. The first
`NotifySettings.mail_max_charts` of them (and no more than `mail_max_chart_bytes` of PNG in all) are
inline images; the others are linked to their finding on the diagnosis page, so that a diagnosis with
many findings still makes a message of bounded size.

Subject: "[vsandx] <reference>: <title> — <headline>", under 120 characters (`MAX_SUBJECT`): when it is
longer, the tracker's free-text title is shortened first (at a word, with an ellipsis), then dropped,
then the headline is shortened; the reference (bug number, repo#issue, bundle name) and the verdict
summary are what is kept.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from email.headerregistry import Address
from email.message import EmailMessage
from email.utils import format_datetime
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote

from diagnosis.digest import FindingChart, ReportChart, clean, findings_of, headline, html_report, text_report

if TYPE_CHECKING:
    from pipeline.tensors import BundleTensors

MAX_SUBJECT: Final = 119  # characters, "[vsandx] " included: under 120
MAX_REFERENCE: Final = 48  # a bug / issue reference or a bundle name, in the subject
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def one_line(text: str, limit: int = 160) -> str:
    """Tracker text fit for a header: control characters (CR/LF included) become spaces."""
    flat = " ".join(_CONTROL.sub(" ", text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def shorten(text: str, limit: int) -> str:
    """`text` in at most `limit` characters: cut at a word when one ends in the last third, then "…"."""
    if len(text) <= limit:
        return text
    cut = text[: max(0, limit - 1)]
    space = cut.rfind(" ")
    if space >= (2 * limit) // 3:
        cut = cut[:space]
    return cut.rstrip(" ,;:-—") + "…"


def subject_line(head: str, context: str | None) -> str:
    """The subject (see the module docstring); `context`: "<reference>: <title>" or a reference alone."""
    head = one_line(head, 1000)
    ref, _, title = one_line(context or "", 1000).partition(": ")
    ref = shorten(ref, MAX_REFERENCE)
    prefix = "[vsandx] "
    full = prefix + (f"{ref}: {title} — " if title else f"{ref} — " if ref else "") + head
    if len(full) <= MAX_SUBJECT:
        return full
    room = MAX_SUBJECT - len(f"{prefix}{ref}:  — {head}")
    if title and room >= 12:
        return f"{prefix}{ref}: {shorten(title, room)} — {head}"
    lead = f"{prefix}{ref} — " if ref else prefix
    return lead + shorten(head, MAX_SUBJECT - len(lead))


def message_id(diagnosis_id: str, to: Sequence[Address], purpose: str, domain: str) -> str:
    """Deterministic: the same report to the same people for the same reason has the same id."""
    who = ",".join(sorted({a.addr_spec.lower() for a in to}))
    digest = hashlib.sha256(f"{diagnosis_id}\0{who}\0{purpose}".encode()).hexdigest()[:40]
    return f"<vsandx.{digest}@{domain}>"


def diagnosis_url(public_url: str, diagnosis_id: str) -> str:
    """The diagnosis page of the web UI (service.api.ui's /diagnoses/{job_id})."""
    return f"{public_url.rstrip('/')}/diagnoses/{quote(diagnosis_id, safe='')}"


def _placed(doc: Mapping[str, Any], charts: Sequence[ReportChart], diagnosis_id: str, url: str | None,
            max_inline: int, max_bytes: int) -> list[tuple[FindingChart, bytes | None]]:  # fmt: skip
    """Each finding's chart in the findings' order: inline (a cid and its PNG) while the count and byte
    budgets last, linked to the finding's section of the page (#finding-<n>) otherwise."""
    by_key = {(c.component, c.fault): c for c in charts}
    tag = hashlib.sha256(diagnosis_id.encode()).hexdigest()[:16]
    out: list[tuple[FindingChart, bytes | None]] = []
    used = count = 0
    for n, f in enumerate(findings_of(doc), 1):
        c = by_key.get((str(f.get("component")), str(f.get("fault"))))
        if c is None:
            continue
        href = f"{url}#finding-{n}" if url else None
        if c.png is not None and count < max_inline and used + len(c.png) <= max_bytes:
            used, count = used + len(c.png), count + 1
            out.append((FindingChart(c.component, c.fault, c.title, c.onset, f"chart{n}.{tag}@vsandx", href), c.png))
        else:
            out.append((FindingChart(c.component, c.fault, c.title, c.onset, None, href), None))
    return out


def build_report(
    doc: Mapping[str, Any], *, diagnosis_id: str, sender: Address, to: Sequence[Address], url: str | None,
    charts: Sequence[ReportChart] = (), context: str | None = None, purpose: str = "diagnosis",
    now: datetime | None = None, max_inline: int = 4, max_bytes: int = 2 << 20,
) -> EmailMessage:  # fmt: skip
    """The message. `context` (e.g. "Bug 123: summary", tracker data) goes into the subject as one
    sanitised line; `charts` (any order) are placed by finding, at most `max_inline` of them inline."""
    if not to:
        raise ValueError("a report needs at least one recipient")
    placed = _placed(doc, charts, diagnosis_id, url, max_inline, max_bytes)
    inline = sum(png is not None for _, png in placed)
    note = None
    if inline:
        note = f"The charts of {inline} finding{'s' if inline > 1 else ''} are inline in the HTML view" + (
            "; the others are linked." if inline < len(placed) else "."
        )
    msg = EmailMessage()
    msg["Subject"] = subject_line(headline(doc), context)
    msg["From"] = sender
    msg["To"] = list(to)
    msg["Date"] = format_datetime(now or datetime.now(UTC))
    msg["Message-ID"] = message_id(diagnosis_id, to, purpose, sender.domain)
    msg["Auto-Submitted"] = "auto-generated"  # RFC 3834: no vacation replies to the service
    msg["X-Vsandx-Diagnosis"] = one_line(diagnosis_id, 100)
    msg.set_content(text_report(doc, url, note, [fc for fc, _ in placed]))
    msg.add_alternative(html_report(doc, url, [fc for fc, _ in placed]), subtype="html")
    html_part = list(msg.iter_parts())[1]
    for fc, png in placed:
        if png is not None and fc.cid:
            html_part.add_related(png, "image", "png", cid=f"<{fc.cid}>", filename=f"{fc.cid.split('.')[0]}.png",
                                  disposition="inline")  # fmt: skip
    return msg


def report_charts(bundle: BundleTensors, doc: Mapping[str, Any], with_png: int = 4) -> list[ReportChart]:
    """Each finding's chart drawn from the parsed bundle (pipeline BundleTensors), PNGs for the first
    `with_png`; the service reads them from its chart store instead (drawn when the diagnosis was made)."""
    from diagnosis.chart_png import chart_png
    from diagnosis.charts import charts_for
    from diagnosis.onset import describe

    return [ReportChart(c.component, c.fault, clean(c.title), describe(c.onset, c.start, c.step_s),
                        chart_png(c) if k < with_png else None)
            for k, c in enumerate(charts_for(bundle, dict(doc)))]  # fmt: skip


def key_chart_png(bundle: BundleTensors, doc: Mapping[str, Any]) -> tuple[bytes, str] | None:
    """(PNG, title) of the first finding's chart; None when there is no finding or no data."""
    first = report_charts(bundle, doc, with_png=1)[:1]
    return (first[0].png, first[0].title) if first and first[0].png else None
