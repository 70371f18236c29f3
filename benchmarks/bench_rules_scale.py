"""The rules' disk evidence (models/rules_disk.py) against the number of disks of one bundle, at the
worst grouping: no disk group and no host, so every disk's siblings are the whole bundle (the ladder's
last rung), as a hostile upload of max_components (4,096) disks can arrange. Each disk's channels hold
random positive values at every step. Time is CPU seconds of one process, best of --repeat.
`--nics` times the NICs' peer reference (models.rules_read.other_hosts_median: the median over the
other hosts' uplinks, which the MTU and frame checks read) at 8 NICs a host and at one a host.

    .venv/bin/python benchmarks/bench_rules_scale.py --disks 64 512 4096 --steps 180 [--nics 512 4096]

Run it on two commits side by side to compare (the script only needs models.rules_disk.disk_evidence).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from models.rules_disk import disk_evidence  # noqa: E402
from models.rules_read import other_hosts_median  # noqa: E402
from pipeline.tensors import SCHEMA_VERSION, BundleTensors, KindTensors  # noqa: E402
from vsandx.faults import COMPONENT_KINDS  # noqa: E402


def bundle(disks: int, steps: int, seed: int = 0) -> BundleTensors:
    """One bundle of `disks` disks with every channel observed and no host or disk group."""
    kinds = {k: KindTensors.empty(k, (), steps) for k in COMPONENT_KINDS}
    kt = KindTensors.empty("disk", tuple(f"naa.{i:016x}" for i in range(disks)), steps)
    kt.values[:] = np.random.default_rng(seed).lognormal(0, 1, size=kt.values.shape).astype(np.float32)
    kt.mask[:] = True
    kinds["disk"] = kt
    return BundleTensors(SCHEMA_VERSION, (), (), 0, 20, steps, 20, kinds)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--disks", type=int, nargs="+", default=[64, 512, 4096])
    ap.add_argument("--steps", type=int, default=180)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--nics", type=int, nargs="*", default=[])
    args = ap.parse_args(argv)
    print("| disks | steps | CPU s | ms a disk |\n|---|---|---|---|")
    for n in args.disks:
        bt = bundle(n, args.steps)
        best = float("inf")
        for _ in range(args.repeat):
            t = time.process_time()
            disk_evidence(bt)
            best = min(best, time.process_time() - t)
        print(f"| {n:,} | {args.steps} | {best:.3f} | {1e3 * best / n:.3f} |", flush=True)
    if args.nics:
        print("\n| NICs | NICs a host | CPU s |\n|---|---|---|")
    for n in args.nics:
        x = np.random.default_rng(1).normal(size=n)
        for per_host in (8, 1):
            best = float("inf")
            for _ in range(args.repeat):
                t = time.process_time()
                other_hosts_median(x, np.arange(n) // per_host)
                best = min(best, time.process_time() - t)
            print(f"| {n:,} | {per_host} | {best:.4f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
