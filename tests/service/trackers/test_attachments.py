"""Tracker attachments stream into the store (service.trackers.attachments): a Bugzilla attachment or a GitHub
link is copied chunk by chunk into the upload spool, never held whole, so a worker's peak memory stays
flat however large the attachment; one that grows past its size is refused, naming it, with the
connection dropped long before the rest was sent, and nothing left in the spool. The base64-in-JSON
reader is checked on its own against every split of the answer."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from diagnosis.serving import ModelHolder
from service.queue.webhook_jobs import Integrations, WebhookWorker
from service.store.db import Database
from service.trackers.attachments import NotTheAnswer, json_b64_field, reader
from service.trackers.notify import NotifySettings
from tests.attacks.bounds import MiB, Watch
from tests.service.deliveries import bz_body, gh_body, gh_headers, tsettings
from tests.service.fakes import BzAttachment, FakeTracker, Stream
from tests.service.kit import service_settings

PATH = ("attachments", "7", "data")
BIG = 96 * MiB  # an attachment within the limit, far larger than a worker may hold for it
FLAT = 48 * MiB  # what the worker's peak may grow by while it streams BIG bytes
LIMIT = 128 * MiB


def test_base64_data_decoded_from_any_split() -> None:
    data = os.urandom(30001)
    raw = json.dumps({"bugs": {}, "x": [1, -2.5e3, True, None, {"\u00e9": "a\\"}],
                      "attachments": {"7": {"data": base64.b64encode(data).decode(), "id": 7}}})  # fmt: skip
    raw = raw.replace("/", "\\/").encode()  # JSON may escape the solidus
    for step in (1, 3, 4, 7, 4096, len(raw)):
        pieces = iter([raw[i : i + step] for i in range(0, len(raw), step)])
        assert reader(json_b64_field(pieces, PATH)).read() == data, step
    for bad in (b'{"attachments": {"7": {"data": "QQ=="}}} x', b'{"attachments": {"7": {"data": "QQ==QUJD"}}}',
                b'{"attachments": {"7": {"data": "QQ"}}}', b'{"attachments": {"8": {"data": "QQ=="}}}',
                b'{"attachments": {"7": {"data": "QQ==", "data": "QQ=="}}}', b'{"a": tru}', b"[" * 100,
                b'{"attachments": {"7": {"data": "QQ=="}}', b'{"attachments": {"7": {"data": "Q!=="}}}'):  # fmt: skip
        with pytest.raises(NotTheAnswer):
            b"".join(json_b64_field(iter([bad]), PATH))


@pytest.fixture
def worker(tmp_path: Path, model_dir: Path) -> Iterator[tuple[WebhookWorker, FakeTracker]]:
    settings = service_settings(tmp_path / "var", model_dir)
    database = Database(f"sqlite:///{tmp_path / 'vsandx.db'}")
    holder = ModelHolder(settings)
    holder.get()  # loaded before anything is measured
    with FakeTracker() as t:
        t.bugs[101] = {"id": 101, "product": "vSAN", "component": "Performance", "keywords": [], "summary": "slow",
                       "creator": "rep@bugs.example", "status": "NEW"}  # fmt: skip
        integ = Integrations(tsettings(t.url, tracker_max_attachment_bytes=LIMIT), NotifySettings(_env_file=None))  # type: ignore[call-arg]
        yield WebhookWorker(database, settings, holder, integ), t
    database.dispose()


def bugzilla_job() -> dict[str, Any]:
    return {"source": "bugzilla", "body": bz_body(bug_id=101).decode(), "headers": {}}


def github_job(url: str) -> dict[str, Any]:
    raw = gh_body(body=f"Bundle: [big.tgz]({url}/files/big.tgz)")
    return {"source": "github", "body": raw.decode(), "headers": {k: v for k, v in gh_headers(raw).items()
                                                                  if not k.startswith("X-Hub")}}  # fmt: skip


def spool_is_empty(w: WebhookWorker) -> bool:
    tmp = w.settings.bundles_dir / "tmp"
    return not tmp.is_dir() or not any(tmp.iterdir())


@pytest.mark.parametrize("source", ["bugzilla", "github"])
def test_a_large_attachment_streams_through_a_flat_worker(
    source: str, worker: tuple[WebhookWorker, FakeTracker]
) -> None:
    w, t = worker
    st = Stream(BIG, BIG)
    t.attachments[101] = [BzAttachment(1, "big.tgz", "application/gzip", b"", stream=st)]
    t.streams["big.tgz"] = st
    watch = Watch.start()
    done = w.run(bugzilla_job() if source == "bugzilla" else github_job(t.url))
    watch.stop()
    print(f"{source}: {BIG / MiB:.0f} MiB attachment, peak {watch.peak_above_idle() / MiB:+.0f} MiB")
    # every byte came (all of it was read and hashed into the spool), and it was judged like an upload
    assert st.done.wait(10) and not st.dropped
    (refused,) = done["refused"]
    assert "big.tgz" in refused and "could not be read as a vSAN support bundle" in refused, refused
    assert spool_is_empty(w) and not any(w.settings.bundles_dir.glob("??/*"))
    # memory only: how long it takes is a benchmark's business, not a unit test's
    assert watch.peak_above_idle() < FLAT, f"peak {watch.peak_above_idle() / MiB:.0f} MiB above idle"


@pytest.mark.parametrize("source", ["bugzilla", "github"])
def test_an_attachment_past_its_size_is_cut_off(source: str, worker: tuple[WebhookWorker, FakeTracker]) -> None:
    w, t = worker
    st = Stream(1024 * MiB, 2 * MiB)  # says 2 MiB, then sends on and on
    t.attachments[101] = [BzAttachment(1, "big.tgz", "application/gzip", b"", stream=st)]
    t.streams["big.tgz"] = st
    done = w.run(bugzilla_job() if source == "bugzilla" else github_job(t.url))
    (refused,) = done["refused"]
    # in words on the bug (the byte counts and the URL's answer go to the log)
    if source == "bugzilla":
        assert refused.startswith("The attachment big.tgz could not be downloaded: Bugzilla sent more than the 2 MiB")
    else:
        link = f"The bundle link big.tgz ({t.url}/files/big.tgz)"
        assert refused.startswith(f"{link} could not be downloaded: the server sent more than the 2 MiB"), refused
    assert st.done.wait(10) and st.dropped, "the connection was not dropped"
    print(f"{source}: {st.sent / MiB:.1f} MiB of 1024 MiB sent before the connection was dropped")
    assert st.sent < 64 * MiB, f"{st.sent / MiB:.0f} MiB sent before the connection was dropped"
    assert spool_is_empty(w) and not any(w.settings.bundles_dir.glob("??/*"))
    assert done["diagnoses"] == [] and len(t.comments) == 1 and "big.tgz" in t.comments[0][1]
