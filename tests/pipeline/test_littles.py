"""Little's law per VM (pipeline/littles.py): threads hold their I/Os in flight, a paced rate holds its
iops, and a VM with nothing in flight says nothing."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.grid import Grid
from pipeline.littles import closed_loop_score
from pipeline.parse.perfdump import PerfEntity

T = 60
GRID = Grid(start=0, step=300, T=T, native=300)


def _vm(iops: np.ndarray, latency_us: np.ndarray, read_share: float = 0.7) -> PerfEntity:
    times = np.arange(T, dtype=np.int64) * 300
    return PerfEntity(
        "virtual-machine:x",
        "virtual-machine",
        "x",
        times,
        {
            "iopsRead": iops * read_share,
            "iopsWrite": iops * (1 - read_share),
            "latencyRead": latency_us,
            "latencyWrite": latency_us,
        },
        300,
    )


def _latency(rng: np.random.Generator) -> np.ndarray:
    """A healthy cluster's latency in microseconds, moving +-20 % with the other guests' load."""
    return 400.0 * np.exp(rng.normal(0, 0.2, T))


def test_threads_score_plus_one_a_paced_rate_minus_one() -> None:
    rng = np.random.default_rng(0)
    lat = _latency(rng)
    threads = _vm(8 / (lat * 1e-6), lat)  # 8 I/Os in flight: iops = 8 / latency
    paced = _vm(np.full(T, 3000.0), lat)  # 3,000 iops asked for whatever the latency
    assert closed_loop_score([threads], GRID) == pytest.approx(1.0)
    assert closed_loop_score([paced], GRID) == pytest.approx(-1.0)


def test_measurement_noise_on_both_counters_decides_nothing() -> None:
    """Independent 10 % noise on iops and on latency over a flat benchmark: neither holds still."""
    rng = np.random.default_rng(1)
    noisy = _vm(2000.0 * np.exp(rng.normal(0, 0.1, T)), 500.0 * np.exp(rng.normal(0, 0.1, T)))
    score = closed_loop_score([noisy], GRID)
    assert score is not None and abs(score) < 0.5


def test_vms_weigh_by_what_they_hold_in_flight_and_idle_ones_not_at_all() -> None:
    rng = np.random.default_rng(2)
    lat = _latency(rng)
    bench = _vm(16 / (lat * 1e-6), lat)  # 16 in flight
    light = _vm(np.full(T, 400.0), lat)  # paced at 400 iops: 0.16 in flight, under the floor
    assert closed_loop_score([bench, light], GRID) == pytest.approx(1.0)
    assert closed_loop_score([light], GRID) is None
    idle = _vm(np.zeros(T), lat)
    assert closed_loop_score([idle], GRID) is None
    assert closed_loop_score([], GRID) is None


def test_a_vm_reporting_no_latency_is_not_scored() -> None:
    rng = np.random.default_rng(3)
    e = _vm(np.full(T, 3000.0), _latency(rng))
    e.metrics = {k: v for k, v in e.metrics.items() if not k.startswith("latency")}
    assert closed_loop_score([e], GRID) is None


def test_counters_too_large_to_multiply_give_no_score_rather_than_nan() -> None:
    """Counters are the upload's: 1e200 iops at 1e200 us overflow iops x latency; such steps are not
    active, and a sum of weights that overflows is no score, never a NaN stored as observed."""
    huge = _vm(np.full(T, 1e200), np.full(T, 1e200))
    assert closed_loop_score([huge], GRID) is None
    rng = np.random.default_rng(4)
    lat = 400.0 * np.exp(rng.normal(0, 0.2, T))
    big = _vm(1e300 / (lat * 1e-6), lat)  # ~1e300 in flight: finite per VM, the weights' sum overflows
    score = closed_loop_score([big, big], GRID)
    assert score is None or np.isfinite(score)
