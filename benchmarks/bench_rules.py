"""What the expert rules (models/rules_margins.py, at their named THRESHOLDS) find and what they fire on
wrongly, per fault, over cached dataset folders; with `--variant`, the same with some evidence unobserved
or other thresholds, side by side, so that a measure or a bar is judged on the same bundles.

    nice .venv/bin/python benchmarks/bench_rules.py --sets var/quick-vl/datasets/field-* \
        --variant=-closed_loop --variant loss_pct=0.1,rexmit_pct=0.1,-host_loss_pct

A component labelled with a fault is found when that fault's margin is > 0 on it; a false finding is a
margin > 0 on a component labelled otherwise (another fault or none). A variant is comma-separated items:
`-name` sets that evidence measure to NaN (not observed) for every component, as the rules treat a
counter a site does not collect; `name=value` sets that threshold. Nothing is learnt. Dataset folders are
those `training.datasets.build` writes (one .npz per bundle); they must be of this pipeline's schema.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from models.rules_evidence import Evidence, bundle_evidence  # noqa: E402
from models.rules_margins import THRESHOLDS, rule_margins  # noqa: E402
from training.datasets import iter_dataset  # noqa: E402
from vsandx.faults import FAULTS  # noqa: E402


def _ablated(ev: Evidence, names: Sequence[str]) -> Evidence:
    out = {kind: dict(measures) for kind, measures in ev.items()}
    for kind in out.values():
        for name in names:
            if name in kind:
                kind[name] = np.full_like(kind[name], np.nan, dtype=np.float64)
    return out


Variant = tuple[Sequence[str], dict[str, float]]  # (evidence set unobserved, thresholds changed)


def count(sets: Sequence[Path], variants: dict[str, Variant]) -> tuple[int, dict[str, Counter[str]]]:
    """(bundles, per variant: Counter of '<fault> found', '<fault> labelled', '<fault> false')."""
    tally: dict[str, Counter[str]] = {v: Counter() for v in variants}
    n = 0
    for folder in sets:
        for bt, labels in iter_dataset(folder):
            n += 1
            ev = bundle_evidence(bt)
            for variant, (names, changed) in variants.items():
                margins = rule_margins(bt, {**THRESHOLDS, **changed}, _ablated(ev, names))
                for fault, m in margins.items():
                    kind = FAULTS[fault].kind
                    for cid, margin in zip(bt.kinds[kind].ids, m, strict=True):
                        truth = labels.get(cid, "none") == fault
                        tally[variant][f"{fault} labelled"] += truth
                        tally[variant][f"{fault} {'found' if truth else 'false'}"] += bool(margin > 0)
    return n, tally


def parse_variant(spec: str) -> Variant:
    """'-a,-b,name=value' -> ((a, b), {name: value}); ValueError naming what is not a threshold."""
    items = [x.strip() for x in spec.split(",") if x.strip()]
    ablate = tuple(x[1:] for x in items if x.startswith("-"))
    changed = {k: float(v) for k, v in (x.split("=", 1) for x in items if not x.startswith("-"))}
    unknown = set(changed) - set(THRESHOLDS)
    if unknown:
        raise ValueError(f"no threshold named {', '.join(sorted(unknown))}")
    return ablate, changed


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", nargs="+", type=Path, required=True, help="dataset folders (.npz per bundle)")
    ap.add_argument(
        "--variant",
        action="append",
        default=[],
        help="comma-separated -measure (unobserved) and threshold=value items, one variant per use",
    )
    args = ap.parse_args(argv)
    variants: dict[str, Variant] = {"as is": ((), {})}
    for spec in args.variant:
        try:
            variants[spec] = parse_variant(spec)
        except ValueError as e:
            ap.error(f"--variant {spec}: {e}")
    n, tally = count(args.sets, variants)
    print(f"{n} bundles from {len(args.sets)} dataset folders; rules at their named thresholds\n")
    print("| fault | " + " | ".join(f"{v}: found / labelled, false" for v in variants) + " |")
    print("|---|" + "---|" * len(variants))
    for fault in sorted(FAULTS):
        cells = [f"{t[f'{fault} found']} / {t[f'{fault} labelled']}, {t[f'{fault} false']}" for t in tally.values()]
        print(f"| `{fault}` | " + " | ".join(cells) + " |")
    totals = [
        f"{sum(t[f'{f} found'] for f in FAULTS)} / {sum(t[f'{f} labelled'] for f in FAULTS)}, "
        f"{sum(t[f'{f} false'] for f in FAULTS)}"
        for t in tally.values()
    ]
    print("| every fault | " + " | ".join(totals) + " |")


if __name__ == "__main__":
    main()
