"""The baselines' scikit-learn transformers over engineered feature rows (models.features).

Kept apart from models.features so that a CNN, which reads the same rows at serving time, never
imports scikit-learn (seconds of start-up for `vsandx diagnose`).
"""

from __future__ import annotations

from typing import Self

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.preprocessing import StandardScaler


class QuantileBinner(TransformerMixin, BaseEstimator):
    """Non-negative features for multinomial NB: each column one-hot encoded into `n_bins` quantile
    bins learned on the training rows (counts of "which bin"), so NB sees how unusual a value is."""

    def __init__(self, n_bins: int = 8) -> None:
        self.n_bins = n_bins

    def fit(self, X: np.ndarray, y: object = None) -> Self:
        qs = np.linspace(0, 1, self.n_bins + 1)[1:-1]
        self.edges_ = np.quantile(np.asarray(X, np.float64), qs, axis=0).T.astype(np.float32)  # (F, n_bins-1)
        self.n_features_in_ = X.shape[1]
        return self

    def transform(self, X: np.ndarray) -> np.ndarray:
        bins = (np.asarray(X, np.float32)[:, :, None] > self.edges_[None]).sum(-1)  # (n, F) in [0, n_bins)
        onehot = np.zeros((X.shape[0], X.shape[1], self.n_bins), np.float32)
        np.put_along_axis(onehot, bins[..., None], 1.0, axis=-1)
        return onehot.reshape(X.shape[0], -1)


class ClippedScaler(StandardScaler):
    """Standardise, then clip to +-clip: a value far outside anything seen in training (a counter that
    never moved in the lab, a field bundle at another interval) must not dominate a kernel or a dot
    product. Fitted state is StandardScaler's (mean_, scale_)."""

    def __init__(self, clip: float = 5.0) -> None:
        super().__init__()
        self.clip = clip

    def transform(self, X: np.ndarray, copy: bool | None = None) -> np.ndarray:
        return np.clip(super().transform(X, copy=copy), -self.clip, self.clip)
