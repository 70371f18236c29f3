"""The rules' weight beside the CNNs, on a trained champion: the same members re-weighted, no training.

    .venv/bin/python benchmarks/bench_prior_weight.py --data var/quick-v2 [--weights 0,0.25,0.5,1,0.5@cluster=2]
        [--seed 3]

Loads the ensemble a `vsandx train` run saved under DATA/runs/*/ensemble (the newest), takes its CNN
members, its prior (the member after them) and any members voting on some kinds only (TrainConfig's
kind_members, kept at their served weights), and scores the ensemble with the prior at each weight (0:
without it; `0.5@cluster=2`: 0.5, but 2 on cluster components) on the run's field test set (the
dataset of field bundles with that seed, already built by the run). Prints exact match, the share of
healthy bundles called healthy and the faults whose recall falls below 1 per weight.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench_calibration import champion, run_set  # noqa: E402
from bench_generalise import combination  # noqa: E402

from models.cnn import CNNDiagnoser  # noqa: E402
from models.ensemble import EnsembleDiagnoser  # noqa: E402
from models.metrics import exact_match, per_fault  # noqa: E402
from training.datasets import load_dataset  # noqa: E402
from training.fitting import is_faulty  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="the VSANDX_DATA_DIR of a `vsandx train` run")
    ap.add_argument("--weights", default="0,0.25,0.5,1")
    ap.add_argument("--seed", type=int, default=3, help="seed of the run's field test set (seed*10+3; 3 for seed 0)")
    args = ap.parse_args()
    root = Path(args.data)
    ens = champion(root)
    ens = getattr(ens, "base_", ens)  # the served model is calibrated; its ensemble lies one level down
    assert isinstance(ens, EnsembleDiagnoser) and len(ens.models_) > 1, f"{root}: no prior beside the CNNs"
    k = sum(isinstance(m, CNNDiagnoser) for m in ens.models_)
    cnns, prior, others = ens.models_[:k], ens.models_[k], ens.models_[k + 1 :]
    served = {kd: list(v[k + 1 :]) for kd, v in (ens.kind_weights or {}).items()}  # the other members' weights
    X, y = load_dataset(run_set(root, args.seed))
    for entry in args.weights.split(","):
        _, (w,), by_kind = combination(f"prior*{entry}")  # "0.5@cluster=2": 0.5, but 2 on clusters
        cnn_w = [1.0 / k] * k
        rest = list(ens.weights[k + 1 :])
        kinds = {kd: [*cnn_w, by_kind.get(kd, [w])[0], *served.get(kd, rest)] for kd in {*by_kind, *served}}
        model = EnsembleDiagnoser.of([*cnns, prior, *others], [*cnn_w, w, *rest], kinds)
        pred = model.predict(X)
        low = {f: round(v["recall"], 2) for f, v in per_fault(y, pred).items() if v["support"] and v["recall"] < 1}
        em = round(exact_match(y, pred), 3)
        healthy = [not is_faulty(p) for p, t in zip(pred, y, strict=True) if not is_faulty(t)]
        print(json.dumps({"prior": prior.name, "weight": entry, "n": len(X), "exact_match": em,
                          "healthy_all_none": round(sum(healthy) / max(1, len(healthy)), 3),
                          "recall_below_1": low}))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
