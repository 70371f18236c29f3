"""Never seen this (models.ood): bundles inside the training ranges score 0, a bundle moved past them is
flagged with the kind and the channels that moved, the threshold comes from the validation bundles,
and the check survives save and load beside a calibrated model."""

from __future__ import annotations

import copy
import io
from pathlib import Path

import numpy as np
import pytest

from data.simulate.archive import tar_bytes
from data.simulate.generate import Bundle, simulate_bundle
from data.simulate.ood import VARIANTS, names_variant, simulate_ood
from models.base import load_model
from models.calibration import CalibratedDiagnoser
from models.ood import OutlierScorer, checked_columns
from models.registry import create_model
from pipeline.api import load_bundle
from pipeline.channels import KIND_CHANNEL_DEFS, KIND_STATIC
from pipeline.tensors import BundleTensors

from .conftest import LabData


@pytest.fixture(scope="module")
def scorer(lab: LabData) -> OutlierScorer:
    X, _ = lab.train
    return OutlierScorer().fit(X, val=lab.test[0][:8])


def _with_static(bt: BundleTensors, kind: str, name: str, value: float) -> BundleTensors:
    out = copy.deepcopy(bt)
    kt = out.kinds[kind]
    j = KIND_STATIC[kind].index(name)
    kt.static[kt.static_mask[:, j], j] = value
    return out


def _latency_times(bt: BundleTensors, c: float) -> BundleTensors:
    """Every perf latency channel c times larger (channels hold log1p of milliseconds)."""
    out = copy.deepcopy(bt)
    for kind, kt in out.kinds.items():
        for i, ch in enumerate(KIND_CHANNEL_DEFS[kind]):
            if ch.source == "perf" and ch.key.split("/")[1].lower().startswith("lat"):
                x = np.expm1(kt.values[:, i].astype(np.float64)) * c
                kt.values[:, i] = np.where(kt.mask[:, i], np.log1p(x), 0.0).astype(np.float32)
    return out


def test_training_bundles_lie_inside_their_own_ranges(lab: LabData, scorer: OutlierScorer) -> None:
    X, _ = lab.train
    assert np.all(scorer.score(X) == 0.0)
    assert scorer.n_train_ == len(X) and scorer.n_val_ == 8
    # the threshold is the validation bundles' 99th percentile, or the floor
    assert scorer.threshold_ == max(float(np.quantile(scorer.val_scores_, 0.99, method="higher")), scorer.floor)
    assert scorer.threshold_ >= scorer.floor


def test_held_out_lab_bundles_are_rarely_flagged(lab: LabData, scorer: OutlierScorer) -> None:
    """Same hardware as training: never flagged for it; a level past 32 bundles' ranges at most once
    in 8 (one is, for its disk groups' outstanding writes)."""
    docs = [scorer.explain(bt) for bt in lab.test[0][8:]]
    assert sum(d["flag"] for d in docs) <= 1
    statics = {s for k in KIND_STATIC.values() for s in k}
    assert not any(c in statics for d in docs for r in d["reasons"] for c in r["channels"])
    assert all(d["flag"] == bool(d["reasons"]) and d["threshold"] == round(scorer.threshold_, 2) for d in docs)


def test_a_100_gbe_link_is_flagged_on_the_nics_speed(lab: LabData, scorer: OutlierScorer) -> None:
    bt = _with_static(lab.test[0][9], "nic", "speed_gbps", 100.0)
    doc = scorer.explain(bt)
    assert doc["flag"] and doc["score"] > doc["threshold"]
    (r,) = doc["reasons"]
    assert r["kind"] == "nic" and r["channels"] == ["speed_gbps"]
    assert r["component"].startswith("nic:") and r["components"] == int(bt.kinds["nic"].static_mask[:, 0].sum())
    assert r["why"].startswith("speed_gbps 100 above the training range")


def test_a_cluster_of_64_hosts_is_flagged_on_its_host_count(lab: LabData, scorer: OutlierScorer) -> None:
    doc = scorer.explain(_with_static(lab.test[0][9], "cluster", "n_hosts", 64.0))
    assert doc["flag"] and [(r["kind"], r["channels"], r["component"]) for r in doc["reasons"]] == [
        ("cluster", ["n_hosts"], "cluster")
    ]


def test_a_unit_error_is_flagged_on_the_latency_channels_of_every_kind(lab: LabData, scorer: OutlierScorer) -> None:
    doc = scorer.explain(_latency_times(lab.test[0][9], 1000.0))
    assert doc["flag"]
    kinds = {r["kind"] for r in doc["reasons"]}
    assert {"host", "disk"} <= kinds
    for r in doc["reasons"]:
        assert all("lat" in c.lower() for c in r["channels"]), r
        assert "median of" in r["why"] and "ms above the training range" in r["why"]


def test_one_slow_disk_is_a_fault_not_a_new_kind_of_bundle(lab: LabData, scorer: OutlierScorer) -> None:
    """A level is a kind's median: one component far past the range (a fault worse than any trained
    on) does not move it, where every component moved (a unit error) does."""
    bt = copy.deepcopy(lab.test[0][9])
    kt = bt.kinds["disk"]
    for i, ch in enumerate(KIND_CHANNEL_DEFS["disk"]):
        if "latency" in ch.name:
            kt.values[0, i] = np.where(kt.mask[0, i], np.log1p(5000.0), 0.0)
    before, after = scorer.score([lab.test[0][9], bt])
    assert after < before + 0.5 and not scorer.explain(bt)["flag"]  # the median moves by one rank at most


def test_the_threshold_comes_from_the_validation_scores(lab: LabData) -> None:
    X, _ = lab.train
    moved = [_latency_times(bt, 1000.0) for bt in lab.test[0][:4]]
    hi = OutlierScorer(quantile=1.0).fit(X, val=moved)  # validation bundles this unusual: nothing is
    assert hi.threshold_ == pytest.approx(float(hi.val_scores_.max())) and hi.threshold_ > 10
    assert not any(hi.explain(bt)["flag"] for bt in moved)
    assert OutlierScorer().fit(X).threshold_ == 2.0  # without them only the floor is left
    with pytest.raises(ValueError, match="quantile"):
        OutlierScorer(quantile=0.0).fit(X)
    with pytest.raises(ValueError, match="no bundles"):
        OutlierScorer().fit([])


def test_unfitted_scorer_refuses() -> None:
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        OutlierScorer().score([])


def test_checked_columns_leave_out_events_and_the_cluster_series() -> None:
    assert not any(ch.startswith("ev.") for _, _, ch in checked_columns("level", "disk"))
    assert checked_columns("level", "cluster") == []
    assert [ch for _, _, ch in checked_columns("static", "cluster")] == list(KIND_STATIC["cluster"])


def test_saved_with_the_calibrated_model(lab: LabData, scorer: OutlierScorer, tmp_path: Path) -> None:
    X, y = lab.train
    base = create_model("logreg").fit(X, y)
    cal = CalibratedDiagnoser.of(base, "temperature").calibrate(*lab.test)
    without = load_model(cal.save(tmp_path / "without"))
    assert isinstance(without, CalibratedDiagnoser) and without.ood_ is None  # older models: no check
    cal.fit_outliers(X, lab.test[0][:8])
    got = load_model(cal.save(tmp_path / "with"))
    assert isinstance(got, CalibratedDiagnoser) and got.ood_ is not None
    assert got.ood_.get_params() == scorer.get_params() and got.ood_.threshold_ == scorer.threshold_
    bt = _with_static(lab.test[0][9], "nic", "speed_gbps", 100.0)
    assert got.ood_.explain(bt) == scorer.explain(bt)
    np.testing.assert_array_equal(got.ood_.val_scores_, scorer.val_scores_)


@pytest.fixture(scope="module")
def simulated() -> dict[str, BundleTensors]:
    """A small field bundle as simulated and as each variant of data.simulate.ood makes it."""

    def load(b: Bundle) -> BundleTensors:
        return load_bundle(io.BytesIO(tar_bytes({k: v for k, v in b.files.items() if k != "labels.json"})))

    out = {v: load(simulate_ood(v, 5, 9)) for v in VARIANTS}
    out["as simulated"] = load(simulate_bundle("field", 5, 9))
    return out


def test_simulated_variants_are_flagged_with_their_kind_and_channel(simulated: dict[str, BundleTensors]) -> None:
    """Ranges from the bundle as simulated (the floor as threshold): it lies inside them, and each
    variant of it is flagged with the kind and a channel of what the variant moved."""
    base = simulated["as simulated"]
    ood = OutlierScorer().fit([base])
    assert ood.score([base])[0] == 0.0 and not ood.explain(base)["flag"]
    for v in VARIANTS:
        doc = ood.explain(simulated[v])
        assert doc["flag"] and names_variant(v, doc["reasons"]), (v, doc["reasons"])
