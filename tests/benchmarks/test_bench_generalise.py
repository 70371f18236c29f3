"""benchmarks/bench_generalise.py's served combination: the ensemble `vsandx train` serves, weight for
weight on every component kind, so the benchmarks score what users get."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from bench_generalise import combination, served_combination

from training.config import TrainConfig
from vsandx.faults import COMPONENT_KINDS


def test_the_served_combination_weighs_each_kind_as_the_served_ensemble_does() -> None:
    """training.run.served_ensemble: the CNNs 1 in all, each prior its kind's weight (else prior_weight),
    each kind member its weight on its own kind and 0 elsewhere."""
    cfg = TrainConfig()
    names, weights, by_kind = combination(served_combination("cnn"))
    assert names == ["cnn", *sorted({m for by in cfg.kind_members.values() for m in by}), *cfg.priors]
    for kind in COMPONENT_KINDS:
        got = dict(zip(names, by_kind.get(kind, weights), strict=True))
        want = {"cnn": 1.0} | {p: cfg.prior_kind_weight.get(kind, cfg.prior_weight) for p in cfg.priors}
        want |= {m: cfg.kind_members.get(kind, {}).get(m, 0.0) for by in cfg.kind_members.values() for m in by}
        assert got == want, kind
