"""A fresh `vsandx diagnose` process against `python -c "import torch"`, side by side (issue 16, item 5).

    VSANDX_DATA_DIR=<a folder with a champion> .venv/bin/python benchmarks/bench_cli.py [--rounds 5]

Targets: a fresh diagnosis of a 4-host lab bundle in at most 2x the time of importing PyTorch in a
fresh interpreter on the same machine, peak RSS under 400 MB; a missing path or a text file rejected
in under 0.5 s. Timings on a shared 2-core machine are noisy, so each round runs every command once,
interleaved, and the figures are medians per command plus the median of the per-round ratios.

The model is the registry's champion under VSANDX_DATA_DIR (as a user runs it: resolved through the
registry, fetched once and cached), or --model. Peak RSS is each child's own (os.wait4), not the
benchmark's. Prints one JSON document.
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
VSANDX = str(Path(sys.executable).with_name("vsandx"))


def _timed(argv: list[str], cwd: Path) -> tuple[float, float, int]:
    """(wall seconds, peak RSS MB, exit status) of one fresh process."""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_maxrss / 1024, p.returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--model", help="model folder or models:/ URI (default: the champion)")
    args = ap.parse_args()
    from benchmarks.bench_service import _bundles

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        bundle = root / "lab-4-host.tgz"
        bundle.write_bytes(_bundles(root / "bundles", 1)[0])
        text = root / "notes.txt"
        text.write_text("this is a support engineer's note, not a bundle\n" * 200)
        model = ["--model", args.model] if args.model else []
        commands = {
            "import_torch": [sys.executable, "-c", "import torch"],
            "diagnose": [VSANDX, "diagnose", str(bundle), "--json", *model],
            "missing_path": [VSANDX, "diagnose", str(root / "no-such.tgz"), *model],
            "text_file": [VSANDX, "diagnose", str(text), *model],
        }
        expect = {"import_torch": 0, "diagnose": 0, "missing_path": 1, "text_file": 1}
        got = _timed(commands["diagnose"], root)  # warm-up: the champion is fetched into the cache once
        if got[2] != 0:
            raise SystemExit(f"vsandx diagnose failed (exit {got[2]}): is there a champion under VSANDX_DATA_DIR?")
        runs: dict[str, list[tuple[float, float]]] = {k: [] for k in commands}
        ratios = []
        for _ in range(args.rounds):
            for name, argv in commands.items():
                wall, rss, rc = _timed(argv, root)
                if rc != expect[name]:
                    raise SystemExit(f"{name}: exit {rc}, expected {expect[name]}")
                runs[name].append((wall, rss))
            ratios.append(runs["diagnose"][-1][0] / runs["import_torch"][-1][0])
    med = {k: {"wall_s": round(statistics.median(w for w, _ in v), 3),
               "peak_rss_mb": round(max(r for _, r in v), 1)} for k, v in runs.items()}  # fmt: skip
    result = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        "rounds": args.rounds,
        "figures": med,
        "diagnose_over_import_torch": {
            "median": round(statistics.median(ratios), 2),
            "max": round(max(ratios), 2),
            "target": 2.0,
        },
        "targets": {"diagnose_peak_rss_mb": 400, "reject_s": 0.5},
        "met": {
            "ratio": statistics.median(ratios) <= 2.0,
            "rss": med["diagnose"]["peak_rss_mb"] < 400,
            "reject": max(med["missing_path"]["wall_s"], med["text_file"]["wall_s"]) < 0.5,
        },
    }
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
