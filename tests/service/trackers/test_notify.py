"""Emailed reports against a real local SMTP server (aiosmtpd): structure, inline charts, headers and
envelope safe from tracker data, send-once, STARTTLS (required, verified) and login. The report's
charts, onset words, subject and links: test_report_mail.py."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from diagnosis.predictor import Predictor
from pipeline.api import load_bundle
from service.trackers.notify import (
    InvalidAddress,
    MailError,
    MemorySentLog,
    NotifySettings,
    ReportChart,
    build_report,
    key_chart_png,
    message_id,
    parse_address,
    recipients,
    report_charts,
    send_report,
)  # fmt: skip
from tests.service.deliveries import mail_settings
from tests.service.fakes import Received, SmtpServer, self_signed

Report = tuple[dict[str, Any], list[ReportChart]]


@pytest.fixture(scope="module")
def report(model_dir: Path, bundles: list[Path]) -> tuple[dict[str, Any], list[ReportChart]]:
    """A real diagnosis with findings, and each finding's chart."""
    p = Predictor.load(str(model_dir))
    for b in bundles:
        doc = p.diagnose(b)
        if doc["findings"]:
            key = key_chart_png(load_bundle(b), doc)
            charts = report_charts(load_bundle(b), doc)
            assert key is not None and charts and charts[0].png == key[0]
            return doc, charts
    raise AssertionError("no simulated bundle got a finding from the test model")


def only(server: SmtpServer) -> Received:
    assert len(server.received) == 1, server.received
    return server.received[0]


def test_report_structure_chart_and_link(report: Report) -> None:
    doc, charts = report
    png = charts[0].png
    assert png is not None
    with SmtpServer() as server:
        res = send_report(doc, diagnosis_id="job-42", reporter="Reporter <rep@bugs.example>",
                          settings=mail_settings(server.port), sent_log=MemorySentLog(), charts=charts[:1],
                          context="Bug 7: slow VMs")  # fmt: skip
        got = only(server)
    assert res.sent and res.to == ["rep@bugs.example", "team@perf.example", "lead@perf.example"]
    assert got.mail_from == "vsandx@diag.example" and got.rcpt_tos == res.to
    msg = got.message
    assert msg["Message-ID"] == res.message_id and msg["Auto-Submitted"] == "auto-generated"
    assert [a.addr_spec for a in msg["To"].addresses] == res.to and msg["Bcc"] is None
    top = doc["findings"][0]
    assert msg["Subject"].startswith("[vsandx] Bug 7: slow VMs") and top["component"] in msg["Subject"]
    assert msg.get_content_type() == "multipart/alternative"
    text, related = list(msg.iter_parts())
    assert text.get_content_type() == "text/plain" and related.get_content_type() == "multipart/related"
    html, image = list(related.iter_parts())
    assert html.get_content_type() == "text/html" and image.get_content_type() == "image/png"
    assert image.get_content() == png and png.startswith(b"\x89PNG")
    cid = image["Content-ID"].strip("<>")
    assert f'src="cid:{cid}"' in html.get_content()
    url = "https://vsandx.example/diagnoses/job-42"
    for body in (text.get_content(), html.get_content()):
        assert url in body
        for f in doc["findings"]:
            assert f["component"] in body
        assert top["recommendation"].split(",")[0] in body and top["evidence"][0].split(" (")[0] in body


def test_tracker_data_cannot_inject_headers_or_recipients(report: Report) -> None:
    doc = report[0]
    with SmtpServer() as server:
        res = send_report(doc, diagnosis_id="job-1\r\nX-Evil: 1", reporter="a@b.c\r\nBcc: evil@x.example",
                          settings=mail_settings(server.port), sent_log=MemorySentLog(),
                          context="Bug 9: urgent\r\nBcc: evil2@x.example\nX-Injected: yes")  # fmt: skip
        got = only(server)
    assert any("reporter" in r and "control characters" in r for r in res.refused)
    assert got.rcpt_tos == ["team@perf.example", "lead@perf.example"]
    raw = got.data.decode()
    head = raw.split("\r\n\r\n", 1)[0] if "\r\n\r\n" in raw else raw.split("\n\n", 1)[0]
    names = [line.split(":", 1)[0].lower() for line in re.split(r"\r?\n", head) if line and not line[0].isspace()]
    assert "bcc" not in names and "x-injected" not in names and "x-evil" not in names
    assert "evil" not in " ".join(got.rcpt_tos)
    subject = got.message["Subject"]  # the injection kept as text (and shortened: the subject stays short)
    assert "\n" not in subject and "Bug 9: urgent Bcc" in subject and len(subject) < 120


def test_address_validation() -> None:
    assert parse_address("Alice <a.b+c@ex-ample.org>").addr_spec == "a.b+c@ex-ample.org"
    for bad in ("a@b.c\nBcc: x@y", "a@b.c, evil@x.y", "a@b.c; x@y", '"q"@x.y', "nobody", "a@-x.y", "a@b\x00.c"):
        with pytest.raises(InvalidAddress):
            parse_address(bad)
    to, refused = recipients("A@x.org", ["a@X.org", "b@y.org", "bad"])
    assert [a.addr_spec for a in to] == ["A@x.org", "b@y.org"] and refused == [
        "team: 'bad' is not one plain email address"
    ]


def test_message_id_is_deterministic() -> None:
    to = [parse_address("a@x.org"), parse_address("b@y.org")]
    mid = message_id("d1", to, "bugzilla:1", "diag.example")
    assert mid == message_id("d1", list(reversed(to)), "bugzilla:1", "diag.example")
    assert re.fullmatch(r"<vsandx\.[0-9a-f]{40}@diag\.example>", mid)
    assert len({mid, message_id("d2", to, "bugzilla:1", "diag.example"), message_id("d1", to[:1], "bugzilla:1",
               "diag.example"), message_id("d1", to, "github:x/y#1", "diag.example")}) == 4  # fmt: skip
    doc = {"findings": [], "components": []}
    a = build_report(doc, diagnosis_id="d1", sender=to[0], to=to, url=None)
    b = build_report(doc, diagnosis_id="d1", sender=to[0], to=to, url=None)
    assert a["Message-ID"] == b["Message-ID"] and a.get_content_type() == "multipart/alternative"


def test_second_send_is_skipped(report: Report) -> None:
    log = MemorySentLog()
    with SmtpServer() as server:
        s = mail_settings(server.port)
        first = send_report(report[0], diagnosis_id="job-7", reporter="r@x.org", settings=s, sent_log=log)
        again = send_report(report[0], diagnosis_id="job-7", reporter="r@x.org", settings=s, sent_log=log)
        other = send_report(report[0], diagnosis_id="job-7", reporter="r@x.org", settings=s, sent_log=log,
                            purpose="weekly")  # fmt: skip
        assert first.sent and not again.sent and other.sent
        assert again.message_id == first.message_id != other.message_id
        assert len(server.received) == 2


def test_starttls_required_but_not_offered_fails_without_sending(report: Report) -> None:
    log = MemorySentLog()
    with SmtpServer() as server:
        with pytest.raises(MailError, match="does not offer STARTTLS") as e:
            send_report(report[0], diagnosis_id="j", reporter=None,
                        settings=mail_settings(server.port, smtp_starttls=True), sent_log=log)  # fmt: skip
        assert not e.value.transient and server.received == []
    # nothing recorded as sent: the retry after fixing the server sends it
    with SmtpServer() as server:
        assert send_report(report[0], diagnosis_id="j", reporter=None, settings=mail_settings(server.port),
                           sent_log=log).sent  # fmt: skip


def test_starttls_verified_and_login(tmp_path: Path, report: Report) -> None:
    cert, key = self_signed(tmp_path)
    with SmtpServer(tls=(cert, key), users={"svc": "s3cret"}) as server:
        # the system store does not trust a self-signed certificate: refused, nothing sent
        with pytest.raises(MailError, match="certificate not trusted"):
            send_report(report[0], diagnosis_id="j", reporter=None, sent_log=MemorySentLog(),
                        settings=mail_settings(server.port, smtp_starttls=True))  # fmt: skip
        assert server.received == []
        s = mail_settings(server.port, smtp_starttls=True, smtp_ca_file=cert, smtp_user="svc", smtp_password="s3cret")
        assert send_report(report[0], diagnosis_id="j", reporter=None, settings=s, sent_log=MemorySentLog()).sent
        got = only(server)
        assert got.tls and got.login == "svc"
        bad = mail_settings(server.port, smtp_starttls=True, smtp_ca_file=cert, smtp_user="svc", smtp_password="nope")
        with pytest.raises(MailError, match="535"):
            send_report(report[0], diagnosis_id="k", reporter=None, settings=bad, sent_log=MemorySentLog())


def test_password_never_sent_in_clear(report: Report) -> None:
    with SmtpServer() as server:
        s = mail_settings(server.port, smtp_user="svc", smtp_password="pw")
        with pytest.raises(MailError, match="without TLS"):
            send_report(report[0], diagnosis_id="j", reporter=None, settings=s, sent_log=MemorySentLog())
        assert server.received == []


def test_unreachable_server_is_transient(report: Report) -> None:
    from tests.service.fakes import free_port

    with pytest.raises(MailError, match=r"127\.0\.0\.1") as e:
        send_report(report[0], diagnosis_id="j", reporter=None, settings=mail_settings(free_port()),
                    sent_log=MemorySentLog())  # fmt: skip
    assert e.value.transient


def test_team_list_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VSANDX_TEAM_EMAILS", "a@x.org, Bee <b@y.org>")
    monkeypatch.setenv("VSANDX_SMTP_PORT", "2525")
    s = NotifySettings(_env_file=None)  # type: ignore[call-arg]
    assert s.team_emails == ["a@x.org", "Bee <b@y.org>"] and s.smtp_port == 2525 and s.smtp_starttls


def test_unicode_line_breaks_stay_inside_the_subject() -> None:
    to = [parse_address("a@x.org")]
    doc: dict[str, Any] = {"findings": [], "components": []}
    for ctx in ("Bug 1: a\u2028Bcc: e@x.org", "Bug 1: a\x85X-Evil: 1", "Bug 1:\u2029\x0bX-Evil: 2"):
        raw = build_report(doc, diagnosis_id="d\u2028X-Id: 2", sender=to[0], to=to, url=None, context=ctx).as_bytes()
        head = raw.split(b"\n\n", 1)[0].decode()
        names = {line.split(":", 1)[0].lower() for line in head.splitlines() if line and not line[0].isspace()}
        assert not names & {"bcc", "x-evil", "x-id"}, head


def test_hostile_names_in_the_document_stay_text() -> None:
    """A bundle's component names reach the subject (headline), the text and the HTML part: no header,
    no markup, no mathtext-style failure."""
    to = [parse_address("a@x.org")]
    nasty = "disk:esx$a^{$\r\nBcc: e@x.org\u2028X-Evil: 1 <script>alert(1)</script> =?utf-8?q?Hi?="
    finding = {"component": nasty, "fault": "disk.latency", "confidence": 0.9, "summary": nasty,
               "recommendation": nasty, "evidence": [nasty]}  # fmt: skip
    doc: dict[str, Any] = {"findings": [finding], "components": [], "bundle": {"hosts": [nasty]}}
    msg = build_report(doc, diagnosis_id="d1", sender=to[0], to=to, url="https://v.x/diagnoses/d1")
    raw = msg.as_bytes()
    head = raw.split(b"\n\n", 1)[0].decode()
    names = {line.split(":", 1)[0].lower() for line in head.splitlines() if line and not line[0].isspace()}
    assert not names & {"bcc", "x-evil"}, head
    assert "\n" not in str(msg["Subject"]) and "esx$a^{$" in str(msg["Subject"])
    text, html_part = msg.get_body(("plain",)), msg.get_body(("html",))
    assert text is not None and html_part is not None
    assert "esx$a^{$" in text.get_content() and "\r" not in text.get_content()
    assert "<script>" not in html_part.get_content() and "&lt;script&gt;" in html_part.get_content()
