"""Bug-tracker integration against a local server speaking the Bugzilla REST and GitHub shapes: webhook
authentication, relevance, size checks before any download, comments, replays and stale deliveries;
the Bugzilla flow also emails the report through a real local SMTP server."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, BinaryIO

import pytest

from diagnosis.predictor import Predictor
from service.trackers import bugzilla, github, webhooks
from service.trackers.base import (
    Admission,
    BadPayload,
    Delivery,
    MemoryLedger,
    TrackerHTTPError,
    TrackerSettings,
    Unauthorized,
    admit,
    is_bundle,
)  # fmt: skip
from service.trackers.flow import Diagnose, handle_bugzilla
from service.trackers.notify import MemorySentLog, NotifySettings
from tests.service.deliveries import LIMIT, SECRET, bz_body, fill_bugzilla, gh_body, gh_headers, tsettings
from tests.service.fakes import BzAttachment, FakeTracker, SmtpServer


@pytest.fixture(scope="module")
def diagnose(model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Diagnose:
    p = Predictor.load(str(model_dir))
    folder = tmp_path_factory.mktemp("attachments")

    def run(name: str, src: BinaryIO) -> tuple[str, dict[str, Any], Path]:
        stored = folder / f"{len(list(folder.iterdir()))}-{name}"
        with open(stored, "wb") as out:
            shutil.copyfileobj(src, out, 1 << 20)
        doc = p.diagnose(stored, name=name)
        return "d-" + doc["bundle"]["sha256"][:12], doc, stored

    return run


def test_bugzilla_webhook_secret_and_payload() -> None:
    s = tsettings()
    body = bz_body(changes=[{"field": "keywords", "added": "vsan-perf", "removed": ""}])
    with pytest.raises(Unauthorized, match="missing X-Vsandx-Webhook-Secret"):
        bugzilla.receive(body, {}, s)
    with pytest.raises(Unauthorized, match="wrong secret"):
        bugzilla.receive(body, {"X-Vsandx-Webhook-Secret": SECRET + "x"}, s)
    with pytest.raises(Unauthorized, match="not set"):
        bugzilla.receive(body, {"X-Vsandx-Webhook-Secret": SECRET}, tsettings(bugzilla_webhook_secret=None))
    ev = bugzilla.receive(body, {"x-vsandx-webhook-secret": f" {SECRET} "}, s)
    assert (ev.bug_id, ev.action, ev.change_set, ev.user, ev.webhook) == (101, "create", "9.1.2", "rep@bugs.example",
                                                                         "vsandx")  # fmt: skip
    assert ev.time.tzinfo is not None and ev.changed == {"keywords"} and ev.routing_key == "bug.create"
    for bad in (b"not json", b"{}", json.dumps({"event": {"action": "create", "time": "x"}, "bug": {"id": 1}}).encode(),
                json.dumps({"event": {"action": "create"}, "bug": {"id": 0}}).encode()):  # fmt: skip
        with pytest.raises(BadPayload):
            bugzilla.parse_event(bad)


def test_replays_and_stale_deliveries() -> None:
    now = datetime.now(UTC)
    ledger, max_age = MemoryLedger(), 3600.0

    def d(body: bytes) -> Delivery:
        return bugzilla.parse_event(body).delivery

    first = d(bz_body(when=now - timedelta(minutes=5), change_set="1"))
    assert admit(first, ledger, max_age, now) is Admission.ACCEPT
    assert admit(d(bz_body(when=now - timedelta(minutes=5), change_set="1")), ledger, max_age, now) is Admission.REPLAY
    # an older change of the same bug arriving late, and a too-old one
    assert admit(d(bz_body(when=now - timedelta(minutes=9), change_set="0")), ledger, max_age, now) is Admission.STALE
    assert admit(d(bz_body(bug_id=7, when=now - timedelta(hours=2))), ledger, max_age, now) is Admission.STALE
    # same second, another change set: a distinct change; another bug is independent of bug 101's history
    assert admit(d(bz_body(when=now - timedelta(minutes=5), change_set="2")), ledger, max_age, now) is Admission.ACCEPT
    assert admit(d(bz_body(bug_id=8, when=now - timedelta(minutes=30))), ledger, max_age, now) is Admission.ACCEPT
    assert first.subject == "bugzilla:101" and len(first.key) <= 80
    s = tsettings()
    assert bugzilla.wanted(bugzilla.parse_event(bz_body()), s)
    assert not bugzilla.wanted(bugzilla.parse_event(bz_body(action="comment")), s)
    assert not bugzilla.wanted(bugzilla.parse_event(bz_body(action="modify", changes=[{"field": "status"}])), s)
    assert bugzilla.wanted(bugzilla.parse_event(bz_body(action="modify", changes=[{"field": "component"}])), s)


def bug(
    bug_id: int, product: str = "vSAN", component: str = "Performance", keywords: tuple[str, ...] = ()
) -> bugzilla.Bug:
    return bugzilla.Bug(bug_id, product, component, "s", keywords, None, "NEW", None)


def test_bugzilla_relevance_rules() -> None:
    s = tsettings()
    assert bugzilla.is_relevant(bug(1), s)[0]
    assert not bugzilla.is_relevant(bug(1, product="Firefox"), s)[0]
    assert not bugzilla.is_relevant(bug(1, component="Install"), s)[0]
    ok, why = bugzilla.is_relevant(bug(1, component="Install", keywords=("VSAN-PERF",)), s)
    assert ok and "vsan-perf" in why
    assert bugzilla.is_relevant(bug(1, product="x", component="y"), tsettings(bugzilla_products=[],
                                bugzilla_components=[], bugzilla_keywords=[]))[0]  # fmt: skip
    assert tsettings(bugzilla_products="vSAN, ESXi").bugzilla_products == ["vSAN", "ESXi"]
    assert is_bundle("x.TGZ", None) and is_bundle("blob", "application/gzip") and not is_bundle("a.txt", "text/plain")


def test_bugzilla_flow_comment_and_email_once(bundles: list[Path], diagnose: Diagnose) -> None:
    event = bugzilla.parse_event(bz_body())
    log = MemorySentLog()
    with FakeTracker() as t, SmtpServer() as smtp:
        fill_bugzilla(t, bundles[0])
        notify = NotifySettings(_env_file=None, smtp_host="127.0.0.1", smtp_port=smtp.port, smtp_starttls=False,  # type: ignore[call-arg]
                                mail_from="vsandx@diag.example", team_emails=["team@perf.example"],
                                public_url="https://vsandx.example")  # fmt: skip
        out = handle_bugzilla(event, trackers=tsettings(t.url), notify=notify, diagnose=diagnose, sent_log=log)
        assert out.relevant and [r.name for r in out.reports] == [bundles[0].name]
        assert any("huge.tgz" in r and "over the" in r for r in out.refused)
        gets = t.paths("GET")
        assert "/rest/bug/attachment/1?include_fields=id%2Cdata" in gets
        assert not any(p.startswith(("/rest/bug/attachment/2", "/rest/bug/attachment/3", "/rest/bug/attachment/4"))
                       for p in gets)  # fmt: skip
        meta = next(i for i, p in enumerate(gets) if p.startswith("/rest/bug/101/attachment"))
        assert meta < gets.index("/rest/bug/attachment/1?include_fields=id%2Cdata")
        assert all(h.get("x-bugzilla-api-key") == "bz-key" for _, p, h in t.requests if p.startswith("/rest/"))
        ((bug_id, text),) = t.comments
        report = out.reports[0]
        assert bug_id == "101" and f"https://vsandx.example/diagnoses/{report.diagnosis_id}" in text
        assert "huge.tgz" in text and "Not diagnosed" in text
        for f in report.doc["findings"]:
            assert f["component"] in text and f["recommendation"] in text
        (mail,) = smtp.received
        assert mail.rcpt_tos == ["rep@bugs.example", "team@perf.example"]
        msg = mail.message
        assert msg["Bcc"] is None and "Bug 101: VMs slow" in msg["Subject"]
        if report.doc["findings"]:
            assert any(p.get_content_type() == "image/png" for p in msg.walk())
        # the task runs again (a retry, a replayed delivery that got past the ledger): nothing new goes out
        again = handle_bugzilla(event, trackers=tsettings(t.url), notify=notify, diagnose=diagnose, sent_log=log)
        assert again.comment_id is None and [m.sent for m in again.mails] == [False]
        assert len(t.comments) == 1 and len(smtp.received) == 1
        # a second bundle attached later: one more comment about it alone, one more email
        t.attachments[101].append(BzAttachment(6, bundles[1].name, "application/octet-stream", bundles[1].read_bytes()))
        later = handle_bugzilla(event, trackers=tsettings(t.url), notify=notify, diagnose=diagnose, sent_log=log)
        assert later.comment_id is not None and len(t.comments) == 2 and len(smtp.received) == 2
        assert bundles[1].name in t.comments[1][1] and bundles[0].name not in t.comments[1][1]
        assert "huge.tgz" not in t.comments[1][1]


def test_non_vsan_bug_is_left_alone(diagnose: Diagnose) -> None:
    with FakeTracker() as t:
        t.bugs[102] = {"id": 102, "product": "Firefox", "component": "General", "summary": "s", "keywords": [],
                       "creator": "a@b.example", "status": "NEW"}  # fmt: skip
        out = handle_bugzilla(bugzilla.parse_event(bz_body(bug_id=102)), trackers=tsettings(t.url),
                              notify=NotifySettings(_env_file=None), diagnose=diagnose, sent_log=MemorySentLog())  # type: ignore[call-arg]  # fmt: skip
        assert not out.relevant and "Firefox" in out.reason
        assert t.paths() == ["/rest/bug/102?include_fields=" + bugzilla.BUG_FIELDS.replace(",", "%2C")]
        assert t.comments == []


def test_bugzilla_rest_errors() -> None:
    with FakeTracker() as t:
        t.bugs[5] = {"id": 5, "product": "vSAN", "component": "Performance"}
        t.attachments[5] = [BzAttachment(9, "b.tgz", "application/gzip", b"y" * 500, size=10)]
        with bugzilla.BugzillaClient(tsettings(t.url, bugzilla_api_key="wrong")) as bz, \
                pytest.raises(TrackerHTTPError, match="401") as e:  # fmt: skip
            bz.get_bug(5)
        assert not e.value.transient
        with bugzilla.BugzillaClient(tsettings(t.url)) as bz:
            with pytest.raises(TrackerHTTPError, match="404"):
                bz.get_bug(6)
            (a,) = bz.attachments(5)
            with pytest.raises(TrackerHTTPError, match="more than 10 bytes where the metadata said"), bz.open(a) as s:
                s.read()


def test_github_signature() -> None:
    s, body = tsettings(), gh_body()
    ev = github.receive(body, gh_headers(body), s)
    assert ev is not None and (ev.repo, ev.number, ev.user, ev.labels) == ("o/r", 5, "octo", ("vsan-performance",))
    assert ev.delivery.key == "github:d-1" and ev.delivery.subject == "github:o/r#5"
    with pytest.raises(Unauthorized, match="does not match"):
        github.receive(body + b" ", gh_headers(body), s)
    with pytest.raises(Unauthorized, match="does not match"):
        github.receive(body, gh_headers(body, secret="other"), s)
    with pytest.raises(Unauthorized, match="missing"):
        github.receive(body, {"X-GitHub-Event": "issues"}, s)
    with pytest.raises(Unauthorized, match="not set"):
        github.receive(body, gh_headers(body), tsettings(github_webhook_secret=None))
    ping = b'{"zen": "Keep it simple."}'
    assert github.receive(ping, gh_headers(ping, event="ping"), s) is None
    with pytest.raises(BadPayload):
        github.receive(b"[]", gh_headers(b"[]"), s)
    with pytest.raises(BadPayload, match="X-GitHub-Delivery"):
        github.receive(body, {**gh_headers(body), "X-GitHub-Delivery": "a\r\nb"}, s)


def test_github_relevance_and_links() -> None:
    s = tsettings()

    def ev(**kw: Any) -> github.IssueEvent:
        body = gh_body(**kw)
        e = github.parse_event(body, gh_headers(body))
        assert e is not None
        return e

    assert github.is_relevant(ev(), s)[0]
    assert github.is_relevant(ev(action="labeled", label="vsan-performance"), s)[0]
    assert not github.is_relevant(ev(action="labeled", label="docs"), s)[0]
    assert not github.is_relevant(ev(action="closed"), s)[0]
    assert not github.is_relevant(ev(labels=()), s)[0]
    assert github.is_relevant(ev(labels=(), title="vSAN latency spikes on cluster B"), s)[0]
    text = ("see [vc-export.zip](https://github.com/o/r/files/1/vc-export.zip) and "
            "https://objects.githubusercontent.com/x/esx-01.tgz, [log](https://github.com/u/a/files/2/notes.txt) "
            "[evil.tgz](https://evil.example/evil.tgz) https://github.com/o/r/files/1/vc-export.zip")  # fmt: skip
    links = github.bundle_links(text, tsettings(github_download_hosts=["github.com", "objects.githubusercontent.com"]))
    assert [(x.name, x.url) for x in links] == [
        ("vc-export.zip", "https://github.com/o/r/files/1/vc-export.zip"),
        ("esx-01.tgz", "https://objects.githubusercontent.com/x/esx-01.tgz"),
    ]


def test_github_flow(bundles: list[Path], diagnose: Diagnose) -> None:
    with FakeTracker() as t:
        t.files["lab.tgz"] = bundles[0].read_bytes()
        t.files["big.tgz"] = b"z" * (LIMIT + 1)
        out_of_list = f"http://localhost:{t.port}/files/lab.tgz"
        body = (f"Bundle: [lab.tgz]({t.url}/redirect//files/lab.tgz)\nbig one {t.url}/files/big.tgz\n"
                f"gone {t.url}/files/gone.tgz\nsneaky [x.tgz]({t.url}/redirect/{out_of_list})\n"
                f"elsewhere {out_of_list}")  # fmt: skip
        raw = gh_body(body=body)
        s, ledger = tsettings(t.url), MemoryLedger()
        answer = webhooks.accept("github", raw, gh_headers(raw, delivery="abc-1"), s, ledger)
        assert answer.status == 200 and answer.payload["status"] == "queued" and answer.job is not None
        job = json.loads(json.dumps(answer.job))  # what a task queue carries
        replay = webhooks.accept("github", raw, gh_headers(raw, delivery="abc-1"), s, ledger)
        assert (replay.status, replay.payload["status"], replay.job) == (200, "replay", None)
        log = MemorySentLog()
        notify = NotifySettings(_env_file=None, public_url="https://vsandx.example")  # type: ignore[call-arg]
        out = webhooks.run(job, trackers=s, notify=notify, diagnose=diagnose, sent_log=log)
        assert [r.name for r in out.reports] == ["lab.tgz"]
        assert len(out.refused) == 3 and not any(h["host"].startswith("localhost") for _, _, h in t.requests)
        reqs = [(m, p) for m, p, _ in t.requests]
        assert ("GET", "/files/big.tgz") not in reqs and ("HEAD", "/files/big.tgz") in reqs
        assert reqs.index(("HEAD", "/files/lab.tgz")) < reqs.index(("GET", "/files/lab.tgz"))
        assert all("authorization" not in h for _, p, h in t.requests if not p.startswith("/repos/"))
        ((where, text),) = t.comments
        assert where == "o/r#5" and f"https://vsandx.example/diagnoses/{out.reports[0].diagnosis_id}" in text
        assert "big.tgz" in text and "VSANDX_GITHUB_DOWNLOAD_HOSTS" in text
        webhooks.run(job, trackers=s, notify=notify, diagnose=diagnose, sent_log=log)
        assert len(t.comments) == 1


def test_sql_ledgers(tmp_path: Path) -> None:
    from sqlalchemy import Column, DateTime, MetaData, String, Table, create_engine
    from sqlalchemy.orm import sessionmaker

    from service.trackers.ledgers import SqlDeliveryLedger, SqlSentLog

    md = MetaData()
    when = DateTime(timezone=True)
    deliveries = Table("webhook_deliveries", md, Column("key", String(80), primary_key=True),
                       Column("source", String(16)), Column("subject", String(255), index=True),
                       Column("event_time", when), Column("received_at", when))  # fmt: skip
    sent = Table("sent_messages", md, Column("key", String(255), primary_key=True),
                 Column("sent_at", DateTime(timezone=True)))  # fmt: skip
    engine = create_engine(f"sqlite:///{tmp_path / 'l.db'}")
    md.create_all(engine)
    sessions = sessionmaker(engine)
    ledger, other_worker = SqlDeliveryLedger(sessions, deliveries), SqlDeliveryLedger(sessions, deliveries)
    now = datetime.now(UTC)
    d1 = bugzilla.parse_event(bz_body(when=now - timedelta(minutes=1), change_set="a")).delivery
    assert admit(d1, ledger, 3600, now) is Admission.ACCEPT
    assert admit(d1, other_worker, 3600, now) is Admission.REPLAY and not other_worker.claim(d1)
    assert ledger.newest("bugzilla:101") == d1.time and ledger.newest("bugzilla:7") is None
    late = bugzilla.parse_event(bz_body(when=now - timedelta(minutes=2), change_set="b")).delivery
    assert admit(late, other_worker, 3600, now) is Admission.STALE
    log = SqlSentLog(sessions, sent)
    assert not log.was_sent("<m@x>")
    log.mark_sent("<m@x>")
    log.mark_sent("<m@x>")
    assert SqlSentLog(sessions, sent).was_sent("<m@x>")


def test_webhook_answers() -> None:
    s, ledger = tsettings(), MemoryLedger()
    body, ok = bz_body(), {"X-Vsandx-Webhook-Secret": SECRET}

    def answer(b: bytes, h: dict[str, str], settings: TrackerSettings = s, source: str = "bugzilla") -> webhooks.Answer:
        return webhooks.accept(source, b, h, settings, ledger)  # type: ignore[arg-type]

    assert answer(body, {}).status == 401 and answer(body, {"X-Vsandx-Webhook-Secret": "no"}).job is None
    assert answer(b"{", ok).status == 400
    assert answer(b" " * (webhooks.WEBHOOK_MAX_BODY + 1), ok).status == 413
    assert answer(body, ok, tsettings(bugzilla_url=None)).status == 503
    first = answer(body, ok)
    assert first.status == 200 and first.job == {"source": "bugzilla", "body": body.decode(), "headers": {}}
    assert answer(body, ok).payload["status"] == "replay"
    assert answer(bz_body(action="comment", change_set="z"), ok).payload["status"] == "ignored"
    old = bz_body(when=datetime.now(UTC) - timedelta(days=30), change_set="y")
    assert (answer(old, ok).payload["status"], answer(old, ok).job) == ("stale", None)
    ping = b"{}"
    assert answer(ping, gh_headers(ping, event="ping"), source="github").payload["status"] == "ignored"
    gh = gh_body()
    assert answer(gh, gh_headers(gh, secret="x"), source="github").status == 401
    queued = answer(gh, gh_headers(gh, delivery="g-9"), source="github")
    assert queued.job is not None and queued.job["headers"] == {"X-GitHub-Event": "issues", "X-GitHub-Delivery": "g-9"}


def test_github_replay_under_a_new_delivery_id_is_a_replay(tmp_path: Path) -> None:
    """X-GitHub-Delivery is not signed: the same signed body sent again under new ids (3 times) queues
    nothing more; GitHub's own redelivery (same id, same body) is a replay as before; a new event is not."""
    from sqlalchemy import create_engine
    from sqlalchemy.orm import sessionmaker

    from service.store.tables import Base, WebhookDelivery
    from service.trackers.ledgers import SqlDeliveryLedger

    engine = create_engine(f"sqlite:///{tmp_path / 'l.db'}")
    Base.metadata.create_all(engine)
    table = Base.metadata.tables[WebhookDelivery.__tablename__]
    for ledger in (MemoryLedger(), SqlDeliveryLedger(sessionmaker(engine), table)):
        s, body = tsettings(), gh_body()
        first = webhooks.accept("github", body, gh_headers(body, delivery="d-1"), s, ledger)
        assert first.job is not None and len(first.claimed) == 2
        for delivery in ("d-1", "d-2", "d-3", "d-4"):
            again = webhooks.accept("github", body, gh_headers(body, delivery=delivery), s, ledger)
            assert (again.payload["status"], again.job, again.claimed) == ("replay", None, ())
        for key in first.claimed:  # queuing failed: the route forgets every key, the tracker's retry is admitted
            ledger.forget(key)
        retry = webhooks.accept("github", body, gh_headers(body, delivery="d-1"), s, ledger)
        assert retry.payload["status"] == "queued"
        edited = gh_body(action="edited", title="Slow again")
        later = webhooks.accept("github", edited, gh_headers(edited, delivery="d-5"), s, ledger)
        assert later.payload["status"] == "queued" and later.job is not None


def test_github_comment_is_markdown_proof() -> None:
    """GitHub renders comments as Markdown: names from the bundle or the issue stay text in a code block
    (no link, image, mention or HTML), and the service's own links follow it."""
    from service.trackers.flow import Report, comment_text

    nasty = "disk:![x](https://evil.example/p.png)<img src=x>@octo/team #1 [a](javascript:x) ```` end"
    finding = {"component": nasty, "fault": "disk.latency", "confidence": 0.9, "summary": "`x`",
               "recommendation": "r", "evidence": [nasty]}  # fmt: skip
    doc = {"bundle": {"hosts": ["h"]}, "components": [], "findings": [finding]}
    text = comment_text([Report("```\n@everyone.tgz", "j1", doc)], [f"{nasty}: refused"], "https://v.x", True)
    fence = "`" * 5  # longer than the longest backtick run inside
    assert text.startswith(fence + "text\n") and text.count(fence) == 2
    inside, after = text.split(fence + "\n", 2)[0], text.split(fence + "\n")[-1]
    assert nasty in inside and "evil" not in after and after.strip().endswith("https://v.x/diagnoses/j1")
    plain = comment_text([Report("a.tgz", "j1", doc)], [], "https://v.x")  # Bugzilla: plain text, as before
    assert "```" not in plain.split(nasty)[0]


def test_comment_text_fits_a_tracker() -> None:
    from service.trackers.flow import MAX_COMMENT, Report, comment_text

    finding = {"component": "disk:esx-01/naa.1", "fault": "disk.latency", "confidence": 0.9, "summary": "s",
               "recommendation": "Replace the device.", "evidence": ["e" * 500] * 40}  # fmt: skip
    doc = {"bundle": {"hosts": ["esx-01"]}, "components": [], "findings": [finding] * 5}
    short = comment_text([Report("a.tgz", "j1", {**doc, "findings": [finding]})], ["b.tgz: too big"], "https://v.x")
    assert "Replace the device." in short and "https://v.x/diagnoses/j1" in short and "- b.tgz: too big" in short
    long = comment_text([Report(f"{k}.tgz", f"j{k}", doc) for k in range(5)], [], "https://v.x")
    assert len(long) <= MAX_COMMENT and long.rstrip().endswith("https://v.x/diagnoses/j4")
    assert all(f"https://v.x/diagnoses/j{k}" in long for k in range(5)) and "[cut:" in long
    two = [{"label": "net.packet_loss", "score": 0.6}, {"label": "none", "score": 0.38}]
    review = [{"component": "nic:esx-01/vmnic0", "reason": "several labels fit", "candidates": two}]
    unsure = comment_text([Report("a.tgz", "j1", {**doc, "findings": [finding], "review": review})], [], "https://v.x")
    assert "Needs review (not findings): 1 component needs review" in unsure
    assert "- nic:esx-01/vmnic0: several labels fit; candidates net.packet_loss 60 %, none 38 %" in unsure
    assert unsure.index("Needs review") > unsure.index("Replace the device.") and "Needs review" not in short


def test_webhook_routes() -> None:
    from fastapi import FastAPI
    from fastapi.testclient import TestClient

    from service.api.webhooks import WebhookContext, router

    queued: list[dict[str, Any]] = []
    broken = {"on": False}

    def enqueue(job: dict[str, Any]) -> None:
        if broken["on"]:
            raise ConnectionError("broker down")
        queued.append(job)

    app = FastAPI()
    app.include_router(router)
    app.state.webhooks = WebhookContext(tsettings(), MemoryLedger(), enqueue)
    ok = {"X-Vsandx-Webhook-Secret": SECRET}
    with TestClient(app) as client:
        body = bz_body()  # once: a body made a second later would be another change
        r = client.post("/api/v1/webhooks/bugzilla", content=body, headers=ok)
        assert r.status_code == 200 and r.json()["status"] == "queued" and len(queued) == 1
        assert client.post("/api/v1/webhooks/bugzilla", content=body, headers=ok).json()["status"] == "replay"
        assert client.post("/api/v1/webhooks/bugzilla", content=body).status_code == 401
        big = b"{" + b" " * webhooks.WEBHOOK_MAX_BODY + b"}"
        assert client.post("/api/v1/webhooks/bugzilla", content=big, headers=ok).status_code == 413
        # the queue fails: 503, and the tracker's retry of the same delivery is admitted, not a replay
        other = bz_body(change_set="7")
        broken["on"] = True
        assert client.post("/api/v1/webhooks/bugzilla", content=other, headers=ok).status_code == 503
        broken["on"] = False
        assert client.post("/api/v1/webhooks/bugzilla", content=other, headers=ok).json()["status"] == "queued"
        gh = gh_body()
        r = client.post("/api/v1/webhooks/github", content=gh, headers=gh_headers(gh, delivery="r-1"))
        assert r.json()["status"] == "queued" and queued[-1]["headers"]["X-GitHub-Delivery"] == "r-1"
        assert len(queued) == 3
