"""training/curve.py: the learning curve's refits, and the run's deadline they keep (a run budget's
last minutes are the report's, not a half-set refit's)."""

from __future__ import annotations

import time
import types
from pathlib import Path

import pytest

from data.simulate.runner import simulate_many
from diagnosis.evaluate import read_labels
from pipeline import load_bundle
from pipeline.tensors import BundleTensors
from training.config import TrainConfig
from training.curve import AFTER_CURVE_S, curve_deadline, learning_curve
from training.report import CurvePoint
from training.sweep_results import TrialOutcome

Data = tuple[list[BundleTensors], list[dict[str, str]]]
# a small CNN of a few epochs: the recipe the curve refits
BEST = TrialOutcome(
    "cnn_small",
    {"epochs": 3, "patience": 5, "seed": 1, "device": "cpu", "width": 8, "depth": 1},
    {"fit_seconds": 7.0},
    [],
    None,
)


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Data:
    out = tmp_path_factory.mktemp("lab")
    results = simulate_many("lab", 12, out, seed=5, issue_rate=1.0, progress=False, workers=2)
    paths = [out / r["path"] for r in results]
    labels = [read_labels(p) for p in paths]
    assert all(labels)
    return [load_bundle(p) for p in paths], [lab for lab in labels if lab]


def _curve(data: Data, out: Path, deadline: float | None) -> list[CurvePoint]:
    X, y = data
    tr, va, te = slice(0, 8), slice(8, 10), slice(10, 12)
    return learning_curve(
        BEST, 0.75, X[tr], y[tr], X[va], y[va], X[te], y[te], (0.5, 1.0), 0, out, progress=False, deadline=deadline
    )


def test_without_a_deadline_every_share_is_refitted_to_its_last_epoch(data: Data, tmp_path: Path) -> None:
    half, whole = _curve(data, tmp_path, None)
    assert (half.fraction, half.bundles, half.out_of_time) == (0.5, 4, False)
    assert (tmp_path / "0.50").is_dir()  # the refit, saved
    assert (whole.bundles, whole.exact_match, whole.fit_seconds) == (8, 0.75, 7.0)  # the best trial itself


def test_a_refit_that_reaches_the_deadline_keeps_its_best_epoch_and_says_so(
    data: Data, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The deadline lies ahead when the refit starts; models.cnn_train's clock then reads past it after
    the first epoch, so no second one starts."""
    late = types.SimpleNamespace(time=lambda: time.time() + 3600, perf_counter=time.perf_counter)
    monkeypatch.setattr("models.cnn_train.time", late)
    half, whole = _curve(data, tmp_path, time.time() + 600)
    assert half.out_of_time and not whole.out_of_time
    assert 0.0 <= half.exact_match <= 1.0


def test_a_share_whose_refit_would_start_past_the_deadline_is_left_out(data: Data, tmp_path: Path) -> None:
    points = _curve(data, tmp_path, time.time() - 1)
    assert [p.fraction for p in points] == [1.0]  # the best trial's own point: nothing trained
    assert not (tmp_path / "0.50").exists()


def test_the_curve_ends_before_the_run_budget_by_what_follows_it() -> None:
    started = 1_000_000.0
    assert curve_deadline(TrainConfig.preset("standard"), started) == started + 60 * 60 - AFTER_CURVE_S
    assert curve_deadline(TrainConfig.preset("quick"), started) is None  # no run budget: no deadline
