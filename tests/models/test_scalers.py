from __future__ import annotations

import numpy as np

from models.scalers import ClippedScaler, QuantileBinner


def test_quantile_binner_is_non_negative_one_hot() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 5)).astype(np.float32)
    b = QuantileBinner(4).fit(X)
    out = b.transform(X)
    assert out.shape == (200, 20)
    assert (out >= 0).all()
    np.testing.assert_array_equal(out.reshape(200, 5, 4).sum(-1), 1)
    np.testing.assert_allclose(out.reshape(200, 5, 4).mean(0), 0.25, atol=0.02)


def test_clipped_scaler_standardises_then_clips() -> None:
    X = np.array([[0.0], [1.0], [2.0], [1000.0]])
    s = ClippedScaler(clip=1.5).fit(X[:3])
    out = s.transform(X)
    np.testing.assert_allclose(out[:3, 0], [-1.224745, 0.0, 1.224745], rtol=1e-5)
    assert out[3, 0] == 1.5
