"""What differs from site to site and determines no fault (field profile): how noisy the performance
service's figures are, which optional counters it collects, and how the hosts' logs look."""

from __future__ import annotations

from typing import TypedDict

import numpy as np

from data.simulate.netmetrics import Metrics
from data.simulate.topology import Cluster, Rng

# counters some sites do not get (driver without the statistic, older perf service): all samples None
OPTIONAL = (
    ("vsan-pnic-net", "pauseCount"),
    ("vsan-pnic-net", "rxCrcErr"),
    ("vsan-pnic-net", "txErr"),
    ("host-domclient", "clientCacheHitRate"),
    ("disk-group", "memCongestion"),
    ("disk-group", "compCongestion"),
    ("vsan-host-net", "tcpRxErrRate"),
)
_NOISY = ("cluster-domclient", "host-domclient", "host-domcompmgr", "disk-group", "cache-disk", "capacity-disk",
          "virtual-machine")  # fmt: skip
_PREFIX = ("latency", "lat", "iops", "throughput")


def site_metrics(metrics: Metrics, rng: Rng) -> None:
    """Measurement noise of this site (none to ~12 % per sample) on latency, iops and throughput, and
    the optional counters it does not collect."""
    n = len(next(iter(metrics["cluster-domclient"].values()))["iopsRead"])
    sigma = float(rng.choice([0.0, rng.uniform(0.01, 0.12)], p=[0.3, 0.7]))
    if sigma > 0:
        pool = np.exp(rng.normal(0, sigma, size=(32, n)))
        j = int(rng.integers(32))
        for etype in _NOISY:
            for series in metrics.get(etype, {}).values():
                for label, x in series.items():
                    if label.startswith(_PREFIX) and not label.endswith("Congestion"):
                        series[label] = x * pool[j % 32]
                        j += 7
    for etype, label in OPTIONAL:
        if rng.random() < 0.1:
            for series in metrics.get(etype, {}).values():
                series[label] = np.full(n, np.nan)


class LogStyle(TypedDict):
    opid_share: float
    nfs_volume: str
    nfs_server: str
    flap_style: str
    vswitch: str
    portgroup: str


def log_style(cluster: Cluster, rng: Rng) -> LogStyle:
    """HostLogContext fields that are the site's, not a fault's: opID tokens on operation lines, an NFS
    datastore (whose latency warnings name no vSAN device), how vobd reports an uplink flap."""
    field = cluster.profile == "field"
    nfs = field and rng.random() < 0.2
    vol = f"{rng.choice(['nfs', 'fi', 'backup', 'iso'])}-{rng.bytes(4).hex()}"
    dvs = rng.random() < 0.5
    return {
        "opid_share": float(rng.uniform(0.1, 0.6)) if rng.random() < (0.7 if field else 0.3) else 0.0,
        "nfs_volume": vol if nfs else "",
        "nfs_server": f"192.168.{int(rng.integers(1, 250))}.{int(rng.integers(2, 250))}:/export/{vol}",
        "flap_style": str(rng.choice(["classic", "uplink", "both"], p=[0.3, 0.35, 0.35])),
        "vswitch": "DSwitch-vSAN" if dvs else str(rng.choice(["vSwitch0", "vSwitch1"])),
        "portgroup": str(rng.choice(["vSAN", "vSAN Network", "vsan-pg"])),
    }
