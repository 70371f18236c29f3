"""tarfile in stream mode within the limits: extended headers counted and bounded, the entries read
not kept, a damaged stream a CorruptArchive."""

from __future__ import annotations

import io
import tarfile

import pytest

from pipeline.config import PipelineConfig
from pipeline.errors import CorruptArchive, LimitExceeded
from pipeline.streams import Budget
from pipeline.tarutil import next_entry, open_tar

MiB = 1024 * 1024


def _tar(members: list[tarfile.TarInfo | tuple[str, bytes]]) -> bytes:
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for m in members:
            if isinstance(m, tarfile.TarInfo):
                tf.addfile(m)
            else:
                ti = tarfile.TarInfo(m[0])
                ti.size = len(m[1])
                tf.addfile(ti, io.BytesIO(m[1]))
    return b.getvalue()


def _pax(name: str, comment_bytes: int) -> tarfile.TarInfo:
    ti = tarfile.TarInfo(name)
    ti.pax_headers = {"comment": "A" * comment_bytes}
    return ti


def test_entries_come_one_at_a_time_and_are_not_kept() -> None:
    cfg = PipelineConfig()
    tf = open_tar(io.BytesIO(_tar([("a", b"1"), ("b", b"22")])), cfg, Budget(cfg, "<t>"), "<t>")  # type: ignore[arg-type]
    names = []
    with tf:
        while (ti := next_entry(tf, "<t>")) is not None:
            names.append(ti.name)
            assert tf.members == []  # type: ignore[attr-defined]
    assert names == ["a", "b"]


def test_extended_headers_count_as_members_and_a_huge_one_is_refused() -> None:
    cfg = PipelineConfig()
    budget = Budget(cfg, "<t>")
    with open_tar(io.BytesIO(_tar([_pax("x", 100)])), cfg, budget, "up.tgz") as tf:  # type: ignore[arg-type]
        ti = next_entry(tf, "up.tgz")
        assert ti is not None and ti.name == "x" and ti.pax_headers["comment"] == "A" * 100
    assert budget.members == 1 and budget.current == "up.tgz:<header>"
    with pytest.raises(LimitExceeded) as ei:
        open_tar(io.BytesIO(_tar([_pax("x", 2 * MiB)])), cfg, Budget(cfg, "<t>"), "up.tgz")  # type: ignore[arg-type]
    assert ei.value.limit == "max_header_bytes"


class _Breaks(io.RawIOBase):
    """Hands out `data` once, then fails as a device would."""

    def __init__(self, data: bytes) -> None:
        super().__init__()
        self._data: bytes | None = data

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        if self._data is None:
            raise OSError("device gone")
        data, self._data = self._data, None
        return data


def test_a_damaged_stream_is_a_corrupt_archive() -> None:
    cfg = PipelineConfig()
    with pytest.raises(CorruptArchive, match="not a readable tar stream"):
        open_tar(_Breaks(b""), cfg, Budget(cfg, "<t>"), "up.tar")
    first = _tar([("a", b"1"), ("b", b"2")])[:1024]  # the first entry's header and data block only
    tf = open_tar(_Breaks(first), cfg, Budget(cfg, "<t>"), "up.tar")
    assert (ti := next_entry(tf, "up.tar")) is not None and ti.name == "a"
    with pytest.raises(CorruptArchive, match=r"damaged tar stream \(OSError: device gone\)"):
        next_entry(tf, "up.tar")
