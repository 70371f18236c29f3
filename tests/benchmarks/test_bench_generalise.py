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
    """TrainConfig.served_weights is what training.run.served_ensemble weighs its members by (one CNN
    group, then the priors, then the kind members); the combination string, parsed as the benchmarks
    parse it, gives every member the same weight on every component kind."""
    cfg = TrainConfig()
    names, weights, by_kind = combination(served_combination("cnn"))
    served = ["cnn", *cfg.priors, *cfg.kind_member_names()]
    assert sorted(names) == sorted(served)
    default, served_by_kind = cfg.served_weights(1)
    for kind in COMPONENT_KINDS:
        got = dict(zip(names, by_kind.get(kind, weights), strict=True))
        assert got == dict(zip(served, served_by_kind.get(kind, default), strict=True)), kind
