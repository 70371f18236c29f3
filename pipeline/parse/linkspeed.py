"""The speed and duplex a NIC driver logged when a vmnic's link came up, and what a host's logs say of
each vmnic's speed now.

nicinfo (`esxcli network nic list`) gives a NIC's negotiated speed at collection time; where a host's
nicinfo is missing, vmkernel still tells it: drivers log the speed at every link up. Shapes read
(the simulator writes the first; drivers write close variants):

    ixgben: ixgben_CheckLink:1879: vmnic1: NIC Link is Up 1000 Mbps Full Duplex
    igbn: vmnic0: NIC Link is Up 1000 Mbps Full Duplex, Flow Control: RX/TX
    i40en: vmnic2: NIC Link is Up, 10 Gbps Full Duplex
    nmlx5_core: vmnic2: Link speed 25000 Mbps, full duplex
    bnxtnet: vmnic4: link up, speed 25000 Mbps, full duplex

A line that is itself a link transition (`vmnicN : <pci> Link Up`) stays the transition event
(pipeline.parse.logs); these lines become `link_speed` events, which count in no channel: they fill
speed_gbps / duplex_full (pipeline/static.py) and are cited by a link finding.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Final, NamedTuple

if TYPE_CHECKING:
    from pipeline.parse.logs import LogEvent

_NIC: Final = re.compile(r"\b(vmnic\d{1,4})\b")
# "link is up", "link up", "link speed": the state word right after "link", never "link down"
_UP: Final = re.compile(r"\blink(?: is)?[ ,:]{0,3}(?:up|speed)\b", re.IGNORECASE)
_DOWN: Final = re.compile(r"\blink(?: is)?[ ,:]{0,3}down\b", re.IGNORECASE)
# a number and its unit ("1000 Mbps", "10 Gbps", "25000Mb/s"), or a bare number after "speed" (Mb/s)
_RATE: Final = re.compile(r"\b(\d{1,6}(?:\.\d{1,2})?) ?([MG])(?:bps|b/s|bit/s)\b", re.IGNORECASE)
_BARE: Final = re.compile(r"\bspeed[ :=]{0,3}(\d{1,6})\b(?! ?[a-z/])", re.IGNORECASE)
_DUPLEX: Final = re.compile(r"\b(full|half)[ -]?duplex\b|\bduplex[ :=]{0,3}(full|half)\b", re.IGNORECASE)
# Ethernet runs from 10 Mb/s to 400 Gb/s: a number outside (odd units, "1000 Gbps") is not a link speed.
MIN_MBPS: Final = 10.0
MAX_MBPS: Final = 400_000.0


class LinkSpeed(NamedTuple):
    vmnic: str
    mbps: float
    full: bool | None  # None: the line does not say


def link_speed(text: str) -> LinkSpeed | None:
    """The vmnic, speed and duplex a link-up line reports (a vmkernel message, bounded in length by the
    reader), or None. Each pattern is searched once over the line and has bounded runs: linear."""
    up = _UP.search(text)
    if up is None or _DOWN.search(text):
        return None
    nic = _NIC.search(text)
    if nic is None:
        return None
    rate = _RATE.search(text, up.start())
    if rate is not None:
        mbps = float(rate[1]) * (1000.0 if rate[2].upper() == "G" else 1.0)
    else:
        bare = _BARE.search(text, up.start())
        if bare is None:
            return None
        mbps = float(bare[1])
    if not MIN_MBPS <= mbps <= MAX_MBPS:
        return None
    d = _DUPLEX.search(text, up.start())
    full = None if d is None else (d[1] or d[2]).lower() == "full"
    return LinkSpeed(nic[1], mbps, full)


def to_detail(s: LinkSpeed) -> str:
    """The LogEvent detail of a link_speed event: "<Mb/s> Full|Half|?"."""
    return f"{s.mbps:g} {'?' if s.full is None else 'Full' if s.full else 'Half'}"


def from_detail(detail: str | None) -> tuple[float, bool | None] | None:
    parts = (detail or "").split()
    if len(parts) != 2:
        return None
    try:
        mbps = float(parts[0])
    except ValueError:
        return None
    return mbps, None if parts[1] == "?" else parts[1] == "Full"


def last_speeds(events: Iterable[LogEvent]) -> dict[str, tuple[float, bool | None]]:
    """Per vmnic, (Mb/s, full duplex) of its last logged link-up speed, from one host's events (every
    log file). A vmnic whose link went down after that line is left out: a port that is down now has no
    speed, it is not slow (the same reading as nicinfo's Link Down rows)."""
    last: dict[str, tuple[float, str, str | None]] = {}  # vmnic -> (time, kind, detail)
    for ev in events:
        if ev.vmnic and ev.kind in ("link_speed", "link_down"):
            prev = last.get(ev.vmnic)
            # at one instant the speed line wins: drivers log it right after the transition
            if prev is None or ev.t > prev[0] or (ev.t == prev[0] and ev.kind == "link_speed"):
                last[ev.vmnic] = (ev.t, ev.kind, ev.detail)
    out = {}
    for nic, (_t, kind, detail) in last.items():
        got = from_detail(detail) if kind == "link_speed" else None
        if got is not None:
            out[nic] = got
    return out
