"""What the physical model tells the log and capture writers: timed events and per-host context.

The model decides *what happened* (a SCSI command failed, a link renegotiated, LSOM congestion
crossed its threshold); the writers in `logs.py` and `esxtop.py` decide *how ESXi prints it*.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

# kind -> attrs the event carries (all str/int/float)
EVENT_KINDS: Final[dict[str, tuple[str, ...]]] = {
    # A SCSI command to a device failed (vmkernel ScsiDeviceIO line; D:0x2 lines also in vmkwarning
    # when they are medium/hardware errors). sense = "0x3 0x11 0x0" or "" for none.
    "scsi_fail": ("device", "opcode", "host_status", "device_status", "sense"),
    # ScsiDeviceIO "performance has deteriorated" (vmkernel WARNING + vobd esx.problem.scsi.device.io.latency.high)
    "dev_deteriorated": ("device", "avg_us", "now_us"),
    # ScsiDeviceIO "performance has improved"
    "dev_improved": ("device", "from_us", "to_us"),
    # LSOM congestion crossed its threshold (vmkernel + vobd esx.problem.vsan.lsom.congestionthreshold).
    # ctype is "SSD" or "Log"; dg_uuid is the disk group (cache disk) UUID.
    "lsom_congestion": ("dg_uuid", "ctype", "threshold", "current"),
    # LSOM congestion back under the threshold
    "lsom_congestion_clear": ("dg_uuid", "ctype", "current"),
    # uplink lost / regained carrier (vmkernel + vobd vob.net.vmnic.linkstate.down/up)
    "link_down": ("vmnic", "pci"),
    "link_up": ("vmnic", "pci", "speed_mbps", "duplex"),
    # a vSAN device went into permanent error (LSOMEventNotify WARNING)
    "perm_error": ("disk_uuid",),
    # a vSAN device went offline / came back (vobd esx.problem.vob.vsan.pdl.offline / esx.clear...online)
    "disk_offline": ("disk_uuid", "device"),
    "disk_online": ("disk_uuid", "device"),
    # another host left / rejoined the vSAN cluster (CMMDS membership change seen by this host)
    "node_left": ("node_uuid",),
    "node_joined": ("node_uuid",),
    # vSAN object resync started because of a membership or policy change (clomd)
    "resync_start": ("objects", "bytes_to_sync"),
}


@dataclass(frozen=True)
class Event:
    t: float  # epoch seconds, UTC
    kind: str  # a key of EVENT_KINDS
    attrs: Mapping[str, str | int | float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        need = EVENT_KINDS.get(self.kind)
        if need is None:
            raise ValueError(f"unknown event kind {self.kind!r}")
        missing = [k for k in need if k not in self.attrs]
        if missing:
            raise ValueError(f"event {self.kind} lacks {missing}")


@dataclass(frozen=True)
class NicInfo:
    name: str  # vmnic0
    pci: str  # 0000:04:00.1
    driver: str  # ixgben, i40en, nmlx5_core, bnxtnet
    mac: str
    speed_mbps: int  # as nicinfo shows it at collection time
    duplex: str  # Full / Half
    mtu: int
    description: str
    link_up: bool = True


@dataclass(frozen=True)
class HostLogContext:
    """Everything a log writer needs to know about one host to print plausible lines."""

    hostname: str
    host_uuid: str
    esxi_major: int  # 7 or 8: selects the vmkernel line style
    build: str  # e.g. "8.0.2-22380479"
    n_cpus: int
    devices: tuple[str, ...]  # naa.… of every local device (vSAN and boot)
    disk_uuids: tuple[str, ...]  # vSAN disk UUIDs on this host
    nics: tuple[NicInfo, ...]
    peer_uuids: tuple[str, ...]  # other hosts' UUIDs (for CMMDS noise)
    vsan_nic: str = ""  # the uplink carrying vSAN traffic, and its standby ("" when none)
    standby_nic: str = ""
    opid_share: float = 0.0  # share of operation-context vmkernel lines that carry an `opID=` token
    nfs_volume: str = ""  # an NFS datastore mounted on the host ("" when none)
    nfs_server: str = ""
    flap_style: str = "classic"  # vobd on a flap: classic (linkstate VOBs) | uplink (portgroup transitions) | both
    vswitch: str = "vSwitch1"
    portgroup: str = "vSAN"
