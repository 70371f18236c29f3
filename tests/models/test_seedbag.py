from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.neural_network import MLPClassifier

from models.base import CONFIG_FILE, load_model
from models.baselines import MLPDiagnoser
from models.codec import decode, encode
from models.seedbag import SeedBag

from .conftest import LabData


def noisy(n: int = 300, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Three overlapping classes: a small network's fit differs from seed to seed near their borders."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    x = rng.normal(size=(n, 6)) + y[:, None] * 0.6
    return x, y


def net(seed: int = 0) -> MLPClassifier:
    return MLPClassifier(hidden_layer_sizes=(16,), max_iter=150, random_state=seed)


@pytest.fixture(autouse=True)
def _quiet() -> None:
    warnings.simplefilter("ignore", ConvergenceWarning)


def test_the_bag_averages_copies_fitted_from_consecutive_seeds() -> None:
    x, y = noisy()
    w = np.linspace(0.5, 2.0, len(y))
    bag = SeedBag(net(), n=3, seed=7).fit(x, y, sample_weight=w)
    alone = [net(7 + i).fit(x, y, sample_weight=w) for i in range(3)]
    assert [m.random_state for m in bag.estimators_] == [7, 8, 9]
    np.testing.assert_allclose(bag.predict_proba(x), np.mean([m.predict_proba(x) for m in alone], axis=0))
    np.testing.assert_array_equal(bag.classes_, [0, 1, 2])
    assert (bag.predict(x) == bag.classes_[bag.predict_proba(x).argmax(1)]).all()
    with pytest.raises(ValueError, match="at least 1"):
        SeedBag(net(), n=0).fit(x, y)


def test_five_seeds_move_less_from_seed_to_seed_than_one_network() -> None:
    x, y = noisy()
    xt, _ = noisy(200, seed=1)
    one = np.array([net(s).fit(x, y).predict_proba(xt) for s in range(4)])
    bags = np.array([SeedBag(net(), n=5, seed=10 * s).fit(x, y).predict_proba(xt) for s in range(4)])
    # mean over test rows of the probabilities' spread across the four draws
    assert bags.std(0).mean() < 0.6 * one.std(0).mean()


def test_a_bag_saves_and_loads_through_the_codec_without_pickle() -> None:
    x, y = noisy()
    bag = SeedBag(net(), n=2).fit(x, y)
    arrays: dict[str, np.ndarray] = {}
    doc = encode(bag, "bag", arrays)
    back = decode(doc, arrays)
    assert isinstance(back, SeedBag) and len(back.estimators_) == 2
    np.testing.assert_array_equal(back.predict_proba(x), bag.predict_proba(x))


def test_the_mlp_is_five_networks_unless_told_one() -> None:
    clf = MLPDiagnoser()._make_classifier()
    assert isinstance(clf, SeedBag) and clf.n == 5 and clf.seed == 0
    assert isinstance(MLPDiagnoser(seeds=1, random_state=3)._make_classifier(), MLPClassifier)
    assert MLPDiagnoser(random_state=3)._make_classifier().seed == 3
    x, y = noisy()
    with pytest.raises(ValueError, match="at least 1"):
        MLPDiagnoser(seeds=0)._make_classifier().fit(x, y)


def test_an_mlp_saved_before_seeds_loads_as_the_one_network_it_holds(tiny: LabData, tmp_path: Path) -> None:
    old = MLPDiagnoser(seeds=1, max_iter=20).fit(tiny.X, tiny.y)
    old.save(tmp_path / "old")
    config = json.loads((tmp_path / "old" / CONFIG_FILE).read_text())
    del config["params"]["seeds"]  # as written before the parameter existed
    (tmp_path / "old" / CONFIG_FILE).write_text(json.dumps(config))
    back = load_model(tmp_path / "old")
    assert back.get_params()["seeds"] == 1
    for a, b in zip(back.predict_proba(tiny.X), old.predict_proba(tiny.X), strict=True):
        assert all(np.array_equal(a[c], b[c]) for c in a)
    bag = MLPDiagnoser(seeds=2, max_iter=20).fit(tiny.X, tiny.y)
    assert load_model(bag.save(tmp_path / "bag")).get_params()["seeds"] == 2
