"""Named real-world causes of each fault, and the benign look-alikes healthy components show.

Every injected fault is drawn through one cause of this registry: the cause decides *how* the fault
shows (which counters move, with what time pattern, which log lines), the fault id only *what* it is.
A model must learn what the causes of a fault share (faults.md's signature), not one rendering of it.
`CauseFilter` holds causes out of a dataset (leave-one-cause-out benchmarks); `markdown_table()` is
the README's "Fault causes" table.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["BENIGN", "CAUSES", "Benign", "Cause", "CauseFilter", "by_fault", "get", "markdown_table"]


@dataclass(frozen=True)
class Cause:
    fault: str  # fault id (faults.md)
    name: str  # unique within the fault
    description: str  # one line: what happens in the real world
    renders: str  # what the simulator writes for it, across metrics, logs, esxtop and esxcli
    severity: str  # the severity range in the fault's own units, mild edge first
    sev_range: tuple[float, float] = (0.0, 1.0)  # the labels' severity (0..1) this cause spans
    weight_lab: float = 1.0  # relative draw weight among the fault's causes, lab profile
    weight_field: float = 1.0  # ... field profile

    @property
    def key(self) -> str:
        return f"{self.fault}:{self.name}"

    def weight(self, profile: str) -> float:
        return self.weight_lab if profile == "lab" else self.weight_field


@dataclass(frozen=True)
class Benign:
    name: str
    looks_like: str  # the fault whose counter it moves
    description: str
    renders: str


_PL, _LD, _DL = "net.packet_loss", "net.link_degraded", "disk.latency"
_HS, _WB, _CPU = "disk.hotspot", "dg.write_buffer", "host.cpu_contention"
_OIO, _RS = "cluster.low_oio", "cluster.resync"

CAUSES: tuple[Cause, ...] = (
    Cause(_PL, "cable_crc", "damaged cable or optic corrupts frames, all the time",
          "pnic rxCrcErr and rxErr, portRxDrops, rx/tx loss rates, TCP retransmits and rx errors; esxtop port "
          "drops; persistent with per-sample jitter", "0.5-30 per-mille loss", (0.0, 1.0), 1.5, 1.2),
    Cause(_PL, "switch_overrun", "switch buffers overrun under bursts; frames are dropped whole, not corrupted",
          "portRxDrops, loss rates, TCP retransmits, pause frames under load; no CRC or rx errors; bursty, rises "
          "with the uplink's load", "0.5-15 per-mille mean loss", (0.0, 0.85), 0.5, 1.2),
    Cause(_PL, "firmware_drop", "NIC firmware or driver drops received frames (ring exhaustion, offload bug)",
          "pnic rxErr and portRxDrops, loss rates, TCP retransmits; no CRC errors; steady",
          "0.5-12 per-mille loss", (0.0, 0.8), 0.5, 1.0),
    Cause(_PL, "intermittent_optic", "a marginal optic or connector: bursts of corrupted frames, quiet between",
          "CRC and rx errors, loss and retransmits in bursts covering a fifth to half of the window, near zero "
          "between; sometimes the link flaps (vobd linkstate down/up, uplink transition, redundancy lost)",
          "2-30 per-mille loss inside bursts", (0.2, 1.0), 0.5, 1.0),
    Cause(_PL, "stack_drop", "every N-th received packet dropped in the vmkernel TCP/IP stack (PerfPsychic's lab "
          "injection)", "vsan-host-net loss rates, TCP retransmits and rx errors, very steady; the pnic counts "
          "nothing (no CRC, rxErr or port drops, no esxtop port drops)", "N = 1000 to 50 (1-20 per-mille)",
          (0.17, 0.9), 1.5, 0.4),
    Cause(_LD, "speed_1g", "the uplink negotiated 1 Gb/s Full on a 10/25 GbE design (auto-negotiation, cable)",
          "nicinfo Speed 1000 Full; throughput flat-tops near 117 MB/s; pause frames under load; link down/up "
          "renegotiation in vmkernel and vobd when it happened in the window", "1000 Mb/s (10-25x below design)",
          (0.4, 0.6), 2.0, 1.5),
    Cause(_LD, "speed_100m", "the uplink fell back to 100 Mb/s (bad pair, forced speed on the switch port)",
          "nicinfo Speed 100 Full; throughput flat-tops near 12 MB/s; vSAN latency through that host very high",
          "100 Mb/s (100-250x below design)", (0.8, 1.0), 0.5, 0.6),
    Cause(_LD, "half_duplex", "duplex mismatch: the port runs half duplex (1000 Half or 100 Half)",
          "nicinfo Duplex Half at 1000 or 100; tx+rx share the link; late collisions (txErr); throughput capped",
          "1000 Half or 100 Half", (0.5, 1.0), 1.0, 0.8),
    Cause(_LD, "mtu_mismatch", "the uplink's vSwitch runs MTU 1500 where the cluster's vSAN network runs jumbo "
          "frames (a host missed in a jumbo-frame change)", "nicinfo MTU 1500 on that host's vSAN uplink and its "
          "standby while every other host's show 9000; at full speed, yet jumbo frames are fragmented or "
          "dropped: throughput caps far below the line rate, more packets per byte, a little tx loss and TCP "
          "retransmits (< 0.5 per-mille), no CRC or receive errors; a link reset when the MTU changed in the "
          "window", "a ceiling of 400 down to 60 MB/s", (0.3, 0.9), 0.7, 0.8),
    Cause(_DL, "medium_error", "media errors on a failing device: retries and media recovery",
          "DAVG high with ordinary iops; SCSI D:0x2 sense 0x3 0x11 (medium error) failures for that naa; "
          "'performance has deteriorated' when latency jumps; its group's latencySched up",
          "4-65 ms service time", (0.0, 1.0), 1.5, 1.2),
    Cause(_DL, "hardware_error", "device hardware fault (internal target failure, hardware error sense)",
          "DAVG high; SCSI D:0x2 sense 0x4 0x44/0x4 0x0 failures; deterioration lines", "4-65 ms", (0.0, 1.0),
          0.6, 0.6),
    Cause(_DL, "timeout", "commands time out and are aborted (H:0x5 / H:0x8) and retried",
          "DAVG spiky and high; H:0x5/H:0x8 aborts with NMP 'state in doubt' warnings; deterioration lines",
          "6-80 ms, spiky", (0.0, 1.0), 0.9, 0.9),
    Cause(_DL, "firmware_degraded", "firmware bug or worn flash: the device is slow but reports no errors",
          "DAVG high and steady; 'performance has deteriorated' lines when latency jumps past the monitor's "
          "threshold; few or no SCSI failures", "3-50 ms", (0.0, 1.0), 0.5, 1.0),
    Cause(_DL, "controller_queue", "the controller or driver queue saturates for this device (low queue depth, "
          "bad firmware)", "DAVG and KAVG/QAVG high; SCSI D:0x28 task-set-full or D:0x8 busy statuses, no "
          "medium errors", "4-40 ms", (0.0, 0.8), 0.3, 0.6),
    Cause(_HS, "dedup_zero", "reads of zeroed or duplicate blocks under deduplication land on one block of one "
          "capacity SSD", "one capacity SSD's read latency climbs with its outstanding reads while its group "
          "peers stay ~0.1-0.2 ms; it serves from about their I/O to many times it (its reads wait on one "
          "channel, each 1-8x the device's own time); read-heavy; dedup in storage list; no SCSI errors or "
          "deterioration lines",
          "4-64 outstanding reads on the device", (0.0, 1.0), 1.0, 1.0),
    Cause(_HS, "narrow_lba", "a badly prepared benchmark hammers a narrow LBA range", "as dedup_zero, with part "
          "of the group's reads still spread over the peers", "4-64 outstanding reads", (0.0, 1.0), 1.0, 1.0),
    Cause(_WB, "slow_capacity", "the capacity tier destages far below nominal (slow spindles, busy devices)",
          "wbFreePct falls, log/ssd congestion rises, latencySched and write latency up, ssdBytesDrained flat at "
          "the slow tier's limit; LSOM congestion lines only past 200", "congestion ~20 (never logs) to 255",
          (0.0, 1.0), 1.0, 1.0),
    Cause(_WB, "large_io", "large sequential writes (256 KiB-1 MiB) fill the buffer faster than it drains",
          "as slow_capacity with a large-block writer and a nominal tier", "congestion ~20 to 255", (0.0, 1.0), 1.0,
          1.0),
    Cause(_WB, "heavy_writes", "sustained heavy writes (ETL, backup target) above what the tier destages",
          "as slow_capacity with a heavy writer and a nominal tier", "congestion ~20 to 255", (0.0, 1.0), 1.0, 1.0),
    Cause(_CPU, "oversubscribed", "too many busy VMs for the host's cores",
          "pcpuUtilPct 90-100 with daily swings, vsan-cpu readyPct and every esxtop group's % Ready up",
          "ready 4-25 %", (0.0, 1.0), 1.0, 1.2),
    Cause(_CPU, "runaway_world", "one runaway world (a spinning process or VM) pegs the cores from one moment on",
          "abrupt step to a flat ~93-100 % utilisation; readyPct and esxtop % Ready up; no daily swing",
          "ready 4-25 %", (0.0, 1.0), 1.0, 0.8),
    Cause(_OIO, "one_thread", "a benchmark with one outstanding I/O per VM disk", "cluster oio ~ VM disks x 1, "
          "low iops at low latency, devices idle to moderately busy, no congestion or errors",
          "1 outstanding I/O per disk", (0.6, 1.0), 1.0, 1.0),
    Cause(_OIO, "two_threads", "a benchmark with two outstanding I/Os per VM disk", "cluster oio ~ VM disks x 2, "
          "otherwise as one_thread", "2 outstanding I/Os per disk", (0.25, 0.6), 1.0, 1.0),
    Cause(_RS, "host_failure", "a host left the cluster and came back (or its objects are rebuilt elsewhere)",
          "resync reads on several hosts, recovery writes, guest latency up; vobd/CMMDS node left/joined before",
          "100-650 MB/s cluster-wide", (0.0, 1.0), 1.0, 1.0),
    Cause(_RS, "disk_failure", "a device went offline and its components are rebuilt",
          "as host_failure, preceded by a permanent-loss / vSAN device offline event", "100-650 MB/s",
          (0.0, 1.0), 1.0, 1.0),
    Cause(_RS, "policy_change", "a storage policy change rewrites objects across the cluster",
          "resync on most groups, sustained, no failure event before", "60-400 MB/s", (0.0, 0.7), 1.0, 1.0),
    Cause(_RS, "rebalance", "a proactive or capacity rebalance moves components from full groups",
          "resync from a few groups to the others, moderate and long, no failure event", "40-200 MB/s",
          (0.0, 0.45), 0.5, 1.0),
)  # fmt: skip

BENIGN: tuple[Benign, ...] = (
    Benign("wb_burst", _WB, "a short write burst (backup, boot storm) on a healthy disk group",
           "wbFreePct dips and congestion stays mild (< 40) for a few percent of the window, then drains"),
    Benign("crc_blip", _PL, "a handful of CRC errors on a healthy uplink (a bumped cable, a reseated optic)",
           "rxCrcErr/rxErr of 1-3 on a few samples, no loss rate, no retransmits"),
    Benign("rebalance_trickle", _RS, "a small rebalance on one group", "2-15 MB/s of resync for a while"),
    Benign("idle_flap", _LD, "a flap on an uplink that carries no vSAN traffic",
           "vmkernel/vobd link down/up at full speed on a non-vSAN vmnic"),
    Benign("down_ports", _LD, "unused ports without a cable", "nicinfo Link Down, Speed 0, Duplex Half, no traffic"),
    Benign("nfs_latency", _DL, "an NFS datastore's latency warnings",
           "'NFS volume ... performance has deteriorated' lines that name no vSAN device"),
)  # fmt: skip

_BY_KEY = {c.key: c for c in CAUSES}


def get(fault: str, name: str) -> Cause:
    return _BY_KEY[f"{fault}:{name}"]


def by_fault(fault: str) -> tuple[Cause, ...]:
    return tuple(c for c in CAUSES if c.fault == fault)


def resolve(names: Iterable[str]) -> frozenset[str]:
    """Cause keys for `fault:cause`, a bare cause name (every fault's cause of that name) or a fault id
    (all its causes); unknown names raise ValueError."""
    out: set[str] = set()
    for raw in names:
        s = raw.strip()
        if not s:
            continue
        hit = {s} if s in _BY_KEY else {c.key for c in CAUSES if c.name == s} or {c.key for c in CAUSES if c.fault == s}
        if not hit:
            raise ValueError(f"unknown cause {s!r}; expected fault:cause, a cause name or a fault id")
        out |= hit
    return frozenset(out)


@dataclass(frozen=True)
class CauseFilter:
    """Which causes may be drawn: `only` (None: all) minus `exclude`, both sets of cause keys."""

    only: frozenset[str] | None = None
    exclude: frozenset[str] = frozenset()

    @classmethod
    def of(cls, only: Sequence[str] | None = None, exclude: Sequence[str] | None = None) -> CauseFilter:
        return cls(resolve(only) if only else None, resolve(exclude or ()))

    def allows(self, c: Cause) -> bool:
        return (self.only is None or c.key in self.only) and c.key not in self.exclude

    def causes(self, fault: str) -> tuple[Cause, ...]:
        return tuple(c for c in by_fault(fault) if self.allows(c))

    @property
    def active(self) -> bool:
        return self.only is not None or bool(self.exclude)


ALL = CauseFilter()


def draw(fault: str, profile: str, rng: np.random.Generator, flt: CauseFilter = ALL) -> tuple[Cause, float] | None:
    """A cause of `fault` the filter allows (by the profile's weights) and a severity in its range."""
    pool = flt.causes(fault)
    if not pool:
        return None
    w = np.array([c.weight(profile) for c in pool])
    c = pool[int(rng.choice(len(pool), p=w / w.sum()))]
    lo, hi = c.sev_range
    return c, float(np.round(rng.uniform(lo, hi), 3))


def markdown_table() -> str:
    """The README's table of causes (and benign look-alikes), generated from the registry."""
    rows = ["| fault | cause | what it renders | severity range |", "|---|---|---|---|"]
    for c in CAUSES:
        rows.append(f"| `{c.fault}` | `{c.name}`: {c.description} | {c.renders} | {c.severity} |")
    for b in BENIGN:
        rows.append(f"| none (looks like `{b.looks_like}`) | `{b.name}`: {b.description} | {b.renders} | benign |")
    return "\n".join(rows) + "\n"
