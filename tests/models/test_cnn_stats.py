"""The input statistics of models/cnn_stats.py: what a CNN fit learns from its training set first."""

from __future__ import annotations

import numpy as np
import torch

from models.cnn_stats import feature_stats
from models.cnn_train import to_arrays

from .conftest import LabData


def test_feature_statistics_standardise_the_training_rows(lab: LabData) -> None:
    arrays = [to_arrays(bt, features=True) for bt in lab.X[:4]]
    stats = feature_stats(arrays)
    rows = torch.cat([a["nic"]["feat"] for a in arrays]).double().numpy()
    mu, sd = stats["nic"]
    np.testing.assert_allclose(mu, rows.mean(0), rtol=1e-5, atol=1e-6)
    assert (sd >= 1e-2).all()  # a constant feature (a counter that never fired) does not explode
    np.testing.assert_allclose(sd, np.maximum(rows.std(0), 1e-2), rtol=1e-4, atol=1e-6)
