"""The attack corpus of issue 18 (tests/attacks/corpus.py) through the service, as an attacker sends
it: an upload to the API, diagnosed by a `vsandx worker` process on the embedded queue.

For each crafted bundle: the API refuses it at upload (the first member is checked there) or queues
it; the job ends `failed` with the reason `vsandx parse` gives (the file and the limit), or `done`
for the bundles the parser reads with a warning; the worker process lives on (no watchdog breach,
no crash) with its peak RSS during the job below a ceiling above what it held before; and opening
the diagnosis page and its charts never reads the stored bundle again in the API process.

Issue 18's bounds (tests/attacks/bounds.py), per case: the worker's peak RSS during the job under
600 MB above what it held before it (idle, model loaded), the API process's (this one: the TestClient
runs it here, and it checks the first member at upload) likewise, and the wall time from the upload's
first byte to the job's end under 20 s. Each process's peak is reset before the case (clear_refs), so
each case's peak is its own. The worker's CPU seconds are reported beside the wall time: on a shared
machine the wall time also measures the neighbours.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from tests.attacks.bounds import MiB, Watch, bounded, proc_status
from tests.attacks.corpus import CASES, SLOW, Case
from tests.service.kit import settings_of, start_worker, stop_process, until

HANG_S = 120.0  # stop waiting here; the bound (20 s) is asserted with the figure


@dataclass
class Service:
    client: TestClient
    pid: int  # the worker process


GetService = Callable[[dict[str, str]], Service]


@pytest.fixture(scope="module")
def services(
    tmp_path_factory: pytest.TempPathFactory, model_dir: Path
) -> Iterator[Callable[[dict[str, str]], Service]]:
    """One API and one worker per distinct case environment, started on first use."""
    made: dict[str, Service] = {}
    with ExitStack() as stack:

        def get(env_extra: dict[str, str]) -> Service:
            key = repr(sorted(env_extra.items()))
            if key not in made:
                root = tmp_path_factory.mktemp("attack-service")
                env = {"VSANDX_DATA_DIR": str(root / "var"), "VSANDX_MODEL_URI": str(model_dir), **env_extra}
                p = start_worker(env, "--concurrency", "1", log=root / "worker.log")
                stack.callback(stop_process, p)
                client = stack.enter_context(TestClient(create_app(settings_of(env, embedded_workers=0))))
                made[key] = Service(client, p.pid)
            return made[key]

        yield get


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("attacks-upload")


@dataclass
class Trial:
    doc: dict[str, Any]  # the final status document, or the refusal
    worker: Watch
    api: Watch  # this process


def _submit(svc: Service, case: Case) -> Trial:
    """Upload the case and wait for its job to end, watching the worker and the API process."""
    until(lambda: os.path.exists(f"/proc/{svc.pid}"), timeout=5)
    worker, api = Watch.start(svc.pid), Watch.start()
    with open(case.path, "rb") as fh:
        r = svc.client.post("/api/v1/diagnoses", files={"bundle": (case.path.name, fh)})
    if r.status_code != 202:
        return Trial({"status": "refused", "code": r.status_code, "error": r.text}, worker.stop(), api.stop())
    url = r.json()["status_url"]
    doc = until(lambda: (x := svc.client.get(url).json())["status"] in ("done", "failed") and x, timeout=HANG_S)
    return Trial(doc, worker.stop(), api.stop())


_PARAMS = [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in CASES]


@pytest.mark.parametrize("name", _PARAMS)
def test_attack_upload(name: str, corpus_dir: Path, services: GetService, monkeypatch: pytest.MonkeyPatch) -> None:
    case = CASES[name](corpus_dir)
    svc = services(case.env)
    for k, v in case.env.items():  # the API's upload check reads the pipeline limits from the environment
        monkeypatch.setenv(k, v)
    try:
        t = _submit(svc, case)
    finally:
        case.path.unlink(missing_ok=True)
    doc, wall = t.doc, t.worker.wall_s()
    print(
        f"{name}: {doc['status']}, {wall:.1f} s wall, worker +{t.worker.peak_above_idle() / MiB:.0f} MiB "
        f"{t.worker.cpu_s():.1f} s CPU, API +{t.api.peak_above_idle() / MiB:.0f} MiB"
    )
    assert os.path.exists(f"/proc/{svc.pid}") and proc_status(svc.pid, "VmRSS") > 0, "the worker died"
    if case.outcome == "reject":
        assert doc["status"] in ("refused", "failed"), doc
        if doc["status"] == "refused":
            assert doc["code"] in (413, 422), doc
        assert case.expect in doc["error"] and case.where in doc["error"], doc["error"]
        assert "memory limit exceeded" not in doc["error"], doc["error"]  # the parser refused it, not the watchdog
    else:
        assert doc["status"] == "done", doc
        assert doc["attempts"] == 1, doc
        notes = doc["diagnosis"]["bundle"]["warnings"]
        if case.outcome == "warn":  # what was cut reaches the engineer with the verdict
            assert any(case.expect in w for w in notes), notes
    t.worker.check(f"{name} (worker job)")
    t.api.check(f"{name} (API process, upload to job end)")
    if doc["status"] == "done":
        _page_reads_nothing(svc, name, doc["id"], monkeypatch)


def _page_reads_nothing(svc: Service, name: str, job_id: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The diagnosis page and its charts come from what the worker stored: the API process never
    looks the stored bundle up again (once it re-parsed a bomb to draw charts: 4.4 GB, 143 s), and
    opening them stays within the bounds."""
    from service.store import bundle_store

    def refuse(*a: object, **k: object) -> None:
        raise AssertionError("the page looked up the stored bundle")

    monkeypatch.setattr(bundle_store, "bundle_path", refuse)
    monkeypatch.setattr(bundle_store, "_bundle_file", refuse)
    with bounded(f"opening the page of {name}"):
        page = svc.client.get(f"/diagnoses/{job_id}")
        charts = [svc.client.get(f"/diagnoses/{job_id}/charts/{k}.png") for k in range(3)]
    assert page.status_code == 200, page.text[:500]
    notes = svc.client.get(f"/api/v1/diagnoses/{job_id}").json()["diagnosis"]["bundle"]["warnings"]
    assert ('id="reading-notes"' in page.text) == bool(notes)
    if notes:  # shown in the page's body, not its <head>
        assert page.text.index('id="reading-notes"') > page.text.index("<body")
    for r in charts:
        assert r.status_code in (200, 404), r.text[:300]
