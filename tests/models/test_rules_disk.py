"""models/rules_disk.py: a disk's rate while slow against its siblings', the same values as the loop
over disks it replaces, in a number of sorts that does not grow with the disks of a bundle."""

from __future__ import annotations

import numpy as np
import pytest

import models.rules_disk as rules_disk
from models.rules_disk import rate_when_slow
from models.rules_read import level, row_median


def _one_disk_at_a_time(rd: np.ndarray, io: np.ndarray, ladder: tuple[np.ndarray, ...]) -> np.ndarray:
    """The loop this replaced (O(disks^2 x steps) on the bundle-wide rung): the reference."""
    with np.errstate(invalid="ignore"):
        slow = rd >= level(rd, 80)[:, None]
    mine = row_median(np.where(slow, io, np.nan))
    out = np.full(len(rd), np.nan)
    for groups in ladder:
        for j in np.flatnonzero(np.isnan(out) & (groups >= 0) & np.isfinite(rd).any(axis=1)):
            peers = np.flatnonzero((groups == groups[j]) & (np.arange(len(out)) != j))
            theirs = row_median(io[peers][:, slow[j]].T) if len(peers) else np.full(1, np.nan)
            out[j] = mine[j] / max(float(row_median(theirs[None, :])[0]), 1e-3)
    return out


def _disks(seed: int, n: int = 48, steps: int = 30) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, ...]]:
    rng = np.random.default_rng(seed)
    rd = rng.lognormal(-2, 1, size=(n, steps))
    io = np.round(rng.lognormal(5, 1, size=(n, steps)))  # ties
    rd[rng.random(rd.shape) < 0.2] = np.nan
    io[rng.random(io.shape) < 0.2] = np.nan
    rd[0], io[1], io[2, :] = np.nan, np.nan, 0.0  # never slow; no rate; a rate of 0 (the 1e-3 floor)
    io[3, 4] = np.inf
    group = rng.integers(-1, 8, size=n)  # -1: no disk group
    host = np.where(rng.random(n) < 0.2, -1, rng.integers(0, 3, size=n))
    group[5], host[5] = 99, 99  # alone on both near rungs: the bundle's tier
    return rd, io, (group, host, rng.integers(0, 2, size=n))


@pytest.mark.parametrize("seed", range(6))
def test_rate_when_slow_is_the_loops_value_for_value(seed: int) -> None:
    rd, io, ladder = _disks(seed)
    assert np.array_equal(rate_when_slow(rd, io, ladder), _one_disk_at_a_time(rd, io, ladder), equal_nan=True)


def test_a_disk_serving_more_while_slow_reads_above_its_siblings() -> None:
    rd = np.full((4, 10), 0.1)
    io = np.full((4, 10), 100.0)
    rd[0, 6:], io[0, 6:] = 2.0, 900.0  # began late: slow and busy only at the end
    got = rate_when_slow(rd, io, (np.zeros(4, np.int64),))
    assert got[0] == pytest.approx(9.0) and np.allclose(got[1:], 1.0)


def test_sorts_do_not_grow_with_the_disks(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bundle-wide rung holds every disk of an upload with no disk group or host, up to
    max_components (4,096): a median a disk there took 6.6 s at 180 steps."""
    calls: list[int] = []
    real = rules_disk.row_median

    def counted(x: np.ndarray) -> np.ndarray:
        calls.append(len(x))
        return real(x)

    monkeypatch.setattr(rules_disk, "row_median", counted)
    for n in (10, 400):
        calls.clear()
        rd, io, _ = _disks(7, n=n)
        none = np.full(n, -1)
        rate_when_slow(rd, io, (none, none, np.zeros(n, np.int64)))
        assert len(calls) <= 2, (n, len(calls))
