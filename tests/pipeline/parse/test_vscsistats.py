"""pipeline/parse/vscsistats.disk_oio: vscsiStats' outstanding I/Os per virtual disk, faults.md's
"threads per disk", read off the all-I/O histogram of every captured disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.parse.vscsistats import Histogram, disk_oio, parse_vscsistats

OIO = "number of outstanding IOs when a new IO is issued"
REAL = Path(__file__).resolve().parents[3] / ".." / "shared" / "samples" / "real" / "vscsistats"


def _hist(title: str, mean: float | None, count: int, buckets: list[tuple[float, int]] | None = None) -> Histogram:
    """A histogram with a `mean` line and no buckets, or buckets (and the mean they would print)."""
    stats = {"count": float(count)} | ({} if mean is None else {"mean": mean})
    return Histogram(title, "virtual machine worldGroupID,1,virtual disk handleID,8194 (scsi0:0)", stats, buckets or [])


def test_the_median_of_the_disks_all_io_histograms() -> None:
    hs = [
        _hist(OIO, 1, 5000),
        _hist(OIO, 2, 4000),
        _hist(OIO, 1, 9000),
        _hist("number of outstanding Read IOs when a new Read IO is issued", 30, 5000),  # a half: not read
        _hist("latency of IOs in Microseconds (us)", 900, 5000),
    ]
    assert disk_oio([("a.csv", hs[:2]), ("b.csv", hs[2:])]) == 1
    assert disk_oio([("a.csv", hs[:2])]) == 1.5


def test_idle_disks_and_no_capture_say_nothing() -> None:
    assert disk_oio([]) is None
    assert disk_oio([("a.csv", [_hist(OIO, 1, 12)])]) is None  # 12 I/Os: an idle disk
    assert disk_oio([("a.csv", [_hist(OIO, 1, 12), _hist(OIO, 8, 3000)])]) == 8


def test_the_buckets_median_before_the_truncated_mean() -> None:
    """Two threads: 95 % of I/Os go out beside the other one, so vscsiStats prints "mean,1"; three
    threads print 2. The median, interpolated in its bucket's class of whole numbers, reads about 2 and
    about 3.5 (the bucket of 3-4 outstanding)."""
    two = _hist(OIO, 1, 1000, [(1.0, 50), (2.0, 950), (4.0, 0)])
    three = _hist(OIO, 2, 1000, [(1.0, 20), (2.0, 60), (4.0, 920), (6.0, 0)])
    assert disk_oio([("a.csv", [two])]) == pytest.approx(1.5 + 450 / 950)
    assert disk_oio([("a.csv", [three])]) == pytest.approx(2.5 + 2 * 420 / 920)
    assert disk_oio([("a.csv", [_hist(OIO, None, 100, [(1.0, 10), (2.0, 20), (4.0, 60), (6.0, 10)])])]) == (
        pytest.approx(2.5 + 2 * 20 / 60)
    )


def test_every_io_at_one_count_reads_that_count() -> None:
    """A closed loop of N threads: every I/O finds N out, itself included, whichever bucket holds N."""
    limits = [1.0, 2.0, 4.0, 6.0, 8.0, 12.0, 16.0, 64.0, 64.0]
    for n, want in ((1, 1.0), (2, 2.0), (3, 3.5), (4, 3.5), (6, 5.5), (80, 64.0)):
        i = next(i for i, lim in enumerate(limits) if n <= lim or i == len(limits) - 1)
        buckets = [(lim, 4000 if j == i else 0) for j, lim in enumerate(limits)]
        assert disk_oio([("a.csv", [_hist(OIO, n, 4000, buckets)])]) == pytest.approx(want), n


def test_a_spread_capture_reads_where_its_middle_io_falls() -> None:
    """A capture drawn around two outstanding I/Os a disk (another generator's, bundle ext-2-00158 of
    data.sources' outsider, seed 2): 49.8 % of its I/Os at 2 or below, the median just past it. The
    bucket's top would read 4 (three or more threads, no under-driven disk); the class reads 2.5."""
    spread = [(1.0, 6113), (2.0, 18622), (4.0, 18627), (6.0, 4647), (8.0, 1121), (12.0, 466), (16.0, 54)]
    got = disk_oio([("a.csv", [_hist(OIO, 2, 49665, [*spread, (20.0, 9), (24.0, 4), (28.0, 2), (64.0, 0)])])])
    assert got == pytest.approx(2.5 + 2 * (49665 / 2 - 24735) / 18627) and got < 2.52


def test_real_capture() -> None:
    p = REAL / "er0080_vscsiStats-helper__algonquin.csv"
    if not p.exists():
        pytest.skip(f"real sample {p} absent (../shared/samples/real is not checked out here)")
    hs = parse_vscsistats(p.read_text())
    # "mean,3" over 793 I/Os, but 551 of them issued alone: a guest idle between bursts, not three threads
    assert disk_oio([(p.name, hs)]) == pytest.approx(0.5 + (793 / 2) / 551)


def test_hostile_numbers_say_nothing() -> None:
    """Negative frequencies count for nothing; a non-finite or negative limit, mean or count is no
    reading (a capture is attacker-controlled like the rest of the upload)."""
    neg = _hist(OIO, None, 500, [(1.0, -900), (2.0, 300), (4.0, 200)])
    assert disk_oio([("a.csv", [neg])]) == pytest.approx(1.5 + 250 / 300)
    # limits that go down are no classes: the median's own limit, as the overflow bucket's
    assert disk_oio([("a.csv", [_hist(OIO, None, 500, [(8.0, 100), (2.0, 400)])])]) == 2.0
    for h in (
        _hist(OIO, None, 500, [(float("inf"), 500)]),
        _hist(OIO, None, 500, [(-3.0, 500)]),
        _hist(OIO, float("nan"), 500),
        Histogram(OIO, "t", {"count": float("nan"), "mean": 1.0}),
    ):
        assert disk_oio([("a.csv", [h])]) is None
