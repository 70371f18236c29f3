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
    threads print 2. The median's bucket reads 2 and 4 (3-4 outstanding)."""
    two = _hist(OIO, 1, 1000, [(1.0, 50), (2.0, 950), (4.0, 0)])
    three = _hist(OIO, 2, 1000, [(1.0, 20), (2.0, 60), (4.0, 920), (6.0, 0)])
    assert disk_oio([("a.csv", [two])]) == 2.0 and disk_oio([("a.csv", [three])]) == 4.0
    assert disk_oio([("a.csv", [_hist(OIO, None, 100, [(1.0, 10), (2.0, 20), (4.0, 60), (6.0, 10)])])]) == 4.0


def test_real_capture() -> None:
    p = REAL / "er0080_vscsiStats-helper__algonquin.csv"
    if not p.exists():
        pytest.skip(f"real sample {p} absent (../shared/samples/real is not checked out here)")
    hs = parse_vscsistats(p.read_text())
    # "mean,3" over 793 I/Os, but 551 of them issued alone: a guest idle between bursts, not three threads
    assert disk_oio([(p.name, hs)]) == 1


def test_hostile_numbers_say_nothing() -> None:
    """Negative frequencies count for nothing; a non-finite or negative limit, mean or count is no
    reading (a capture is attacker-controlled like the rest of the upload)."""
    neg = _hist(OIO, None, 500, [(1.0, -900), (2.0, 300), (4.0, 200)])
    assert disk_oio([("a.csv", [neg])]) == 2.0
    for h in (
        _hist(OIO, None, 500, [(float("inf"), 500)]),
        _hist(OIO, None, 500, [(-3.0, 500)]),
        _hist(OIO, float("nan"), 500),
        Histogram(OIO, "t", {"count": float("nan"), "mean": 1.0}),
    ):
        assert disk_oio([("a.csv", [h])]) is None
