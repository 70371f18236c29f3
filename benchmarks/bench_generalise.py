"""Generalisation beyond our own rendering of each fault (issue 17): the README's first accuracy table.

    .venv/bin/python benchmarks/bench_generalise.py [--models cnn_small,logreg,mlp,svm,mnb,rules,minirocket]
        [--train 400] [--lab 0] [--test 80] [--folds 0,1]
        [--perturb interval:3,hosts,esxtop,logs:7,logs:8,load:0.5,load:2] [--epochs 30] [--cnn-seeds 3]
        [--combine cnn_small+rules,logreg+rules] [--calibrate temperature,isotonic,auto]
        [--data var/bench-generalise] [--models-dir var/bench-generalise/models] [--markdown]
        [--variant cnn_peer=cnn_small:peer_inputs=true,class_weight_power=1]

Leave-one-cause-out: fold k holds out, for every fault with several causes, its k-th cause
(data.simulate.causes); each model trains on field bundles (seed 21, 30 % partial uploads) drawn
without the held-out causes and is tested on bundles (seed 22) whose faults all come through the
held-out causes, so every fault present is one the model never saw rendered that way. With --lab N,
N of the training bundles are lab-profile ones (seed 21, half of them partial, without the held-out
causes), the mix `vsandx train` uses. Scores: exact match, component accuracy and per-fault recall on
those bundles.

Perturbations: each model trains once on every cause (seed 21) and is tested on the same field test
bundles (seed 23) as simulated and under each perturbation of data.simulate.perturb (a coarser
interval, hosts left out, no esxtop, the other log style, the load scaled): accuracy per row.

`--variant ALIAS=FAMILY:KEY=VALUE,...` registers a model under ALIAS: FAMILY with those hyperparameters
(JSON values, else strings), to name in --models and --combine beside FAMILY itself, on the same bundles.

A CNN family is trained with `seeds=--cnn-seeds`: that many networks whose probabilities are averaged,
the ensemble `vsandx train` serves. `--combine a+b` also scores the average of fitted models' probabilities
(the expert rules as a prior beside a learnt model). `--calibrate m1,m2` also scores each model calibrated on
the validation bundles by each method (models.calibration, per kind). Every row gives the expected calibration error of
the components' top scores (`ece`, and per kind); a calibrated row also the coverage of its conformal sets
at --coverage and the share of components and of bundles they send to review. Prints a JSON line per
(model, test) and, with --markdown, the table for the README.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import inspect
import json
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench_accuracy import score  # noqa: E402

from data.simulate.causes import CAUSES  # noqa: E402
from models.base import LABELS, SchemaMismatch, load_model  # noqa: E402
from models.calibration import CalibratedDiagnoser  # noqa: E402
from models.conformal import review_summary  # noqa: E402
from models.ece import ece_if_calibrated, kind_ece, kind_top  # noqa: E402
from models.ensemble import EnsembleDiagnoser  # noqa: E402
from models.features import hold_features  # noqa: E402
from models.metrics import per_fault  # noqa: E402
from models.registry import create_model  # noqa: E402
from training.datasets import DatasetSpec, build, load_dataset  # noqa: E402


def held_out(fold: int) -> tuple[str, ...]:
    """fault:cause keys of fold `fold`: the fold-th cause (cyclically) of each fault with several."""
    by: dict[str, list[str]] = {}
    for c in CAUSES:
        by.setdefault(c.fault, []).append(c.key)
    return tuple(sorted(keys[fold % len(keys)] for keys in by.values() if len(keys) > 1))


def make(name: str, epochs: int, cnn_seeds: int, **params: Any) -> Any:
    """A CNN family is trained as an ensemble in one model: `seeds` networks, probabilities averaged
    (`params`, a --variant's, may set either)."""
    return create_model(name, **({"epochs": epochs, "seeds": cnn_seeds} if name.startswith("cnn") else {}) | params)


def variant(text: str) -> tuple[str, str, dict[str, Any]]:
    """ "cnn_peer=cnn_small:peer_inputs=true,class_weight_power=1" -> (alias, family, hyperparameters)."""
    alias, _, rest = text.partition("=")
    family, _, pairs = rest.partition(":")
    if not alias or not family or not pairs:
        raise argparse.ArgumentTypeError(f"{text!r}: want ALIAS=FAMILY:KEY=VALUE[,KEY=VALUE...]")
    params: dict[str, Any] = {}
    for pair in pairs.split(","):
        key, eq, value = pair.partition("=")
        if not eq:
            raise argparse.ArgumentTypeError(f"{text!r}: {pair!r} is not KEY=VALUE")
        try:
            params[key] = json.loads(value)
        except json.JSONDecodeError:
            params[key] = value
    try:  # an unknown family or hyperparameter now, not after the datasets are built
        create_model(family, **params)
    except (KeyError, TypeError) as e:
        raise argparse.ArgumentTypeError(f"{text!r}: {e}") from None
    return alias, family, params


def fit(model: Any, X: list[Any], y: list[Any], val: tuple[list[Any], list[Any]]) -> float:
    t0 = time.perf_counter()
    if "eval_set" in inspect.signature(model.fit).parameters:
        model.fit(X, y, eval_set=val)
    else:
        model.fit(X, y)
    return time.perf_counter() - t0


def data(spec: DatasetSpec, root: Path) -> tuple[list[Any], list[Any]]:
    X, y = load_dataset(build(spec, root, progress=False))
    return list(X), list(y)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="cnn_small,logreg,mlp,svm,mnb,rules,minirocket")
    ap.add_argument("--train", type=int, default=400, help="training bundles per fold")
    ap.add_argument("--lab", type=int, default=0, help="of --train, lab-profile bundles (the rest field)")
    ap.add_argument("--test", type=int, default=80, help="test bundles per fold and perturbation")
    ap.add_argument("--val", type=int, default=60, help="validation bundles (CNN early stopping)")
    ap.add_argument("--folds", default="0,1", help="leave-one-cause-out folds to run ('' for none)")
    ap.add_argument("--perturb", default="interval:3,hosts,esxtop,logs:7,logs:8,load:0.5,load:2")
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--cnn-seeds", type=int, default=3)
    ap.add_argument("--data", default=str(REPO / "var" / "bench-generalise"))
    ap.add_argument("--combine", default="cnn_small+rules,logreg+rules",
                    help="fitted models averaged (a+b; a+b*0.5 weighs b by 0.5; a+b*0.5@cluster=2 weighs b by 2 "
                    "on cluster components) and scored too")  # fmt: skip
    ap.add_argument("--calibrate", default="", help="also score each model calibrated on the val set by these "
                    "methods (temperature,isotonic,auto: models.calibration)")  # fmt: skip
    ap.add_argument("--coverage", type=float, default=0.95, help="of a calibrated model's conformal sets")
    ap.add_argument("--markdown", action="store_true", help="also print the README tables")
    ap.add_argument("--models-dir", default="", help="save every fitted model under DIR/<training set>/<name> "
                    "and load it from there on later runs instead of fitting it again (other test sizes, "
                    "combinations, calibrations); clear it after changing a model's code")  # fmt: skip
    ap.add_argument("--variant", action="append", default=[], type=variant, metavar="ALIAS=FAMILY:KEY=VALUE,...",
                    help="a family with other hyperparameters, named ALIAS in --models and --combine")  # fmt: skip
    args = ap.parse_args()
    root, names = Path(args.data), args.models.split(",")
    variants = {alias: (family, params) for alias, family, params in args.variant}
    val = data(DatasetSpec("field", args.val, seed=2), root)
    rows: list[dict[str, Any]] = []

    def report(
        model: str, test: str, Xt: list[Any], yt: list[Any], probs: list[Any], fit_s: float, **extra: Any
    ) -> None:
        pred = [{c: LABELS[int(p.argmax())] for c, p in b.items()} for b in probs]
        cal = {k: round(v, 4) for k, v in kind_ece(probs, Xt, yt).items()}
        # what a perfectly calibrated model would show on as many clusters: its mean and 95th percentile
        top = kind_top(probs, Xt, yt)
        floor = [round(v, 4) for v in ece_if_calibrated(top["cluster"][0])] if "cluster" in top else None
        row = {"model": model, "test": test, **score(yt, pred), "fit_s": round(fit_s), "ece": cal.pop("all"),
               "ece_kind": cal, "cluster_ece_if_calibrated": floor, **extra}  # fmt: skip
        row.pop("wrong")
        # recall of the faults these bundles hold (a fault with no support has no recall to speak of)
        row["recall"] = {k: round(v["recall"], 2) for k, v in per_fault(yt, pred).items() if v["support"]}
        rows.append(row)
        print(json.dumps(row), flush=True)

    def review(model: Any, Xt: list[Any], yt: list[Any], probs: list[Any]) -> dict[str, Any]:
        """A calibrated model's conformal sets at --coverage: how often they hold the truth, and the
        share of components and of bundles they send to review."""
        if not isinstance(model, CalibratedDiagnoser):
            return {}
        kinds, bundles = review_summary(model.prediction_sets(Xt, probs, args.coverage), Xt, yt)
        (every,) = [k for k in kinds if k.kind == "all"]
        return {"coverage": round(every.coverage, 4), "review_components": round(every.review, 4),
                "review_bundles": round(bundles, 4)}  # fmt: skip

    combos = [c for c in args.combine.split(",") if c]
    methods = [m for m in args.calibrate.split(",") if m]

    def fitted_model(name: str, X: list[Any], y: list[Any], key: str) -> tuple[Any, float]:
        """`name` fitted on (X, y), or loaded from --models-dir when a run of this code with these settings
        saved it (one another code saved, SchemaMismatch, is fitted again and replaced)."""
        family, params = variants.get(name, (name, {}))
        if name in variants:  # its settings in the folder's name: another --variant of that alias is fitted anew
            name = f"{name}-{hashlib.sha1(json.dumps([family, params], sort_keys=True).encode()).hexdigest()[:8]}"
        folder = Path(args.models_dir) / f"{key}-train{len(X)}-epochs{args.epochs}-seeds{args.cnn_seeds}" / name
        if args.models_dir and (folder / "fit.json").exists():
            with contextlib.suppress(SchemaMismatch):
                return load_model(folder), float(json.loads((folder / "fit.json").read_text())["fit_s"])
        model = make(family, args.epochs, args.cnn_seeds, **params)
        fit_s = fit(model, X, y, val)
        if args.models_dir:
            model.save(folder)
            (folder / "fit.json").write_text(json.dumps({"fit_s": fit_s}))
        return model, fit_s

    def run(X: list[Any], y: list[Any], tests: dict[str, tuple[list[Any], list[Any]]], key: str, **extra: Any) -> None:
        n = len(X) + len(val[0]) + sum(len(t[0]) for t in tests.values())
        with hold_features(n):  # each bundle's features once, not per model
            fitted = {name: fitted_model(name, X, y, key) for name in names}
            for combo in combos:  # probabilities averaged, as the served ensemble averages its members
                names_, weights, kinds = combination(combo)
                if all(p in fitted for p in names_):
                    ens = EnsembleDiagnoser.of([fitted[p][0] for p in names_], weights, kinds)
                    fitted[combo] = (ens, sum(fitted[p][1] for p in names_))
            for method in methods:
                for name, (model, fit_s) in list(fitted.items()):
                    if " " not in name:  # not a calibrated one already
                        fitted[f"{name} {method}"] = (CalibratedDiagnoser.of(model, method).calibrate(*val), fit_s)
            for name, (model, fit_s) in fitted.items():
                for test, (Xt, yt) in tests.items():
                    probs = model.predict_proba(Xt)
                    report(name, test, Xt, yt, probs, fit_s, **extra, **review(model, Xt, yt, probs))

    for fold in [int(f) for f in args.folds.split(",") if f]:
        held = held_out(fold)
        X, y = data(DatasetSpec("field", args.train - args.lab, seed=21, partial=0.3, exclude_causes=held), root)
        if args.lab:
            Xl, yl = data(DatasetSpec("lab", args.lab, seed=21, partial=0.5, exclude_causes=held), root)
            X, y = X + Xl, y + yl
        test = data(DatasetSpec("field", args.test, seed=22, issue_rate=1.0, causes=held), root)
        run(X, y, {f"loco fold {fold}": test}, f"loco{fold}-lab{args.lab}", held_out=list(held), lab=args.lab)
    perturbs = [p for p in args.perturb.split(",") if p]
    if perturbs:
        X, y = data(DatasetSpec("field", args.train, seed=21, partial=0.3), root)
        tests = {p: data(DatasetSpec("field", args.test, seed=23, perturb=p), root) for p in ["", *perturbs]}
        run(X, y, {p or "as simulated": t for p, t in tests.items()}, "all-causes")
    if args.markdown:
        shown = names + combos
        print(markdown(rows, shown + [f"{n} {m}" for m in methods for n in shown]))
    return 0


def served_combination(cnn: str = "cnn_small") -> str:
    """What `vsandx train` serves, as a --combine: `cnn` (the CNNs, 1), each kind member on its kind
    only, each prior at training.config's weights."""
    from training.config import TrainConfig

    cfg, parts = TrainConfig(), [cnn]
    for name in sorted({m for by_name in cfg.kind_members.values() for m in by_name}):
        on = sorted((kind, by_name[name]) for kind, by_name in cfg.kind_members.items() if name in by_name)
        parts.append(f"{name}*0" + "".join(f"@{kind}={w:g}" for kind, w in on))
    kinds = "".join(f"@{k}={w:g}" for k, w in sorted(cfg.prior_kind_weight.items()))
    parts += [f"{prior}*{cfg.prior_weight:g}{kinds}" for prior in cfg.priors]
    return "+".join(parts)


def combination(combo: str) -> tuple[list[str], list[float], dict[str, list[float]]]:
    """ "a+b*0.5@cluster=2": members a and b, b weighing 0.5 (a: 1) but 2 on cluster components.
    Returns (members, weights, kind -> weights)."""
    names, weights, by_kind = [], [], []
    for part in combo.split("+"):
        head, *kinds = part.split("@")
        name, _, w = head.partition("*")
        names.append(name)
        weights.append(float(w or 1))
        by_kind.append(dict((k, float(v)) for k, _, v in (x.partition("=") for x in kinds)))
    kinds_named = {k for d in by_kind for k in d}
    return (
        names,
        weights,
        {k: [d.get(k, w) for d, w in zip(by_kind, weights, strict=True)] for k in sorted(kinds_named)},
    )


def markdown(rows: list[dict[str, Any]], names: list[str]) -> str:
    """Exact match per test (rows) and model (columns); the LOCO rows also give the worst fault recall."""
    tests = list(dict.fromkeys(r["test"] for r in rows))
    out = ["| test | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for t in tests:
        cells = []
        for n in names:
            r = next((r for r in rows if r["test"] == t and r["model"] == n), None)
            if r is None:
                cells.append("")
                continue
            worst = min(r["recall"].items(), key=lambda kv: kv[1], default=None)
            tail = f" (min recall {worst[1]:.2f} {worst[0]})" if t.startswith("loco") and worst else ""
            cells.append(f"{r['exact_match']:.3f}{tail}")
        out.append(f"| {t} | " + " | ".join(cells) + " |")
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
