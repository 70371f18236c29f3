"""Several copies of one scikit-learn classifier, each from its own seed, their probabilities averaged.

A small network's fit lands in one of many minima: the mlp on the standard preset's 1,100 training
bundles, refitted with random_state 0-3 and with one or two BLAS threads (the summation order alone
moves it), called 1-31 healthy disks of its 400 test bundles failing, exact match 0.920-0.958. Beside
the CNNs on disks (training.config, kind_members) one such draw at p = 1.00 outvoted them: the standard
champion's four false calls on healthy bundles. Five seeds averaged called 3-4 (0.963-0.965) at
either thread count (README, "Where accuracy stands").
"""

from __future__ import annotations

from typing import Any, Self

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone


class SeedBag(ClassifierMixin, BaseEstimator):
    """`n` clones of `estimator` fitted with random_state seed, seed+1, ...; predict_proba averages them."""

    def __init__(self, estimator: Any, n: int = 5, seed: int = 0) -> None:
        self.estimator = estimator
        self.n = n
        self.seed = seed

    def fit(self, X: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None = None) -> Self:
        if self.n < 1:
            raise ValueError(f"n must be at least 1, got {self.n}")
        self.estimators_ = [
            clone(self.estimator).set_params(random_state=self.seed + i).fit(X, y, sample_weight=sample_weight)
            for i in range(self.n)
        ]
        self.classes_ = self.estimators_[0].classes_  # every copy saw the same y
        return self

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        return np.mean([m.predict_proba(X) for m in self.estimators_], axis=0)

    def predict(self, X: np.ndarray) -> np.ndarray:
        return self.classes_[self.predict_proba(X).argmax(1)]
