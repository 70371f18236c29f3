"""Little's law per VM (pipeline/littles.py): threads hold their I/Os in flight, a paced rate holds its
iops, and a VM with nothing in flight says nothing."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from pipeline.grid import Grid
from pipeline.littles import closed_loop_score, inflight_spread, vm_loops
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


def _score(vms: list[PerfEntity]) -> float | None:
    return closed_loop_score(vm_loops(vms, GRID))


def _latency(rng: np.random.Generator) -> np.ndarray:
    """A healthy cluster's latency in microseconds, moving +-20 % with the other guests' load."""
    return 400.0 * np.exp(rng.normal(0, 0.2, T))


def test_threads_score_plus_one_a_paced_rate_minus_one() -> None:
    rng = np.random.default_rng(0)
    lat = _latency(rng)
    threads = _vm(8 / (lat * 1e-6), lat)  # 8 I/Os in flight: iops = 8 / latency
    paced = _vm(np.full(T, 3000.0), lat)  # 3,000 iops asked for whatever the latency
    assert _score([threads]) == pytest.approx(1.0)
    assert _score([paced]) == pytest.approx(-1.0)


def test_measurement_noise_on_both_counters_decides_nothing() -> None:
    """Independent 10 % noise on iops and on latency over a flat benchmark: neither holds still."""
    rng = np.random.default_rng(1)
    noisy = _vm(2000.0 * np.exp(rng.normal(0, 0.1, T)), 500.0 * np.exp(rng.normal(0, 0.1, T)))
    score = _score([noisy])
    assert score is not None and abs(score) < 0.5


def test_vms_weigh_by_what_they_hold_in_flight_and_idle_ones_not_at_all() -> None:
    rng = np.random.default_rng(2)
    lat = _latency(rng)
    bench = _vm(16 / (lat * 1e-6), lat)  # 16 in flight
    light = _vm(np.full(T, 400.0), lat)  # paced at 400 iops: 0.16 in flight, under the floor
    assert _score([bench, light]) == pytest.approx(1.0)
    assert _score([light]) is None
    idle = _vm(np.zeros(T), lat)
    assert _score([idle]) is None
    assert _score([]) is None


def test_a_vm_reporting_no_latency_is_not_scored() -> None:
    rng = np.random.default_rng(3)
    e = _vm(np.full(T, 3000.0), _latency(rng))
    e.metrics = {k: v for k, v in e.metrics.items() if not k.startswith("latency")}
    assert _score([e]) is None


def test_counters_too_large_to_multiply_give_no_score_rather_than_nan() -> None:
    """Counters are the upload's: 1e200 iops at 1e200 us overflow iops x latency; such steps are not
    active, and a sum of weights that overflows is no score, never a NaN stored as observed. Neither
    warns: a hostile upload's counters are expected, not a numerical accident in the service's log."""
    huge = _vm(np.full(T, 1e200), np.full(T, 1e200))
    rng = np.random.default_rng(4)
    lat = 400.0 * np.exp(rng.normal(0, 0.2, T))
    big = _vm(1e300 / (lat * 1e-6), lat)  # ~1e300 in flight: finite per VM, the weights' sum overflows
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _score([huge]) is None
        score = _score([big, big])
    assert score is None or np.isfinite(score)


def test_threads_hold_their_in_flight_level_still_where_latency_does_too() -> None:
    """A benchmark on a quiet cluster: latency steady, so its iops are steady and the score reads only
    the counters' 5 % noise; its in-flight level still barely moves, while paced guests whose rate
    follows a daily cycle and bursts move theirs with the rate. A VM holding more than THREADED_MAX in
    flight (a guest queued behind a fault) is no one- or two-thread benchmark and is left out."""
    rng = np.random.default_rng(5)
    hours = np.arange(T) * 300 / 3600

    def noisy(x: np.ndarray) -> np.ndarray:
        return x * np.exp(rng.normal(0, 0.05, T))

    lat = np.full(T, 300.0)
    threads = [_vm(noisy(8 / (lat * 1e-6)), noisy(lat)) for _ in range(3)]  # 8 in flight each
    rate = 2000.0 * (1 + 0.35 * np.sin(2 * np.pi * hours / 24)) * rng.lognormal(0, 0.3, T)
    paced = [_vm(noisy(rate), noisy(lat)) for _ in range(3)]  # 0.6 in flight on average
    loops = vm_loops(threads, GRID)
    score = closed_loop_score(loops)
    assert score is not None and abs(score) < 0.5  # the score cannot tell
    spread = inflight_spread(loops)
    assert spread is not None and spread < 0.15
    paced_spread = inflight_spread(vm_loops(paced, GRID))
    assert paced_spread is not None and paced_spread > 0.3
    # the threads weigh 24 in flight against the paced guests' ~2: theirs is the median
    mixed = inflight_spread(vm_loops(threads + paced, GRID))
    assert mixed == pytest.approx(spread, abs=0.05)
    queued = _vm(noisy(np.full(T, 2000.0)), 50_000.0 * rng.lognormal(0, 0.4, T))  # 100 in flight at 50 ms
    assert inflight_spread(vm_loops([queued], GRID)) is None
    assert inflight_spread(vm_loops([*threads, queued], GRID)) == pytest.approx(spread)
    assert inflight_spread([]) is None


def test_the_tensors_carry_the_vms_in_flight_spread_of_a_simulated_bundle() -> None:
    """End to end through load_bundle: a two-thread benchmark's VMs hold their in-flight level within
    the site's counter noise, a healthy mix of guests (the same seed's healthy bundle) does not; both
    bundles carry the static as observed."""
    from data.simulate.archive import tar_bytes
    from data.simulate.generate import simulate_bundle
    from pipeline import load_bundle
    from pipeline.channels import KIND_STATIC

    j = KIND_STATIC["cluster"].index("vm_inflight_spread")
    read = []
    for faults, causes in ((["cluster.low_oio"], ["cluster.low_oio:two_threads"]), ([], None)):
        b = simulate_bundle("field", 41, 0, faults=faults, causes=causes)
        kt = load_bundle(tar_bytes(b.files)).kinds["cluster"]
        assert kt.static_mask[0, j]
        read.append(float(kt.static[0, j]))
    under_driven, healthy = read
    assert under_driven < 0.15 and healthy > 0.25
