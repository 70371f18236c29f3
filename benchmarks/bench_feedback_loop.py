"""The feedback loop (issue 17 item 6): accuracy on field bundles of causes the model never trained on,
against the number of engineer-confirmed feedback bundles of those causes added to its training.

    .venv/bin/python benchmarks/bench_feedback_loop.py [--models logreg,cnn_small,mlp,rules] [--feedback 0,10,30,60]
        [--combine COMBO] [--weights 3] [--train 400] [--test 80] [--fold 0] [--epochs 30]
        [--cnn-seeds 3] [--data var/bench-generalise]

The model first trains as in bench_generalise.py's leave-one-cause-out fold (field bundles of seed 21
without the fold's held-out causes). Feedback bundles are field uploads of seed 31 drawn only through
the held-out causes (healthy ones among them, at the field profile's issue rate), labelled with their
truth as an engineer's confirmation would label them, and added as `training.retrain` adds them:
`retrain_feedback_weight` copies each (the setting's default, or each of --weights in turn). The
test set is that fold's held-out-cause bundles (seed 22), which no feedback bundle is. Datasets are
shared with bench_generalise.py (same --data folder, same keys). `--combine` also scores ensembles of
the members fitted at each step, written as in bench_generalise.py: the default is the served one
(bench_generalise.served_combination, from training.config: `cnn_small+mlp*0@disk=1+rules*1@cluster=1.5
@diskgroup=2@host=1@nic=1`, what `vsandx train` serves and a retrain refits), scored when its members
are among --models.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench_generalise import combination, data, fit, held_out, make, served_combination  # noqa: E402

from models.ensemble import EnsembleDiagnoser  # noqa: E402
from models.features import hold_features  # noqa: E402
from models.metrics import exact_match, per_fault  # noqa: E402
from training.datasets import DatasetSpec  # noqa: E402
from vsandx.settings import Settings  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="logreg,cnn_small,mlp,rules")
    ap.add_argument("--combine", default=served_combination(), help="ensembles of --models to score as well")
    ap.add_argument("--feedback", default="0,10,30,60", help="feedback bundle counts")
    ap.add_argument("--weights", default="", help="copies of each feedback bundle (default: the setting's)")
    ap.add_argument("--train", type=int, default=400)
    ap.add_argument("--test", type=int, default=80)
    ap.add_argument("--val", type=int, default=60)
    ap.add_argument("--fold", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--cnn-seeds", type=int, default=3)
    ap.add_argument("--data", default=str(REPO / "var" / "bench-generalise"))
    args = ap.parse_args()
    root, counts = Path(args.data), [int(n) for n in args.feedback.split(",")]
    weights = [int(w) for w in args.weights.split(",") if w] or [Settings().retrain_feedback_weight]
    held = held_out(args.fold)
    X, y = data(DatasetSpec("field", args.train, seed=21, partial=0.3, exclude_causes=held), root)
    Xt, yt = data(DatasetSpec("field", args.test, seed=22, issue_rate=1.0, causes=held), root)
    Xf, yf = data(DatasetSpec("field", max(counts), seed=31, causes=held), root)
    val = data(DatasetSpec("field", args.val, seed=2), root)
    rows: list[dict[str, Any]] = []
    names = args.models.split(",")
    combos = [c for c in args.combine.split(",") if c and set(combination(c)[0]) <= set(names)]
    for c in set(filter(None, args.combine.split(","))) - set(combos):
        print(f"not scored: {c} (a member is not among --models)", file=sys.stderr)

    def report(name: str, w: int, k: int, model: Any, fit_s: float) -> None:
        pred = model.predict(Xt)
        recall = {f: round(v["recall"], 2) for f, v in per_fault(yt, pred).items() if v["support"]}
        row = {"model": name, "weight": w, "feedback": k, "exact_match": round(exact_match(yt, pred), 3),
               "recall": recall, "fit_s": round(fit_s), "held_out": list(held)}  # fmt: skip
        rows.append(row)
        print(json.dumps(row), flush=True)

    for w in weights:
        for k in counts:
            if k == 0 and w != weights[0]:
                continue  # no feedback: the weight changes nothing
            Xk, yk = X + Xf[:k] * w, y + yf[:k] * w
            with hold_features(len(X) + k + len(Xt) + len(val[0])):  # each bundle's features once
                fitted: dict[str, tuple[Any, float]] = {}
                for name in names:
                    model = make(name, args.epochs, args.cnn_seeds)
                    fitted[name] = (model, fit(model, Xk, yk, val))
                    report(name, w, k, *fitted[name])
                for combo in combos:  # probabilities averaged, as the served ensemble averages its members
                    members, mw, kinds = combination(combo)
                    ens = EnsembleDiagnoser.of([fitted[m][0] for m in members], mw, kinds)
                    report(combo, w, k, ens, sum(fitted[m][1] for m in members))
    print("| model | weight | " + " | ".join(f"{k} feedback" for k in counts) + " |")
    print("|---|---|" + "---|" * len(counts))
    for name in names + combos:
        for w in weights:
            score = {r["feedback"]: r["exact_match"] for r in rows if r["model"] == name and r["weight"] == w}
            none = [r["exact_match"] for r in rows if r["model"] == name and not r["feedback"]]
            score.setdefault(0, none[0] if none else None)
            cells = ["" if score.get(k) is None else f"{score[k]:.3f}" for k in counts]  # 0 feedback: run once
            print(f"| {name} | {w} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
