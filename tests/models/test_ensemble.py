"""The ensemble averages its members' probabilities with the weights it was given, and keeps them
through a save and load (the served model: the CNNs beside the expert rules, training.run); an
under-driven cluster then stands only where the rest reads healthy (models.alone)."""

from __future__ import annotations

import copy
import io
from pathlib import Path

import numpy as np
import pytest

from data.simulate.archive import tar_bytes
from data.simulate.generate import simulate_bundle
from models.alone import alone
from models.base import Diagnoser, Proba, load_model
from models.ensemble import EnsembleDiagnoser
from models.registry import create_model
from models.rules_margins import named_margins
from pipeline.api import load_bundle
from pipeline.tensors import BundleTensors


@pytest.fixture(scope="module")
def data() -> tuple[list[BundleTensors], list[dict[str, str]]]:
    X, y = [], []
    for i, fault in enumerate(["host.cpu_contention", "disk.latency", "net.packet_loss"]):
        b = simulate_bundle("lab", 6, i, faults=[fault])
        X.append(load_bundle(io.BytesIO(tar_bytes({k: v for k, v in b.files.items() if k != "labels.json"}))))
        comps = b.labels["components"]
        assert isinstance(comps, dict)
        y.append(dict(comps))
    return X, y


Pair = tuple[Diagnoser, Diagnoser, list[Proba], list[Proba]]


@pytest.fixture(scope="module")
def pair(data: tuple[list[BundleTensors], list[dict[str, str]]]) -> Pair:
    """Two fitted members whose scores differ, and their scores on the bundles."""
    X, y = data
    a = create_model("rules").fit(X, y)
    b = create_model("rules", calibrate=False, slope=1.0).fit(X, y)
    return a, b, a.predict_proba(X), b.predict_proba(X)


def test_weights_average_and_survive_a_save(
    data: tuple[list[BundleTensors], list[dict[str, str]]], pair: Pair, tmp_path: Path
) -> None:
    X, _ = data
    a, b, pa, pb = pair
    ens = EnsembleDiagnoser.of([a, b], [3.0, 1.0], alone=())
    got = ens.predict_proba(X)
    for i in range(len(X)):
        for cid, p in got[i].items():
            assert np.allclose(p, 0.75 * pa[i][cid] + 0.25 * pb[i][cid]), cid
    back = load_model(ens.save(tmp_path / "ens"))
    assert isinstance(back, EnsembleDiagnoser) and list(back.weights) == [3.0, 1.0] and list(back.alone) == []
    for i in range(len(X)):
        for cid, p in back.predict_proba(X)[i].items():
            assert np.allclose(p, got[i][cid]), cid
    mean = alone({cid: 0.5 * pa[0][cid] + 0.5 * pb[0][cid] for cid in pa[0]})
    for cid, p in EnsembleDiagnoser.of([a, b]).predict_proba(X)[0].items():  # no weights: equal; then alone
        assert np.allclose(p, mean[cid]), cid


def test_weights_must_fit_the_members(data: tuple[list[BundleTensors], list[dict[str, str]]]) -> None:
    X, y = data
    a = create_model("rules").fit(X, y)
    for bad in ([1.0, 1.0], [-1.0], [0.0]):
        with pytest.raises(ValueError, match="do not fit"):
            EnsembleDiagnoser.of([a], bad).predict_proba(X)


def test_a_kind_may_weigh_the_members_its_own_way(
    data: tuple[list[BundleTensors], list[dict[str, str]]], pair: Pair, tmp_path: Path
) -> None:
    """kind_weights replaces the weights for that kind's components only, and survives a save."""
    X, _ = data
    a, b, pa, pb = pair
    assert any(not np.allclose(pa[i]["cluster"], pb[i]["cluster"]) for i in range(len(X)))  # weights show
    ens = EnsembleDiagnoser.of([a, b], [3.0, 1.0], kind_weights={"cluster": [1.0, 3.0]}, alone=())
    for got in (ens.predict_proba(X), load_model(ens.save(tmp_path / "ens")).predict_proba(X)):
        for i in range(len(X)):
            for cid, p in got[i].items():
                wa = 0.25 if cid == "cluster" else 0.75
                assert np.allclose(p, wa * pa[i][cid] + (1 - wa) * pb[i][cid]), cid
    with pytest.raises(ValueError, match="do not fit"):
        EnsembleDiagnoser.of([a, b], kind_weights={"cluster": [1.0]}).predict_proba(X)


def test_members_read_each_bundle_once_however_many_are_scored(
    data: tuple[list[BundleTensors], list[dict[str, str]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The members share each bundle's rule margins over the whole list: 40 bundles, more than the
    memo keeps between calls (16), were read four times by the quick champion's four members."""
    X, y = data
    many = [copy.copy(X[i % len(X)]) for i in range(40)]  # 40 distinct objects: the memo keys on identity
    calls: list[int] = []
    fn = named_margins.fn

    def counted(bt: BundleTensors) -> object:
        calls.append(id(bt))
        return fn(bt)

    monkeypatch.setattr(named_margins, "fn", counted)
    ens = EnsembleDiagnoser.of([create_model("rules").fit(X, y), create_model("rules", slope=1.0).fit(X, y)])
    ens.predict_proba(many)
    assert len(calls) == len(set(calls)) == 40
