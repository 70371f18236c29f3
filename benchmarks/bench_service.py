"""Service latency and errors under load (issue 5), loopback only, bounded in time.

    .venv/bin/python benchmarks/bench_service.py [--duration 120] [--single 20] [--clients 8]
        [--model URI] [--workers N] [--url http://127.0.0.1:8000]

Starts `vsandx serve` on 127.0.0.1 (a free port, a fresh data folder, embedded defaults) unless --url
points at a running one, then uploads 4-host lab bundles with `POST /api/v1/diagnoses?wait=true` and
times each request from the first byte sent to the diagnosis received:

1. one client for --single seconds: upload-to-diagnosis p50 (target <= 300 ms);
2. --clients concurrent clients for --duration seconds: p95 (target <= 1 s) and errors (target 0).

Every upload is unique (the gzip header's MTIME field carries a counter), so each one is really read,
parsed and diagnosed, never answered from the stored result of identical bytes. The model is --model
(a folder or models:/ URI), else the registry's champion under VSANDX_DATA_DIR when there is one, else
a stand-in with the quick champion's shape: an ensemble of 4 cnn_small trained briefly on 12 lab
bundles (latency does not depend on the weights). Prints one JSON document; exit status 1 when a
target is missed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _stand_in_model(root: Path) -> str:
    from models.ensemble import EnsembleDiagnoser
    from models.registry import create_model
    from training.datasets import DatasetSpec, build, load_dataset

    X, y = load_dataset(build(DatasetSpec("lab", 12, seed=5, issue_rate=0.7), root, workers=0, progress=False))
    members = [create_model("cnn_small", epochs=1, seed=i).fit(X, y) for i in range(4)]
    return str(EnsembleDiagnoser.of(members).save(root / "model"))


def _champion() -> str | None:
    from vsandx.settings import get_settings

    s = get_settings()
    if not (s.data_dir / "mlflow.db").exists() and s.mlflow_tracking_uri is None:
        return None
    from training.tracking import Tracker

    ref = Tracker(s.data_dir, s.mlflow_tracking_uri).champion(s.registered_model)
    return f"models:/{s.registered_model}@champion" if ref else None


def _bundles(root: Path, n: int) -> list[bytes]:
    from data.simulate.runner import simulate_many

    simulate_many("lab", n, root, seed=7, workers=0, progress=False)
    return [p.read_bytes() for p in sorted(root.glob("lab-*.tgz"))]


class Load:
    """Closed-loop clients; each request's bytes are made unique through the gzip MTIME field, or, with
    `twice`, each body is sent twice in a row (by whichever clients take it), so that identical bytes
    arrive at the same time. Every upload answered is kept in `answered` as (job id, sha256 of the
    bytes sent, the job's attempts), for a check that each upload made exactly one diagnosis."""

    def __init__(self, url: str, bundles: list[bytes], api_key: str | None, twice: bool = False) -> None:
        self.url, self.bundles, self.twice = url, bundles, twice
        self.headers = {"X-API-Key": api_key} if api_key else {}
        self.counter = int(time.time()) & 0xFFFF_0000
        self.lock = threading.Lock()
        self.answered: list[tuple[str, str, int]] = []

    def _payload(self) -> bytes:
        with self.lock:
            self.counter += 1
            n = self.counter // 2 if self.twice else self.counter
        data = self.bundles[n % len(self.bundles)]
        return data[:4] + (n & 0xFFFFFFFF).to_bytes(4, "little") + data[8:]

    def run(self, clients: int, seconds: float) -> dict[str, Any]:
        lat: list[float] = []
        server: list[float] = []  # the diagnosis itself (read, parse, predict) as the worker timed it
        errors: list[str] = []
        end = time.monotonic() + seconds

        def client() -> None:
            with httpx.Client(base_url=self.url, timeout=60, headers=self.headers) as c:
                while time.monotonic() < end:
                    body = self._payload()
                    t0 = time.perf_counter()
                    try:
                        r = c.post("/api/v1/diagnoses?wait=true", files={"bundle": ("lab.tgz", body)})
                        res = r.json() if r.status_code == 201 else None
                        doc = res["diagnosis"] if res else None
                        ok = doc is not None and doc["schema"] == "vsandx.diagnosis/1"
                        err = None if ok else f"HTTP {r.status_code}: {r.text[:200]}"
                        if res is not None and doc is not None:
                            with self.lock:
                                server.append(doc["timing_ms"]["total"])
                                self.answered.append((res["id"], hashlib.sha256(body).hexdigest(), res["attempts"]))
                    except (httpx.HTTPError, KeyError, TypeError, ValueError) as e:
                        err = f"{type(e).__name__}: {e}"
                    dt = time.perf_counter() - t0
                    with self.lock:
                        (errors.append(err) if err else lat.append(dt))

        threads = [threading.Thread(target=client) for _ in range(clients)]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.monotonic() - t0
        s = sorted(lat) or [float("nan")]
        pct = lambda q: round(1e3 * s[min(len(s) - 1, int(q * len(s)))], 1)  # noqa: E731
        return {
            "clients": clients,
            "seconds": round(wall, 1),
            "requests": len(lat) + len(errors),
            "errors": len(errors),
            "first_errors": errors[:5],
            "per_second": round(len(lat) / wall, 2),
            "latency_ms": {
                "p50": round(1e3 * statistics.median(s), 1),
                "p95": pct(0.95),
                "p99": pct(0.99),
                "max": round(1e3 * s[-1], 1),
            },
            # the diagnosis alone (read, parse, predict) as the worker timed it; the rest is the service
            "diagnose_ms_p50": round(statistics.median(server), 1) if server else None,
        }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", type=float, default=120.0, help="seconds of concurrent load (default 120)")
    ap.add_argument("--single", type=float, default=20.0, help="seconds of one client first (default 20)")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--bundles", type=int, default=4, help="distinct 4-host lab bundles to cycle through")
    ap.add_argument("--model", help="model folder or models:/ URI (default: the champion, else a stand-in)")
    ap.add_argument("--workers", type=int, help="embedded worker processes of `vsandx serve` (its default)")
    ap.add_argument("--url", help="an already running service (default: start one on a free loopback port)")
    ap.add_argument("--api-key", default=os.environ.get("VSANDX_BENCH_API_KEY"))
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="vsandx-bench-"))
    bundles = _bundles(tmp / "bundles", args.bundles)
    server = None
    url = args.url
    model = args.model
    if url is None:
        model = model or _champion() or _stand_in_model(tmp / "standin")
        port = _free_port()
        env = {**os.environ, "VSANDX_DATA_DIR": str(tmp / "var"), "VSANDX_MODEL_URI": model}
        if model.startswith("models:/"):  # the registry stays where it is
            from vsandx.settings import get_settings

            env["VSANDX_MLFLOW_TRACKING_URI"] = f"sqlite:///{(get_settings().data_dir / 'mlflow.db').resolve()}"
        cmd = [sys.executable, "-m", "cli.main", "serve", "--port", str(port), "--log-level", "warning"]
        if args.workers is not None:
            cmd += ["--workers", str(args.workers)]
        server = subprocess.Popen(cmd, env=env, cwd=REPO, start_new_session=True, stdout=sys.stderr)
        url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                if httpx.get(f"{url}/ready", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or (server and server.poll() is not None):
                print("the service did not become ready", file=sys.stderr)
                return 1
            time.sleep(0.5)
        load = Load(url, bundles, args.api_key)
        load.run(1, 3.0)  # warm-up: imports, first model calls
        single = load.run(1, args.single)
        loaded = load.run(args.clients, args.duration)
        info = httpx.get(f"{url}/api/v1/model").json()
    finally:
        if server is not None:
            os.killpg(server.pid, 15)
            server.wait(30)
        shutil.rmtree(tmp, ignore_errors=True)
    doc: dict[str, Any] = {
        "single_client": single,
        "concurrent": loaded,
        "bundle_mb": round(sum(map(len, bundles)) / len(bundles) / 1e6, 2),
        "model": {k: info.get(k) for k in ("name", "version", "family")},
        "targets": {
            "single_p50_ms<=300": single["latency_ms"]["p50"] <= 300,
            "concurrent_p95_ms<=1000": loaded["latency_ms"]["p95"] <= 1000,
            "errors==0": single["errors"] + loaded["errors"] == 0,
        },
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "load_average": os.getloadavg(),
        },
    }
    print(json.dumps(doc, indent=1))
    return 0 if all(doc["targets"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
