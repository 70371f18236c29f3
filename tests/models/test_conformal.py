"""Conformal sets: they reach the coverage asked for on exchangeable held-out draws, grow as it grows,
come from a calibrated model per kind, survive save and load, and are absent from a model saved
without calibration scores."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from models.base import KIND_LABEL_INDEX, load_model
from models.calibration import CalibratedDiagnoser
from models.conformal import conformal_classifier, label_sets, review_summary, true_alphas
from models.registry import create_model
from training.report_trust import review_lines, review_results

from .conftest import LabData


def _draws(n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Calibrated scores softmax(z) and labels drawn from them: exchangeable (cal, test) pairs."""
    rng = np.random.default_rng(seed)
    z = rng.normal(0, 2.0, (n, k))
    q = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    t = (rng.random(n)[:, None] > np.cumsum(q, axis=1)).sum(axis=1)
    return q, np.minimum(t, k - 1)


@pytest.mark.parametrize("coverage", [0.8, 0.95])
def test_sets_reach_the_coverage_on_held_out_draws(coverage: float) -> None:
    q, t = _draws(3000, 4, seed=1)
    cc = conformal_classifier(true_alphas(q, t))
    held, held_t = _draws(6000, 4, seed=2)
    sets = label_sets(cc, held, coverage)
    got = sets[np.arange(len(held_t)), held_t].mean()
    assert coverage - 0.01 <= got <= coverage + 0.015  # valid, and not by sending everything to review
    assert 0.0 < (sets.sum(axis=1) != 1).mean() < 1.0
    # the most probable label is the first one a set keeps: a singleton is the verdict
    single = sets.sum(axis=1) == 1
    assert (sets[single].argmax(axis=1) == held[single].argmax(axis=1)).all()


def test_scores_tied_at_the_floor_up_to_rounding_keep_their_label() -> None:
    """Most components sit at the probability floor: a later one that reaches it through other rounding
    is as conforming as they are, not less (compared exactly, it lost every label)."""
    floor = np.array([[1 - 3e-6, 1e-6, 1e-6, 1e-6]])
    q = np.vstack([np.repeat(floor, 900, axis=0), _draws(100, 4, seed=5)[0]])
    cc = conformal_classifier(true_alphas(q, np.zeros(len(q), dtype=int)))
    later = floor * (1 - 2e-16)  # the same scores, rounded otherwise
    assert label_sets(cc, later, 0.95).tolist() == [[True, False, False, False]]


def test_a_set_is_never_empty_where_the_model_is_surer_than_the_coverage_asked() -> None:
    """A kind the model gets right 99.9 % of the time: plain split conformal at 95 % would empty the
    sets of the components a little less sure than the floor-tied calibration ones (the top label still
    right), sending them to review; their set is the top label alone, and doubt still shows as a set
    of several where a second label conforms."""
    floor = np.array([[1 - 3e-6, 1e-6, 1e-6, 1e-6]])
    q = np.vstack([np.repeat(floor, 960, axis=0), np.tile([[0.6, 0.4, 0.0, 0.0]], (40, 1))])
    t = np.zeros(len(q), dtype=int)
    t[-10:] = 1  # a tenth of the unsure ones were the second label
    cc = conformal_classifier(true_alphas(q, t))
    sure_enough = np.array([[0.99, 0.01, 0.0, 0.0], [0.2, 0.7, 0.05, 0.05]])
    plain = np.asarray(cc.predict_set(1.0 - sure_enough - 1e-9, confidence=0.95, smoothing=False), dtype=bool)
    assert not plain.any()  # what crepes alone answers: no label, a review for nothing
    assert label_sets(cc, sure_enough, 0.95).tolist() == [[True, False, False, False], [False, True, False, False]]
    # at a coverage the model does not reach on its own, a second conforming label still makes two
    assert label_sets(cc, np.array([[0.6, 0.4, 0.0, 0.0]]), 0.995).tolist() == [[True, True, False, False]]


def test_higher_coverage_never_shrinks_a_set() -> None:
    q, t = _draws(500, 3, seed=3)
    cc = conformal_classifier(true_alphas(q, t))
    held, _ = _draws(500, 3, seed=4)
    low, high = label_sets(cc, held, 0.8), label_sets(cc, held, 0.99)
    assert (high >= low).all() and high.sum() > low.sum()
    with pytest.raises(ValueError, match=r"coverage 1\.0"):
        label_sets(cc, held, 1.0)


def test_a_calibrated_model_answers_sets_that_survive_save_and_load(lab: LabData, tmp_path: Path) -> None:
    model = CalibratedDiagnoser.of(create_model("logreg").fit(*lab.train), "temperature").calibrate(*lab.test)
    assert model.alphas_ and all((np.diff(a) >= 0).all() and len(a) for a in model.alphas_.values())
    X = lab.test[0]
    sets = model.prediction_sets(X, coverage=0.9)
    for bt, s in zip(X, sets, strict=True):
        assert set(s) == {cid for kind in model.alphas_ if kind in bt.kinds for cid in bt.kinds[kind].ids}
        for kind in model.alphas_:
            for cid in bt.kinds[kind].ids if kind in bt.kinds else ():
                outside = np.ones(len(s[cid]), dtype=bool)
                outside[KIND_LABEL_INDEX[kind]] = False
                assert not s[cid][outside].any()  # only labels the kind can carry
    # every p-value is at least 1 / (n + 1): with n < 9999 calibration components, at 99.99 % no label
    # can be ruled out and every component needs review
    every = model.prediction_sets(X, coverage=0.9999)
    kinds, bundles = review_summary(every, *lab.test)
    assert all(k.coverage == 1.0 and k.review == 1.0 for k in kinds) and bundles == 1.0
    review = review_results(model, *lab.test, coverage=0.9999)  # the training report's table
    assert review is not None and review.bundles == 1.0 and review.kinds[-1].kind == "all"
    text = "\n".join(review_lines(review))
    assert "## Needs review: conformal sets at 100% coverage" in text and "| all | " in text
    assert review_results(model.base_, *lab.test, coverage=0.9) is None  # an uncalibrated model: no table
    again = load_model(model.save(tmp_path / "m"))
    assert isinstance(again, CalibratedDiagnoser) and again.conformal_.keys() == model.conformal_.keys()
    for a, b in zip(sets, again.prediction_sets(X, coverage=0.9), strict=True):
        assert a.keys() == b.keys() and all((a[c] == b[c]).all() for c in a)


def test_a_model_saved_without_calibration_scores_has_no_sets(lab: LabData, tmp_path: Path) -> None:
    model = CalibratedDiagnoser.of(create_model("mnb").fit(*lab.train), "temperature").calibrate(*lab.test)
    model.alphas_ = {}  # as models calibrated before the scores were kept were saved
    again = load_model(model.save(tmp_path / "old"))
    assert isinstance(again, CalibratedDiagnoser) and again.conformal_ == {}
    assert again.prediction_sets(lab.test[0]) == [{} for _ in lab.test[0]]
