"""The `rules` family: faults.md's signatures fire on simulated faulty components and stay quiet on
healthy ones, survive missing evidence, and round-trip through save/load with readable thresholds."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import models.rules as rules_module
from models.base import load_model
from models.registry import create_model, list_models
from models.rules import MAX_RAISE, MAX_SHIFT, THRESHOLDS, RulesDiagnoser, _fit_logistic, rule_margins
from vsandx.faults import FAULTS

from .conftest import LabData


def test_fit_moves_a_threshold_at_most_max_shift_whatever_the_slope() -> None:
    """Training positives far past the threshold and negatives just past it pull the fitted midpoint up;
    it stops MAX_SHIFT doublings from the named threshold (a bias bound of 1 let a slope-1.5 fit move
    0.67 doublings), and evidence centred on the threshold does not move it."""
    rng = np.random.default_rng(0)
    m = np.concatenate([rng.uniform(1.5, 3.0, 60), rng.uniform(-1.0, 1.2, 300)])
    pos = np.arange(len(m)) < 60
    slope, bias = _fit_logistic(m, pos, 3.0)
    assert -bias / slope == pytest.approx(MAX_SHIFT)
    for scale in (0.5, 2.0, 4.0):  # margins spread wider or narrower: other slopes, the same bound
        a, b = _fit_logistic(m * scale, pos, 3.0)
        assert abs(b / a) <= MAX_SHIFT + 1e-9
    centred = np.array([-2.0, -1.0, 1.0, 2.0])
    assert _fit_logistic(centred, centred > 0, 3.0)[1] == 0.0


def test_an_under_driven_cluster_bar_is_never_raised_by_the_fit() -> None:
    """The evidence that pulls a midpoint MAX_SHIFT up (training positives far past the bar, negatives
    near it: leave-one-cause-out fold 1's under-driven clusters) leaves `cluster.low_oio`'s at or under
    its named threshold; the fit may still lower it and set the slope."""
    rng = np.random.default_rng(0)
    m = np.concatenate([rng.uniform(1.5, 3.0, 60), rng.uniform(-1.0, 1.2, 300)])
    pos = np.arange(len(m)) < 60
    assert MAX_RAISE["cluster.low_oio"] == 0.0
    slope, bias = _fit_logistic(m, pos, 3.0, MAX_RAISE["cluster.low_oio"])
    assert -bias / slope <= 1e-12 and bias == pytest.approx(0.0, abs=1e-12)
    low = np.concatenate([rng.uniform(-0.3, 3.0, 200), rng.uniform(-3.0, -0.3, 200)])  # positives below the bar
    slope, bias = _fit_logistic(low, np.arange(len(low)) < 200, 3.0, 0.0)
    assert -bias / slope < 0  # lowered


def test_fit_bounds_each_fault_by_its_max_raise(lab: LabData, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[float, int] = {}

    def spy(m: np.ndarray, pos: np.ndarray, prior: float, max_raise: float = MAX_SHIFT) -> list[float]:
        seen[max_raise] = seen.get(max_raise, 0) + 1
        return _fit_logistic(m, pos, prior, max_raise)

    monkeypatch.setattr(rules_module, "_fit_logistic", spy)
    model = RulesDiagnoser().fit(lab.X, lab.y)
    for fault in MAX_RAISE:  # under-driven clusters and hot spots: never above their named bars
        a, b = model.calibration_[fault]
        assert -b / a <= 1e-12, fault
    assert set(MAX_RAISE) == {"cluster.low_oio", "disk.hotspot"}
    fitted, bounded = sum(seen.values()), sum(model.support_[f] > 0 for f in MAX_RAISE)  # (a fault unseen: unfitted)
    assert bounded >= 1 and seen.get(0.0) == bounded and seen.get(MAX_SHIFT) == fitted - bounded


def test_registered() -> None:
    assert "rules" in list_models()
    assert isinstance(create_model("rules"), RulesDiagnoser)


def _hits(lab: LabData, X: list) -> tuple[int, int, int]:
    """(faulty components whose rule fires, faulty components, healthy components where some rule fires)."""
    hit = total = false = 0
    for bt, y in zip(X, lab.y, strict=False):
        mg = rule_margins(bt, THRESHOLDS)
        for fault, spec in FAULTS.items():
            ids = bt.kinds[spec.kind].ids
            for i, cid in enumerate(ids):
                if y.get(cid) == fault:
                    total += 1
                    hit += bool(mg[fault][i] > 0)
                elif y.get(cid) == "none" and mg[fault][i] > 0:
                    false += 1
    return hit, total, false


def test_rules_fire_on_faults_and_not_on_healthy_components(lab: LabData) -> None:
    """Uncalibrated rules (nothing learned) on the simulator's lab bundles, every one with a fault."""
    hit, total, false = _hits(lab, lab.X)
    n_healthy = sum(v == "none" for y in lab.y for v in y.values())
    assert total >= 40
    assert hit / total >= 0.65, (hit, total)  # 35 of 48 on simulator 2 (its new fault causes)
    assert false / n_healthy <= 0.005, (false, n_healthy)


def test_predict_without_esxtop_or_logs(lab: LabData) -> None:
    """A site that collects no esxtop and whose logs rotated away still gets the perf-counter verdicts."""
    model = create_model("rules", calibrate=False).fit(lab.X[:4], lab.y[:4])
    for dropped in ({"esxtop"}, {"event", "esxtop"}):
        X = [bt.without(dropped) for bt in lab.X]
        hit, total, _ = _hits(lab, X)
        assert hit / total >= 0.6, (dropped, hit, total)
        for scores in model.predict_proba(X[:3]):
            assert all(np.isfinite(p).all() and p.sum() == pytest.approx(1.0) for p in scores.values())


def test_missing_counters_never_fire_a_rule(lab: LabData) -> None:
    """With every time series masked, no rule has evidence: everything is healthy, nothing crashes."""
    import dataclasses

    bt = lab.X[0]
    kinds = {
        k: dataclasses.replace(kt, mask=np.zeros_like(kt.mask), values=np.zeros_like(kt.values))
        for k, kt in bt.kinds.items()
    }
    blank = dataclasses.replace(bt, kinds=kinds)
    model = create_model("rules", calibrate=False).fit(lab.X[:2], lab.y[:2])
    assert set(model.predict([blank])[0].values()) == {"none"}


def test_save_load_round_trip_keeps_readable_thresholds(lab: LabData, tmp_path: Path) -> None:
    model = create_model("rules", thresholds={"ready_pct": 10.0}).fit(lab.X[:8], lab.y[:8])
    folder = model.save(tmp_path / "rules")
    config = json.loads((folder / "config.json").read_text())
    assert config["state"]["thresholds"]["ready_pct"] == 10.0
    assert config["state"]["thresholds"]["loss_pct"] == THRESHOLDS["loss_pct"]
    assert set(config["state"]["calibration"]) == set(FAULTS)
    assert "schema_version" in config
    again = load_model(folder)
    for a, b in zip(model.predict_proba(lab.X[8:10]), again.predict_proba(lab.X[8:10]), strict=True):
        for cid in a:
            np.testing.assert_array_equal(a[cid], b[cid])


def test_a_model_saved_before_a_threshold_was_named_loads_with_its_named_value(lab: LabData, tmp_path: Path) -> None:
    """A rules model saved before `dev_abs_vs_peers` existed predicts as one saved now (the champion a
    service holds must keep loading after an upgrade), not with a KeyError at the first bundle."""
    model = create_model("rules").fit(lab.X[:8], lab.y[:8])
    folder = model.save(tmp_path / "rules")
    config = json.loads((folder / "config.json").read_text())
    del config["state"]["thresholds"]["dev_abs_vs_peers"]
    (folder / "config.json").write_text(json.dumps(config))
    again = load_model(folder)
    assert again.thresholds_ == THRESHOLDS  # type: ignore[attr-defined]
    for a, b in zip(model.predict_proba(lab.X[8:10]), again.predict_proba(lab.X[8:10]), strict=True):
        for cid in a:
            np.testing.assert_array_equal(a[cid], b[cid])


def test_unknown_threshold_is_an_error(lab: LabData) -> None:
    with pytest.raises(ValueError, match="unknown rule thresholds"):
        create_model("rules", thresholds={"nope": 1.0}).fit(lab.X[:2], lab.y[:2])
