"""The attack corpus of issue 18 (tests/attacks/corpus.py) through the service, as an attacker sends
it: an upload to the API, diagnosed by a `vsandx worker` process on the embedded queue.

For each crafted bundle: the API refuses it at upload (the first member is checked there) or queues
it; the job ends `failed` with the reason `vsandx parse` gives (the file and the limit), or `done`
for the bundles the parser reads with a warning; the worker process lives on (no watchdog breach,
no crash) with its peak RSS during the job below a ceiling above what it held before; and opening
the diagnosis page and its charts never reads the stored bundle again in the API process.

The worker's peak is measured per job: writing "5" to /proc/PID/clear_refs resets its VmHWM
(Linux >= 4.0), so each job's peak is its own. CPU seconds (utime + stime from /proc/PID/stat)
bound the work; wall time only guards against a hang, since the machine is shared.
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
from tests.attacks.corpus import CASES, SLOW, Case
from tests.service.kit import model_dir, start_worker, stop_process, until
from tests.service.test_tasks import settings_of

__all__ = ["model_dir"]  # fixture

MAX_JOB_RSS = 700 * 1024 * 1024  # above the worker's resident set before the job (model loaded)
MAX_JOB_CPU_S = 40.0  # parse (20 s budget in tests/pipeline/test_attacks.py) plus the model and charts
MAX_WALL_S = 180.0
_TICK = os.sysconf("SC_CLK_TCK")


def _status(pid: int, key: str) -> int:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no {key} for process {pid}")


def _cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK  # utime, stime (fields 14, 15 of stat(5))


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


def _submit(svc: Service, case: Case) -> tuple[dict[str, Any], int, float]:
    """Upload the case and wait for its job; (final status document or refusal, job peak RSS above
    the worker's resident set before it, worker CPU seconds)."""
    until(lambda: os.path.exists(f"/proc/{svc.pid}"), timeout=5)
    with open(f"/proc/{svc.pid}/clear_refs", "w") as fh:
        fh.write("5")  # reset the worker's VmHWM: this job's peak alone
    rss0, cpu0 = _status(svc.pid, "VmRSS"), _cpu_s(svc.pid)
    with open(case.path, "rb") as fh:
        r = svc.client.post("/api/v1/diagnoses", files={"bundle": (case.path.name, fh)})
    if r.status_code != 202:
        return {"status": "refused", "code": r.status_code, "error": r.text}, 0, 0.0
    url = r.json()["status_url"]
    doc = until(lambda: (x := svc.client.get(url).json())["status"] in ("done", "failed") and x, timeout=MAX_WALL_S)
    return doc, _status(svc.pid, "VmHWM") - rss0, _cpu_s(svc.pid) - cpu0


_PARAMS = [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in CASES]


@pytest.mark.parametrize("name", _PARAMS)
def test_attack_upload(name: str, corpus_dir: Path, services: GetService, monkeypatch: pytest.MonkeyPatch) -> None:
    case = CASES[name](corpus_dir)
    svc = services(case.env)
    for k, v in case.env.items():  # the API's upload check reads the pipeline limits from the environment
        monkeypatch.setenv(k, v)
    try:
        doc, peak, cpu = _submit(svc, case)
    finally:
        case.path.unlink(missing_ok=True)
    print(f"{name}: {doc['status']}, job peak +{peak / 2**20:.0f} MiB, {cpu:.1f} s CPU")
    assert os.path.exists(f"/proc/{svc.pid}") and _status(svc.pid, "VmRSS") > 0, "the worker died"
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
    assert peak < MAX_JOB_RSS, f"{name}: the job's peak was {peak / 2**20:.0f} MiB above the worker's"
    assert cpu < MAX_JOB_CPU_S, f"{name}: {cpu:.1f} s of worker CPU"
    if doc["status"] == "done":
        _page_reads_nothing(svc, doc["id"], monkeypatch)


def _page_reads_nothing(svc: Service, job_id: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The diagnosis page and its charts come from what the worker stored: the API process never
    looks the stored bundle up again (once it re-parsed a bomb to draw charts: 4.4 GB, 143 s)."""
    from service import store

    def refuse(*a: object, **k: object) -> None:
        raise AssertionError("the page looked up the stored bundle")

    monkeypatch.setattr(store, "bundle_path", refuse)
    monkeypatch.setattr(store, "_bundle_file", refuse)
    page = svc.client.get(f"/diagnoses/{job_id}")
    assert page.status_code == 200, page.text[:500]
    notes = svc.client.get(f"/api/v1/diagnoses/{job_id}").json()["diagnosis"]["bundle"]["warnings"]
    assert ('id="reading-notes"' in page.text) == bool(notes)
    for k in range(3):
        r = svc.client.get(f"/diagnoses/{job_id}/charts/{k}.png")
        assert r.status_code in (200, 404), r.text[:300]
