"""Does training several seeds at once pay? (issue 4: "batched seeds in one trial ... measure whether
it does").

    .venv/bin/python benchmarks/bench_seeds.py [--model cnn_small] [--seeds 4] [--train 96] [--val 48]
        [--epochs 6] [--device auto]

Builds (or reuses, under --data, default var/bench-seeds) a lab training set and a field validation
set, then fits the same configuration K times one seed at a time (seeds=1, seed 0..K-1) and once as a
stack (seeds=K, models.seeds: the members share every batch's collation, augmentation and validation
pass). Both use the same number of epochs with no early stopping, torch's default threads (all cores)
or the GPU when CUDA is present. Prints one JSON document: wall seconds of each way, the speed-up per
seed-model, and the validation exact match of the single models (mean) and of the stack's ensemble.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from models.metrics import exact_match  # noqa: E402
from models.registry import create_model  # noqa: E402
from training.datasets import DatasetSpec, build, load_dataset  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="cnn_small")
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--train", type=int, default=96, help="lab training bundles")
    ap.add_argument("--val", type=int, default=48, help="field validation bundles")
    ap.add_argument("--epochs", type=int, default=6)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--data", default=str(REPO / "var" / "bench-seeds"))
    args = ap.parse_args()
    root = Path(args.data)
    X, y = load_dataset(build(DatasetSpec("lab", args.train, seed=101, partial=0.5), root, progress=False))
    Xv, yv = load_dataset(build(DatasetSpec("field", args.val, seed=102), root, progress=False))
    common = {"epochs": args.epochs, "patience": args.epochs + 1, "device": args.device}

    t0 = time.perf_counter()
    singles = [create_model(args.model, seed=s, seeds=1, **common).fit(X, y) for s in range(args.seeds)]
    one_at_a_time = time.perf_counter() - t0
    t0 = time.perf_counter()
    stack = create_model(args.model, seed=0, seeds=args.seeds, **common).fit(X, y)
    stacked = time.perf_counter() - t0

    single_em = [exact_match(yv, m.predict(Xv)) for m in singles]
    cuda = torch.cuda.is_available() and args.device in ("auto", "cuda")
    result = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}, "
        + (torch.cuda.get_device_name(0) if cuda else f"CPU, {torch.get_num_threads()} threads"),
        "model": args.model,
        "seeds": args.seeds,
        "train_bundles": len(X),
        "epochs": args.epochs,
        "one_at_a_time_s": round(one_at_a_time, 1),
        "stacked_s": round(stacked, 1),
        "speedup": round(one_at_a_time / stacked, 2),
        "val_exact_match": {
            "single_mean": round(statistics.mean(single_em), 3),
            "single_each": [round(v, 3) for v in single_em],
            "stack_ensemble": round(exact_match(yv, stack.predict(Xv)), 3),
        },
    }
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
