"""A diagnosis document (interface.md) in words: the tracker comment, the email's text part and its HTML
part all come from here, so an engineer reads the same findings wherever the report reaches them.

Everything in a document is treated as data: the HTML form escapes every value, and the text form is
free of control characters other than newlines.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from diagnosis.unusual import unusual_lines
from vsandx.faults import FAULTS

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def clean(text: object) -> str:
    """A value from a document or a tracker as printable text (tabs and newlines kept)."""
    return _CONTROL.sub(" ", str(text))


def code_block(text: str) -> str:
    """Text shown verbatim where Markdown is rendered (GitHub comments): a fenced block whose fence is
    longer than any run of backticks inside, so nothing in it — links, images, @mentions, #references,
    HTML — is rendered or can close the block."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text.rstrip()}\n{fence}\n"


def fault_title(fault: str) -> str:
    return FAULTS[fault].title if fault in FAULTS else fault


def _pct(v: object) -> str:
    try:
        return f"{100 * float(v):.0f} %"  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "?"


def findings_of(doc: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    found = doc.get("findings") or []
    return [f for f in found if isinstance(f, Mapping)]


def review_of(doc: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The components the model could not settle on one label for (the document's `review`, absent from
    a model without conformal sets)."""
    return [r for r in doc.get("review") or [] if isinstance(r, Mapping)]


def candidates_text(r: Mapping[str, Any]) -> str:
    """A review entry's candidate labels with their scores: "net.packet_loss 52 %, none 41 %"."""
    return ", ".join(
        f"{c.get('label')} {_pct(c.get('score'))}" for c in r.get("candidates") or [] if isinstance(c, Mapping)
    )


def _review_note(doc: Mapping[str, Any]) -> str:
    n = len(review_of(doc))
    return f"{n} component{'s need' if n != 1 else ' needs'} review: the model cannot settle on one label."


def headline(doc: Mapping[str, Any]) -> str:
    """One line: how many faults, and the most confident one."""
    found = findings_of(doc)
    hosts = len((doc.get("bundle") or {}).get("hosts") or [])
    where = f" across {hosts} host{'s' if hosts != 1 else ''}" if hosts else ""
    if not found and review_of(doc):
        return f"No fault found for sure{where}: {_review_note(doc)}"
    if not found:
        return f"No fault found{where}: every component looks healthy."
    top = found[0]
    more = f" (+{len(found) - 1} more)" if len(found) > 1 else ""
    return clean(f"{fault_title(str(top.get('fault')))} on {top.get('component')}{more}{where}")


@dataclass(frozen=True)
class FindingChart:
    """What a report shows of one finding's chart: the onset sentence (diagnosis.onset.describe), and the
    chart inline (`cid`: an image of the HTML part, without angle brackets) or linked (`href`)."""

    component: str
    fault: str
    title: str
    onset: str
    cid: str | None = None
    href: str | None = None


@dataclass(frozen=True)
class ReportChart:
    """One finding's chart as a report gets it (drawn once, stored by the service): what the finding is,
    the chart's title, the onset sentence and the PNG (None: the chart is linked, not sent)."""

    component: str
    fault: str
    title: str
    onset: str
    png: bytes | None = None


def _chart_of(f: Mapping[str, Any], charts: Sequence[FindingChart]) -> FindingChart | None:
    key = (str(f.get("component")), str(f.get("fault")))
    return next((c for c in charts if (c.component, c.fault) == key), None)


MAX_REPORT_LINES = 6  # cited log lines a comment or an email shows per finding (the page shows them all)


def _entries(f: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    return [x for x in f.get(key) or [] if isinstance(x, Mapping)]


def onset_sentence(f: Mapping[str, Any], chart: FindingChart | None) -> str | None:
    """The finding's onset in words: the document's (`onset.words`), else its chart's (documents made
    before the onset was in them); None when neither says."""
    onset = f.get("onset")
    if isinstance(onset, Mapping) and onset.get("words"):
        return f"Onset: {onset.get('words')}"
    return chart.onset if chart is not None else None


def sample_text(s: Mapping[str, Any]) -> str:
    """A worst sample in words: "pnic.rxThroughput of nic:esx-02/vmnic1: 129 MB/s at 2026-03-02T10:40:00Z"."""
    try:
        value = f"{float(s.get('value')):.4g}"  # type: ignore[arg-type]
    except (TypeError, ValueError):
        value = "?"
    return f"{s.get('metric')} of {s.get('entity')}: {value} {s.get('unit', '')} at {s.get('time')}"


def line_ref(c: Mapping[str, Any]) -> str:
    """Where a cited line is: "esx-…/var/run/log/vmkernel.log, line 74 (deteriorated)"."""
    return f"{c.get('file')}, line {c.get('line')} ({c.get('event')})"


def _cited(f: Mapping[str, Any]) -> tuple[list[Mapping[str, Any]], int]:
    """The cited lines a report shows, and how many more the page has."""
    got = _entries(f, "cited_lines")
    return got[:MAX_REPORT_LINES], max(0, len(got) - MAX_REPORT_LINES)


def drivers_sentence(d: object) -> str | None:
    """One sentence for a finding's drivers: "Decided by ev.scsi_fail_host (19 %), disk.latencyDevWrite
    (13 %) ..., mostly between 06:05 and 06:45 UTC." (None without drivers)."""
    if not isinstance(d, Mapping) or not d.get("sources"):
        return None
    named = ", ".join(f"{s['source']} ({100 * s['share']:.0f} %)" for s in d["sources"][:3])
    text = f"What drove it: {named}"
    sp = d.get("span")
    if sp:
        a, b = sp["start"], sp["end"]
        if a[:10] == b[:10]:
            text += f", mostly between {a[11:16]} and {b[11:16]} UTC on {a[:10]}"
        else:
            text += f", mostly between {a[:16].replace('T', ' ')} and {b[:16].replace('T', ' ')} UTC"
    return text + "."


def _verdict_counts(doc: Mapping[str, Any]) -> str:
    comps = [c for c in doc.get("components") or [] if isinstance(c, Mapping)]
    faulty = sum(1 for c in comps if c.get("verdict") not in (None, "none"))
    return f"{len(comps)} component{'s' if len(comps) != 1 else ''} checked, {faulty} at fault."


def text_report(doc: Mapping[str, Any], url: str | None, chart_note: str | None = None,
                charts: Sequence[FindingChart] = ()) -> str:  # fmt: skip
    """Plain text (a tracker comment, the email's text part); `charts`: each finding's onset and chart link."""
    bundle = doc.get("bundle") or {}
    model = doc.get("model") or {}
    lines = [f"vsandx diagnosis: {headline(doc)}", ""]
    if odd := unusual_lines(doc):  # before the findings: they may not hold
        lines += [*odd, ""]
    if bundle.get("start"):
        lines.append(f"Window: {bundle.get('start')} to {bundle.get('end')} (UTC)")
    lines.append(_verdict_counts(doc))
    for k, f in enumerate(findings_of(doc), 1):
        fault = str(f.get("fault"))
        lines += ["", f"{k}. {fault_title(fault)} [{fault}]", f"   Component: {f.get('component')}",
                  f"   Confidence: {_pct(f.get('confidence'))}"]  # fmt: skip
        if f.get("summary"):
            lines.append(f"   {f.get('summary')}")
        evidence = [e for e in f.get("evidence") or [] if e]
        if evidence:
            lines.append("   Evidence:")
            lines += [f"   - {e}" for e in evidence]
        chart = _chart_of(f, charts)
        if onset := onset_sentence(f, chart):
            lines.append(f"   {onset}")
        if drove := drivers_sentence(f.get("drivers")):
            lines.append(f"   {drove}")
        if samples := _entries(f, "series"):
            lines.append("   Worst samples:")
            lines += [f"   - {sample_text(x)}" for x in samples]
        cited, more = _cited(f)
        if cited:
            lines.append("   Log lines:")
            for c in cited:
                lines += [f"   - {line_ref(c)}", f"     {c.get('text')}"]
            if more:
                lines.append(f"   ({more} more on the diagnosis page)")
        if f.get("recommendation"):
            lines.append(f"   What to do: {f.get('recommendation')}")
        if chart and chart.href:
            lines.append(f"   Chart: {chart.href}")
    if review := review_of(doc):
        lines += ["", f"Needs review (not findings): {_review_note(doc)}"]
        for r in review:
            lines.append(f"- {r.get('component')}: {r.get('reason', 'several labels fit')}; candidates "
                         f"{candidates_text(r)}")  # fmt: skip
    if chart_note:
        lines += ["", chart_note]
    if url:
        lines += ["", f"Full diagnosis with charts: {url}"]
    if model.get("name"):
        lines += ["", f"Model: {model.get('name')} {model.get('version', '')}".rstrip()]
    return "\n".join(clean(line).rstrip() for line in lines) + "\n"


def _li(items: Sequence[object]) -> str:
    return "<ul>" + "".join(f"<li>{html.escape(clean(e))}</li>" for e in items) + "</ul>"


def html_report(doc: Mapping[str, Any], url: str | None, charts: Sequence[FindingChart] = ()) -> str:
    """A self-contained HTML page (inline styles only: mail clients drop stylesheets). Each finding with a
    chart in `charts` gets its onset sentence and its chart: the inline image, else a link to it."""
    e = html.escape
    bundle = doc.get("bundle") or {}
    model = doc.get("model") or {}
    out = [
        '<!DOCTYPE html><html><body style="font-family:Arial,sans-serif;color:#222;max-width:760px">',
        '<h2 style="margin-bottom:4px">vsandx diagnosis</h2>',
        f'<p style="font-size:15px"><b>{e(headline(doc))}</b></p>',
    ]
    meta = [_verdict_counts(doc)]
    if bundle.get("start"):
        meta.insert(0, f"Window: {bundle.get('start')} to {bundle.get('end')} (UTC).")
    out.append(f'<p style="color:#555">{e(clean(" ".join(meta)))}</p>')
    if odd := unusual_lines(doc):
        reasons = _li([x.removeprefix("- ") for x in odd[1:]]) if odd[1:] else ""
        out.append(f'<div style="border-left:4px solid #d68910;padding:4px 12px;margin:12px 0">'
                   f"<p><b>{e(clean(odd[0]))}</b></p>{reasons}</div>")  # fmt: skip
    for f in findings_of(doc):
        fault = str(f.get("fault"))
        out.append('<div style="border-left:4px solid #c0392b;padding:4px 12px;margin:12px 0">')
        out.append(f'<h3 style="margin:4px 0">{e(clean(fault_title(fault)))} <span style="color:#888;'
                   f'font-weight:normal">[{e(clean(fault))}]</span></h3>')  # fmt: skip
        out.append(f"<p><b>Component:</b> <code>{e(clean(f.get('component')))}</code> &middot; "
                   f"<b>Confidence:</b> {e(_pct(f.get('confidence')))}</p>")  # fmt: skip
        if f.get("summary"):
            out.append(f"<p>{e(clean(f.get('summary')))}</p>")
        evidence = [x for x in f.get("evidence") or [] if x]
        if evidence:
            out.append("<p><b>Evidence</b></p>" + _li(evidence))
        chart = _chart_of(f, charts)
        if onset := onset_sentence(f, chart):
            out.append(f'<p style="color:#555">{e(clean(onset))}</p>')
        if drove := drivers_sentence(f.get("drivers")):
            out.append(f'<p style="color:#555">{e(clean(drove))}</p>')
        if samples := _entries(f, "series"):
            out.append("<p><b>Worst samples</b></p>" + _li([sample_text(x) for x in samples]))
        cited, more = _cited(f)
        if cited:
            out.append("<p><b>Log lines</b></p><ul>")
            for c in cited:
                out.append(f"<li>{e(clean(line_ref(c)))}<br><code style=\"font-size:12px;word-break:break-all\">"
                           f"{e(clean(c.get('text')))}</code></li>")  # fmt: skip
            out.append("</ul>" + (f'<p style="color:#555">{more} more on the diagnosis page.</p>' if more else ""))
        if f.get("recommendation"):
            out.append(f"<p><b>What to do:</b> {e(clean(f.get('recommendation')))}</p>")
        if chart:
            if chart.cid:
                out.append(f'<p><img src="cid:{e(chart.cid)}" alt="{e(clean(chart.title))}" '
                           'style="max-width:100%"></p>')  # fmt: skip
            elif chart.href:
                out.append(f'<p><a href="{e(chart.href)}">This finding\'s chart, on the diagnosis page</a></p>')
        out.append("</div>")
    if review := review_of(doc):
        out.append('<div style="border-left:4px solid #d68910;padding:4px 12px;margin:12px 0">')
        out.append(f'<h3 style="margin:4px 0">Needs review</h3><p style="color:#555">{e(_review_note(doc))} '
                   "Not a finding: an engineer should decide between the candidates.</p><ul>")  # fmt: skip
        for r in review:
            out.append(f"<li><code>{e(clean(r.get('component')))}</code>: {e(clean(r.get('reason', '')))}; "
                       f"candidates {e(clean(candidates_text(r)))}</li>")  # fmt: skip
        out.append("</ul></div>")
    if url:
        out.append(f'<p><a href="{e(url)}">Open the full diagnosis with every chart</a></p>')
    if model.get("name"):
        out.append(f'<p style="color:#888;font-size:12px">Model: {e(clean(model.get("name")))} '
                   f'{e(clean(model.get("version", "")))}</p>')  # fmt: skip
    out.append("</body></html>")
    return "\n".join(out)
