"""Calibrated confidence of a trained champion (issue 20 item 1), on more clusters than its test set holds.

    .venv/bin/python benchmarks/bench_calibration.py --data var/std-v3 [--test 1000] [--seed 31]
        [--methods temperature,isotonic] [--coverage 0.95] [--sets var/bench-calibration]

A bundle has one cluster component, so a 400-bundle test set measures the cluster kind's expected
calibration error on 400 components, where a perfectly calibrated model already shows about 0.02 by
chance. This loads the served model a `vsandx train` run saved under DATA/runs/*/ensemble (the newest),
builds `--test` field bundles of a seed no preset trains, selects or tests on (31), and gives per kind
the ECE of the served scores, of the ensemble's raw scores, and of the raw ensemble recalibrated on the
run's own validation set (field seed 2, as the run calibrated it) by each of `--methods`; beside each,
what a perfectly calibrated model with the same confidences would show (mean and 95th percentile of
400 draws), the exact match, and for calibrated rows the conformal sets' coverage at `--coverage`
and the share of components and bundles they send to review. One JSON line per row.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from models.base import LABELS, load_model  # noqa: E402
from models.calibration import CalibratedDiagnoser  # noqa: E402
from models.conformal import review_summary  # noqa: E402
from models.ece import ece_if_calibrated, kind_ece, kind_top  # noqa: E402
from models.features import hold_features  # noqa: E402
from models.metrics import exact_match  # noqa: E402
from training.datasets import DatasetSpec, build, load_dataset  # noqa: E402


def champion(root: Path) -> Any:
    """The served model the newest `vsandx train` run under `root` saved."""
    return load_model(max(root.glob("runs/*/ensemble"), key=lambda p: p.stat().st_mtime))


def run_set(root: Path, seed: int) -> Path:
    """The run's field dataset of `seed` (2: validation, 3: test for seed 0)."""
    for d in sorted(root.glob("datasets/field-*/dataset.json")):
        if json.loads(d.read_text()).get("seed") == seed:
            return d.parent
    raise SystemExit(f"{root}: no field dataset of seed {seed}")


def row(name: str, model: Any, X: list[Any], y: list[Any], coverage: float) -> dict[str, Any]:
    probs = model.predict_proba(X)
    pred = [{c: LABELS[int(p.argmax())] for c, p in b.items()} for b in probs]
    top = kind_top(probs, X, y)
    floor = {k: [round(v, 4) for v in ece_if_calibrated(c)] for k, (c, _) in top.items()}
    out: dict[str, Any] = {"model": name, "bundles": len(X), "exact_match": round(exact_match(y, pred), 4),
                           "ece": {k: round(v, 4) for k, v in kind_ece(probs, X, y).items()},
                           "ece_if_calibrated": floor}  # fmt: skip
    if isinstance(model, CalibratedDiagnoser):
        kinds, bundles = review_summary(model.prediction_sets(X, probs, coverage), X, y)
        (every,) = [k for k in kinds if k.kind == "all"]
        out |= {"coverage": round(every.coverage, 4), "review_components": round(every.review, 4),
                "review_bundles": round(bundles, 4)}  # fmt: skip
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="the VSANDX_DATA_DIR of a `vsandx train` run")
    ap.add_argument("--test", type=int, default=1000, help="field bundles to score")
    ap.add_argument("--seed", type=int, default=31, help="their seed (no preset trains, selects or tests on 31)")
    ap.add_argument("--val-seed", type=int, default=2, help="the run's validation set (seed*10+2; 2 for seed 0)")
    ap.add_argument("--methods", default="temperature,isotonic", help="recalibrate the raw ensemble by these")
    ap.add_argument("--coverage", type=float, default=0.95)
    ap.add_argument("--sets", default=str(REPO / "var" / "bench-calibration"), help="where the test set is built")
    args = ap.parse_args()
    root = Path(args.data)
    served = champion(root)
    base = getattr(served, "base_", served)
    X, y = load_dataset(build(DatasetSpec("field", args.test, seed=args.seed), Path(args.sets), progress=False))
    X, y = list(X), list(y)
    Xv, yv = load_dataset(run_set(root, args.val_seed))
    with hold_features(len(X) + len(Xv)):  # every row reads the same bundles' features
        rows = [row("served", served, X, y, args.coverage), row("uncalibrated", base, X, y, args.coverage)]
        for method in (m for m in args.methods.split(",") if m):
            model = CalibratedDiagnoser.of(base, method).calibrate(list(Xv), list(yv))
            rows.append(row(method, model, X, y, args.coverage))
    for r in rows:
        print(json.dumps(r), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
