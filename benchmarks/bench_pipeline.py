"""Pipeline speed and memory (issue 3, item 7). Builds its inputs, then prints timings and peak memory.

    .venv/bin/python benchmarks/bench_pipeline.py [--quick]

1. read + parse + tensorise a 4-host, 2-hour, 20-s bundle (target <= 150 ms on one core)
2. the same for a 16-host, 48-hour bundle at the service's default 300-s interval (target <= 2 s)
3. a ~200 MB upload (host bundles plus large esxtop captures) streamed in a fresh process:
   peak RSS (target < 300 MB)

The process pins itself to one CPU. Inputs come from the simulator (data/simulate/: spec-conformant,
validated by shared/tools/check_bundle.py): a lab bundle (4 hosts, 2 hours at 20 s, with esxtop
captures) and a field bundle of 16 hosts over 47 hours at 300 s (10 of its host folders uploaded).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from data.simulate.archive import write_bundle  # noqa: E402
from data.simulate.generate import Bundle, simulate_bundle  # noqa: E402
from pipeline import load_bundle  # noqa: E402

LAB = ("lab", 1, 0)  # 4 hosts, 2 hours at 20 s, esxtop captures on every host
FIELD_16 = ("field", 3, 1282)  # 16 hosts, 566 samples at 300 s (47 h); found by scanning the field stream


def _pin() -> None:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


def time_load(path: Path, runs: int) -> dict[str, float]:
    load_bundle(path)  # warm-up: imports, caches
    totals, parse, tens = [], [], []
    for _ in range(runs):
        t = time.perf_counter()
        bt = load_bundle(path)
        totals.append((time.perf_counter() - t) * 1000)
        parse.append(bt.timing_ms["read_parse"])
        tens.append(bt.timing_ms["tensorize"])
    return {
        "median_ms": statistics.median(totals),
        "min_ms": min(totals),
        "read_parse_ms": statistics.median(parse),
        "tensorize_ms": statistics.median(tens),
        "components": len(bt.component_ids),
        "T": bt.T,
        "step_s": bt.step_s,
    }


def _big_esxtop(devices: list[str], nics: list[str], target_bytes: int, cols: int = 2000) -> bytes:
    """An esxtop capture of ~target_bytes: `cols` columns (the used ones among many unused)."""
    hn = "localhost.home"
    hdr = ['"(PDH-CSV 4.0) (UTC)(0)"']
    for d in devices:
        for c in (
            "Average Driver MilliSec/Command",
            "Average Kernel MilliSec/Command",
            "Average Guest MilliSec/Command",
            "Commands/sec",
        ):
            hdr.append(f'"\\\\{hn}\\Physical Disk SCSI Device({d})\\{c}"')
    for n in nics:
        hdr.append(f'"\\\\{hn}\\Network Port(DvsPortset-0:1:{n})\\% Received Packets Dropped"')
    hdr.append(f'"\\\\{hn}\\Physical Cpu(_Total)\\% Util Time"')
    while len(hdr) < cols:
        hdr.append(f'"\\\\{hn}\\Vcpu(1:system:{len(hdr)}:idle)\\% Used"')
    body = ",".join(f'"{(i * 7919) % 1000 / 10:.2f}"' for i in range(len(hdr) - 1))
    out = io.BytesIO()
    out.write((",".join(hdr) + "\n").encode())
    t0 = 1772445600
    i = 0
    while out.tell() < target_bytes:
        ts = time.strftime("%m/%d/%Y %H:%M:%S", time.gmtime(t0 + 5 * i))
        out.write(f'"{ts}",{body}\n'.encode())
        i += 1
    return out.getvalue()


def simulated(profile: str, seed: int, index: int, hosts: int, interval: int, min_samples: int) -> Bundle:
    """The simulator's bundle, checked to have the shape the benchmark reports."""
    b = simulate_bundle(profile, seed, index)
    if (b.hosts, b.interval) != (hosts, interval) or b.samples < min_samples:
        raise SystemExit(
            f"{b.name} is {b.hosts} hosts, {b.samples} samples at {b.interval} s: the simulator changed, "
            f"pick another index with {hosts} hosts at {interval} s"
        )
    return b


def upload_files(b: Bundle) -> dict[str, bytes]:
    return {p: d for p, d in b.files.items() if p != "labels.json"}


def build_large_upload(path: Path, total_mb: int) -> None:
    b = simulated(*LAB, hosts=4, interval=20, min_samples=360)
    files = upload_files(b)
    per = total_mb * 1024 * 1024 // 4
    with tarfile.open(path, "w") as tf:  # a plain .tar: upload size = bytes streamed
        for name, data in sorted(files.items()):
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
        for h in b.cluster.hosts:
            top = next(p.split("/", 1)[0] for p in files if p.startswith(f"esx-{h.name}-"))
            big = _big_esxtop([d.dev for d in h.disks], [n.name for n in h.nics], per)
            ti = tarfile.TarInfo(f"{top}/esxtop-big.csv")
            ti.size = len(big)
            tf.addfile(ti, io.BytesIO(big))
            del big


_CHILD = """
import json, sys, time
sys.path.insert(0, sys.argv[2])
from pipeline import load_bundle

def hwm():
    # VmHWM: peak resident set of this process image (ru_maxrss may include the pre-exec parent's)
    with open("/proc/self/status") as fh:
        return next(int(l.split()[1]) for l in fh if l.startswith("VmHWM")) / 1024

base = hwm()
t = time.perf_counter()
bt = load_bundle(sys.argv[1])
print(json.dumps({"seconds": time.perf_counter() - t, "peak_rss_mb": hwm(), "baseline_rss_mb": base,
                  "components": len(bt.component_ids)}))
"""


def measure_child(path: Path) -> dict[str, float]:
    """Peak memory of reading `path` in a fresh process (nothing else resident)."""
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path), str(REPO)], capture_output=True, text=True, check=True
    )
    res: dict[str, float] = json.loads(out.stdout)
    return res


def _report(label: str, path: Path, r: dict[str, float], target_ms: int) -> None:
    print(
        f"{label} ({path.stat().st_size / 1e6:.1f} MB tgz): median {r['median_ms']:.0f} ms "
        f"(min {r['min_ms']:.0f}; read+parse {r['read_parse_ms']:.0f}, tensorise {r['tensorize_ms']:.0f}), "
        f"{r['components']:.0f} components, T={r['T']:.0f} x {r['step_s']:.0f} s   [target <= {target_ms} ms]"
    )


def _simulated(out: Path, n: int) -> None:
    """Informational: the simulator's field bundles (random sizes), when data/ is importable."""
    try:
        from data.simulate.runner import simulate_many
    except ImportError:
        print("simulated field bundles: skipped (data.simulate not importable)")
        return
    simulate_many(profile="field", n=n, out=out, seed=1, fmt="tgz", workers=1, issue_rate=None, progress=False)
    for p in sorted(out.glob("*.tgz")):
        r = time_load(p, 3)
        print(
            f"  simulated {p.name} ({p.stat().st_size / 1e6:.1f} MB): median {r['median_ms']:.0f} ms, "
            f"{r['components']:.0f} components"
        )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer runs, a 50 MB upload instead of 200 MB")
    args = ap.parse_args()
    _pin()
    runs = 5 if args.quick else 15
    machine = f"{platform.machine()}, {os.cpu_count()} cores (pinned to 1), Python {platform.python_version()}"
    print(f"machine: {machine}")
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        lab = simulated(*LAB, hosts=4, interval=20, min_samples=360)
        small = write_bundle("small", upload_files(lab), d, "tgz")
        _report("4 hosts, 2 h, 20 s", small, time_load(small, runs), 150)
        field = simulated(*FIELD_16, hosts=16, interval=300, min_samples=540)
        large = write_bundle("large", upload_files(field), d, "tgz")
        hours = field.samples * field.interval / 3600
        del field
        label = f"16 hosts ({len(load_bundle(large).host_bundles)} uploaded), {hours:.0f} h, 300 s"
        _report(label, large, time_load(large, max(3, runs // 3)), 2000)
        _simulated(d / "sim", 2 if args.quick else 6)
        mb = 50 if args.quick else 200
        up = d / "upload.tar"
        build_large_upload(up, mb)
        m = measure_child(up)
        print(
            f"{up.stat().st_size / 1e6:.0f} MB upload (.tar, 4 esxtop captures of {mb // 4} MB): "
            f"{m['seconds']:.1f} s, peak RSS {m['peak_rss_mb']:.0f} MB "
            f"(interpreter + imports {m['baseline_rss_mb']:.0f} MB)   [target < 300 MB]"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
