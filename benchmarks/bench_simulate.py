"""Simulator throughput: lab (and field) bundles per second written as .tgz, on all cores.

    python benchmarks/bench_simulate.py [--n 200] [--profile lab] [--workers 0]

Prints one JSON line per profile with bundles/s, MB written and the machine it ran on.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import tempfile
import time
from pathlib import Path

from data.simulate.runner import simulate_many


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {cpu}, Python {platform.python_version()}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--profile", choices=("lab", "field", "both"), default="both")
    ap.add_argument("--workers", type=int, default=0, help="0 = one per core")
    ap.add_argument("--seed", type=int, default=12345)
    args = ap.parse_args()
    profiles = ("lab", "field") if args.profile == "both" else (args.profile,)
    for profile in profiles:
        n = args.n if profile == "lab" else max(8, args.n // 5)
        out = Path(tempfile.mkdtemp(prefix=f"bench-{profile}-"))
        try:
            t0 = time.perf_counter()
            res = simulate_many(profile, n, out, seed=args.seed, workers=args.workers, progress=False)
            dt = time.perf_counter() - t0
        finally:
            shutil.rmtree(out, ignore_errors=True)
        mb = sum(r["bytes"] for r in res) / 1e6
        print(
            json.dumps(
                {
                    "profile": profile,
                    "bundles": n,
                    "seconds": round(dt, 2),
                    "bundles_per_s": round(n / dt, 2),
                    "mb_written": round(mb, 1),
                    "per_bundle_ms_one_core": round(1000 * sum(r["seconds"] for r in res) / n, 1),
                    "machine": machine(),
                }
            )
        )


if __name__ == "__main__":
    main()
