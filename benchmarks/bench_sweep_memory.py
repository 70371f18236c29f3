"""A real sweep's memory, sampled while it runs, against what the sweep sized itself by.

    .venv/bin/python benchmarks/bench_sweep_memory.py --train DIR --val DIR [--family cnn_small]
        [--trials 2] [--epochs 1] [--overrides '{"seeds": 3}']

Runs training.tune.run_sweep on built datasets (a `vsandx train` run's: DATA/datasets/mix-* is the
standard preset's training set, field-* of 200 its validation set) with `--trials` trials, all at once
unless the memory says otherwise, and samples every 0.5 s: the machine's used memory as Ray's
out-of-memory killer counts it (cgroup aware), and each Ray worker's resident memory split into its own
(RssAnon) and the shared object store's pages it maps (RssShmem). Prints one JSON line: the datasets'
loaded size, used memory before and at its peak, the peak of every trial worker, the trials' configs
and training.sweep_memory's estimates of a trial beside the shared datasets: of the family's recipe,
and at the largest batch the sweep can draw (what it sizes its concurrency by).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import ray._private.utils as ray_utils  # noqa: E402

from models.registry import create_model  # noqa: E402
from training.sweep_memory import largest_bundle_bytes, largest_draw, loaded_bytes, trial_bytes  # noqa: E402
from training.tune import SweepSpec, run_sweep  # noqa: E402

GIB = 2**30


def _workers() -> dict[int, dict[str, int]]:
    """Every Ray trial worker's {RssAnon, RssShmem} in bytes (its command line starts `ray::`)."""
    out = {}
    for proc in Path("/proc").iterdir():
        try:
            if not proc.name.isdigit() or not (proc / "cmdline").read_bytes().startswith(b"ray::"):
                continue
            fields = dict(line.split(":", 1) for line in (proc / "status").read_text().splitlines() if ":" in line)
            out[int(proc.name)] = {k: int(fields[k].split()[0]) * 1024 for k in ("RssAnon", "RssShmem")}
        except (OSError, ValueError, KeyError):
            continue
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train", type=Path, required=True)
    ap.add_argument("--val", type=Path, required=True)
    ap.add_argument("--family", default="cnn_small")
    ap.add_argument("--trials", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--overrides", default='{"seeds": 3}', help="JSON: fixed hyperparameters, as a preset's")
    args = ap.parse_args()

    before = ray_utils.get_used_memory()
    peak = {"used": before}
    workers: dict[int, dict[str, int]] = {}
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.5):
            peak["used"] = max(peak["used"], ray_utils.get_used_memory())
            for pid, rss in _workers().items():
                seen = workers.setdefault(pid, {"RssAnon": 0, "RssShmem": 0})
                for k, v in rss.items():
                    seen[k] = max(seen[k], v)

    threading.Thread(target=sample, daemon=True).start()
    overrides = {"epochs": args.epochs, **json.loads(args.overrides)}
    spec = SweepSpec(args.family, num_samples=args.trials, max_epochs=args.epochs, overrides=overrides)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as out:
        outcomes = run_sweep(spec, args.train, args.val, Path(out), progress=False)
    done.set()
    shared = loaded_bytes(args.train) + loaded_bytes(args.val)
    recipe = create_model(args.family).get_params() | overrides
    largest = largest_bundle_bytes(args.train)
    trials = sorted((w for w in workers.values() if w["RssAnon"] > 256 * 2**20), key=lambda w: -w["RssAnon"])
    print(
        json.dumps(
            {
                "family": args.family,
                "trials": args.trials,
                "finished": len(outcomes),
                "seconds": round(time.perf_counter() - t0, 1),
                "datasets_gib": round(shared / GIB, 2),
                "used_before_gib": round(before / GIB, 2),
                "used_peak_gib": round(peak["used"] / GIB, 2),
                "rise_gib": round((peak["used"] - before) / GIB, 2),
                "trial_own_peak_gib": [round(w["RssAnon"] / GIB, 2) for w in trials],
                "trial_shared_peak_gib": [round(w["RssShmem"] / GIB, 2) for w in trials],
                "configs": [o.config for o in outcomes],
                "estimate_recipe_trial_gib": round(trial_bytes(largest, recipe) / GIB, 2),
                # what the sweep sizes its concurrency by: the largest batch it can draw
                "estimate_sized_trial_gib": round(trial_bytes(largest, largest_draw(args.family, overrides)) / GIB, 2),
            }
        )
    )


if __name__ == "__main__":
    main()
