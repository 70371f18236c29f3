"""Chaos: a worker is killed (SIGKILL) in the middle of a diagnosis; another worker takes the job over
and it finishes exactly once — one diagnosis row, the job done by its second attempt, nothing lost —
within issue 18's bounds from the kill to the job's end (tests/attacks/bounds.py: the API process and
every surviving worker process, pool children included, under 600 MB above idle, under 20 s).

- embedded: a `vsandx worker` process on the database queue; the other worker sees that the lease's
  holder is a dead process of this machine and takes the job at once.
- celery-child: the Celery pool process running the task dies; the message is rejected back to Redis
  (reject_on_worker_lost) and redelivered at once.
- celery-worker: a whole Celery worker dies with the message unacknowledged (Redis would redeliver it
  only after the visibility timeout); the API's maintenance re-sends the job when its lease runs out
  and the other worker finishes it.
"""

from __future__ import annotations

import os
import signal
from contextlib import ExitStack
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from service.app import create_app
from service.queue.celery_app import DIAGNOSES
from service.store.tables import Diagnosis
from tests.attacks.bounds import bounded, bounded_tree
from tests.conftest import require
from tests.service.kit import redis_available, redis_env, settings_of, start_worker, stop_process, until


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["embedded", "celery-child", "celery-worker"])
def test_killed_worker_job_finishes_exactly_once(
    mode: str, tmp_path: Path, model_dir: Path, bundles: list[Path]
) -> None:
    env = {
        "VSANDX_DATA_DIR": str(tmp_path / "var"),
        "VSANDX_MODEL_URI": str(model_dir),
        "VSANDX_TASK_TIME_LIMIT_S": "5",
        "VSANDX_LEASE_S": "6",
        "VSANDX_VISIBILITY_TIMEOUT_S": "3600",  # Redis itself would redeliver only after an hour
        "VSANDX_MODEL_POLL_S": "1",  # the API's maintenance round (and re-sends) every second
    }
    if mode != "embedded":
        require("Redis at 127.0.0.1:6379", redis_available(), "start it: redis-server --daemonize yes")
        env |= redis_env("chaos")
    args = ["--concurrency", "1"] + (["--queues", DIAGNOSES] if mode != "embedded" else [])
    marker = tmp_path / "stalled.pid"
    log = tmp_path / "workers.log"
    # two workers from the start; whichever takes the job first stalls in it and is killed
    workers = [start_worker(env | {"VSANDX_TEST_STALL": str(marker)}, *args, log=log) for _ in range(2)]
    settings = settings_of(env, embedded_workers=0)  # only the worker processes diagnose
    try:
        with TestClient(create_app(settings)) as c:
            r = c.post("/api/v1/diagnoses", files={"bundle": ("chaos.tgz", bundles[0].read_bytes())})
            assert r.status_code == 202, r.text
            url = r.json()["status_url"]
            until(marker.exists, timeout=60)
            stalled = int(until(lambda: marker.read_text().strip()))
            assert c.get(url).json()["status"] == "running"
            group = os.getpgid(stalled)  # its worker's process group (the pool child's parent's)
            survivors = [p.pid for p in workers if p.pid != (group if mode == "celery-worker" else stalled)]
            with ExitStack() as watched:  # issue 18's bounds from the kill to the job's end
                watched.enter_context(bounded(f"{mode}: the API process after the kill"))
                for pid in survivors:  # a survivor takes the job over (a new pool child, maybe)
                    watched.enter_context(bounded_tree(f"{mode}: worker {pid} after the kill", pid, {stalled}))
                if mode == "celery-worker":
                    os.killpg(group, signal.SIGKILL)  # the whole worker: main process and pool
                else:
                    os.kill(stalled, signal.SIGKILL)  # the process in the middle of the diagnosis
                    for p in workers:  # reap it, as its parent would: a zombie still looks alive
                        if p.pid == stalled:
                            p.wait(10)
                res = until(lambda: (x := c.get(url).json())["status"] in ("done", "failed") and x, timeout=60)
            assert res["status"] == "done" and res["attempts"] == 2, (res, log.read_text()[-3000:])
            assert res["diagnosis"]["schema"] == "vsandx.diagnosis/1"
            with c.app.state.database.session() as db:  # type: ignore[attr-defined]
                assert db.scalar(select(func.count()).select_from(Diagnosis)) == 1
            assert c.get("/api/v1/diagnoses").json()["total"] == 1
    finally:
        for p in workers:
            stop_process(p)
