"""The emailed report's content, received by a real local SMTP server (aiosmtpd): a chart per finding
(inline up to the cap, linked after it, within a byte budget), each finding's onset in words, a subject
under 120 characters that keeps the reference and the verdict, every link on VSANDX_PUBLIC_URL; and the
warning when SMTP is set while that URL is left at its loopback default."""

from __future__ import annotations

import logging
import re
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest

from diagnosis.chart_png import chart_png
from diagnosis.digest import headline
from diagnosis.onset import Onset, describe
from diagnosis.predictor import Predictor
from pipeline.api import load_bundle
from service.trackers.notify import (
    DEFAULT_PUBLIC_URL,
    MemorySentLog,
    NotifySettings,
    ReportChart,
    public_url_warning,
    report_charts,
    send_report,
)  # fmt: skip
from service.trackers.report_mail import MAX_SUBJECT, shorten, subject_line
from tests.service.deliveries import mail_settings
from tests.service.fakes import SmtpServer
from tests.service.kit import hostile_chart

PUBLIC = "https://vsandx.example"
LONG_TITLE = ("Customer reports very slow VMs on the production vSAN cluster after the weekend maintenance window, "
              "latency spikes of several seconds on every datastore")  # fmt: skip


def images(msg: EmailMessage) -> list[EmailMessage]:
    return [p for p in msg.walk() if p.get_content_type() == "image/png"]


def bodies(msg: EmailMessage) -> tuple[str, str]:
    text, page = msg.get_body(("plain",)), msg.get_body(("html",))
    assert text is not None and page is not None
    return str(text.get_content()), str(page.get_content())


def many_findings(n: int) -> tuple[dict[str, Any], list[ReportChart]]:
    """A document of n findings, each with a (real, drawn) chart and its onset at a different step."""
    png = chart_png(hostile_chart())
    found = [{"fault": "disk.latency", "component": f"disk:esx-0{k}/naa.{k}", "confidence": 0.9 - k / 20,
              "summary": f"latency on disk {k}", "recommendation": "check the device", "evidence": ["DAVG high"]}
             for k in range(1, n + 1)]  # fmt: skip
    start = 1_732_543_200  # 2024-11-25 14:00 UTC
    charts = [ReportChart(f["component"], f["fault"], f"disk.latency on {f['component']}",
                          describe(Onset(30 * k, False), start, 20), png + bytes([k]))
              for k, f in enumerate(found, 1)]  # fmt: skip
    doc = {"findings": found, "components": [], "bundle": {"hosts": ["a", "b", "c", "d"]}}
    return doc, list(reversed(charts))  # any order: placed by finding


def test_a_chart_per_finding_up_to_the_cap_the_rest_linked() -> None:
    doc, charts = many_findings(6)
    with SmtpServer() as server:
        res = send_report(doc, diagnosis_id="job-6", reporter=None, settings=mail_settings(server.port),
                          sent_log=MemorySentLog(), charts=charts, context=f"Bug 4242: {LONG_TITLE}")  # fmt: skip
        (got,) = server.received
    msg = got.message
    assert res.sent
    subject = str(msg["Subject"])
    assert len(subject) < 120 and subject.startswith("[vsandx] Bug 4242: Customer reports…")
    assert subject.endswith(headline(doc)) and "…" in subject  # the title was cut, the verdict kept whole
    parts = images(msg)
    assert len(parts) == 4  # mail_max_charts: the cap
    text, page = bodies(msg)
    # the inline images in the findings' order, each referenced once by the HTML part
    cids = [p["Content-ID"].strip("<>") for p in parts]
    assert [page.index(f"cid:{c}") for c in cids] == sorted(page.index(f"cid:{c}") for c in cids)
    by_cid = {p["Content-ID"].strip("<>"): p.get_content() for p in parts}
    for k, f in enumerate(doc["findings"], 1):
        chart = next(c for c in charts if c.component == f["component"])
        assert chart.onset in text and chart.onset in page  # the onset in words, in both parts
        section = page.split(f"<code>{f['component']}</code>", 1)[1].split("</div>", 1)[0]
        if k <= 4:
            cid = re.search(r'src="cid:([^"]+)"', section)
            assert cid is not None and by_cid[cid.group(1)] == chart.png
        else:  # past the cap: linked to its section of the diagnosis page
            assert "cid:" not in section and f'href="{PUBLIC}/diagnoses/job-6#finding-{k}"' in section
        assert f"Chart: {PUBLIC}/diagnoses/job-6#finding-{k}" in text
    assert "Onset: started about 14:10 UTC on 25 Nov, 10 min into the capture." in text
    assert "Onset: started about 14:40 UTC on 25 Nov, 40 min into the capture." in text
    assert "4 findings are inline in the HTML view; the others are linked" in text
    urls = re.findall(r"https?://[^\s\"'<>]+", text + page)
    assert urls and all(u.startswith(f"{PUBLIC}/diagnoses/job-6") for u in urls), urls
    assert "127.0.0.1" not in text + page


def test_byte_budget_and_no_charts() -> None:
    doc, charts = many_findings(3)
    one = len(charts[0].png or b"")
    with SmtpServer() as server:
        s = mail_settings(server.port, mail_max_charts=12, mail_max_chart_bytes=2 * one + 10)
        send_report(doc, diagnosis_id="b", reporter=None, settings=s, sent_log=MemorySentLog(), charts=charts)
        send_report(doc, diagnosis_id="c", reporter=None, settings=mail_settings(server.port, mail_max_charts=0),
                    sent_log=MemorySentLog(), charts=charts)  # fmt: skip
        budget, none = (r.message for r in server.received)
    assert len(images(budget)) == 2 and images(none) == []
    text, page = bodies(none)
    assert "Onset: started about" in text and f'href="{PUBLIC}/diagnoses/c#finding-1"' in page
    assert none.get_content_type() == "multipart/alternative"


REVIEW = [{"component": "nic:esx-02/vmnic1", "kind": "nic", "verdict": "none", "confidence": 0.52,
           "reason": "several labels fit", "candidates": [{"label": "none", "score": 0.52},
                                                         {"label": "net.packet_loss", "score": 0.44}]}]  # fmt: skip


def test_components_to_review_have_their_own_section_apart_from_findings() -> None:
    """Both parts list the components the model could not settle, with their candidates' scores, under
    their own heading after the findings; a document without `review` (an older model) shows none."""
    doc, _ = many_findings(1)
    with SmtpServer() as server:
        for k, d in enumerate(({**doc, "review": REVIEW}, doc, {**doc, "findings": [], "review": REVIEW})):
            send_report(d, diagnosis_id=f"r{k}", reporter=None, settings=mail_settings(server.port),
                        sent_log=MemorySentLog())  # fmt: skip
        both, plain, unsure = (r.message for r in server.received)
    text, page = bodies(both)
    assert "Needs review (not findings): 1 component needs review" in text
    assert text.index("Needs review") > text.index("latency on disk 1")  # after the findings
    assert "- nic:esx-02/vmnic1: several labels fit; candidates none 52 %, net.packet_loss 44 %" in text
    assert ">Needs review</h3>" in page and "<code>nic:esx-02/vmnic1</code>" in page
    assert "candidates none 52 %, net.packet_loss 44 %" in page
    assert "review" not in "".join(bodies(plain)).lower()
    text, _ = bodies(unsure)  # no finding, but not "every component looks healthy" either
    assert "No fault found for sure" in text and "looks healthy" not in text
    assert "No fault found for sure" in str(unsure["Subject"])


@pytest.fixture(scope="module")
def real(model_dir: Path, bundles: list[Path]) -> tuple[dict[str, Any], list[ReportChart]]:
    p = Predictor.load(str(model_dir))
    for b in bundles:
        doc = p.diagnose(b)
        if doc["findings"]:
            return doc, report_charts(load_bundle(b), doc)
    raise AssertionError("no simulated bundle got a finding from the test model")


def test_a_real_diagnosis(real: tuple[dict[str, Any], list[ReportChart]]) -> None:
    doc, charts = real
    assert len(charts) == len(doc["findings"]) and all(c.png and c.png.startswith(b"\x89PNG") for c in charts)
    with SmtpServer() as server:
        send_report(doc, diagnosis_id="r1", reporter="rep@bugs.example", settings=mail_settings(server.port),
                    sent_log=MemorySentLog(), charts=charts, context="o/r#5: Slow")  # fmt: skip
        (got,) = server.received
    msg = got.message
    assert len(images(msg)) == min(4, len(doc["findings"]))
    assert {p.get_content() for p in images(msg)} == {c.png for c in charts[:4]}
    text, page = bodies(msg)
    for c in charts:
        assert c.onset.startswith("Onset: ") and c.onset in text and c.onset in page
        assert re.search(r"Onset: (started about \d\d:\d\d UTC on \d+ \w{3}, .+ into the capture|already present|none)",
                         c.onset)  # fmt: skip
    assert str(msg["Subject"]).startswith("[vsandx] o/r#5: Slow — ") and len(str(msg["Subject"])) < 120


def test_subject_lines() -> None:
    head = "Disk latency on disk:esx-01.lab.local/naa.5000c500a1b2c3d4 (+2 more) across 4 hosts"
    assert subject_line(head, "Bug 7: slow VMs") == f"[vsandx] Bug 7: slow VMs — {head}"
    assert subject_line(head, None) == f"[vsandx] {head}"
    cut = subject_line(head, f"Bug 123456: {LONG_TITLE}")
    assert len(cut) <= MAX_SUBJECT and cut.startswith("[vsandx] Bug 123456: Customer") and cut.endswith(f"… — {head}")
    assert "  " not in cut and " …" not in cut  # cut at a word, cleanly
    huge = "Disk latency on disk:" + "x" * 200
    for ctx in (f"o/r#5: {LONG_TITLE}", "bundle " + "b" * 300 + ".tgz", None, "\r\n".join(["Bug 1: a"] * 50)):
        s = subject_line(huge, ctx)
        assert len(s) <= MAX_SUBJECT and s.endswith("…") and "\n" not in s and "\r" not in s, s
    assert subject_line(huge, "o/r#5: t").startswith("[vsandx] o/r#5 — Disk latency on disk:xxx")
    assert shorten("alpha beta gamma delta", 12) == "alpha beta…" and shorten("short", 12) == "short"
    assert len(shorten("x" * 50, 10)) == 10


def test_public_url_warning() -> None:
    def s(**kw: Any) -> NotifySettings:
        return NotifySettings(_env_file=None, **kw)  # type: ignore[call-arg]

    assert public_url_warning(s()) is None  # mail is off: no link goes anywhere
    assert NotifySettings.model_fields["public_url"].default == DEFAULT_PUBLIC_URL
    for url in (DEFAULT_PUBLIC_URL, DEFAULT_PUBLIC_URL + "/", "http://localhost:9000", "https://[::1]/"):
        why = public_url_warning(s(smtp_host="mail.example", public_url=url))
        assert why is not None and "VSANDX_PUBLIC_URL" in why, url
    assert public_url_warning(s(smtp_host="mail.example", public_url="https://vsandx.corp.example")) is None


def test_the_service_warns_at_start(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from service.app import create_app
    from service.queue.webhook_jobs import Integrations
    from service.trackers.base import TrackerSettings
    from tests.service.kit import service_settings

    trackers = TrackerSettings(_env_file=None)  # type: ignore[call-arg]
    with caplog.at_level(logging.WARNING, logger="service.app"):
        create_app(service_settings(tmp_path / "a", None), Integrations(trackers, mail_settings(25, public_url=PUBLIC)))
        assert not [r for r in caplog.records if "VSANDX_PUBLIC_URL" in r.getMessage()]
        left = mail_settings(25, public_url=DEFAULT_PUBLIC_URL)
        create_app(service_settings(tmp_path / "b", None), Integrations(trackers, left))
    (warning,) = [r for r in caplog.records if "VSANDX_PUBLIC_URL" in r.getMessage()]
    assert warning.levelno == logging.WARNING and "127.0.0.1:8000" in warning.getMessage()
