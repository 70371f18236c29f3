"""Zip helpers: count announced entries before zipfile loads its directory, count bytes read, check
the structure before decompressing, and read a stored nested zip in place."""

from __future__ import annotations

import io
import os
import struct
import zipfile
from typing import BinaryIO, Final

from pipeline.errors import CorruptArchive
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


_LOCAL: Final = struct.Struct("<4sHHHHHIIIHH")


def check_zip(f: BinaryIO, zf: zipfile.ZipFile, where: str) -> dict[int, int]:
    """Structure checks before any entry is decompressed; header offset -> data offset per entry.

    Every central record must point at its own local header, in order, with the same name, method
    and sizes, and its data must end before the next entry and the central directory. This refuses
    overlapping entries (a 1 GiB entry named by 40,000 records was 40 GiB of output from one upload,
    and the ratio limit never saw it: each record read the compressed bytes again).
    """
    end = getattr(zf, "start_dir", None)
    if not isinstance(end, int):
        f.seek(0, os.SEEK_END)
        end = f.tell()
    offsets: dict[int, int] = {}
    seen: set[int] = set()
    prev_end = 0
    for zi in zf.infolist():
        name = zi.filename[:200]
        off = zi.header_offset
        if off in seen:
            raise CorruptArchive(where, f"{name}: several central records point at the same data")
        seen.add(off)
        if off < prev_end:
            raise CorruptArchive(where, f"{name}: local entry overlaps the previous one or is out of order")
        f.seek(off)
        raw = f.read(_LOCAL.size)
        if len(raw) < _LOCAL.size or raw[:4] != b"PK\x03\x04":
            raise CorruptArchive(where, f"{name}: no local header where the central directory says")
        _sig, _ver, flag, method, _t, _d, crc, csize, usize, nlen, xlen = _LOCAL.unpack(raw)
        lname = f.read(nlen)
        enc = "utf-8" if flag & 0x800 else "cp437"
        if lname.decode(enc, "replace") != zi.orig_filename:
            raise CorruptArchive(where, f"{name}: local and central names differ")
        if method != zi.compress_type:
            raise CorruptArchive(where, f"{name}: local and central compression methods differ")
        if not flag & 0x08 and csize != 0xFFFFFFFF and (csize, usize, crc) != (zi.compress_size, zi.file_size, zi.CRC):
            raise CorruptArchive(where, f"{name}: local and central sizes or CRC differ")
        data = off + _LOCAL.size + nlen + xlen
        prev_end = data + zi.compress_size
        if prev_end > end:
            raise CorruptArchive(where, f"{name}: entry data runs into the central directory")
        offsets[off] = data
    f.seek(0)
    return offsets


class SliceFile(io.RawIOBase):
    """A seekable read-only view of `size` bytes at `start` of a seekable file: a stored zip entry
    read in place as a zip of its own, never copied. It seeks before every read, as zipfile's own
    shared-file wrapper does, so both can read the same file object in turn."""

    def __init__(self, f: BinaryIO, start: int, size: int) -> None:
        super().__init__()
        self._f, self._start, self._size, self._pos = f, start, size, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, pos: int, whence: int = 0) -> int:
        base = {0: 0, 1: self._pos, 2: self._size}[whence]
        self._pos = max(0, base + pos)
        return self._pos

    def tell(self) -> int:
        return self._pos

    def readinto(self, buf: bytearray | memoryview) -> int:  # type: ignore[override]
        n = max(0, min(len(buf), self._size - self._pos))
        if not n:
            return 0
        self._f.seek(self._start + self._pos)
        data = self._f.read(n)
        buf[: len(data)] = data
        self._pos += len(data)
        return len(data)
