"""MiniRocket baseline (models/rocket.py): its inputs, its kernels' state, its reproducibility."""

from __future__ import annotations

import dataclasses

import numpy as np

from models.registry import create_model
from models.rocket import kind_series

from .conftest import LabData


def test_series_are_standardised_with_peer_differences_and_fixed_length(lab: LabData) -> None:
    kt = lab.X[0].kinds["nic"]
    n, c, t = kt.values.shape
    mu, sd = np.zeros(c, np.float32), np.ones(c, np.float32)
    x = kind_series(kt, mu, sd, t + 20)
    assert x.shape == (n, 2 * c, t + 20) and x.dtype == np.float32
    assert not x[..., t:].any()  # padded at the end with "no data"
    own, peer = x[:, :c, :t], x[:, c:, :t]
    np.testing.assert_allclose(own, np.clip(kt.values, -20, 20) * kt.mask, rtol=1e-6)
    m = kt.mask.astype(np.float32)
    mean = (own * m).sum(0) / np.maximum(m.sum(0), 1)
    np.testing.assert_allclose(peer, (own - mean) * m, rtol=1e-5, atol=1e-5)
    assert kind_series(kt, mu, sd, t // 2).shape[-1] == t // 2  # longer bundles keep their last steps


def test_identical_peers_show_no_difference(lab: LabData) -> None:
    kt = lab.X[0].kinds["disk"]
    same = dataclasses.replace(
        kt, values=np.repeat(kt.values[:1], len(kt.ids), 0), mask=np.repeat(kt.mask[:1], len(kt.ids), 0)
    )
    c = kt.values.shape[1]
    x = kind_series(same, np.zeros(c, np.float32), np.ones(c, np.float32), kt.values.shape[-1])
    assert np.abs(x[:, c:]).max() < 1e-4  # every disk like its siblings (cache and capacity apart)


def test_fit_is_reproducible_and_leaves_numpy_global_state_alone(lab: LabData) -> None:
    X, y = lab.train
    np.random.seed(123)
    before = np.random.random()
    np.random.seed(123)
    a = create_model("minirocket", num_kernels=84, fit_rows=200).fit(X[:8], y[:8])
    assert np.random.random() == before
    b = create_model("minirocket", num_kernels=84, fit_rows=200).fit(X[:8], y[:8])
    for k in a.kernels_:
        for u, v in zip(a.kernels_[k], b.kernels_[k], strict=True):
            np.testing.assert_array_equal(u, v)
    pa, pb = a.predict_proba(X[8:10]), b.predict_proba(X[8:10])
    for s, t in zip(pa, pb, strict=True):
        for cid in s:
            np.testing.assert_array_equal(s[cid], t[cid])
    assert a._features(X[8:9])["disk"].shape[1] == 84
