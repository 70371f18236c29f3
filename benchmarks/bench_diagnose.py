"""`vsandx diagnose` latency on a 4-host lab bundle (issue 4: end to end <= 300 ms, forward <= 10 ms).

    .venv/bin/python benchmarks/bench_diagnose.py [--runs 50] [--model URI] [--cli 3]

Two figures, because "end to end" means two things to its users:

1. the diagnosis of one bundle by a loaded model, as the service and `evaluate` run it
   (service.predictor: read the .tgz from bytes, parse, tensorise, predict, findings), timed over
   --runs diagnoses of 4 distinct simulated 4-host lab bundles (their `timing_ms` and wall time);
2. the `vsandx diagnose BUNDLE --json` command as a fresh process (--cli runs), which adds Python's
   start and the imports (PyTorch among them) to the same work.

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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--cli", type=int, default=3, help="fresh `vsandx diagnose` processes to time")
    ap.add_argument("--model", help="model folder or models:/ URI (default: the champion, else a stand-in)")
    args = ap.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    import torch

    torch.set_num_threads(1)
    from benchmarks.bench_service import _bundles, _champion, _stand_in_model
    from service.predictor import Predictor

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
            subprocess.run([sys.executable, "-m", "vsandx.cli", "diagnose", str(bundle), "--json", "--model", model],
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
