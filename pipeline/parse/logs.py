"""vmkernel / vmkwarning / vobd logs (ESXi 7 and 8 styles) -> timed events that matter for diagnosis."""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final, NamedTuple

_TS: Final = re.compile(rb"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d+))?Z")
_SCSI: Final = re.compile(
    r'to dev "(?P<dev>[^"]+)" failed H:0x(?P<h>[0-9a-fA-F]+) D:0x(?P<d>[0-9a-fA-F]+) P:0x(?P<p>[0-9a-fA-F]+)'
    r"(?:.*?sense data: 0x(?P<k>[0-9a-fA-F]+) 0x(?P<asc>[0-9a-fA-F]+) 0x(?P<q>[0-9a-fA-F]+))?"
)
_DETER: Final = re.compile(r"Device (\S+) performance has (deteriorated|improved)")
_LSOM: Final = re.compile(r"LSOM (\w+) Congestion State: (\w+)")
_LINK: Final = re.compile(r"\b(vmnic\d+)\b.*\bLink (Down|Up)\b", re.IGNORECASE)
_PERM: Final = re.compile(r"device ([0-9a-fA-F-]{32,36}) is under permanent error")
_VOB: Final = re.compile(r"\]\s*\d+us: \[([A-Za-z0-9_.]+)\]\s*(.*)")
_UUID: Final = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
_DEV: Final = re.compile(r"\b((?:naa|eui|t10|mpx)\.[A-Za-z0-9_.:-]+?)(?=[\s\"',)\]]|$)")
_VMNIC: Final = re.compile(r"\b(vmnic\d+)\b")
_KEYS: Final = (b"ScsiDeviceIO", b"LSOM", b"Link ", b"permanent error", b"performance has")

# Sense keys: 0x3 medium error and 0x4 hardware error mean a failing device; 0x5 illegal request and
# 0x6 unit attention are routine (unsupported VPD page, reservation reset) and benign.
MEDIUM_SENSE: Final = frozenset({0x3, 0x4})
BENIGN_SENSE: Final = frozenset({0x5, 0x6, 0x0})
EVENT_KINDS: Final = (
    "scsi_fail_medium",
    "scsi_fail_benign",
    "scsi_fail_host",
    "scsi_fail_other",
    "deteriorated",
    "improved",
    "lsom_congestion",
    "lsom_congestion_clear",
    "link_down",
    "link_up",
    "perm_error",
    "vob",
)


class LogEvent(NamedTuple):
    t: float  # epoch seconds UTC
    kind: str  # one of EVENT_KINDS
    device: str | None = None  # naa.… without partition
    vmnic: str | None = None
    uuid: str | None = None  # vSAN disk / disk group UUID named in the line
    detail: str | None = None  # the VOB id for "vob"


@dataclass
class LogFile:
    source: str  # vmkernel, vmkwarning, vobd, other
    events: list[LogEvent] = field(default_factory=list)
    lines: int = 0
    untimed: int = 0
    first: float | None = None
    last: float | None = None


_EPOCH_CACHE: dict[bytes, int] = {}


def parse_ts(line: bytes) -> float | None:
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
    return base + int(m[5]) * 60 + int(m[6]) + frac


def sniff(head: bytes) -> bool:
    lines = [ln for ln in head.split(b"\n")[:20] if ln.strip()]
    if not lines:
        return False
    return sum(1 for ln in lines if _TS.match(ln)) >= max(1, len(lines) // 2)


def source_of(path: str) -> str:
    base = path.rsplit("/", 1)[-1].lower()
    for s in ("vmkwarning", "vmkernel", "vobd"):
        if base.startswith(s):
            return s
    return "other"


def _scsi(t: float, m: re.Match[str]) -> LogEvent:
    dev = m["dev"].split(":", 1)[0]
    h, d = int(m["h"], 16), int(m["d"], 16)
    key = int(m["k"], 16) if m["k"] else None
    if h != 0:
        kind = "scsi_fail_host"  # timeouts, aborts, resets, no-connect
    elif d == 0x2 and key in MEDIUM_SENSE:
        kind = "scsi_fail_medium"
    elif d == 0x2 and (key is None or key in BENIGN_SENSE):
        kind = "scsi_fail_benign"
    else:
        kind = "scsi_fail_other"  # busy, queue full, reservation conflict, other sense keys
    return LogEvent(t, kind, device=dev)


def event_of(t: float, text: str) -> LogEvent | None:
    if "ScsiDeviceIO" in text or "failed H:0x" in text:
        m = _SCSI.search(text)
        if m:
            return _scsi(t, m)
        m2 = _DETER.search(text)
        if m2:
            return LogEvent(t, "deteriorated" if m2[2] == "deteriorated" else "improved", device=m2[1])
    if "LSOM" in text:
        m3 = _LSOM.search(text)
        if m3:
            u = _UUID.search(text)
            kind = "lsom_congestion" if m3[2].lower() == "exceeded" else "lsom_congestion_clear"
            return LogEvent(t, kind, uuid=u[0] if u else None, detail=m3[1])
        m4 = _PERM.search(text)
        if m4:
            return LogEvent(t, "perm_error", uuid=m4[1])
    if "Link " in text:
        m5 = _LINK.search(text)
        if m5:
            return LogEvent(t, "link_down" if m5[2].lower() == "down" else "link_up", vmnic=m5[1])
    return None


def vob_event(t: float, text: str) -> LogEvent | None:
    m = _VOB.search(text)
    if m is None:
        return None
    rest = m[2]
    dev = _DEV.search(rest)
    nic = _VMNIC.search(rest)
    u = _UUID.search(rest)
    return LogEvent(
        t,
        "vob",
        device=dev[1].split(":", 1)[0] if dev else None,
        vmnic=nic[1] if nic else None,
        uuid=u[0] if u else None,
        detail=m[1],
    )


def parse_log(lines: Iterator[bytes], source: str) -> LogFile:
    out = LogFile(source)
    vobd = source == "vobd"
    for raw in lines:
        if not raw.strip():
            continue
        out.lines += 1
        t = parse_ts(raw)
        if t is None:
            out.untimed += 1
            continue
        if out.first is None or t < out.first:
            out.first = t
        if out.last is None or t > out.last:
            out.last = t
        if vobd or b"us: [" in raw:
            ev = vob_event(t, raw.decode("utf-8", "replace"))
        elif any(k in raw for k in _KEYS):
            ev = event_of(t, raw.decode("utf-8", "replace"))
        else:
            continue
        if ev is not None:
            out.events.append(ev)
    return out
