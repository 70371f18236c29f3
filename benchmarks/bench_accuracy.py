"""Accuracy on the field test set by training mix (issue 4; the README's "Where accuracy stands").

    .venv/bin/python benchmarks/bench_accuracy.py --lab 500 --varied 500 [--models cnn_small,logreg,mlp,svm,mnb,rules]
        [--kind-balance 1.0] [--epochs 30] [--set features=true ...] [--pool 600] [--val 100] [--test 200]
        [--drop-test event [--drop-test esxtop ...]] [--data var/bench-accuracy]

Builds (or reuses) a pool of lab bundles (seed 1, half of them partial uploads) and of varied
field-profile bundles (seed 7, 30 % partial), a field validation set (seed 2: early stopping of the
CNN) and a field test set (seed 3, the one `vsandx train` uses with seed 0); trains each model on the
first --lab and --varied bundles of the pools and prints a JSON line per model and test variant: exact match,
component accuracy, healthy bundles called all-`none`, per-fault recall, fit time and the test
bundles' wrong components. CNNs train at most --epochs epochs with their registry defaults otherwise;
`--set NAME=VALUE` (a JSON value) overrides one of their hyperparameters. `--drop-test` also scores on
the test bundles with every channel of those sources (pipeline.channels: event = log events, esxtop)
blanked out: an upload whose logs rotated away or that has no esxtop capture, or another source whose
log lines our parser reads less of — how much a model leans on one kind of evidence.
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from models.metrics import component_accuracy, exact_match, per_fault  # noqa: E402
from models.registry import create_model  # noqa: E402
from training.datasets import DatasetSpec, build, load_dataset  # noqa: E402
from training.fitting import is_faulty  # noqa: E402


def wrong(yt: list[dict[str, str]], pred: list[dict[str, str]]) -> list[list[object]]:
    """Each wrong component: [bundle index, component id, truth, prediction]."""
    pairs = enumerate(zip(pred, yt, strict=True))
    return [[i, c, t[c], p.get(c)] for i, (p, t) in pairs for c in t if p.get(c) != t[c]]


def score(yt: list[dict[str, str]], pred: list[dict[str, str]]) -> dict[str, object]:
    healthy = [p for p, t in zip(pred, yt, strict=True) if not is_faulty(t)]
    return {
        "exact_match": round(exact_match(yt, pred), 3),
        "component_accuracy": round(component_accuracy(yt, pred), 4),
        "healthy_all_none": round(sum(not is_faulty(p) for p in healthy) / max(1, len(healthy)), 3),
        "recall": {k: round(v["recall"], 2) for k, v in per_fault(yt, pred).items()},
        "wrong": wrong(yt, pred),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lab", type=int, default=500)
    ap.add_argument("--varied", type=int, default=500)
    ap.add_argument(
        "--models", default="cnn_small,logreg,mlp,svm,mnb,rules", help="registry names (rules: faults.md as rules)"
    )
    ap.add_argument("--kind-balance", type=float, default=None, help="CNN loss balance (default: the model's)")
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="CNN hyperparameter (JSON)")
    ap.add_argument("--pool", type=int, default=600, help="bundles simulated per training pool")
    ap.add_argument("--val", type=int, default=100)
    ap.add_argument("--test", type=int, default=200)
    ap.add_argument(
        "--drop-test",
        action="append",
        default=[],
        metavar="SOURCES",
        help="also score with these channel sources (comma-separated) blanked in the test bundles; repeatable",
    )
    ap.add_argument("--data", default=str(REPO / "var" / "bench-accuracy"))
    args = ap.parse_args()
    root = Path(args.data)
    lab = load_dataset(build(DatasetSpec("lab", args.pool, seed=1, partial=0.5), root, progress=False))
    varied = load_dataset(build(DatasetSpec("field", args.pool, seed=7, partial=0.3), root, progress=False))
    X = list(lab[0][: args.lab]) + list(varied[0][: args.varied])
    y = list(lab[1][: args.lab]) + list(varied[1][: args.varied])
    Xv, yv = load_dataset(build(DatasetSpec("field", args.val, seed=2), root, progress=False))
    Xt, yt = load_dataset(build(DatasetSpec("field", args.test, seed=3), root, progress=False))
    variants = {"": list(Xt)} | {d: [bt.without(set(d.split(","))) for bt in Xt] for d in args.drop_test}
    for name in args.models.split(","):
        kw: dict[str, object] = {}
        if name.startswith("cnn"):
            kw["epochs"] = args.epochs
            if args.kind_balance is not None:
                kw["kind_balance"] = args.kind_balance
            for item in args.set:
                key, _, value = item.partition("=")
                kw[key] = json.loads(value)
        model = create_model(name, **kw)
        t0 = time.perf_counter()
        if "eval_set" in inspect.signature(model.fit).parameters:
            model.fit(X, y, eval_set=(Xv, yv))
        else:
            model.fit(X, y)
        fit_s = time.perf_counter() - t0
        for dropped, Xd in variants.items():
            pred = model.predict(Xd)
            print(
                json.dumps(
                    score(yt, pred)
                    | {
                        "lab": args.lab,
                        "varied": args.varied,
                        "model": name,
                        "params": kw,
                        "drop_test": dropped,
                        "fit_s": round(fit_s),
                    }
                ),
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
