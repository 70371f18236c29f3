"""A log line's leading timestamp read to epoch seconds (UTC), and a log recognised by its timestamps."""

from __future__ import annotations

import calendar

from pipeline.parse import logtime


def test_timestamp_is_utc_epoch_seconds_and_where_it_ends() -> None:
    line = b"2026-03-02T10:00:01.250Z cpu1:2)Link Down"
    got = logtime.timestamp(line)
    assert got == (calendar.timegm((2026, 3, 2, 10, 0, 1)) + 0.25, len(b"2026-03-02T10:00:01.250Z"))
    assert logtime.parse_ts(line) == got[0]
    assert logtime.parse_ts(b"2026-03-02T10:00:01Z x") == calendar.timegm((2026, 3, 2, 10, 0, 1))


def test_lines_without_a_valid_timestamp_have_none() -> None:
    for line in (
        b"untimed",
        b" 2026-03-02T10:00:01Z",
        b"2026-13-02T10:00:01Z",
        b"2026-03-02T24:00:01Z",
        b"2026-03-02T10:00:01",
    ):
        assert logtime.timestamp(line) is None, line


def test_a_log_is_a_head_of_mostly_timestamped_lines() -> None:
    timed = b"2026-03-02T10:00:01Z cpu1:2)x\n"
    assert logtime.sniff(timed * 3 + b"continued\n")
    assert not logtime.sniff(timed + b"a\nb\nc\n")
    assert not logtime.sniff(b"\n \n")
