"""The rules' weight beside the CNNs, on a trained champion: the same members re-weighted, no training.

    .venv/bin/python benchmarks/bench_prior_weight.py --data var/quick-v2 [--weights 0,0.25,0.5,1,0.5@cluster=2]
        [--seed 3] [--kind-member disk=1.5]

Loads the ensemble a `vsandx train` run saved under DATA/runs/*/ensemble (the newest), takes its CNN
members, its prior (the member after them) and any members voting on some kinds only (TrainConfig's
kind_members, kept at their served weights), and scores the ensemble with the prior at each weight (0:
without it; `0.5@cluster=2`: 0.5, but 2 on cluster components) on the run's field test set (the
dataset of field bundles with that seed, already built by the run). Prints exact match, the share of
healthy bundles called healthy and the faults whose recall falls below 1 per weight. `--kind-member
disk=1.5` weighs the members voting on disks only at 1.5 there instead of their served weight (the mlp's
weight on disks; give --weights the served prior weight to vary that alone). `--seed 2` scores the
validation set instead; `--cleanroom 2` the clean-room generator's 200 bundles of seed 2 (bench_cleanroom,
written and read once under --sets; `--source outsider` the outsider's instead); `--wrong` lists the
components each weighting gets wrong.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench_accuracy import wrong  # noqa: E402
from bench_calibration import champion, run_set  # noqa: E402
from bench_cleanroom import as_labelled, cleanroom_set  # noqa: E402
from bench_generalise import combination  # noqa: E402

from data.sources import WRITERS as SOURCES  # noqa: E402
from models.cnn import CNNDiagnoser  # noqa: E402
from models.ensemble import EnsembleDiagnoser  # noqa: E402
from models.features import hold_features  # noqa: E402
from models.metrics import exact_match, per_fault  # noqa: E402
from training.datasets import load_dataset  # noqa: E402
from training.fitting import is_faulty  # noqa: E402


def _kind_weight(text: str) -> str:
    _, _, w = text.partition("=")
    try:
        float(w)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: want KIND=WEIGHT, e.g. disk=1.5") from None
    return text


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="the VSANDX_DATA_DIR of a `vsandx train` run")
    ap.add_argument("--weights", default="0,0.25,0.5,1")
    ap.add_argument("--seed", type=int, default=3, help="seed of the run's field test set (seed*10+3; 3 for seed 0)")
    ap.add_argument("--kind-member", action="append", default=[], metavar="KIND=W", type=_kind_weight,
                    help="weigh the members voting on KIND only at W there (repeatable)")  # fmt: skip
    ap.add_argument(
        "--cleanroom",
        type=int,
        default=None,
        metavar="SEED",
        help="score the clean-room generator's bundles of SEED instead of the run's own set",
    )
    ap.add_argument("--source", default="cleanroom", choices=sorted(SOURCES), help="--cleanroom's generator")
    ap.add_argument("--sets", default=str(REPO / "var" / "bench-cleanroom"), help="where --cleanroom's bundles go")
    ap.add_argument("--wrong", action="store_true", help="also list each wrong component: [bundle, id, truth, said]")
    args = ap.parse_args()
    root = Path(args.data)
    ens = champion(root)
    ens = getattr(ens, "base_", ens)  # the served model is calibrated; its ensemble lies one level down
    assert isinstance(ens, EnsembleDiagnoser) and len(ens.models_) > 1, f"{root}: no prior beside the CNNs"
    k = sum(isinstance(m, CNNDiagnoser) for m in ens.models_)
    cnns, prior, others = ens.models_[:k], ens.models_[k], ens.models_[k + 1 :]
    served = {kd: list(v[k + 1 :]) for kd, v in (ens.kind_weights or {}).items()}  # the other members' weights
    for kd, _, kw in (x.partition("=") for x in args.kind_member):
        if kd not in served:
            own = ", ".join(sorted(served))
            ap.error(f"--kind-member {kd}={kw}: {kd} has no weights of its own in this ensemble (these do: {own})")
        # a kind member weighs 0 everywhere but on its kinds: those weights are the ones to change
        served[kd] = [float(kw) if base == 0 else v for v, base in zip(served[kd], ens.weights[k + 1 :], strict=True)]
    if args.cleanroom is None:
        folder = run_set(root, args.seed)
    else:
        folder, _ = cleanroom_set(Path(args.sets), 200, args.cleanroom, args.source)
    X, y = load_dataset(folder)
    cnn_w, rest = [1.0 / k] * k, list(ens.weights[k + 1 :])
    with hold_features(len(X)):  # each bundle's features and margins once for every weight
        for entry in args.weights.split(","):
            _, (w,), by_kind = combination(f"prior*{entry}")  # "0.5@cluster=2": 0.5, but 2 on clusters
            kinds = {kd: [*cnn_w, by_kind.get(kd, [w])[0], *served.get(kd, rest)] for kd in {*by_kind, *served}}
            model = EnsembleDiagnoser.of([*cnns, prior, *others], [*cnn_w, w, *rest], kinds)
            pred = as_labelled(model.predict(X), y)
            low = {f: round(v["recall"], 2) for f, v in per_fault(y, pred).items() if v["support"] and v["recall"] < 1}
            healthy = [not is_faulty(p) for p, t in zip(pred, y, strict=True) if not is_faulty(t)]
            print(json.dumps({"prior": prior.name, "weight": entry, "kind_member": args.kind_member, "n": len(X),
                              "set": folder.name,
                              "exact_match": round(exact_match(y, pred), 4),
                              "healthy_all_none": round(sum(healthy) / max(1, len(healthy)), 3),
                              "recall_below_1": low} | ({"wrong": wrong(y, pred)} if args.wrong else {})))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
