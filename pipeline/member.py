"""What the reader yields: one regular file (`Member`), the read report, and member-name safety."""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import Final

from pipeline.config import PipelineConfig
from pipeline.errors import UnsafeMember
from pipeline.streams import Chain, read_all

MAX_SKIPPED_LISTED: Final = 200


@dataclass
class ReadReport:
    members: int = 0  # regular files yielded
    skipped: list[str] = field(default_factory=list)  # "path (why)", first MAX_SKIPPED_LISTED
    n_skipped: int = 0
    warnings: list[str] = field(default_factory=list)
    produced_bytes: int = 0  # uncompressed bytes read or skipped through (set when reading ends, by a limit too)
    headers: int = 0  # members seen, of every type, nested archives' included (the max_members count)

    def skip(self, path: str, why: str) -> None:
        self.n_skipped += 1
        if len(self.skipped) < MAX_SKIPPED_LISTED:
            self.skipped.append(f"{path} ({why})")


class Member:
    """One regular file: `path` inside the upload, `head` (first 64 KiB) and a stream of all of it."""

    def __init__(self, path: str, raw: io.RawIOBase, head: bytes, decompressed: bool = False) -> None:
        self.path = path
        self.head = head
        self.decompressed = decompressed  # content came out of a .gz/.bz2/.xz member
        self._raw = raw
        self._opened = False

    def open(self) -> io.BufferedReader:
        if self._opened:
            raise RuntimeError("Member.open() may be called once")
        self._opened = True
        return io.BufferedReader(Chain(self.head, self._raw), buffer_size=256 * 1024)

    def read(self) -> bytes:
        return read_all(self.open())


def safe_name(name: str, config: PipelineConfig, where: str) -> str:
    """Normalised '/'-separated relative path, or UnsafeMember for anything that could escape."""
    shown = name[:200]
    if len(name) > config.max_name_len:
        raise UnsafeMember(f"{where}:{shown}", f"member name longer than {config.max_name_len}")
    if any(ord(c) < 32 for c in name):
        raise UnsafeMember(f"{where}:{name!r}", "control character in member name")
    if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":" and name[0].isalpha()):
        raise UnsafeMember(f"{where}:{shown}", "absolute member path")
    parts = [p for p in name.replace("\\", "/").split("/") if p not in ("", ".")]
    if ".." in parts:
        raise UnsafeMember(f"{where}:{shown}", "member path escapes the bundle ('..')")
    return "/".join(parts)
