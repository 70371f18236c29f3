"""How far a bundle's evidence tells an under-driven cluster from a healthy one, on the other sources.

    .venv/bin/python benchmarks/bench_oio_separability.py --sets DIR [--data RUN] [--n 200] [--seed 2]
        [--source outsider,cleanroom]

faults.md gives `cluster.low_oio` no counter of its own: "cluster oio ≈ number of VM disks × 1 … no
congestion, no errors anywhere — the system is healthy but under-driven", and no bundle file gives a VM's
disk count (bundle-format.md; vscsiStats, where captured, counts I/Os per virtual disk). On each source's
bundles whose whole answer is healthy or an under-driven cluster, this prints one JSON line:

- how many of each hold the fault's signature as the rules read it (`models.rules_evidence`: a flat
  plateau of the cluster's oio within 10 %, vSAN latency under 3 ms, 0.5–16 I/Os in flight a VM);
- what the served model of the newest `vsandx train` run under --data calls them (recall, false calls);
- a ceiling: classifiers fitted on that source's own evidence (MEASURES: the `rules_evidence` cluster
  measures the under-driven rule and its vetoes read, the resync ones left out; 5-fold cross-validated):
  what the evidence separates when a model may learn the very source it is scored on, which the served
  model may not.

Bundles are written and read as bench_cleanroom.py does (the same --sets folder is reused).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench_calibration import champion  # noqa: E402
from bench_cleanroom import cleanroom_set  # noqa: E402
from sklearn.ensemble import RandomForestClassifier  # noqa: E402
from sklearn.model_selection import StratifiedKFold, cross_val_predict  # noqa: E402
from sklearn.tree import DecisionTreeClassifier  # noqa: E402

from data.sources import WRITERS as SOURCES  # noqa: E402
from models.features import hold_features  # noqa: E402
from models.rules_evidence import bundle_evidence  # noqa: E402
from models.rules_margins import THRESHOLDS  # noqa: E402
from pipeline.tensors import BundleTensors  # noqa: E402
from training.datasets import load_dataset  # noqa: E402

MEASURES = ("oio_per_vm", "oio_per_disk", "oio_plateau_spread", "closed_loop", "inflight_spread", "disk_oio",
            "latency_ms", "active_share", "iops", "congestion", "dev_ms_max", "hybrid")  # fmt: skip


def cluster_cases(X: list[BundleTensors], y: list[dict[str, str]]) -> tuple[list[int], np.ndarray, np.ndarray]:
    """The bundles whose whole answer is healthy or an under-driven cluster: their indices, the cluster's
    measures (n, len(MEASURES); NaN where unobserved) and whether it is under-driven."""
    idx, rows, under = [], [], []
    for i, (bt, labels) in enumerate(zip(X, y, strict=True)):
        ids = bt.kinds["cluster"].ids
        faults = {c: v for c, v in labels.items() if v != "none"}
        if not len(ids) or set(faults.values()) - {"cluster.low_oio"} or set(faults) - {ids[0]}:
            continue
        ev = bundle_evidence(bt)["cluster"]
        idx.append(i)
        rows.append([float(ev[k][0]) for k in MEASURES])
        under.append(bool(faults))
    return idx, np.array(rows, dtype=float).reshape(len(rows), len(MEASURES)), np.array(under, dtype=bool)


def signature(A: np.ndarray) -> np.ndarray:
    """faults.md's signature at the rules' own thresholds (models/rules_thresholds.py)."""
    m, th = {k: A[:, j] for j, k in enumerate(MEASURES)}, THRESHOLDS
    with np.errstate(invalid="ignore"):
        return (
            (m["oio_plateau_spread"] - 1.0 < th["oio_plateau_spread"])
            & (m["latency_ms"] < th["low_latency_ms"])
            & (m["oio_per_vm"] >= th["oio_per_vm_min"])
            & (m["oio_per_vm"] <= th["oio_per_vm_max"])
        )


def counts(said: np.ndarray, under: np.ndarray) -> dict[str, str]:
    return {"found": f"{int((said & under).sum())}/{int(under.sum())}",
            "false": f"{int((said & ~under).sum())}/{int((~under).sum())}"}  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sets", required=True, help="where the sources' bundles and tensors go (bench_cleanroom's)")
    ap.add_argument("--data", help="a `vsandx train` run's VSANDX_DATA_DIR: its served model's calls too")
    ap.add_argument("--n", type=int, default=200, help="bundles of each source")
    ap.add_argument("--seed", type=int, default=2, help="the generators' seed")
    ap.add_argument("--source", default="outsider,cleanroom", help=f"comma-separated, of {', '.join(SOURCES)}")
    args = ap.parse_args()
    model = champion(Path(args.data)) if args.data else None
    for src in args.source.split(","):
        X, y = load_dataset(cleanroom_set(Path(args.sets), args.n, args.seed, src)[0])
        with hold_features(len(X)):
            idx, A, under = cluster_cases(X, y)
            out = {"source": src, "bundles": len(under), "under_driven": int(under.sum()),
                   "signature": counts(signature(A), under)}  # fmt: skip
            if model is not None:
                preds = model.predict([X[i] for i in idx])
                cluster = [X[i].kinds["cluster"].ids[0] for i in idx]
                called = np.array([p[c] == "cluster.low_oio" for c, p in zip(cluster, preds, strict=True)])
                out["served"] = counts(called, under)
        A = np.nan_to_num(A, nan=-10.0)  # unobserved: a value no measure takes (closed_loop reaches -1)
        folds = StratifiedKFold(5, shuffle=True, random_state=0)
        for name, clf in (
            ("tree_depth3", DecisionTreeClassifier(max_depth=3, random_state=0)),
            ("forest", RandomForestClassifier(300, min_samples_leaf=2, random_state=0)),
        ):
            out[f"ceiling_{name}"] = counts(cross_val_predict(clf, A, under, cv=folds).astype(bool), under)
        print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
