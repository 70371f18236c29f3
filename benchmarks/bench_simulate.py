"""Simulator throughput: lab (and field) bundles per second written as .tgz, on all cores.

    python benchmarks/bench_simulate.py [--n 200] [--profile lab] [--workers 0]
    python benchmarks/bench_simulate.py --render

Prints one JSON line per profile with bundles/s, MB written and the machine it ran on. With --render,
only the two renderers' speed on the unit tests' inputs (best of several seeds, one core): a host's
logs for a 2-hour window with 100 events (target 5 ms) and a 200-row esxtop capture of 4 disks and 2
NICs (target 15 ms); these were wall-clock assertions of tests/data/test_logs.py and test_esxtop.py.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from data.simulate.runner import simulate_many

REPO = Path(__file__).resolve().parents[1]


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


def _best_ms(run: Callable[[int], object], seeds: int) -> float:
    best = float("inf")
    for seed in range(seeds):
        t0 = time.perf_counter()
        run(seed)
        best = min(best, time.perf_counter() - t0)
    return round(1000 * best, 2)


def render_speed() -> dict[str, object]:
    import sys

    import numpy as np

    sys.path.insert(0, str(REPO))
    from data.simulate.esxtop import render_esxtop
    from data.simulate.events import EVENT_KINDS, Event
    from data.simulate.logs import render_host_logs
    from tests.data.test_esxtop import _inputs
    from tests.data.test_logs import ATTRS, END, START, _ctx

    kinds = list(EVENT_KINDS) * 8
    events = [Event(START + 70.0 * i + 0.5, k, ATTRS[k]) for i, k in zip(range(100), kinds, strict=False)]
    ctx, args = _ctx(8), _inputs(n=200, n_disks=4, n_nics=2)
    out: dict[str, object] = {
        "host_logs_2h_100_events_ms": _best_ms(
            lambda seed: render_host_logs(ctx, events, START, END, np.random.default_rng(seed)), 7
        ),
        "host_logs_target_ms": 5,
    }
    for style in ("raw", "resaved"):
        out[f"esxtop_200_rows_{style}_ms"] = _best_ms(
            lambda seed, s=style: render_esxtop("localhost.home", *args, np.random.default_rng(seed), style=s), 5
        )
    return out | {"esxtop_target_ms": 15, "machine": machine()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--render", action="store_true", help="only the log and esxtop renderers' speed")
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--profile", choices=("lab", "field", "both"), default="both")
    ap.add_argument("--workers", type=int, default=0, help="0 = one per core")
    ap.add_argument("--seed", type=int, default=12345)
    args = ap.parse_args()
    if args.render:
        if hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        print(json.dumps(render_speed()))
        return
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
