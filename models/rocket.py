"""MiniRocket per component kind: the strong time-series baseline (Dempster, Schmidt and Webb, 2021).

A component's channels, standardised with training statistics (0 where there is no data), and their
difference from its same-kind peers in the bundle (disks: of the same tier) — the context a fault
needs, one component unlike its siblings — go through MiniRocket's fixed dilated convolution kernels.
Their proportion-of-positive-values features are standardised, clipped and classified by logistic
regression per kind, like the other baselines (models/baselines.py). Unlike them it sees no
engineered statistic and no static feature: only the series the CNN reads.

The kernels are sktime's numba implementation. sktime's transformer class converts to and from
pandas and keeps fitted state that cannot be stored without pickle, so this module calls its two
kernel functions directly (sktime is pinned in pyproject.toml for that reason); the fitted
parameters are five plain arrays per kind, saved with the model's other arrays.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Self

import numpy as np

from models.base import Labels, check_Xy
from models.baselines import LogRegDiagnoser
from models.codec import decode, encode
from models.registry import register_model
from pipeline.tensors import BundleTensors, KindTensors
from vsandx.faults import COMPONENT_KINDS

MIN_LENGTH = 9  # MiniRocket's kernels span 9 steps


def _kernels() -> tuple[Any, Any]:
    from sktime.transformations.rocket._minirocket_multi_numba import _fit_multi, _transform_multi

    return _fit_multi, _transform_multi


def _peer_mean(kt: KindTensors, x: np.ndarray, m: np.ndarray) -> np.ndarray:
    """(n, C, T) masked mean over the bundle's same-kind components (disks: cache and capacity apart)."""
    group = (
        (kt.static[:, 0] > 0.5).astype(np.int64)
        if kt.kind == "disk" and kt.static.shape[1]
        else np.zeros(len(x), np.int64)
    )
    out = np.zeros_like(x)
    for g in np.unique(group):
        rows = group == g
        tot, cnt = (x[rows] * m[rows]).sum(0), m[rows].sum(0)
        out[rows] = tot / np.maximum(cnt, 1.0)
    return out


def kind_series(kt: KindTensors, mu: np.ndarray, sd: np.ndarray, length: int) -> np.ndarray:
    """(n, 2C, length) float32: standardised channels and their difference from the peers' mean,
    cut to the last `length` steps or zero-padded at the end (no data) to `length`."""
    m = kt.mask.astype(np.float32)
    x = np.clip((kt.values - mu[:, None]) / sd[:, None], -20, 20) * m  # (n, C, T)
    x = np.concatenate([x, x - _peer_mean(kt, x, m) * m], 1)  # (n, 2C, T)
    t = x.shape[-1]
    if t >= length:
        return np.ascontiguousarray(x[..., t - length :], np.float32)
    return np.pad(x, ((0, 0), (0, 0), (0, length - t))).astype(np.float32)


@register_model(
    "minirocket",
    space={
        "num_kernels": ("choice", [504, 1008, 2016]),
        "C": ("loguniform", 1e-3, 1.0),
        "class_weight_power": ("uniform", 0.0, 1.0),
    },
)
class MiniRocketDiagnoser(LogRegDiagnoser):
    """MiniRocket features of each component's own and peer-relative series, logistic regression per kind."""

    default_name = "minirocket"

    def __init__(
        self,
        num_kernels: int = 1008,
        max_dilations: int = 32,
        fit_rows: int = 2000,
        C: float = 0.1,
        max_iter: int = 500,
        class_weight_power: float = 0.5,
        random_state: int = 0,
    ) -> None:
        super().__init__(C, max_iter, class_weight_power, random_state)
        self.num_kernels = num_kernels  # features per kind (MiniRocket rounds to a multiple of 84)
        self.max_dilations = max_dilations
        self.fit_rows = fit_rows  # rows whose convolution outputs set the kernels' biases

    def fit(
        self,
        X: Sequence[BundleTensors],
        y: Sequence[Labels],
        eval_set: tuple[Sequence[BundleTensors], Sequence[Labels]] | None = None,
    ) -> Self:
        """Kernels and input statistics per kind, then the logistic regressions on their features."""
        from models.cnn_stats import normalisation_stats

        check_Xy(X, y)
        fit_multi, _ = _kernels()
        self.length_ = max(MIN_LENGTH, max(bt.kinds["host"].values.shape[-1] for bt in X))
        self.series_stats_ = {k: (mu, sd) for k, (mu, sd, _, _) in normalisation_stats(X).items()}
        rng = np.random.default_rng(self.random_state)
        self.kernels_: dict[str, tuple[np.ndarray, ...]] = {}
        series = {k: self._series(X, k) for k in COMPONENT_KINDS}  # (n_k, 2C, L), built once for both steps
        state = np.random.get_state()  # sktime's fit seeds NumPy's global generator: restore it after
        try:
            for k, rows in series.items():
                if len(rows) == 0:
                    continue
                sample = rows[rng.permutation(len(rows))[: self.fit_rows]]
                self.kernels_[k] = tuple(fit_multi(sample, self.num_kernels, self.max_dilations, self.random_state))
        finally:
            np.random.set_state(state)
        return self._fit_features(self._transform(series), X, y)

    def _series(self, X: Sequence[BundleTensors], kind: str) -> np.ndarray:
        mu, sd = self.series_stats_[kind]
        c = len(mu)
        parts = [kind_series(bt.kinds[kind], mu, sd, self.length_) for bt in X]
        return np.concatenate(parts) if parts else np.zeros((0, 2 * c, self.length_), np.float32)

    def _features(self, X: Sequence[BundleTensors]) -> dict[str, np.ndarray]:
        return self._transform({k: self._series(X, k) for k in COMPONENT_KINDS})

    def _transform(self, series: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Per kind, (n_k, 2C, L) series -> (n_k, num_kernels) MiniRocket features."""
        _, transform_multi = _kernels()
        out = {}
        for k, rows in series.items():
            if k not in self.kernels_ or len(rows) == 0:
                out[k] = np.zeros((len(rows), 0), np.float32)
                continue
            out[k] = np.concatenate(
                [transform_multi(rows[i : i + 4096], self.kernels_[k]) for i in range(0, len(rows), 4096)]
            )
        return out

    def _get_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        meta, arrays = super()._get_state()
        meta["rocket"] = {
            "length": self.length_,
            "series_stats": encode(self.series_stats_, "series_stats", arrays),
            "kernels": encode(self.kernels_, "kernels", arrays),
        }
        return meta, arrays

    def _set_state(self, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        super()._set_state(meta, arrays)
        self.length_ = int(meta["rocket"]["length"])
        self.series_stats_ = decode(meta["rocket"]["series_stats"], arrays)
        self.kernels_ = decode(meta["rocket"]["kernels"], arrays)
