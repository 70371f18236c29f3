"""Calibrated probabilities: the maps recover a known over-confidence, keep the verdicts (temperature),
measure lower calibration error on bundles they did not fit, and survive save and load."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from models.base import load_model
from models.calibration import (
    CalibratedDiagnoser,
    _apply_isotonic,
    _apply_temperature,
    _choose,
    _fit_isotonic,
    _fit_temperature,
    _kind_scores,
    _top_ece,
    ece,
    ece_if_calibrated,
)
from models.registry import create_model

from .conftest import LabData


def test_ece_is_the_weighted_gap_between_confidence_and_accuracy() -> None:
    assert ece(np.array([0.9] * 10), np.array([1.0] * 9 + [0.0])) == pytest.approx(0.0)
    assert ece(np.array([0.95] * 4 + [0.55] * 4), np.array([1, 1, 0, 0, 1, 1, 1, 1.0])) == pytest.approx(
        0.5 * 0.45 + 0.5 * 0.45
    )
    assert ece(np.array([]), np.array([])) == 0.0


def test_the_ece_a_calibrated_model_would_show_shrinks_with_the_components() -> None:
    """On a hundred components a perfectly calibrated model still measures an ECE of several points (the
    figure an ECE target must be read against); on ten thousand, about one."""
    rng = np.random.default_rng(0)
    few, many = rng.uniform(0.5, 1.0, 100), rng.uniform(0.5, 1.0, 10_000)
    mean_few, high_few = ece_if_calibrated(few)
    mean_many, high_many = ece_if_calibrated(many, draws=50)
    assert 0.05 < mean_few < high_few < 0.2
    assert mean_many < 0.015 and high_many < 0.02 and high_many < mean_few / 4
    assert ece_if_calibrated(np.ones(50)) == (0.0, 0.0)  # sure and (drawn) right: no gap to find
    assert ece_if_calibrated(np.array([])) == (0.0, 0.0)


def _overconfident(n: int, k: int, sharpen: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Scores softmax(sharpen * z) for labels drawn from softmax(z): calibrated at temperature `sharpen`."""
    rng = np.random.default_rng(seed)
    z = rng.normal(0, 1.5, (n, k))
    q = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    t = np.array([rng.choice(k, p=row) for row in q])
    p = np.exp(sharpen * z) / np.exp(sharpen * z).sum(axis=1, keepdims=True)
    return p, t


def test_temperature_recovers_a_known_overconfidence_and_keeps_the_verdicts() -> None:
    p, t = _overconfident(4000, 4, sharpen=3.0, seed=1)
    lt = _fit_temperature(p, t)
    assert np.exp(lt) == pytest.approx(3.0, rel=0.1)
    held, held_t = _overconfident(4000, 4, sharpen=3.0, seed=2)
    q = _apply_temperature(held, lt)
    assert (q.argmax(axis=1) == held.argmax(axis=1)).all()
    assert _top_ece(held, held_t) > 0.1 and _top_ece(q, held_t) < 0.03  # over-sure before, not after


def test_isotonic_calibrates_too_and_auto_picks_the_lower_error() -> None:
    p, t = _overconfident(4000, 3, sharpen=2.5, seed=3)
    held, held_t = _overconfident(4000, 3, sharpen=2.5, seed=4)
    q = _apply_isotonic(held, _fit_isotonic(p, t))
    assert np.allclose(q.sum(axis=1), 1.0) and _top_ece(q, held_t) < 0.03 < _top_ece(held, held_t)
    assert _choose(p, t, seed=0) in ("temperature", "isotonic")
    assert _choose(p[:10], t[:10], seed=0) == "temperature"  # too few to split: the one-number map


@pytest.mark.parametrize("method", ["temperature", "isotonic", "auto"])
def test_a_prefit_model_calibrated_on_held_out_bundles(method: str, lab: LabData, tmp_path: Path) -> None:
    base = create_model("logreg").fit(*lab.train)
    model = CalibratedDiagnoser.of(base, method).calibrate(*lab.test)
    assert set(model.summary()) <= {"cluster", "host", "nic", "diskgroup", "disk"} and model.summary()
    for kind, m in model.summary().items():
        assert m["method"] in ("temperature", "isotonic") and 0 <= m["ece_fit"] <= 1, kind
        if m["method"] == "temperature":  # the temperature of least NLL: never worse than none (T = 1)
            p, t = _kind_scores(base.predict_proba(lab.test[0]), lab.test[0], lab.test[1], kind)
            p, t = p[t >= 0], t[t >= 0]
            rows = np.arange(len(t))
            fitted, plain = _apply_temperature(p, m["log_t"]), _apply_temperature(p, 0.0)
            assert -np.log(fitted[rows, t]).mean() <= -np.log(plain[rows, t]).mean() + 1e-12
    probs = model.predict_proba(lab.test[0])
    if method == "temperature":
        assert model.predict(lab.test[0]) == base.predict(lab.test[0])  # a temperature never changes a verdict
    again = load_model(model.save(tmp_path / method))
    assert isinstance(again, CalibratedDiagnoser) and again.base_.name == "logreg"
    for a, b in zip(probs, again.predict_proba(lab.test[0]), strict=True):
        assert all(np.allclose(a[c], b[c]) for c in a)


def test_unknown_method_is_refused(lab: LabData) -> None:
    base = create_model("mnb").fit(*lab.train)
    with pytest.raises(ValueError, match="method 'platt'"):
        CalibratedDiagnoser.of(base, "platt").calibrate(*lab.test)
