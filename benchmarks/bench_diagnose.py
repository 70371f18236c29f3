"""`vsandx diagnose` latency on a 4-host lab bundle (issue 4: end to end <= 300 ms, forward <= 10 ms), and
a worker's peak memory diagnosing a large upload (issue 19: < 300 MB above the loaded model).

    .venv/bin/python benchmarks/bench_diagnose.py [--runs 50] [--model URI] [--cli 3]
    .venv/bin/python benchmarks/bench_diagnose.py --memory 400 [--model URI]

Two figures, because "end to end" means two things to its users:

1. the diagnosis of one bundle by a loaded model, as the service and `evaluate` run it
   (diagnosis.predictor: read the .tgz from bytes, parse, tensorise, predict, findings), timed over
   --runs diagnoses of 4 distinct simulated 4-host lab bundles (their `timing_ms` and wall time);
2. the `vsandx diagnose BUNDLE --json` command as a fresh process (--cli runs), which adds Python's
   start and the imports (PyTorch among them) to the same work.

With --memory MB, only this: a 4-host lab bundle padded to MB megabytes with members the reader
streams past (random bytes, so the .tgz is as large as its content) is uploaded to a fresh data folder
(stored by sha256, as the API stores it) and diagnosed by a worker, in a process of its own, the way
the embedded queue's workers run a job (service.queue.diagnosis_jobs.execute: the diagnosis and its charts). The worker
first loads the model and diagnoses the plain bundle once (imports, allocator, matplotlib); its
resident set then is "the loaded model"; the peak (VmHWM, reset just before the job) above it is the
figure. Before issue 19 the stored bundle was read whole into memory and hashed again.

The model is --model (a folder or models:/ URI), else the registry's champion under VSANDX_DATA_DIR,
else a stand-in with the quick champion's shape (an ensemble of 4 cnn_small; latency does not depend
on the weights). The process runs on one thread of one core. Prints one JSON document.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _pct(xs: list[float]) -> dict[str, float]:
    s = sorted(xs)
    return {"p50": round(statistics.median(s), 1), "p95": round(s[int(0.95 * (len(s) - 1))], 1), "max": round(s[-1], 1)}


def _status_mb(key: str) -> float:
    """A size field of /proc/self/status (VmRSS, VmHWM) in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024 / 1e6
    raise KeyError(key)


def padded_bundle(plain: bytes, out: Path, mb: int) -> Path:
    """`plain` (a .tgz) behind members of random bytes that make the .tgz `mb` MB: nothing a parser
    sniffs as a source, so the reader streams past them (the budgets and ratio checks still count them)
    to the bundle's own files, which come last."""
    import io
    import tarfile

    chunk = 32 * 1024 * 1024
    left = mb * 1_000_000 - len(plain)
    with tarfile.open(fileobj=io.BytesIO(plain), mode="r:gz") as src, tarfile.open(out, "w:gz", compresslevel=1) as dst:
        members = src.getmembers()
        top = members[0].name.split("/")[0]
        k = 0
        while left > 0:  # random bytes do not compress: the .tgz grows by what is added
            pad = tarfile.TarInfo(f"{top}/padding/blob-{k:03d}.bin")
            pad.size = min(chunk, left)
            dst.addfile(pad, io.BytesIO(os.urandom(pad.size)))
            left -= pad.size + 512
            k += 1
        for info in members:
            dst.addfile(info, src.extractfile(info) if info.isfile() else None)
    return out


def _with_findings(bundles: list[bytes], model: str) -> bytes:
    """The first bundle the model finds a fault in (so that the job draws charts too), else the first."""
    from diagnosis.predictor import Predictor

    predictor = Predictor.load(model)
    return next((b for b in bundles if predictor.diagnose(b)["findings"]), bundles[0])


def memory_worker(data_dir: Path, model: str, plain: Path, big: Path) -> dict[str, object]:
    """In a fresh process: the worker's side of a job on `big`, as described in the module's docstring."""
    from diagnosis.serving import ModelHolder
    from service.queue.diagnosis_jobs import execute
    from service.store import diagnosis_store, job_store
    from service.store.db import Database
    from service.store.intake import accept_upload
    from vsandx.settings import ServiceSettings

    settings = ServiceSettings(data_dir=data_dir, model_uri=model, embedded_workers=0)
    database = Database(settings.sqlalchemy_url)
    holder = ModelHolder(settings)
    holder.get()
    model_only = _status_mb("VmRSS")

    def stored(path: Path) -> str:  # the API's part, before the figure: the upload stored by sha256
        with database.session() as db, open(path, "rb") as fh:
            return accept_upload(db, settings, fh, path.name, holder.config).id

    def diagnosed(job_id: str) -> str:  # the worker's part
        with database.session() as db:
            claimed = job_store.claim_job(db, "bench", settings.lease_s, settings.max_attempts, job_id=job_id)
            assert claimed is not None
            return execute(db, settings, holder, claimed)

    diagnosed(stored(plain))  # warm-up: imports, allocator, matplotlib
    job_id = stored(big)
    loaded = _status_mb("VmRSS")
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")  # VmHWM := VmRSS
    t0 = time.perf_counter()
    status = diagnosed(job_id)
    wall = time.perf_counter() - t0
    peak = _status_mb("VmHWM")
    with database.session() as db:
        res = diagnosis_store.get_diagnosis(db, job_id)
    doc = res.diagnosis if res is not None and res.diagnosis is not None else {}
    return {
        "status": status,
        "error": res.error if res is not None else None,
        "model_loaded_rss_mb": round(model_only, 1),
        "worker_rss_before_job_mb": round(loaded, 1),
        "peak_rss_mb": round(peak, 1),
        "peak_above_loaded_mb": round(peak - loaded, 1),
        "job_wall_s": round(wall, 2),
        "hosts": len(doc.get("bundle", {}).get("hosts", [])),
        "findings": len(doc.get("findings", [])),
    }


def memory(mb: int, model: str | None) -> dict[str, object]:
    from benchmarks.bench_service import _bundles, _champion, _stand_in_model

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        model = model or _champion() or _stand_in_model(root / "standin")
        plain = root / "plain.tgz"
        plain.write_bytes(_with_findings(_bundles(root / "bundles", 4), model))
        big = padded_bundle(plain.read_bytes(), root / "padded.tgz", mb)
        code = (
            "import json, sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]);"
            "from benchmarks.bench_diagnose import memory_worker;"
            "print(json.dumps(memory_worker(Path(sys.argv[2]), sys.argv[3], Path(sys.argv[4]), Path(sys.argv[5]))))"
        )
        cmd = [sys.executable, "-c", code, str(REPO), str(root / "var"), model, str(plain), str(big)]
        out = subprocess.run(
            cmd, check=True, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"}
        )
        got: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
        return {"upload_mb": round(big.stat().st_size / 1e6, 1), **got, "target_above_loaded_mb": 300}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--cli", type=int, default=3, help="fresh `vsandx diagnose` processes to time")
    ap.add_argument("--model", help="model folder or models:/ URI (default: the champion, else a stand-in)")
    ap.add_argument("--memory", type=int, metavar="MB", help="only the worker's peak memory on an upload of MB MB")
    args = ap.parse_args()
    if args.memory:
        load = os.getloadavg() if hasattr(os, "getloadavg") else None
        result = {"machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
                  "load_average": load, **memory(args.memory, args.model)}  # fmt: skip
        print(json.dumps(result, indent=1))
        return 0
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    import torch

    torch.set_num_threads(1)
    from benchmarks.bench_service import _bundles, _champion, _stand_in_model
    from diagnosis.predictor import Predictor

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        model = args.model or _champion() or _stand_in_model(root / "standin")
        bundles = _bundles(root / "bundles", 4)
        predictor = Predictor.load(model)
        for data in bundles:  # warm-up: allocator, lazy imports
            predictor.diagnose(data, "warm.tgz")
        wall: list[float] = []
        parts: dict[str, list[float]] = {}
        for i in range(args.runs):
            t0 = time.perf_counter()
            doc = predictor.diagnose(bundles[i % len(bundles)], f"b{i}.tgz")
            wall.append(1e3 * (time.perf_counter() - t0))
            for k, v in doc["timing_ms"].items():
                parts.setdefault(k, []).append(float(v))
        bundle = root / "bundles" / "one.tgz"
        bundle.write_bytes(bundles[0])
        cli = []
        for _ in range(args.cli):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "cli.main", "diagnose", str(bundle), "--json", "--model", model],
                           check=True, capture_output=True, env={**os.environ, "OMP_NUM_THREADS": "1"})  # fmt: skip
            cli.append(1e3 * (time.perf_counter() - t0))
    result = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, 1 thread",
        "bundle": {
            "hosts": len(doc["bundle"]["hosts"]),
            "components": len(doc["components"]),
            "mb": round(len(bundles[0]) / 1e6, 2),
        },
        "model": doc["model"],
        "diagnosis_ms": _pct(wall),
        "timing_ms": {k: _pct(v) for k, v in parts.items()},
        "cli_process_ms": _pct(cli) if cli else None,
        "target_ms": 300,
    }
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
