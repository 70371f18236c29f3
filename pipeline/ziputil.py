"""Zip helpers: count announced entries before zipfile loads its directory; count bytes read."""

from __future__ import annotations

import io
import os
import struct
from typing import BinaryIO

from pipeline.streams import Budget


class ConsumedFile(io.RawIOBase):
    """A seekable file for zipfile whose reads count as consumed upload bytes."""

    def __init__(self, f: BinaryIO, budget: Budget) -> None:
        super().__init__()
        self._f = f
        self._budget = budget

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, pos: int, whence: int = 0) -> int:
        return self._f.seek(pos, whence)

    def tell(self) -> int:
        return self._f.tell()

    def read(self, n: int | None = -1) -> bytes:
        data = self._f.read(-1 if n is None else n)
        self._budget.consumed += len(data)
        return data

    def readinto(self, buf: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.read(len(buf))
        buf[: len(data)] = data
        return len(data)


def zip_entry_count(f: BinaryIO) -> int | None:
    """Entries announced by the end-of-central-directory record (zip64 too), before zipfile reads them."""
    f.seek(0, os.SEEK_END)
    size = f.tell()
    tail_len = min(size, 65535 + 22 + 20)
    f.seek(size - tail_len)
    tail = f.read(tail_len)
    f.seek(0)
    i = tail.rfind(b"PK\x05\x06")
    if i < 0 or len(tail) - i < 22:
        return None
    count = struct.unpack("<H", tail[i + 10 : i + 12])[0]
    if i >= 20 and tail[i - 20 : i - 16] == b"PK\x06\x07":
        (z64_off,) = struct.unpack("<Q", tail[i - 12 : i - 4])
        if z64_off + 56 <= size:
            f.seek(z64_off)
            rec = f.read(56)
            f.seek(0)
            if rec[:4] == b"PK\x06\x06":
                count = max(count, struct.unpack("<Q", rec[32:40])[0])
    return int(count)
