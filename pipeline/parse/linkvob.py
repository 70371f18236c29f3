"""vobd's network VOBs read as an engineer reads them: a vmnic's link going down, or coming back.

One uplink outage raises several VOBs, all about the same transition (a real flap, ESXi 7):

    [vob.net.pg.uplink.transition.down] Uplink: vmnic6 is down. Affected portgroup: Management Network. …
    [vob.net.vmnic.linkstate.down] vmnic vmnic6 linkstate down
    [esx.problem.net.redundancy.lost] Lost uplink redundancy on … "vSwitch0". Physical NIC vmnic6 is down. …
    [vob.net.vmnic.linkstate.up] vmnic vmnic6 linkstate up
    [vob.net.pg.uplink.transition.up] Uplink:vmnic6 is up. Affected portgroup: Management Network. …
    [esx.clear.net.connectivity.restored] … Physical NIC vmnic6 is up

The NIC's `ev.link_down` / `ev.link_up` channels count *transitions*, as vmkernel writes them (one
`vmnicN : <pci> Link Down` line per transition), so an engineer counts that flap as one link down and
one link up, not three of each: one uplink transition is posted per portgroup, and the vSwitch's
redundancy / connectivity VOBs restate the same loss. Every VOB line still counts once as a VOB
(`ev.vob`); the link events come on top of them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from pipeline.parse.logs import LogEvent

# VOB id -> the link event it reports for the vmnic its text names (the first `vmnicN`: "Physical NIC
# vmnicN is down", "Uplink: vmnicN is down", "vmnic vmnicN linkstate down").
LINK_VOBS: Final[dict[str, str]] = {
    "vob.net.vmnic.linkstate.down": "link_down",
    "vob.net.vmnic.linkstate.up": "link_up",
    "vob.net.pg.uplink.transition.down": "link_down",
    "vob.net.pg.uplink.transition.up": "link_up",
    "esx.problem.net.vmnic.linkstate.down": "link_down",
    "esx.clear.net.vmnic.linkstate.up": "link_up",
    "esx.problem.net.redundancy.lost": "link_down",
    "esx.problem.net.redundancy.degraded": "link_down",
    "esx.clear.net.redundancy.restored": "link_up",
    "esx.problem.net.connectivity.lost": "link_down",
    "esx.clear.net.connectivity.restored": "link_up",
    "esx.problem.net.dvport.redundancy.lost": "link_down",
    "esx.problem.net.dvport.redundancy.degraded": "link_down",
    "esx.clear.net.dvport.redundancy.restored": "link_up",
    "esx.problem.net.dvport.connectivity.lost": "link_down",
    "esx.clear.net.dvport.connectivity.restored": "link_up",
}
LINK_KINDS: Final = frozenset({"link_down", "link_up"})
MAX_TRACKED: Final = 4096  # vmnics whose state one file remembers (attacker-named vmnics are bounded)
# vmkernel's `Link Down` and vobd's linkstate VOB for one transition are milliseconds apart; a vobd
# rotation can split one outage's VOBs across two files by a second or two.
LINK_ECHO_S: Final = 30.0


class LinkTracker:
    """Within one log file, each vmnic's link state as its VOBs last reported it: a link VOB becomes a
    link event only when it changes that state (the first down after an up, or after nothing; the first
    up after a down). A persistent outage whose redundancy VOB is posted again hours later is still one
    outage. vmkernel `Link Down`/`Link Up` lines are not tracked here: they are one per transition."""

    def __init__(self) -> None:
        self.state: dict[str, str] = {}

    def event(self, ev: LogEvent) -> LogEvent | None:
        kind = LINK_VOBS.get(ev.detail or "") if ev.kind == "vob" else None
        if kind is None or not ev.vmnic:
            return None
        if self.state.get(ev.vmnic) == kind:
            return None
        if ev.vmnic in self.state or len(self.state) < MAX_TRACKED:
            self.state[ev.vmnic] = kind
        # detail None, as vmkernel's link events: the same transition from both logs at the same time
        # is one event.
        return ev._replace(kind=kind, device=None, uuid=None, detail=None)


def collapse_links(events: Iterable[LogEvent], echo_s: float = LINK_ECHO_S) -> list[LogEvent]:
    """Time-sorted events of one host (every log file), a link event dropped when it repeats the kind of
    its vmnic's previous kept link event within `echo_s`: vmkernel and vobd (or two rotated vobd files)
    reporting the same transition. Alternating downs and ups (a flapping link) all stay."""
    last: dict[str, LogEvent] = {}
    out = []
    for ev in events:
        if ev.kind in LINK_KINDS and ev.vmnic:
            prev = last.get(ev.vmnic)
            if prev is not None and prev.kind == ev.kind and ev.t - prev.t <= echo_s:
                continue
            last[ev.vmnic] = ev
        out.append(ev)
    return out
