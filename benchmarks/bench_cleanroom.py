"""A trained champion on bundles of other sources: the generators other authors wrote from
../shared/spec alone, sharing no code, no causes and no numbers with data/simulate (data.sources: the
clean-room generator and the outsider; issue 17).

    .venv/bin/python benchmarks/bench_cleanroom.py --data var [--n 200] [--seed 1] [--source cleanroom,outsider]
        [--sets var/bench-cleanroom] [--no-alone] [--wrong]

Loads the served model the newest `vsandx train` run under DATA saved (as bench_prior_weight does),
writes --n bundles of each source (.tgz, as a user would upload them), reads each through the one
pipeline path (`training.datasets.build_labelled`, i.e. `pipeline.load_bundle`) and scores, side by side
on each source's bundles and on the run's own field test set: the served model, its CNN members
averaged, and each other member alone (the rules, the mlp). One JSON line per (set, model): exact match,
healthy bundles called healthy, recall and precision per fault, and the faults each fault was taken for.
A labelled component the pipeline did not report counts as called `none` (and is counted: `unseen`).
`--no-alone` scores the ensembles without models.alone.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tarfile
from collections import Counter
from pathlib import Path
from typing import Any, cast

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench_accuracy import score  # noqa: E402
from bench_calibration import champion, run_set  # noqa: E402

from data.sources import WRITERS as SOURCES  # noqa: E402
from models.cnn import CNNDiagnoser  # noqa: E402
from models.ensemble import EnsembleDiagnoser  # noqa: E402
from models.features import hold_features  # noqa: E402
from models.metrics import per_fault  # noqa: E402
from training.datasets import LabelledBundle, build_labelled, load_dataset  # noqa: E402
from training.fitting import is_faulty  # noqa: E402


def cleanroom_set(root: Path, n: int, seed: int, source: str = "cleanroom") -> tuple[Path, list[str]]:
    """The dataset folder of n bundles of `seed` from one of SOURCES, written and read once per
    (source, n, seed), and the bundles' file names in the dataset's order (by content hash)."""
    raw = root / f"{source}-{seed}-{n}"
    paths = sorted(raw.glob("*.tgz")) if raw.is_dir() else []
    if len(paths) != n:
        paths = SOURCES[source](raw, n, seed)
    items = []
    for p in paths:
        with tarfile.open(p) as tf:
            member = tf.extractfile("labels.json")
            assert member is not None, f"{p}: no labels.json"
            labels = json.loads(member.read())["components"]
        items.append(LabelledBundle(hashlib.sha256(p.read_bytes()).hexdigest(), p, labels))
    folder = build_labelled(items, root, source=f"{source}{seed}")
    return folder, [it.path.name for it in sorted(items, key=lambda it: it.sha256)]


def as_labelled(pred: list[dict[str, str]], y: list[dict[str, str]]) -> list[dict[str, str]]:
    """The calls on each labelled component: one the pipeline did not report reads `none`."""
    return [{c: p.get(c, "none") for c in t} for p, t in zip(pred, y, strict=True)]


def scored(
    name: str, y: list[dict[str, str]], pred: list[dict[str, str]], names: list[str] | None, show_wrong: bool
) -> dict[str, Any]:
    unseen = sum(c not in p for p, t in zip(pred, y, strict=True) for c in t)
    labelled = as_labelled(pred, y)
    out = score(y, labelled)  # exact match, component accuracy, healthy, recall, the wrong components
    bad = cast(list[list[Any]], out.pop("wrong"))  # [bundle index, component, truth, said]
    taken: dict[str, Counter[str]] = {}
    for _, _, truth, said in bad:
        if truth != "none":
            taken.setdefault(truth, Counter())[said] += 1
    every = per_fault(y, labelled)
    return {
        "model": name,
        "n": len(y),
        **out,
        "healthy_n": sum(not is_faulty(t) for t in y),
        "precision": {f: round(v["precision"], 2) for f, v in every.items() if v["precision"] or v["support"]},
        "support": {f: v["support"] for f, v in every.items() if v["support"]},
        "taken_for": {f: dict(c.most_common()) for f, c in taken.items()},
        "unseen": unseen,
    } | ({"wrong": [[names[i] if names else i, *rest] for i, *rest in bad]} if show_wrong else {})


def rows(model: Any) -> list[tuple[str, Any]]:
    """The served model, its CNNs averaged, and each other member of its ensemble alone."""
    ens = getattr(model, "base_", model)
    out: list[tuple[str, Any]] = [("served", model)]
    if isinstance(ens, EnsembleDiagnoser):
        cnns = [m for m in ens.models_ if isinstance(m, CNNDiagnoser)]
        if cnns:
            out.append((f"cnn x{len(cnns)}", EnsembleDiagnoser.of(cnns, alone=ens.alone)))  # equal weights
        out += [(m.name, m) for m in ens.models_ if not isinstance(m, CNNDiagnoser)]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="the VSANDX_DATA_DIR of a `vsandx train` run")
    ap.add_argument("--n", type=int, default=200, help="bundles of each source")
    ap.add_argument("--seed", type=int, default=1, help="the generator's seed")
    ap.add_argument("--source", default="cleanroom", help=f"comma-separated, of {', '.join(SOURCES)}")
    ap.add_argument("--sets", default=str(REPO / "var" / "bench-cleanroom"), help="where bundles and tensors go")
    ap.add_argument("--test-seed", type=int, default=3, help="the run's own field test set (3 for seed 0)")
    ap.add_argument("--no-alone", action="store_true", help="score without models.alone")
    ap.add_argument("--wrong", action="store_true", help="also list each wrong component: [bundle, id, truth, said]")
    args = ap.parse_args()
    root = Path(args.data)
    model = champion(root)
    if args.no_alone:
        getattr(model, "base_", model).alone = ()
    sets: dict[str, tuple[Path, list[str] | None]] = {
        src: cleanroom_set(Path(args.sets), args.n, args.seed, src) for src in args.source.split(",")
    }
    sets["own field test"] = (run_set(root, args.test_seed), None)
    for set_name, (folder, names) in sets.items():
        X, y = load_dataset(folder)
        with hold_features(len(X)):  # each bundle's features and rule margins once for every row
            for name, m in rows(model):
                print(json.dumps({"set": set_name, **scored(name, y, m.predict(X), names, args.wrong)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
