"""Calibration error as measured: ECE of top scores, and what a calibrated model would show."""

from __future__ import annotations

import numpy as np
import pytest

from models.ece import ece, ece_if_calibrated


def test_ece_is_the_weighted_gap_between_confidence_and_accuracy() -> None:
    assert ece(np.array([0.9] * 10), np.array([1.0] * 9 + [0.0])) == pytest.approx(0.0)
    assert ece(np.array([0.95] * 4 + [0.55] * 4), np.array([1, 1, 0, 0, 1, 1, 1, 1.0])) == pytest.approx(
        0.5 * 0.45 + 0.5 * 0.45
    )
    assert ece(np.array([]), np.array([])) == 0.0


def test_the_ece_a_calibrated_model_would_show_shrinks_with_the_components() -> None:
    """On a hundred components a perfectly calibrated model still measures an ECE of several points (the
    figure an ECE target must be read against); on ten thousand, about one."""
    rng = np.random.default_rng(0)
    few, many = rng.uniform(0.5, 1.0, 100), rng.uniform(0.5, 1.0, 10_000)
    mean_few, high_few = ece_if_calibrated(few)
    mean_many, high_many = ece_if_calibrated(many, draws=50)
    assert 0.05 < mean_few < high_few < 0.2
    assert mean_many < 0.015 and high_many < 0.02 and high_many < mean_few / 4
    assert ece_if_calibrated(np.ones(50)) == (0.0, 0.0)  # sure and (drawn) right: no gap to find
    assert ece_if_calibrated(np.array([])) == (0.0, 0.0)
