"""Byte streams with accounting: every byte the reader produces is counted against the limits.

`Budget` is shared by one whole read (nested archives included); `CountingReader` wraps any
`read(n)` source and charges what it actually returns, so lying headers change nothing.
"""

from __future__ import annotations

import bz2
import gzip
import importlib
import io
import lzma
import tarfile
import zipfile
import zlib
from collections.abc import Callable
from typing import Final

from pipeline.config import PipelineConfig
from pipeline.errors import BundleError, CorruptArchive, CorruptMember, LimitExceeded


def _gzip_impl() -> tuple[Callable[..., io.BufferedIOBase], tuple[type[BaseException], ...]]:
    """ISA-L's gunzip when `isal` is installed (optional accelerator), else the standard library's."""
    try:
        igzip = importlib.import_module("isal.igzip")
        isal_zlib = importlib.import_module("isal.isal_zlib")
    except ImportError:
        return gzip.GzipFile, ()
    return igzip.GzipFile, (isal_zlib.error,)


_GzipFile, _extra_errors = _gzip_impl()

CHUNK: Final = 256 * 1024
# What a damaged compressed stream or container raises inside the standard library.
STREAM_ERRORS: Final[tuple[type[BaseException], ...]] = (
    zlib.error,
    EOFError,
    OSError,
    lzma.LZMAError,
    tarfile.TarError,
    zipfile.BadZipFile,
    ValueError,
    NotImplementedError,
    *_extra_errors,
)


class Budget:
    """Limits for one upload: member count, total bytes produced, and produced/consumed ratio."""

    def __init__(self, config: PipelineConfig, name: str) -> None:
        self.config = config
        self.name = name
        self.members = 0
        self.produced = 0  # uncompressed bytes handed out or skipped through
        self.consumed = 0  # bytes read from the upload itself
        self.current = name  # member being read, for error messages

    def add_member(self, path: str) -> None:
        self.members += 1
        self.current = path
        if self.members > self.config.max_members:
            raise LimitExceeded("max_members", path, f"more than {self.config.max_members} members")

    def charge(self, n: int) -> None:
        self.produced += n
        cfg = self.config
        if self.produced > cfg.max_total_bytes:
            raise LimitExceeded("max_total_bytes", self.current, f"more than {cfg.max_total_bytes} bytes uncompressed")
        if self.produced > cfg.ratio_min_bytes and self.produced > cfg.max_ratio * max(self.consumed, 1):
            raise LimitExceeded(
                "max_ratio",
                self.current,
                f"{self.produced} bytes from {self.consumed} compressed, ratio above {cfg.max_ratio:g}",
            )


class CountingReader(io.RawIOBase):
    """Reads from `read`, charging bytes to the budget (total/ratio) and/or to one member's limit.

    Errors of the underlying stream become CorruptArchive (or CorruptMember when `member_level`),
    so callers only ever see the pipeline's own exceptions.
    """

    def __init__(
        self,
        read: Callable[[int], bytes],
        budget: Budget,
        path: str,
        *,
        total: bool,
        member_limit: bool,
        consumed: bool = False,
        member_level: bool = False,
    ) -> None:
        super().__init__()
        self._read = read
        self._budget = budget
        self._path = path
        self._total = total
        self._member_limit = member_limit
        self._consumed = consumed
        self._member_level = member_level
        self.count = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buf: bytearray | memoryview) -> int:  # type: ignore[override]
        want = min(len(buf), CHUNK)
        try:
            data = self._read(want)
        except BundleError:
            raise
        except STREAM_ERRORS as e:
            err = CorruptMember if self._member_level else CorruptArchive
            raise err(self._path, f"damaged data: {type(e).__name__}: {e}") from None
        n = len(data)
        if n > want:  # a misbehaving source; never trust it to respect n
            raise CorruptArchive(self._path, "stream returned more bytes than asked for")
        buf[:n] = data
        self.count += n
        cfg = self._budget.config
        if self._consumed:
            self._budget.consumed += n
        if self._member_limit and self.count > cfg.max_member_bytes:
            raise LimitExceeded("max_member_bytes", self._path, f"more than {cfg.max_member_bytes} bytes uncompressed")
        if self._total:
            self._budget.charge(n)
        return n


class Chain(io.RawIOBase):
    """`head` (already read for sniffing) followed by the rest of `rest`."""

    def __init__(self, head: bytes, rest: io.RawIOBase) -> None:
        super().__init__()
        self._head = memoryview(head)
        self._rest = rest

    def readable(self) -> bool:
        return True

    def readinto(self, buf: bytearray | memoryview) -> int:  # type: ignore[override]
        if self._head:
            n = min(len(buf), len(self._head))
            buf[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        return self._rest.readinto(buf) or 0


def read_head(raw: io.RawIOBase, n: int) -> bytes:
    """Up to n bytes (fewer only at end of stream)."""
    parts: list[bytes] = []
    got = 0
    buf = bytearray(min(n, CHUNK))
    while got < n:
        view = memoryview(buf)[: min(len(buf), n - got)]
        k = raw.readinto(view)
        if not k:
            break
        parts.append(bytes(view[:k]))
        got += k
    return b"".join(parts)


def read_all(stream: io.RawIOBase | io.BufferedIOBase) -> bytes:
    out = bytearray()
    while True:
        chunk = stream.read(CHUNK)
        if not chunk:
            return bytes(out)
        out += chunk


def compression_of(head: bytes) -> str | None:
    if head.startswith(b"\x1f\x8b"):
        return "gz"
    if head.startswith(b"BZh") and len(head) > 3 and head[3:4].isdigit():
        return "bz2"
    if head.startswith(b"\xfd7zXZ\x00"):
        return "xz"
    return None


def decompressor(kind: str, fileobj: io.RawIOBase) -> io.BufferedIOBase:
    # Each of these decompresses incrementally with bounded output per read() call. Every host bundle
    # repeats the cluster-wide perf dump, so gunzip dominates reading: ISA-L's is ~2.5x zlib's.
    if kind == "gz":
        return _GzipFile(fileobj=fileobj, mode="rb")
    if kind == "bz2":
        return bz2.BZ2File(fileobj, mode="rb")
    return lzma.LZMAFile(fileobj, mode="rb")  # type: ignore[arg-type]


def looks_like_tar(block: bytes) -> bool:
    """A valid ustar/gnu/v7 header: magic or a matching checksum (never the name)."""
    if len(block) < 512:
        return False
    if block[257:262] == b"ustar":
        return True
    try:
        chk = int(block[148:156].split(b"\x00", 1)[0].strip() or b"-1", 8)
    except ValueError:
        return False
    unsigned = sum(block[:148]) + 8 * 32 + sum(block[156:512])
    return chk == unsigned and any(block[:100])
