"""Channel catalogue: per component kind, the time-series channels of BundleTensors, in order.

Models refer to channels by name (`KIND_CHANNELS["disk"].index("perf.latencyDevDAvg")`). Each channel
says where its data comes from, the unit after conversion, and whether it is log-scaled (log1p of
the converted value) because it is heavy-tailed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True)
class Channel:
    name: str
    source: str  # perf | esxtop | event | vm
    key: str  # perf: "<entity type>/<label>"; esxtop: series name; event: event kind; vm: aggregate
    unit: str  # after conversion
    scale: float  # converted = raw * scale (per_interval: further divided by the sample interval)
    log: bool
    per_interval: bool = False  # raw value is a count per sample interval -> per second


_PERMILLE: Final = {
    "rxPacketsLossRate",
    "txPacketsLossRate",
    "portRxDrops",
    "portTxDrops",
    "tcpTxRexmitRate",
    "tcpRxErrRate",
}
_COUNTS: Final = {"pauseCount", "rxErr", "txErr", "rxCrcErr"}


def perf_channel(etype: str, label: str, prefix: str) -> Channel:
    """Unit rules of bundle-format.md section 3, applied by metric label."""
    name = f"{prefix}.{label}"
    key = f"{etype}/{label}"
    low = label.lower()
    if label in _PERMILLE:
        return Channel(name, "perf", key, "percent", 0.1, True)
    if label in _COUNTS:
        return Channel(name, "perf", key, "1/s", 1.0, True, per_interval=True)
    if low.endswith("congestion"):
        return Channel(name, "perf", key, "fraction of 255", 1 / 255, False)
    if label.endswith("Pct") or label.endswith("HitRate"):
        return Channel(name, "perf", key, "fraction", 0.01, False)
    if low.startswith(("latency", "lat")):
        return Channel(name, "perf", key, "ms", 1e-3, True)
    if "throughput" in low or low.startswith("tput") or label == "ssdBytesDrained":
        return Channel(name, "perf", key, "MB/s", 1e-6, True)
    return Channel(name, "perf", key, "1/s" if low.startswith("iops") or "packets" in low else "count", 1.0, True)


def _perf(etype: str, prefix: str, labels: str) -> tuple[Channel, ...]:
    return tuple(perf_channel(etype, lb, prefix) for lb in labels.split())


def _events(*kinds: str) -> tuple[Channel, ...]:
    return tuple(Channel(f"ev.{k}", "event", k, "events/step", 1.0, True) for k in kinds)


_DOM: Final = "iopsRead iopsWrite throughputRead throughputWrite latencyAvgRead latencyAvgWrite congestion oio"
_NET: Final = (
    "rxThroughput txThroughput rxPackets txPackets rxPacketsLossRate txPacketsLossRate portRxDrops portTxDrops"
)
_DISK: Final = (
    "iopsDevRead iopsDevWrite throughputDevRead throughputDevWrite latencyDevRead latencyDevWrite "
    "latencyDevDAvg latencyDevGAvg"
)

CLUSTER_CHANNELS: Final = (
    *_perf("cluster-domclient", "domclient", _DOM),
    Channel("vm.iops", "vm", "iops", "1/s", 1.0, True),
    Channel("vm.throughput", "vm", "throughput", "MB/s", 1e-6, True),
    Channel("vm.latencyRead_mean", "vm", "latencyRead_mean", "ms", 1e-3, True),
    Channel("vm.latencyWrite_mean", "vm", "latencyWrite_mean", "ms", 1e-3, True),
    Channel("vm.latency_max", "vm", "latency_max", "ms", 1e-3, True),
    Channel("vm.active", "vm", "active", "count", 1.0, True),
    *_events("vob"),
)
HOST_CHANNELS: Final = (
    *_perf("host-domclient", "domclient", _DOM + " clientCacheHitRate"),
    *_perf(
        "host-domcompmgr",
        "domcompmgr",
        "iopsRead iopsWrite latencyAvgRead latencyAvgWrite iopsRecWrite "
        "latencyAvgRecWrite iopsResyncRead tputResyncRead latAvgResyncRead congestion oio",
    ),
    *_perf("host-cpu", "cpu", "pcpuUtilPct coreUtilPct pcpuUsedPct"),
    *_perf("vsan-cpu", "vsancpu", "usedPct readyPct"),
    *_perf("vsan-host-net", "net", _NET + " tcpTxRexmitRate tcpRxErrRate"),
    Channel("esxtop.cpu_util", "esxtop", "cpu_util", "fraction", 0.01, False),
    Channel("esxtop.ready_max", "esxtop", "ready_max", "percent", 1.0, True),
    *_events("vob"),
)
NIC_CHANNELS: Final = (
    *_perf("vsan-pnic-net", "pnic", _NET + " pauseCount rxErr txErr rxCrcErr"),
    Channel("esxtop.rx_drop_pct", "esxtop", "rx_drop_pct", "percent", 1.0, True),
    Channel("esxtop.tx_drop_pct", "esxtop", "tx_drop_pct", "percent", 1.0, True),
    Channel("esxtop.rx_mbits", "esxtop", "rx_mbits", "MB/s", 1 / 8, True),
    *_events("link_down", "link_up", "vob"),
)
DISKGROUP_CHANNELS: Final = (
    *_perf(
        "disk-group",
        "dg",
        "iopsSched latencySched wbFreePct rcHitRate ssdCongestion logCongestion "
        "memCongestion slabCongestion iopsCongestion compCongestion oioWrite ssdBytesDrained",
    ),
    *_events("lsom_congestion", "lsom_congestion_clear", "vob"),
)
# cache-disk and capacity-disk share the device set; the 4 capacity-only ones are masked on cache disks.
DISK_CHANNELS: Final = (
    *_perf("disk", "disk", _DISK + " iopsRead iopsWrite latencyRead latencyWrite"),
    Channel("esxtop.davg", "esxtop", "davg", "ms", 1.0, True),
    Channel("esxtop.kavg", "esxtop", "kavg", "ms", 1.0, True),
    Channel("esxtop.gavg", "esxtop", "gavg", "ms", 1.0, True),
    Channel("esxtop.cmds", "esxtop", "cmds", "1/s", 1.0, True),
    *_events(
        "scsi_fail_medium",
        "scsi_fail_benign",
        "scsi_fail_host",
        "scsi_fail_other",
        "deteriorated",
        "improved",
        "perm_error",
        "vob",
    ),
)
KIND_CHANNEL_DEFS: Final[dict[str, tuple[Channel, ...]]] = {
    "cluster": CLUSTER_CHANNELS,
    "host": HOST_CHANNELS,
    "nic": NIC_CHANNELS,
    "diskgroup": DISKGROUP_CHANNELS,
    "disk": DISK_CHANNELS,
}
KIND_CHANNELS: Final[dict[str, tuple[str, ...]]] = {k: tuple(c.name for c in v) for k, v in KIND_CHANNEL_DEFS.items()}
LOG_SCALED: Final[dict[str, tuple[bool, ...]]] = {k: tuple(c.log for c in v) for k, v in KIND_CHANNEL_DEFS.items()}

# Static side features per kind (n_components, n_static); units in the names.
KIND_STATIC: Final[dict[str, tuple[str, ...]]] = {
    "cluster": (
        "n_hosts",
        "n_host_bundles",
        "n_nics",
        "n_diskgroups",
        "n_disks",
        "n_vms",
        "native_interval_s",
        "step_s",
        "window_h",
        "dedup_share",
        "all_flash_share",
        "vm_closed_loop",  # -1 the busy VMs pace their iops .. +1 they hold I/Os in flight (pipeline.littles)
        "vm_inflight_spread",  # how much the in-flight level of VMs holding 0.5-16 I/Os moves (log IQR)
        "vm_disk_oio",  # vscsiStats: I/Os outstanding per virtual disk when one is issued (median of disks)
    ),
    "host": ("has_bundle", "has_esxtop", "has_logs", "n_nics", "n_diskgroups", "n_disks", "n_vsan_vmknics"),
    # rated_gbps: what the NIC was built for, read off nicinfo's Description (10GbE, 25GbE, Gigabit)
    "nic": ("speed_gbps", "duplex_full", "mtu_k", "link_up", "in_perf", "traffic_share", "rated_gbps"),
    "diskgroup": ("dedup", "compression", "all_flash", "n_capacity"),
    "disk": ("is_cache", "is_ssd", "is_capacity", "dedup", "compression"),
}
