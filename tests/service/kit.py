"""Helpers shared by the service backend's tests: a small trained model, simulated bundles, settings
on a fresh data folder, a real `vsandx serve`, and waiting for a job. The fixtures built on them
(model_dir, bundles, edge_server) are in conftest.py."""

from __future__ import annotations

import io
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, text

from data.simulate.runner import simulate_many
from diagnosis.charts import Chart, Panel
from diagnosis.onset import Onset
from models.registry import create_model
from service.store import bundle_store, diagnosis_store, job_store
from tests.conftest import require
from training.datasets import DatasetSpec, build, load_dataset
from vsandx.components import kind_of
from vsandx.settings import ServiceSettings


def train_small_model(root: Path) -> Path:
    """logreg on 12 simulated lab bundles, saved as a model folder (seconds)."""
    X, y = load_dataset(build(DatasetSpec("lab", 12, seed=41, issue_rate=0.7), root, workers=1, progress=False))
    return create_model("logreg").fit(X, y).save(root / "model")


def simulate_bundles(out: Path, model: Path, n: int = 2, seed: int = 42, pool: int = 10) -> list[Path]:
    """n lab bundles (4 hosts each) in which `model` finds a fault: simulated with faults, and those the
    small model calls healthy left out, so that the tests which need a finding do not hang on what
    the simulator happens to draw."""
    from diagnosis.predictor import Predictor

    simulate_many("lab", pool, out, seed=seed, issue_rate=1.0, workers=1, progress=False)
    predictor = Predictor.load(str(model))
    found: list[Path] = []
    for path in sorted(out.glob("lab-*.tgz")):
        if len(found) < n and predictor.diagnose(path)["findings"]:
            found.append(path)
        else:
            path.unlink()
    assert len(found) == n, f"the small model found a fault in {len(found)} of {pool} simulated bundles"
    return found


def diagnosed(client: Any, bundle: Path) -> dict[str, Any]:
    """`bundle` uploaded through the API with ?wait=true (a FastAPI TestClient): the finished job's JSON."""
    r = client.post("/api/v1/diagnoses?wait=true", files={"bundle": (bundle.name, bundle.read_bytes())})
    assert r.status_code == 201, r.text
    got: dict[str, Any] = r.json()
    return got


def shared_dir(tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], object]) -> Path:
    """Built once per test run and shared by the modules (and xdist workers) that ask: made in a
    private folder, then renamed into place; a loser of the race uses the winner's."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if base.name.startswith("popen-gw") else base
    final = root / f"vsandx-service-{name}"
    if not final.exists():
        work = Path(tempfile.mkdtemp(dir=root, prefix=f".{name}-"))
        make(work)
        try:
            os.rename(work, final)
        except OSError:
            shutil.rmtree(work, ignore_errors=True)
    return final


def settings_of(env: dict[str, str], **kw: object) -> ServiceSettings:
    """The settings a process started with `env` (VSANDX_* variables) reads, `kw` over them."""
    fields = {k.removeprefix("VSANDX_").lower(): v for k, v in env.items()}
    return ServiceSettings.model_validate(fields | kw)


def service_settings(data_dir: Path, model: Path | str | None, **kw: Any) -> ServiceSettings:
    return ServiceSettings(data_dir=data_dir, model_uri=str(model) if model else None, **kw)


def until(check: Callable[[], Any], timeout: float = 30.0, every: float = 0.05) -> Any:
    """Poll `check` until it returns something truthy; fails the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(every)
    raise AssertionError(f"condition not met within {timeout} s")


# With VSANDX_TEST_STALL=<file>, the first diagnosis (whichever process makes it) writes its pid to that
# file and hangs, so a test can kill it mid-way: run first in a worker process of `start_worker`, or as
# the sitecustomize of `vsandx serve`'s processes (`stall_env`).
STALL = """
import os, time
marker = os.environ.get("VSANDX_TEST_STALL")
if marker:
    from diagnosis.predictor import Predictor
    original = Predictor.diagnose_stored  # what service.queue.diagnosis_jobs.execute calls
    def stalling(self, *a, **k):
        try:
            fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return original(self, *a, **k)
        os.write(fd, str(os.getpid()).encode()); os.close(fd)
        time.sleep(120)
    Predictor.diagnose_stored = stalling
"""
WORKER = (
    STALL
    + """
import sys
from cli.main import main
sys.exit(main(["worker", *sys.argv[1:]]))
"""
)


def stall_env(folder: Path) -> dict[str, str]:
    """Environment under which every Python process (`vsandx serve` and the workers it starts) stalls
    the first diagnosis: VSANDX_TEST_STALL=<folder>/stalled.pid and STALL as a sitecustomize."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(STALL)
    path = os.pathsep.join(p for p in (str(folder), os.environ.get("PYTHONPATH")) if p)
    return {"PYTHONPATH": path, "VSANDX_TEST_STALL": str(folder / "stalled.pid")}


def start_worker(
    env: dict[str, str], *args: str, log: Path | None = None, prelude: str = ""
) -> subprocess.Popen[bytes]:
    """`vsandx worker ARGS` in its own process group, with `env` added to this process's environment;
    `prelude`: Python run in the worker before it starts."""
    out = open(log, "ab") if log else subprocess.DEVNULL  # noqa: SIM115 (the child owns it)
    return subprocess.Popen(
        [sys.executable, "-c", prelude + WORKER, *args],
        env={**os.environ, **env},
        cwd=Path(__file__).resolve().parents[2],
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def stop_process(p: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
    if p.poll() is None:
        os.killpg(p.pid, sig)
        try:
            p.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(5)


@contextmanager
def serving(env: dict[str, str], *args: str, log: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`vsandx serve ARGS` on a free loopback port, `env` added to this process's environment, in its
    own process group: (its URL, the process) once /health answers; SIGTERM after, as an operator
    stops it (the caller may check the exit status), SIGKILL to the group if that does not end it."""
    from tests.service.fakes import free_port

    port = free_port()
    with open(log, "ab") as out:
        p = subprocess.Popen(
            [sys.executable, "-m", "cli.main", "serve", "--port", str(port), *args],
            env={**os.environ, **env},
            cwd=Path(__file__).resolve().parents[2],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        until(lambda: p.poll() is not None or answers(f"{url}/health"), timeout=60, every=0.3)
        assert p.poll() is None, log.read_text()[-3000:]
        yield url, p
    finally:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                stop_process(p, signal.SIGKILL)


def answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def redis_available(url: str = "redis://127.0.0.1:6379/0") -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=1).ping())
    except Exception:
        return False


def redis_env(tag: str) -> dict[str, str]:
    """A Redis database and key prefix of this test alone (parallel runs never see each other's tasks)."""
    return {
        "VSANDX_BROKER_URL": f"redis://127.0.0.1:6379/{1 + os.getpid() % 15}",
        "VSANDX_REDIS_KEY_PREFIX": f"vsandx-test-{tag}-{uuid.uuid4().hex[:8]}:",
    }


PG = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


def _pg_available() -> bool:
    try:
        with create_engine(PG, connect_args={"connect_timeout": 2}).connect() as c:
            c.execute(text("SELECT 1"))
        return True
    except Exception:
        return False


@contextmanager
def pg_schema() -> Iterator[str]:
    """A URL on the real local PostgreSQL whose tables live in a fresh schema, dropped afterwards (one
    schema per test: parallel runs never collide)."""
    require("PostgreSQL at 127.0.0.1:5432 (database test)", _pg_available(), "start it: pg_ctlcluster 15 main start")
    schema = f"vsx_{uuid.uuid4().hex[:12]}"
    admin = create_engine(PG)
    with admin.begin() as c:
        c.execute(text(f"CREATE SCHEMA {schema}"))
    try:
        yield f"{PG}?options=-csearch_path%3D{schema}"
    finally:
        from service.store.db import database_for

        database_for.cache_clear()  # no pooled connection may hold the schema
        with admin.begin() as c:
            c.execute(text(f"DROP SCHEMA {schema} CASCADE"))
        admin.dispose()


def diagnosis_doc(sha: str) -> dict[str, Any]:
    """A finished diagnosis document of four components, one of them faulty."""
    comps = [("cluster", "none"), ("host:h1", "none"), ("nic:h1/vmnic1", "net.packet_loss"), ("disk:h1/naa.1", "none")]
    return {
        "schema": "vsandx.diagnosis/1",
        "bundle": {"sha256": sha},
        "model": {"name": "m", "version": "1"},
        "components": [{"id": i, "kind": kind_of(i), "verdict": v, "confidence": 0.9} for i, v in comps],
        "findings": [{"fault": "net.packet_loss", "component": "nic:h1/vmnic1"}],
    }


def done_job(db: Any, settings: ServiceSettings, payload: bytes) -> str:
    """A done diagnosis job of the bytes `payload` (stored as an upload), its document diagnosis_doc's."""
    spooled, sha, size = bundle_store.spool_upload(settings, io.BytesIO(payload), 1 << 20)
    bundle_store.keep_bundle(db, settings, spooled, sha, size, "b.tgz")
    job = job_store.create_job(db, sha, "b.tgz")
    claimed = job_store.claim_job(db, "w", 60, 3, job_id=job.id)
    assert claimed is not None
    job_store.complete_job(db, job.id, 1, diagnosis_store.record_diagnosis(db, sha, diagnosis_doc(sha)).id)
    return job.id


def hostile_chart() -> Chart:
    """A chart whose names carry HTML and script from a bundle, with one panel of many peers, one of few."""
    nasty = '<script>alert("x")</script>&'
    subject = [None if i % 17 == 0 else float(i % 7) for i in range(60)]
    peers = [[float((i + k) % 5) for i in range(60)] for k in range(8)]  # > 6 peers: drawn as a band
    panel = Panel(f"latency {nasty}", "disk.latencyDevDAvg", "ms", nasty, subject, "disks of the same tier", peers)
    few = Panel("rx", "pnic.rxThroughput", "MB/s", "vmnic1", subject, "other uplinks", peers[:3], 6.0, "1 Gb/s")
    return Chart(f"disk:{nasty}", "disk.latency", 1_700_000_000, 20, [panel, few], Onset(30, False))
