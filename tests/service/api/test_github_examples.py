"""GitHub's own example deliveries (the npm package @octokit/webhooks-examples: every `issues` action,
`issue_comment` and `ping`, github.com and Enterprise 3.1-3.5), each sent signed through the real
application twice: as JSON and as the form GitHub's settings page preselects
(`application/x-www-form-urlencoded`, the JSON in its `payload` field). Then what the worker says on
an issue: one request for a bundle when there is none, however often the issue is edited or the
delivery replayed, and refusals in words.

The package is installed on first use under var/npm/ (ignored by git) when npm is there; without npm,
or offline, these tests skip, and under CI (VSANDX_REQUIRE_SERVICES=1) they fail instead."""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import urlencode

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import delete, select

from service.app import create_app
from service.queue.webhook_jobs import KIND, Integrations
from service.store import bundle_store
from service.store.tables import Job, WebhookDelivery
from service.trackers import webhooks
from service.trackers.notify import MemorySentLog, NotifySettings
from tests.conftest import REPO, require
from tests.service.deliveries import bz_body, gh_body, gh_headers, tsettings
from tests.service.fakes import FakeTracker
from tests.service.kit import service_settings

PACKAGE = "@octokit/webhooks-examples"
EVENTS = ("issues", "issue_comment", "ping")
GH = "/api/v1/webhooks/github"
FORM = "application/x-www-form-urlencoded"
WATCHED = "bug"  # a label the examples carry: their issues count as vSAN performance ones here
ACTIONS = {"opened", "labeled", "reopened", "edited"}  # the actions a diagnosis waits for (README)


@pytest.fixture(scope="session")
def examples() -> list[tuple[str, str, dict[str, Any]]]:
    """(where: api.github.com or ghes-3.x, event name, payload) of every example of EVENTS."""
    prefix = REPO / "var" / "npm"
    root = prefix / "node_modules" / "@octokit" / "webhooks-examples"
    if not (root / "package.json").exists():
        npm = shutil.which("npm")
        require("npm", npm is not None, f"needed to install {PACKAGE} (apt-get install npm)")
        assert npm is not None
        prefix.mkdir(parents=True, exist_ok=True)
        cmd = [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--no-save", PACKAGE]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
            why = done.stderr.strip()[-300:]
        except subprocess.TimeoutExpired:
            done, why = None, "npm install timed out (offline?)"
        require(PACKAGE, done is not None and done.returncode == 0 and root.exists(), f"npm install failed: {why}")
    found = []
    for index in sorted(root.glob("*/index.json")):
        for event in json.loads(index.read_text()):
            if event["name"] in EVENTS:
                found += [(index.parent.name, event["name"], ex) for ex in event["examples"]]
    assert len(found) >= 40, f"{len(found)} examples in {root}: not the package expected"
    return found


def expected(event: str, payload: dict[str, Any]) -> str:
    """What the first delivery of an example should get: queued when it is an issue event the service
    acts on (a watched action, and a watched label on the issue, the one added when labelled)."""
    if event != "issues" or payload["action"] not in ACTIONS:
        return "ignored"
    labels = {x["name"] for x in payload["issue"].get("labels") or []}
    if payload["action"] == "labeled" and payload.get("label", {}).get("name") != WATCHED:
        return "ignored"
    return "queued" if WATCHED in labels else "ignored"


def send(c: TestClient, event: str, raw: bytes, form: bool, delivery: str) -> dict[str, Any]:
    """One delivery the way GitHub sends it: signed over the body as sent."""
    body = urlencode({"payload": raw.decode()}).encode() if form else raw
    headers = {**gh_headers(body, event=event, delivery=delivery), "User-Agent": "GitHub-Hookshot/044aadd",
               "Content-Type": FORM if form else "application/json", "X-GitHub-Hook-ID": "42"}  # fmt: skip
    r = c.post(GH, content=body, headers=headers)
    assert r.status_code == 200, (event, form, r.status_code, r.text)
    return dict(r.json())


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    integ = Integrations(tsettings(github_labels=[WATCHED], tracker_stale_after_s=1e10),
                         NotifySettings(_env_file=None))  # type: ignore[call-arg]  # fmt: skip
    # no worker (embedded_workers=0) and no model: what a delivery queues stays in the jobs table
    settings = service_settings(tmp_path / "var", tmp_path / "no-model", embedded_workers=0)
    with TestClient(create_app(settings, integ)) as c:
        yield c


def queued_bodies(c: TestClient) -> list[str]:
    state: Any = c.app.state  # type: ignore[attr-defined]
    with state.database.session() as db:
        shas = db.scalars(select(Job.sha256).where(Job.kind == KIND).order_by(Job.created_at)).all()
    paths = [bundle_store.bundle_path(state.settings, sha) for sha in shas]
    return [json.loads(p.read_bytes())["body"] for p in paths if p is not None]


def test_every_example_as_json_and_as_a_form(
    client: TestClient, examples: list[tuple[str, str, dict[str, Any]]]
) -> None:
    """Each example alone (the ledger emptied between them: the examples of one issue are years apart
    and in no order): the first encoding gets its outcome, the other encoding of the same payload under
    a new delivery id is a replay (the signed payload is the same), a redelivery too."""
    state: Any = client.app.state  # type: ignore[attr-defined]
    outcomes: dict[str, int] = {}
    for i, (where, event, payload) in enumerate(examples):
        with state.database.session() as db:
            db.execute(delete(WebhookDelivery))
            db.commit()
        raw = json.dumps(payload).encode()
        first_form = i % 2 == 1
        want = expected(event, payload)
        ids = [str(uuid.uuid4()) for _ in range(2)]
        got = send(client, event, raw, first_form, ids[0])
        assert got["status"] == want, (where, event, payload.get("action"), got)
        again = send(client, event, raw, not first_form, ids[1])
        assert again["status"] == ("replay" if want == "queued" else "ignored"), (where, event, again)
        assert send(client, event, raw, first_form, ids[0])["status"] == again["status"]
        if want == "queued":
            assert queued_bodies(client)[-1] == raw.decode()  # the worker gets the JSON, from a form too
        outcomes[want] = outcomes.get(want, 0) + 1
    print(f"{len(examples)} examples: {outcomes}")
    assert outcomes.get("queued", 0) >= 5 and outcomes.get("ignored", 0) >= 20
    assert len(queued_bodies(client)) == outcomes["queued"]
    metrics = client.get("/metrics").text
    n = 3 * len(examples)
    counted = sum(float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines()
                  if line.startswith('vsandx_webhook_deliveries_total{outcome="'))  # fmt: skip
    assert counted == n, metrics
    assert f'vsandx_webhook_deliveries_total{{outcome="queued",tracker="github"}} {outcomes["queued"]}.0' in metrics


def test_content_types_and_form_bodies(client: TestClient) -> None:
    """A 400 names the content type it got and those it takes; a form is bounded, signed and read
    like a JSON body."""
    raw = gh_body(labels=(WATCHED,))
    body = b"just text"
    r = client.post(GH, content=body, headers={**gh_headers(body), "Content-Type": "text/plain; charset=utf-8"})
    assert r.status_code == 400 and "'text/plain'" in r.json()["error"] and FORM in r.json()["error"], r.text
    for bad in (b"payload=%7Bnot-json", b"other=1", b"payload=1&payload=2", b"payload=%FF%FE", b"a=1&" * 40):
        r = client.post(GH, content=bad, headers={**gh_headers(bad), "Content-Type": FORM})
        assert r.status_code == 400 and FORM in r.json()["error"], (bad, r.text)
    # JSON that is not an issues payload: the 400 says which content type it was read as
    r = client.post(GH, content=b"[]", headers={**gh_headers(b"[]"), "Content-Type": "application/json"})
    assert r.status_code == 400 and "application/json" in r.json()["error"]
    form = urlencode({"payload": raw.decode()}).encode()
    # the signature is over the form as sent, not over the JSON inside it
    r = client.post(GH, content=form, headers={**gh_headers(raw), "Content-Type": FORM})
    assert r.status_code == 401
    big = b"payload=" + b"%20" * (webhooks.WEBHOOK_MAX_BODY // 3 + 1)

    def chunks() -> Iterator[bytes]:
        yield from (big[i : i + 65536] for i in range(0, len(big), 65536))

    r = client.post(GH, content=chunks(), headers={**gh_headers(big), "Content-Type": FORM})
    assert r.status_code == 413
    r = client.post(GH, content=form, headers={**gh_headers(form), "Content-Type": FORM + "; charset=utf-8"})
    assert r.status_code == 200 and r.json()["status"] == "queued"
    metrics = client.get("/metrics").text
    assert 'vsandx_webhook_deliveries_total{outcome="bad_payload",tracker="github"} 7.0' in metrics
    assert 'vsandx_webhook_deliveries_total{outcome="unauthorized",tracker="github"} 1.0' in metrics


def no_diagnosis(name: str, src: BinaryIO) -> tuple[str, Any, Path]:
    raise AssertionError(f"nothing should be diagnosed here ({name})")


def test_one_request_for_a_bundle_per_issue(examples: list[tuple[str, str, dict[str, Any]]]) -> None:
    """The examples GitHub would have the service act on carry no bundle: each issue gets one comment
    asking for one, whatever number of its events arrive (opened, edited, labelled, each replayed)."""
    relevant = [p for _, e, p in examples if expected(e, p) == "queued"]
    assert relevant
    log = MemorySentLog()
    with FakeTracker() as t:
        s = tsettings(t.url, github_labels=[WATCHED], tracker_stale_after_s=1e10)
        notify = NotifySettings(_env_file=None, public_url="https://vsandx.example")  # type: ignore[call-arg]
        for payload in relevant + relevant:
            job = {"source": "github", "body": json.dumps(payload),
                   "headers": {"X-GitHub-Event": "issues", "X-GitHub-Delivery": str(uuid.uuid4())}}  # fmt: skip
            webhooks.run(job, trackers=s, notify=notify, diagnose=no_diagnosis, sent_log=log)
        issues = {f"{p['repository']['full_name']}#{p['issue']['number']}" for p in relevant}
        assert sorted(where for where, _ in t.comments) == sorted(issues)
        for _, text in t.comments:
            assert "support bundle" in text and "vm-support" in text and "Export System Logs" in text
            assert "description" in text and len(text) < 1000


def test_refusals_in_words_and_a_bug_without_a_bundle() -> None:
    """A link that answers 404 is told as such (no HEAD, no raw answer); a Bugzilla bug with no
    attachment gets the request for a bundle, once."""
    log = MemorySentLog()
    notify = NotifySettings(_env_file=None, public_url="https://vsandx.example")  # type: ignore[call-arg]
    with FakeTracker() as t:
        s = tsettings(t.url)
        raw = gh_body(body=f"bundle: {t.url}/files/missing-bundle.tgz")
        job = {"source": "github", "body": raw.decode(),
               "headers": {"X-GitHub-Event": "issues", "X-GitHub-Delivery": "r-1"}}  # fmt: skip
        out = webhooks.run(job, trackers=s, notify=notify, diagnose=no_diagnosis, sent_log=log)
        ((_, text),) = t.comments
        assert (f"The bundle link missing-bundle.tgz ({t.url}/files/missing-bundle.tgz) could not be downloaded: "
                "the server answered 404 Not Found.") in text  # fmt: skip
        assert "HEAD" not in text and "HTTP 404" not in text and "Attach the bundle" in text, text
        assert not out.asked  # a link was there: the refusal says what to do
        t.bugs[101] = {
            "id": 101,
            "product": "vSAN",
            "component": "Performance",
            "keywords": [],
            "summary": "slow",
            "creator": "r@bugs.example",
            "status": "NEW",
            "last_change_time": "2026-11-22T08:00:00Z",
        }
        t.attachments[101] = []
        bz = {"source": "bugzilla", "body": bz_body().decode(), "headers": {}}
        for _ in range(2):
            webhooks.run(bz, trackers=s, notify=notify, diagnose=no_diagnosis, sent_log=log)
        assert [where for where, _ in t.comments] == ["o/r#5", "101"]
        assert "Attach it to this bug" in t.comments[1][1] and "vm-support" in t.comments[1][1]


def test_outcome_labels_are_bounded() -> None:
    assert webhooks.Answer(200, {"status": "whatever the client made up"}).outcome == "other"
    assert webhooks.Answer(418, {}).outcome == "other"
    assert {webhooks.Answer(c, {}).outcome for c in (400, 401, 413, 503)} <= set(webhooks.OUTCOMES)
