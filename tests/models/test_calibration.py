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
    _temperature_pays,
)
from models.ece import kind_scores, top_ece
from models.registry import create_model

from .conftest import LabData


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
    assert top_ece(held, held_t) > 0.1 and top_ece(q, held_t) < 0.03  # over-sure before, not after


def test_a_temperature_is_kept_only_where_it_pays_on_components_it_did_not_fit() -> None:
    """Calibrated scores keep T = 1 (a fitted T near 1 is noise); clearly over-sure ones get theirs."""
    calibrated, t = _overconfident(300, 4, sharpen=1.0, seed=5)
    over, t_over = _overconfident(300, 4, sharpen=3.0, seed=6)
    assert not _temperature_pays(calibrated, t, seed=0) and _temperature_pays(over, t_over, seed=0)
    assert np.exp(_fit_temperature(calibrated, t)) != 1.0  # the fitted T alone would have moved them
    assert _temperature_pays(calibrated[:10], t[:10], seed=0)  # too few to split: the fitted T


def test_isotonic_calibrates_too_and_auto_picks_the_lower_error() -> None:
    p, t = _overconfident(4000, 3, sharpen=2.5, seed=3)
    held, held_t = _overconfident(4000, 3, sharpen=2.5, seed=4)
    q = _apply_isotonic(held, _fit_isotonic(p, t))
    assert np.allclose(q.sum(axis=1), 1.0) and top_ece(q, held_t) < 0.03 < top_ece(held, held_t)
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
            p, t = kind_scores(base.predict_proba(lab.test[0]), lab.test[0], lab.test[1], kind)
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
