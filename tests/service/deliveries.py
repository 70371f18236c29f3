"""Tracker deliveries for the tests: the trackers' settings against a local fake, Bugzilla and GitHub
webhook bodies and signatures, a fake Bugzilla filled with a bug and its attachments, and the mail
settings for the local SMTP server. Shared by the tracker, mail, webhook-route and end-to-end webhook
tests."""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from service.trackers.base import TrackerSettings
from service.trackers.notify import NotifySettings
from tests.service.fakes import BzAttachment, FakeTracker

SECRET, GH_SECRET, LIMIT = "hook-secret", "gh-secret", 3_000_000


def tsettings(url: str = "http://127.0.0.1:9", **kw: Any) -> TrackerSettings:
    base: dict[str, Any] = dict(bugzilla_url=url, bugzilla_api_key="bz-key", bugzilla_webhook_secret=SECRET,
                                github_api_url=url, github_token="gh-token", github_webhook_secret=GH_SECRET,
                                github_download_hosts=["127.0.0.1"], tracker_max_attachment_bytes=LIMIT,
                                tracker_timeout_s=10)  # fmt: skip
    base.update(bugzilla_products=["vSAN"], bugzilla_components=["Performance"], bugzilla_keywords=["vsan-perf"],
                bugzilla_actions=["create", "attachment", "modify"], github_labels=["vsan-performance"],
                github_title_keywords=["vsan latency"], bugzilla_secret_header="X-Vsandx-Webhook-Secret",
                tracker_max_attachments=5, tracker_stale_after_s=7 * 86400.0)  # fmt: skip
    return TrackerSettings(_env_file=None, **{**base, **kw})  # type: ignore[call-arg]


def bz_body(bug_id: int = 101, action: str = "create", when: datetime | None = None, change_set: str = "9.1.2",
            changes: list[dict[str, str]] | None = None) -> bytes:  # fmt: skip
    t = (when or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%S")
    return json.dumps({
        "webhook_name": "vsandx", "webhook_id": 3,
        "event": {"action": action, "target": "bug", "routing_key": f"bug.{action}", "change_set": change_set,
                  "time": t, "user": {"id": 5, "login": "rep@bugs.example"}, "changes": changes or []},
        "bug": {"id": bug_id, "product": "vSAN", "component": "Performance", "summary": "slow", "keywords": []},
    }).encode()  # fmt: skip


def fill_bugzilla(t: FakeTracker, bundle: Path) -> None:
    t.bugs[101] = {"id": 101, "product": "vSAN", "component": "Performance", "keywords": [],
                   "summary": "VMs slow\r\nBcc: x@evil.example", "creator": "rep@bugs.example", "status": "NEW",
                   "last_change_time": "2026-11-22T08:00:00Z"}  # fmt: skip
    t.bugs[102] = {**t.bugs[101], "id": 102, "product": "Firefox", "component": "General"}
    t.attachments[101] = [
        BzAttachment(1, bundle.name, "application/gzip", bundle.read_bytes()),
        BzAttachment(2, "huge.tgz", "application/x-compressed-tar", b"x" * 100, size=LIMIT + 1),
        BzAttachment(3, "old.tgz", "application/gzip", b"x", is_obsolete=True),
        BzAttachment(4, "notes.txt", "text/plain", b"hello"),
    ]
    t.attachments[102] = [BzAttachment(5, bundle.name, "application/gzip", b"x")]


def gh_headers(body: bytes, event: str = "issues", secret: str = GH_SECRET, delivery: str = "d-1") -> dict[str, str]:
    sig = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return {"X-Hub-Signature-256": sig, "X-GitHub-Event": event, "X-GitHub-Delivery": delivery}


def gh_body(action: str = "opened", labels: tuple[str, ...] = ("vsan-performance",), title: str = "Slow",
            body: str = "", label: str | None = None, when: datetime | None = None) -> bytes:  # fmt: skip
    issue = {"number": 5, "title": title, "body": body, "labels": [{"name": x} for x in labels],
             "user": {"login": "octo"}, "updated_at": (when or datetime.now(UTC)).isoformat().replace("+00:00", "Z"),
             "html_url": "https://github.com/o/r/issues/5"}  # fmt: skip
    payload: dict[str, Any] = {"action": action, "issue": issue, "repository": {"full_name": "o/r"}}
    if label:
        payload["label"] = {"name": label}
    return json.dumps(payload).encode()


def mail_settings(port: int, **kw: Any) -> NotifySettings:
    """SMTP to the local test server on `port`, every field given (a developer's .env must not count)."""
    base: dict[str, Any] = dict(smtp_host="127.0.0.1", smtp_port=port, smtp_starttls=False, smtp_timeout_s=5,
                                mail_from="vsandx <vsandx@diag.example>", team_emails=["team@perf.example",
                                "Ops Lead <lead@perf.example>"], public_url="https://vsandx.example/")  # fmt: skip
    # every field that matters is given: a developer's .env or VSANDX_* variables must not change the test
    base.update(smtp_ssl=False, smtp_ca_file=None, smtp_user=None, smtp_password=None, smtp_allow_plain_auth=False)
    return NotifySettings(_env_file=None, **{**base, **kw})  # type: ignore[call-arg]
