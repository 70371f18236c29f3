"""The ISO-8601 UTC timestamp that starts every vmkernel / vmkwarning / vobd line: read to epoch
seconds, and a file recognised as such a log by its lines starting with one.

Apart from pipeline.parse.logs, which matches what a line says: when a line was logged depends on its
first bytes only, and the bundle's classifier (bundle.classify) needs no more than that to know a log.
"""

from __future__ import annotations

import calendar
import re
from typing import Final

_TS: Final = re.compile(rb"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d+))?Z")
_EPOCH_CACHE: dict[bytes, int] = {}


def parse_ts(line: bytes) -> float | None:
    got = timestamp(line)
    return None if got is None else got[0]


def timestamp(line: bytes) -> tuple[float, int] | None:
    """(epoch seconds, end of the timestamp in the line)."""
    m = _TS.match(line)
    if m is None:
        return None
    key = line[:13]  # YYYY-MM-DDTHH
    base = _EPOCH_CACHE.get(key)
    if base is None:
        try:
            base = calendar.timegm((int(m[1]), int(m[2]), int(m[3]), int(m[4]), 0, 0))
        except (ValueError, OverflowError):
            return None
        if not 1 <= int(m[2]) <= 12 or not 1 <= int(m[3]) <= 31 or int(m[4]) > 23:
            return None
        if len(_EPOCH_CACHE) < 4096:
            _EPOCH_CACHE[key] = base
    frac = float(b"0." + m[7]) if m[7] else 0.0
    return base + int(m[5]) * 60 + int(m[6]) + frac, m.end()


def sniff(head: bytes) -> bool:
    lines = [ln for ln in head.split(b"\n")[:20] if ln.strip()]
    if not lines:
        return False
    return sum(1 for ln in lines if _TS.match(ln)) >= max(1, len(lines) // 2)
