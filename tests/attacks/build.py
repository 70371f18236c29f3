"""Building blocks of the attack corpus: a case, big members written small, and a .tgz writer.

Gigabyte contents cost megabytes: a 1 MiB block is gzip-compressed once and its compressed bytes
repeated (a gzip stream may be a run of members), so the reader decompresses all of it while the
disk holds little.
"""

from __future__ import annotations

import functools
import gzip
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

from data.simulate.generate import DUMP, Bundle
from data.simulate.perturb import coarser_interval
from tests.pipeline.simbundles import pick, upload

MiB = 1024 * 1024
NO_RATIO = {"VSANDX_PIPELINE_MAX_RATIO": "1000000000"}


@dataclass
class Case:
    name: str
    path: Path
    outcome: str  # "reject": exit 1 and `expect` in the message; "warn": parsed and `expect` in a warning
    expect: str  # "ok": parsed (expect empty)
    env: dict[str, str] = field(default_factory=dict)
    where: str = ""  # the file or member a refusal must name


@dataclass
class Big:
    """A member of `head + block * n + tail` bytes, `block` compressed once."""

    head: bytes
    block: bytes
    n: int
    tail: bytes = b""

    @property
    def size(self) -> int:
        return len(self.head) + len(self.block) * self.n + len(self.tail)


def _complete(b: Bundle) -> bool:
    """Every host uploaded with its perf dump at the usual path, a vmkernel.log and an esxtop capture:
    the parser notes nothing missing, so what an attack adds is all it has to say."""
    tops = {k.split("/")[0] for k in b.files if k.startswith("esx-")}
    return (
        b.hosts_present == b.hosts
        and sum(p.endswith(".csv") for p in b.files) == b.hosts
        and all(f"{t}/{DUMP}" in b.files and f"{t}/var/run/log/vmkernel.log" in b.files for t in tops)
    )


@functools.lru_cache(maxsize=1)
def _simulated() -> Bundle:
    return pick("lab", 1, _complete, start=0)


def _base() -> tuple[dict[str, bytes], str]:
    """A simulated lab upload (a fresh dict each call), its perf dump at 2-minute samples to keep it
    small (about 4 MB), and its first host folder."""
    files = coarser_interval(upload(_simulated().files), 6)
    top = sorted({k.split("/")[0] for k in files if k.startswith("esx-")})[0]
    return files, top


def _header(name: str, size: int, kind: bytes = tarfile.REGTYPE, link: str = "") -> bytes:
    ti = tarfile.TarInfo(name)
    ti.size, ti.type, ti.linkname, ti.mtime = size, kind, link, 1772445600
    return ti.tobuf(tarfile.GNU_FORMAT)


def _pad(n: int) -> bytes:
    return b"\0" * (-n % 512)


def write_tgz(path: Path, files: dict[str, bytes], big: dict[str, Big] | None = None, extra: bytes = b"") -> Path:
    """A .tgz of `files` and `big` members (and `extra` raw tar blocks) as a run of gzip members."""
    with open(path, "wb") as out:
        small = b"".join(_header(n, len(d)) + d + _pad(len(d)) for n, d in sorted(files.items())) + extra
        out.write(gzip.compress(small, 6))
        for name, b in (big or {}).items():
            out.write(gzip.compress(_header(name, b.size) + b.head, 6))
            packed = gzip.compress(b.block, 9)
            for _ in range(b.n):
                out.write(packed)
            out.write(gzip.compress(b.tail + _pad(b.size), 6))
        out.write(gzip.compress(b"\0" * 1024))
    return path


def _fill(unit: bytes, size: int = MiB) -> bytes:
    return unit * max(1, size // len(unit))
