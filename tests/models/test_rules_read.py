"""models/rules_read.py: the window levels and medians the rules read are numpy's own, value for value
(bitwise, NaN where nothing was observed), computed on one sort instead of row by row."""

from __future__ import annotations

import tracemalloc
import warnings
from collections.abc import Callable

import numpy as np
import pytest

from models.rules_read import level, peer_median, peer_step_median, row_median


def _rows(seed: int) -> np.ndarray:
    """Rows of every kind the tensors hold: whole, gappy, one value, never observed, with +-inf, ties."""
    rng = np.random.default_rng(seed)
    x = rng.lognormal(0, 2, size=(60, 37))
    x[rng.random(x.shape) < 0.3] = np.nan
    x[5] = np.nan
    x[6, 1:] = np.nan
    x[7, :2], x[7, 2:] = 3.0, np.nan
    x[8, 3], x[9, 4] = np.inf, -np.inf
    x[10] = np.round(x[10])  # ties
    x[11, :] = np.nan
    x[11, 0] = np.inf  # observed, but nothing finite: no level
    return x


@pytest.mark.parametrize("q", [0, 5, 20, 50, 60, 80, 90, 95, 99, 100])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_level_is_nanpercentile(q: float, seed: int) -> None:
    x = _rows(seed)
    ok = np.isfinite(x).any(axis=1)
    want = np.full(len(x), np.nan)
    with np.errstate(invalid="ignore"):
        want[ok] = np.nanpercentile(x[ok], q, axis=1)
    assert np.array_equal(level(x, q), want, equal_nan=True)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_row_median_is_nanmedian(seed: int) -> None:
    x = _rows(seed)
    with pytest.warns(RuntimeWarning):  # numpy warns of the rows with nothing: row_median does not
        want = np.nanmedian(x, axis=1)
    assert np.array_equal(row_median(x), want, equal_nan=True)
    assert row_median(np.empty((3, 0))).shape == (3,) and np.isnan(row_median(np.empty((3, 0)))).all()


@pytest.mark.parametrize("ties", [False, True])
def test_peer_median_is_the_median_of_the_others_with_a_value(ties: bool) -> None:
    rng = np.random.default_rng(3)
    x = rng.lognormal(0, 1, size=40)
    x = np.round(x) if ties else x
    x[rng.random(40) < 0.25] = np.nan
    x[3] = np.inf
    groups = rng.integers(-1, 6, size=40)
    groups[39] = 9  # a group of one: no peer
    got = peer_median(x, groups)
    for r in range(40):
        others = x[(groups == groups[r]) & (np.arange(40) != r)]
        others = others[np.isfinite(others)]
        want = np.median(others) if groups[r] >= 0 and len(others) else np.nan
        assert np.array_equal(got[r], want, equal_nan=True), r


def test_peer_median_memory_is_linear_in_the_group() -> None:
    """The bundle-wide rung puts every disk in one group, up to max_components (4,096) of an upload:
    a (n, n) table of peers would take 134 MB there."""
    x = np.random.default_rng(4).lognormal(size=4096)
    assert _peak_bytes(peer_median, x, np.zeros(4096, np.int64)) < 2_000_000


def _peak_bytes(fn: Callable[..., object], *args: object) -> int:
    tracemalloc.start()
    try:
        fn(*args)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_peer_step_median_is_the_nanmedian_of_the_others_at_each_step(seed: int) -> None:
    x = _rows(seed)
    rng = np.random.default_rng(seed)
    groups = rng.integers(-1, 5, size=len(x))
    groups[:4] = 7  # rows 5-11 (never observed, one value, +-inf, ties) spread over the others
    groups[59] = 9  # a group of one: no peer
    got = peer_step_median(x, groups)
    for r in range(len(x)):
        others = x[(groups == groups[r]) & (np.arange(len(x)) != r)]
        if groups[r] < 0 or not len(others):
            assert np.isnan(got[r]).all(), r
            continue
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # steps no peer observed
            want = np.nanmedian(others, axis=0)
        assert np.array_equal(got[r], want, equal_nan=True), r


def test_peer_step_median_memory_is_linear_in_the_group() -> None:
    """4,096 disks in one group, 180 steps: the (n, T) sort and its indices, not a table per disk."""
    x = np.random.default_rng(5).lognormal(size=(4096, 180))
    peak = _peak_bytes(peer_step_median, x, np.zeros(4096, np.int64))
    assert peak < 16 * x.nbytes  # 73 MB measured; a float64 (n, n, T) table of peers would be 24 GB


def test_other_hosts_median_is_the_median_of_the_other_hosts_rows() -> None:
    """One sort for the bundle, against np.median over every row's other-host rows: the same floats,
    ties, NaN rows and a host alone (nothing to compare with) included."""
    from models.rules_read import other_hosts_median

    def by_row(x: np.ndarray, hosts: np.ndarray) -> np.ndarray:
        out = np.full(len(x), np.nan)
        for i in np.flatnonzero(np.isfinite(x)):
            ref = x[np.isfinite(x) & (hosts != hosts[i])]
            out[i] = np.median(ref) if len(ref) else np.nan
        return out

    rng = np.random.default_rng(5)
    for trial in range(500):
        n = int(rng.integers(0, 25))
        hosts = rng.integers(0, int(rng.integers(1, 7)), n)
        x = rng.choice([1.5, 9.0, 0.0, -1.0], n) if trial % 2 else rng.normal(size=n)
        x[rng.random(n) < 0.2] = np.nan
        assert np.array_equal(other_hosts_median(x, hosts), by_row(x, hosts), equal_nan=True)
    assert np.isnan(other_hosts_median(np.array([9.0, 1.5]), np.array([3, 3]))).all()  # one host: no peers
    assert other_hosts_median(np.array([9.0, 1.5, 9.0]), np.array([0, 1, 2])).tolist() == [5.25, 9.0, 5.25]


def test_mtu_below_peers_row_by_row() -> None:
    """The vectorised check against its definition per port: below the other hosts' median MTU (less
    50 bytes), unless a port of its host at that MTU carries a fifth or more of its vSAN traffic."""
    from models.rules_read import mtu_below_peers, other_hosts_median, static, vsan_ports
    from pipeline.channels import KIND_STATIC
    from pipeline.tensors import KindTensors

    js, jm = (KIND_STATIC["nic"].index(c) for c in ("traffic_share", "mtu_k"))
    rng = np.random.default_rng(11)
    for _ in range(300):
        n = int(rng.integers(0, 20))
        kt = KindTensors.empty("nic", tuple(f"vmnic{i}" for i in range(n)), 2)
        kt.host_index[:] = rng.integers(-1, int(rng.integers(1, 6)), n)
        kt.static[:, js] = rng.choice([0.0, 0.1, 0.2, 0.4, 0.5, 0.6, 1.0], n)
        kt.static[:, jm] = rng.choice([1.5, 9.0, 9.0, 4.0], n)
        kt.static_mask[:, js], kt.static_mask[:, jm] = rng.random(n) < 0.9, rng.random(n) < 0.8
        mtu, share, hosts = static(kt, "mtu_k"), np.nan_to_num(static(kt, "traffic_share")), kt.host_index
        ref = other_hosts_median(np.where(vsan_ports(kt) & np.isfinite(mtu), mtu, np.nan), hosts) - 0.05
        want = np.full(n, np.nan)
        for i in np.flatnonzero(np.isfinite(ref)):
            twin = (hosts == hosts[i]) & (mtu >= ref[i]) & (share >= 0.2)
            want[i] = float(mtu[i] < ref[i] and not twin.any())
        assert np.array_equal(mtu_below_peers(kt), want, equal_nan=True)
