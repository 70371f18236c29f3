"""Issue 18's row "8 clients for 3 minutes with 0 errors and no duplicate diagnosis": 8 concurrent
clients for 3 minutes (VSANDX_TEST_LOAD_S, 180 by default: `make test` runs the whole row) against a
real `vsandx serve` whose two worker processes share the embedded queue (two claimants for every job),
with the benchmark's closed-loop clients (benchmarks/bench_service.py `Load`: `POST
/api/v1/diagnoses?wait=true`, every answer a diagnosis or an error). Each body is sent twice in a row,
so identical bytes arrive at the same time. The server's wait bound is raised to 50 s: on a loaded
2-core machine a slow answer is a 202 the benchmark would count as an error, and this test is about
errors and duplicates; the bound it holds each upload to is issue 18's 20 s.

Issue 18's bounds over the whole run (tests/attacks/bounds.py `bounded_tree`): serve and each worker
process under 600 MB above what it held when the clients began, and every upload answered within 20 s.
Then, in the service's database: one job per upload, each done by its first attempt (no job taken by
two workers), and one diagnosis per distinct bundle, the one every job of those bytes points at."""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select

from benchmarks.bench_service import Load
from service.store.db import Database
from service.store.tables import Diagnosis, Job
from tests.attacks.bounds import MAX_WALL_S, bounded_tree
from tests.service.kit import serving, until

CLIENTS = 8
SECONDS = float(os.environ.get("VSANDX_TEST_LOAD_S", "180"))


@pytest.mark.slow
def test_concurrent_clients_get_no_error_and_no_duplicate_diagnosis(
    tmp_path: Path, model_dir: Path, bundles: list[Path]
) -> None:
    env = {
        "VSANDX_DATA_DIR": str(tmp_path / "var"),
        "VSANDX_MODEL_URI": str(model_dir),
        "VSANDX_WORKER_PROCESSES": "2",
        "VSANDX_WAIT_TIMEOUT_S": "50",
    }
    with serving(env, log=tmp_path / "serve.log") as (url, p):
        until(lambda: "2 worker process(es)" in httpx.get(f"{url}/ready").json()["queue"], timeout=60, every=0.3)
        load = Load(url, [b.read_bytes() for b in bundles], None, twice=True)
        with bounded_tree(f"{CLIENTS} clients for {SECONDS:.0f} s", p.pid, max_wall_s=SECONDS + 60):
            res = load.run(CLIENTS, SECONDS)
    print({k: res[k] for k in ("requests", "errors", "per_second", "latency_ms")})
    assert res["errors"] == 0, res["first_errors"]
    assert res["latency_ms"]["max"] < 1000 * MAX_WALL_S, res["latency_ms"]  # each upload within the bound
    assert res["requests"] >= 2 * CLIENTS, res  # the clients really overlapped

    db = Database(f"sqlite:///{tmp_path / 'var' / 'vsandx.db'}", run_migrations=False)
    try:
        with db.session() as s:
            jobs = {j.id: j for j in s.scalars(select(Job).where(Job.kind == "diagnose"))}
            diagnoses = s.execute(select(Diagnosis.id, Diagnosis.sha256)).all()
    finally:
        db.dispose()
    answered = {job_id: sha for job_id, sha, _ in load.answered}
    assert len(answered) == len(load.answered) == res["requests"]  # one job per upload
    assert set(jobs) == set(answered)
    assert all(attempts == 1 for *_, attempts in load.answered)
    assert [(j.status, j.attempts) for j in jobs.values()] == [("done", 1)] * len(jobs)  # none taken twice

    of_sha: dict[str, list[int]] = defaultdict(list)
    for diagnosis_id, sha in diagnoses:
        of_sha[sha].append(diagnosis_id)
    assert set(of_sha) == set(answered.values())
    assert all(len(ids) == 1 for ids in of_sha.values()), {k: v for k, v in of_sha.items() if len(v) > 1}
    assert all(j.diagnosis_id == of_sha[j.sha256][0] and j.sha256 == answered[j.id] for j in jobs.values())
    assert len(of_sha) < len(jobs)  # identical bytes did arrive more than once, and made one diagnosis
