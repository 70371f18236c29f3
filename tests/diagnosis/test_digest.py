"""A diagnosis in words (comment, email text and HTML) carries what each finding cites: the onset in
words, the worst sample of each metric, and the log lines (file, line number, the line), escaped in HTML
and free of control characters in text; older documents without these read as before."""

from __future__ import annotations

import html
from typing import Any

import pytest

from data.simulate.archive import tar_bytes
from data.simulate.generate import simulate_bundle
from diagnosis.digest import MAX_REPORT_LINES, FindingChart, html_report, line_ref, sample_text, text_report
from diagnosis.findings import findings
from pipeline.api import load_bundle


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    b = simulate_bundle("lab", 11, 0, faults=("disk.latency",))
    comp = b.plan.faults[0].component
    found = [f.to_dict() for f in findings(load_bundle(tar_bytes(b.files)), {comp: ("disk.latency", 0.9)})]
    assert found[0]["cited_lines"] and found[0]["series"] and found[0]["onset"]
    return {"bundle": {"hosts": ["a"]}, "components": [], "findings": found}


def test_text_report_cites_lines_samples_and_onset(doc: dict[str, Any]) -> None:
    f = doc["findings"][0]
    text = text_report(doc, None)
    assert f"Onset: {f['onset']['words']}" in text
    for s in f["series"]:
        assert f"- {sample_text(s)}" in text and s["time"] in text
    shown = f["cited_lines"][:MAX_REPORT_LINES]
    for c in shown:
        assert f"- {c['file']}, line {c['line']} ({c['event']})" in text and f"     {c['text']}\n" in text
    if len(f["cited_lines"]) > MAX_REPORT_LINES:
        assert f"({len(f['cited_lines']) - MAX_REPORT_LINES} more on the diagnosis page)" in text


def test_html_report_cites_them_escaped(doc: dict[str, Any]) -> None:
    f = doc["findings"][0]
    page = html_report(doc, None)
    assert html.escape(f"Onset: {f['onset']['words']}") in page
    for c in f["cited_lines"][:MAX_REPORT_LINES]:
        assert html.escape(line_ref(c)) in page and html.escape(c["text"]) in page
    hostile = {**f, "cited_lines": [{"file": "<b>x</b>", "line": 1, "text": "<script>\x1b[0m", "event": "vob"}]}
    page = html_report({**doc, "findings": [hostile]}, None)
    text = text_report({**doc, "findings": [hostile]}, None)
    assert "<script>" not in page and "&lt;script&gt;" in page and "&lt;b&gt;x&lt;/b&gt;, line 1" in page
    assert "\x1b" not in text and "<script> [0m" in text


def test_older_documents_take_the_onset_from_the_chart(doc: dict[str, Any]) -> None:
    old = {k: v for k, v in doc["findings"][0].items() if k not in ("cited_lines", "series", "onset")}
    chart = FindingChart(old["component"], old["fault"], "t", "Onset: started about 10:00 UTC on 1 Mar.")
    text = text_report({**doc, "findings": [old]}, None, charts=[chart])
    assert "Onset: started about 10:00 UTC on 1 Mar." in text and "Log lines" not in text
    assert "Worst samples" not in html_report({**doc, "findings": [old]}, None)


DRIVERS = {
    "method": "integrated gradients (32 steps)",
    "members": 1,
    "gain": 4.2,
    "sources": [{"source": "ev.scsi_fail_host", "share": 0.4}, {"source": "disk.latencyDevWrite", "share": 0.25}],
    "span": {"start": "2026-03-12T03:40:00Z", "end": "2026-03-12T04:10:00Z"},
}


def test_reports_say_what_drove_the_verdict(doc: dict[str, Any]) -> None:
    with_drivers = {**doc, "findings": [{**doc["findings"][0], "drivers": DRIVERS}]}
    want = (
        "What drove it: ev.scsi_fail_host (40 %), disk.latencyDevWrite (25 %), mostly between 03:40 and 04:10 "
        "UTC on 2026-03-12."
    )
    assert want in text_report(with_drivers, None)
    assert html.escape(want) in html_report(with_drivers, None)
    assert "What drove it" not in text_report(doc, None)  # a finding without drivers (no CNN) says nothing


def test_reports_flag_an_unusual_bundle_before_the_findings(doc: dict[str, Any]) -> None:
    reason = {"kind": "disk", "component": "disk:h/<x>", "components": 1, "why": "latency 1000x the training range"}
    odd = {**doc, "unusual": {"flag": True, "score": 9.0, "threshold": 2.0, "reasons": [reason]}}
    text = text_report(odd, None)
    assert "Never seen this" in text and text.index("Never seen this") < text.index("1. ")
    assert "disk:h/<x>: latency 1000x the training range" in text
    page = html_report(odd, None)
    assert "Never seen this" in page and "disk:h/&lt;x&gt;" in page and "<x>" not in page
    assert "Never seen this" not in text_report(doc, None)
