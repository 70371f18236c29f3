"""Fault taxonomy (shared/spec/faults.md): ids, the component kind each belongs on, and what to do."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

COMPONENT_KINDS: Final = ("cluster", "host", "nic", "diskgroup", "disk")
NONE: Final = "none"


@dataclass(frozen=True)
class Fault:
    id: str
    kind: str  # the component kind that causes it
    title: str
    recommendation: str


FAULTS: Final[dict[str, Fault]] = {
    f.id: f
    for f in (
        Fault(
            "net.packet_loss",
            "nic",
            "Physical network drops packets on this uplink",
            "Check the physical path of that uplink (cable, optics, switch port error counters, NIC "
            "firmware/driver); move vSAN traffic to a healthy uplink.",
        ),
        Fault(
            "net.link_degraded",
            "nic",
            "vSAN uplink runs below its designed speed (1 Gb/s, half duplex or MTU mismatch)",
            "Restore the link speed (switch port config, auto-negotiation, cable), verify MTU end to end.",
        ),
        Fault(
            "disk.latency",
            "disk",
            "Failing or degraded storage device",
            "Proactively evacuate and replace the device; check controller/driver/firmware against the "
            "compatibility guide.",
        ),
        Fault(
            "disk.hotspot",
            "disk",
            "Outstanding reads serialise on one capacity SSD (hot LBA range)",
            "Prepare benchmark disks with random, non-repeating data (4 KB aligned I/O, randrepeat=0), "
            "spread the working set.",
        ),
        Fault(
            "dg.write_buffer",
            "diskgroup",
            "Write buffer fills faster than destaging drains it",
            "Reduce or spread write-heavy workloads, add capacity devices or disk groups, use a faster "
            "capacity tier, check the destage rate.",
        ),
        Fault(
            "host.cpu_contention",
            "host",
            "Host CPUs saturated; vSAN worlds wait to run",
            "Rebalance VMs (DRS), reserve CPU for vSAN, add hosts.",
        ),
        Fault(
            "cluster.low_oio",
            "cluster",
            "Workload issues too few outstanding I/Os to reach its goal",
            "Increase number of threads per disk from 1 to 2 (or to the value that reaches the goal); more VMs/disks.",
        ),
        Fault(
            "cluster.resync",
            "cluster",
            "Resynchronisation competes with guest I/O",
            "Let resync finish or throttle it; schedule policy changes off-peak.",
        ),
    )
}

FAULT_IDS: Final = tuple(FAULTS)
LABELS: Final = (NONE, *FAULT_IDS)


def faults_for_kind(kind: str) -> tuple[str, ...]:
    """Fault ids that can be labelled on a component of `kind`."""
    if kind not in COMPONENT_KINDS:
        raise ValueError(f"unknown component kind {kind!r}")
    return tuple(f.id for f in FAULTS.values() if f.kind == kind)
