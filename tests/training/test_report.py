"""training/report.py's scoring: every bundle predicted for the accuracy, and the serving latency read
on fresh objects, whatever a training run memoised for the bundles (models.memo)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from models.features import bundle_features
from training.report import LATENCY_BUNDLES, CurvePoint, Results, score_model, write_report


class Bundle:  # stands in for BundleTensors: the memo keys on identity
    pass


class Reader:
    """A model whose prediction reads each bundle's features, as every registered one does."""

    def predict(self, X: list[Any]) -> list[dict[str, str]]:
        for bt in X:
            bundle_features(bt)
        return [{"cluster": "none"} for _ in X]


def test_latency_is_read_on_fresh_bundles_inside_a_training_runs_hold(monkeypatch: pytest.MonkeyPatch) -> None:
    computed: list[int] = []

    def slow_features(bt: Any) -> dict[str, Any]:  # 5 ms a bundle, the memo's hits take none
        computed.append(id(bt))
        time.sleep(0.005)
        return {}

    monkeypatch.setattr(bundle_features, "fn", slow_features)
    X = [Bundle() for _ in range(100)]
    y = [{"cluster": "none"} for _ in X]
    with bundle_features.holding(len(X) + LATENCY_BUNDLES):
        for bt in X:  # the run has read every bundle already (a baseline, a refit)
            bundle_features(bt)
        computed.clear()
        s = score_model("reader", "baseline", Reader(), X, y, 0.0)  # type: ignore[arg-type]
    assert s.exact_match == 1.0 and s.healthy_all_none == 1.0
    assert len(computed) == LATENCY_BUNDLES and s.predict_ms_p50 >= 5.0  # the sampled ones, computed afresh


def test_the_report_says_which_trials_the_deadline_ended(tmp_path: Path) -> None:
    trials = [{"epochs": 16, "val_exact_match": 0.9}, {"epochs": 16, "val_exact_match": 0.8, "out_of_time": 1.0}]
    text = write_report(Results({"sweep_minutes": 18}, [], trials), tmp_path).read_text()
    assert "## Sweep: 2 trials" in text
    assert "1 of them reached the sweep's deadline (18 minutes a family)" in text
    on_time = write_report(Results({"sweep_minutes": 18}, [], trials[:1]), tmp_path / "b").read_text()
    assert "deadline" not in on_time and "trained nothing" not in on_time
    late = [*trials, {"epochs": 16, "val_exact_match": 0.0, "late_start": 1.0}]
    text = write_report(Results({"sweep_minutes": 18}, [], late), tmp_path / "c").read_text()
    assert "1 started with under a quarter of the sweep's time left, after another trial had saved a model" in text


def test_the_report_says_which_curve_refits_the_run_deadline_cut(tmp_path: Path) -> None:
    """A refit stopped at the run's deadline is marked; a share whose refit never started is named."""
    cut = [CurvePoint(0.5, 500, 0.9, 300.0, out_of_time=True), CurvePoint(1.0, 1000, 0.95, 900.0)]
    text = write_report(Results({"curve": (0.5, 1.0)}, [], curve=cut), tmp_path / "a").read_text()
    assert "| 500 | 90.0 % | 300 s (stopped at the run's deadline: its best epoch so far) |" in text
    assert "Not refitted" not in text
    left = [CurvePoint(1.0, 1000, 0.95, 900.0)]
    text = write_report(Results({"curve": [0.25, 0.5, 1.0]}, [], curve=left), tmp_path / "b").read_text()
    assert "Not refitted: 25 %, 50 % of the training set (the run's deadline had passed)." in text
    assert "stopped at the run's deadline" not in text
