"""The tracker comment and the emailed report of a real diagnosis carry each finding's cited log lines
(file inside the bundle, line number, the line) and its onset in words (issue 20 item 4)."""

from __future__ import annotations

from email.headerregistry import Address
from email.message import EmailMessage
from typing import Any

import pytest

from data.simulate.archive import tar_bytes
from data.simulate.generate import simulate_bundle
from diagnosis.digest import MAX_REPORT_LINES
from diagnosis.findings import findings
from pipeline.api import load_bundle
from service.trackers.flow import Report, comment_text
from service.trackers.report_mail import build_report


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    b = simulate_bundle("lab", 11, 0, faults=("net.link_degraded",))
    comp = b.plan.faults[0].component
    found = [f.to_dict() for f in findings(load_bundle(tar_bytes(b.files)), {comp: ("net.link_degraded", 0.9)})]
    assert found[0]["cited_lines"] and found[0]["onset"]
    return {"bundle": {"hosts": ["a"], "sha256": "0" * 64}, "components": [], "findings": found,
            "model": {"name": "m", "version": "1"}}  # fmt: skip


@pytest.mark.parametrize("markdown", [False, True])
def test_tracker_comment_cites_the_lines(doc: dict[str, Any], markdown: bool) -> None:
    text = comment_text([Report("bundle.tgz", "job-1", doc)], [], "https://vsandx.example", markdown=markdown)
    f = doc["findings"][0]
    assert f"Onset: {f['onset']['words']}" in text
    for c in f["cited_lines"][:MAX_REPORT_LINES]:
        assert f"{c['file']}, line {c['line']} ({c['event']})" in text and c["text"] in text


def test_emailed_report_cites_the_lines(doc: dict[str, Any]) -> None:
    msg = build_report(doc, diagnosis_id="job-1", sender=Address(addr_spec="vsandx@example.com"),
                       to=[Address(addr_spec="eng@example.com")], url=None)  # fmt: skip
    plain, rich = (p for p in msg.iter_parts() if isinstance(p, EmailMessage))
    text, page = plain.get_content(), rich.get_content()
    for c in doc["findings"][0]["cited_lines"][:MAX_REPORT_LINES]:
        assert f"line {c['line']} ({c['event']})" in text and c["text"] in text
        assert f"line {c['line']} ({c['event']})" in page and c["text"] in page  # no markup in these lines
