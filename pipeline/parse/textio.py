"""Bounded reading of one member's content: chunks and lines within byte budgets.

Every parser reads through these, so no untrusted line reaches a regex unbounded and no source is
read past its budget without the caller knowing (`truncated`, `long_lines`).
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Final

from pipeline.errors import LimitExceeded

CHUNK: Final = 1024 * 1024


def read_bounded(f: io.BufferedIOBase, limit: int) -> bytes | None:
    """The whole stream, or None when it holds more than `limit` bytes (never more read than limit+1)."""
    out = bytearray()
    while len(out) <= limit:
        chunk = f.read(min(CHUNK, limit + 1 - len(out)))
        if not chunk:
            return bytes(out)
        out += chunk
    return None


def chunks(f: io.BufferedIOBase, limit: int, where: str, limit_name: str = "max_source_bytes") -> Iterator[bytes]:
    """The stream in chunks; LimitExceeded once more than `limit` bytes came (partial data is not used)."""
    seen = 0
    while chunk := f.read(CHUNK):
        seen += len(chunk)
        if seen > limit:
            raise LimitExceeded(limit_name, where, f"more than {limit} bytes to parse")
        yield chunk


class BoundedLines:
    """Lines of at most `max_line` bytes (longer ones skipped unread), stopping after `max_bytes`.

    `long_lines` and `truncated` tell the caller what was left out, for its warning.
    """

    def __init__(self, f: io.BufferedIOBase, max_line: int, max_bytes: int) -> None:
        self._f = f
        self.max_line = max_line
        self.max_bytes = max_bytes
        self.long_lines = 0
        self.truncated = False
        self.bytes = 0

    def __iter__(self) -> Iterator[bytes]:
        f, limit = self._f, self.max_line
        while True:
            if self.bytes >= self.max_bytes:
                self.truncated = bool(f.read(1))
                return
            line = f.readline(limit)
            if not line:
                return
            self.bytes += len(line)
            if len(line) == limit and not line.endswith(b"\n"):
                self.long_lines += 1
                while (rest := f.readline(CHUNK)) and not rest.endswith(b"\n"):
                    self.bytes += len(rest)
                    if self.bytes >= self.max_bytes:
                        break
                self.bytes += len(rest)
                continue
            yield line

    def warnings(self, where: str, limit_name: str) -> list[str]:
        out = []
        if self.long_lines:
            out.append(f"{where}: {self.long_lines} lines longer than {self.max_line} bytes skipped (max_line_bytes)")
        if self.truncated:
            out.append(f"{where}: only the first {self.bytes} bytes parsed, the rest ignored ({limit_name})")
        return out
