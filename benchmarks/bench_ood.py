"""Never seen this (issue 20 item 3): the out-of-distribution flag's false flags and detections.

    .venv/bin/python benchmarks/bench_ood.py [--lab 200] [--varied 200] [--val 100] [--test 200]
        [--ood 20] [--variants link100,hosts64,device,units] [--quantile 0.99] [--data var/bench-ood]
        [--workers 2] [--markdown]

The scorer (models.ood) is fitted as `vsandx train --quick` fits it: ranges from the training bundles
(lab seed 1 and varied field seed 4, half of them partial uploads), the threshold from the field
validation bundles (seed 2). False flags: the share of the field test bundles (seed 3, the quick
preset's test set; in distribution, faulty or not) flagged, and of the healthy ones among them.
Detection, per variant of data.simulate.ood (field seed 5, indices 0..--ood-1): the share flagged,
and the share whose reasons name the variant's kind and one of its channels (data.simulate.ood
.EXPECTED). Prints a JSON line per row and, with --markdown, the README's table.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from data.simulate.archive import tar_bytes  # noqa: E402
from data.simulate.ood import EXPECTED, names_variant, simulate_ood  # noqa: E402
from models.features import bundle_features  # noqa: E402
from models.ood import OutlierScorer  # noqa: E402
from pipeline.api import load_bundle  # noqa: E402
from training.datasets import DatasetSpec, build, load_dataset  # noqa: E402

SCORER: OutlierScorer | None = None  # the fitted scorer, shared with forked workers


def one(job: tuple[str, int, int]) -> dict[str, Any]:
    variant, seed, index = job
    assert SCORER is not None
    t0 = time.perf_counter()
    files = simulate_ood(variant, seed, index).files
    bt = load_bundle(tar_bytes({k: v for k, v in files.items() if k != "labels.json"}))
    doc = SCORER.explain(bt)
    reasons = [(r["kind"], r["channels"]) for r in doc["reasons"]]
    named = names_variant(variant, doc["reasons"])
    return {"variant": variant, "index": index, "hosts": len(bt.hosts), "flag": doc["flag"], "named": named,
            "score": doc["score"], "reasons": reasons, "seconds": round(time.perf_counter() - t0, 1)}  # fmt: skip


def share(xs: list[bool]) -> float:
    return sum(xs) / max(len(xs), 1)


def main() -> int:
    global SCORER
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lab", type=int, default=200)
    ap.add_argument("--varied", type=int, default=200)
    ap.add_argument("--val", type=int, default=100)
    ap.add_argument("--test", type=int, default=200)
    ap.add_argument("--ood", type=int, default=20, help="bundles per variant")
    ap.add_argument("--variants", default=",".join(EXPECTED))
    ap.add_argument("--quantile", type=float, default=0.99)
    ap.add_argument("--data", default=str(REPO / "var" / "bench-ood"))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    root = Path(args.data).resolve()

    def data(spec: DatasetSpec) -> tuple[list[Any], list[Any]]:
        X, y = load_dataset(build(spec, root, workers=args.workers, progress=False))
        return list(X), list(y)

    X: list[Any] = []
    for spec in (
        DatasetSpec("lab", args.lab, seed=1, partial=0.5),
        DatasetSpec("field", args.varied, seed=4, partial=0.5),
    ):
        if spec.n:
            X += data(spec)[0]
    Xv, _ = data(DatasetSpec("field", args.val, seed=2))
    Xt, yt = data(DatasetSpec("field", args.test, seed=3))
    t0 = time.perf_counter()
    SCORER = OutlierScorer(quantile=args.quantile).fit(X, val=Xv)
    fit_s = time.perf_counter() - t0
    docs, spent = [], 0.0
    for bt in Xt:  # the served model computes a bundle's feature rows first: only the check is timed
        bundle_features(bt)
        t0 = time.perf_counter()
        docs.append(SCORER.explain(bt))
        spent += time.perf_counter() - t0
    per_ms = 1e3 * spent / len(Xt)
    healthy = [d for d, y in zip(docs, yt, strict=True) if all(v == "none" for v in y.values())]
    first = {"test": "field test set", "bundles": len(docs), "flagged": share([d["flag"] for d in docs]),
             "healthy": len(healthy), "healthy_flagged": share([d["flag"] for d in healthy]),
             "threshold": round(SCORER.threshold_, 2), "fit_s": round(fit_s, 1), "explain_ms": round(per_ms, 2),
             "median_score": sorted(d["score"] for d in docs)[len(docs) // 2],
             "max_score": max(d["score"] for d in docs),
             "reasons": [(r["kind"], r["channels"]) for d in docs if d["flag"] for r in d["reasons"]]}  # fmt: skip
    rows = [first]
    print(json.dumps(rows[0]), flush=True)
    jobs = [(v, 5, i) for v in args.variants.split(",") for i in range(args.ood)]
    ctx = mp.get_context("fork")
    with ctx.Pool(args.workers) as pool:
        got = list(pool.imap(one, jobs))
    for v in args.variants.split(","):
        mine = [g for g in got if g["variant"] == v]
        ok = [g["flag"] and g["named"] for g in mine]
        missed = [(g["index"], g["score"], g["reasons"]) for g in mine if not (g["flag"] and g["named"])]
        row = {"test": v, "bundles": len(mine), "flagged": share([g["flag"] for g in mine]), "named": share(ok),
               "min_score": min(g["score"] for g in mine), "reasons": dict(Counter(
                   f"{k}: {', '.join(c)}" for g in mine for k, c in g["reasons"]).most_common(8)),
               "median_score": sorted(g["score"] for g in mine)[len(mine) // 2], "missed": missed}  # fmt: skip
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.markdown:
        print("\n| bundles | n | flagged | flagged, right kind and channel named |\n|---|---|---|---|")
        r0 = rows[0]
        of_healthy = f"{r0['healthy_flagged']:.3f} of {r0['healthy']} healthy"
        print(f"| field test set (in distribution) | {r0['bundles']} | {r0['flagged']:.3f} ({of_healthy}) | |")
        for r in rows[1:]:
            print(f"| `{r['test']}` | {r['bundles']} | {r['flagged']:.2f} | {r['named']:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
