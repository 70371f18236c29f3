"""What happens in one bundle: the window, the cluster, the workload and the faults (with their causes)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

import numpy as np

from data.outsider.layout import Cluster, Disk, Rng, device_name, make_cluster, place_vms, uuid

FAULTS = (
    "net.packet_loss",
    "net.link_degraded",
    "disk.latency",
    "disk.hotspot",
    "dg.write_buffer",
    "host.cpu_contention",
    "cluster.low_oio",
    "cluster.resync",
)
WEIGHTS = (0.14, 0.12, 0.14, 0.11, 0.14, 0.12, 0.10, 0.13)
CAUSES: dict[str, tuple[str, ...]] = {
    "net.packet_loss": ("bad_optic", "switch_overrun", "nic_firmware", "injected"),
    "net.link_degraded": ("autoneg_1g", "autoneg_1g", "speed_100m", "half_duplex", "mtu_mismatch"),
    "disk.latency": ("media_errors", "firmware_stalls", "controller_queue"),
    "disk.hotspot": ("zeroed_dedup", "narrow_range"),
    "dg.write_buffer": ("large_seq_writes", "slow_capacity", "write_benchmark"),
    "host.cpu_contention": ("oversubscribed", "runaway_world", "batch_burst"),
    "cluster.low_oio": ("hcibench_1_thread", "single_thread_app"),
    "cluster.resync": ("host_reboot", "disk_failure", "policy_change", "rebalance"),
}
# pairs that can happen together on different components
PAIRS = (
    ("net.packet_loss", "disk.latency"),
    ("host.cpu_contention", "dg.write_buffer"),
    ("cluster.resync", "disk.latency"),
    ("net.link_degraded", "host.cpu_contention"),
    ("disk.hotspot", "net.packet_loss"),
    ("dg.write_buffer", "net.packet_loss"),
    ("host.cpu_contention", "disk.latency"),
    ("cluster.resync", "host.cpu_contention"),
)


@dataclass
class Fault:
    fault: str
    cause: str
    sev: float  # 0 (edge an expert would still call) .. 1 (blatant)
    onset: int  # first affected sample
    end: int  # one past the last affected sample
    host: int = 0
    nic: int = -1
    dg: int = -1  # index into the host's disk groups
    disk: int = -1  # -1: the group's cache disk, else capacity disk index
    params: dict[str, float] = field(default_factory=dict)


@dataclass
class Scenario:
    start: dt.datetime
    interval: int
    T: int
    cluster: Cluster
    faults: list[Fault]
    workload: str  # bench | prod | batch | lowoio
    noise: float
    normal_resync: bool


def pick_window(rng: Rng) -> tuple[int, int]:
    interval = int(rng.choice([20, 30, 60, 300], p=[0.15, 0.1, 0.2, 0.55]))
    hours = {20: (1, 3), 30: (1, 4), 60: (1, 8), 300: (2, 48)}[interval]
    h = float(rng.uniform(*hours))
    if interval == 300 and rng.random() < 0.1:
        h = float(rng.uniform(1, 2))
    return interval, max(12, int(h * 3600 / interval))


def fit_window(rng: Rng, cl: Cluster, interval: int, T: int, budget: int = 200_000) -> tuple[int, int]:
    """Keep the dump to a size a field bundle has: fewer samples (or a coarser interval) on big clusters."""
    series = 10 + len(cl.vms) * 6
    for h in cl.hosts:
        series += 40 + len(h.nics) * 12 + len(h.dgs) * 12 + len(h.disks) * 11
    tmax = budget // series
    while tmax < T and interval < 300 and tmax * interval < 3600:
        interval = {20: 60, 30: 60, 60: 300}[interval]
        T = max(12, T * 0 + int(rng.uniform(1, 3) * 3600 / interval))
    return interval, max(12, min(T, tmax))


def choose_faults(rng: Rng) -> list[str]:
    r = rng.random()
    if r < 0.17:
        return []
    if r < 0.30:
        a, b = PAIRS[int(rng.integers(len(PAIRS)))]
        return [a, b]
    w = np.array(WEIGHTS) / sum(WEIGHTS)
    return [str(rng.choice(FAULTS, p=w))]


def build(rng: Rng, seed: int, index: int) -> Scenario:
    ids = choose_faults(rng)
    interval, T = pick_window(rng)
    day = dt.datetime(2024, 1, 8) + dt.timedelta(days=int(rng.integers(0, 900)))
    start = day + dt.timedelta(seconds=int(rng.integers(0, 86400 // interval)) * interval)
    causes = {f: str(rng.choice(CAUSES[f])) for f in ids}
    hotspot = "disk.hotspot" in ids
    wb_slow = causes.get("dg.write_buffer") == "slow_capacity"
    all_flash = hotspot or "cluster.low_oio" in ids or (not wb_slow and rng.random() < 0.72)
    dedup = hotspot or (all_flash and rng.random() < 0.3)
    link = causes.get("net.link_degraded", "")
    base_t = link in ("autoneg_1g", "speed_100m", "half_duplex") or rng.random() < 0.25
    nh = int(rng.choice([3, 4, 4, 4, 5, 6, 8]))
    if "cluster.resync" in ids:
        nh = max(nh, 4)
    cl = make_cluster(rng, nh, all_flash=all_flash, dedup=dedup, base_t=base_t, esx8=bool(rng.random() < 0.6))
    if "cluster.low_oio" in ids:
        workload = "lowoio"
    elif hotspot or causes.get("dg.write_buffer") == "write_benchmark":
        workload = "bench"
    else:
        workload = str(rng.choice(["bench", "prod", "prod", "batch"]))
    bench = workload in ("bench", "lowoio")
    nvm = int(rng.integers(1, 4)) * nh if bench else int(rng.integers(2, 8)) * nh
    if workload == "lowoio":
        nvm = int(rng.integers(1, 3)) * nh
    place_vms(rng, cl, nvm, int(rng.choice([1, 2, 4, 8] if workload == "bench" else [1, 2, 4])) if bench else 0, bench)
    interval, T = fit_window(rng, cl, interval, T)
    faults: list[Fault] = []
    used_hosts: set[int] = set()
    for fid in ids:
        faults.append(place_fault(rng, fid, causes[fid], cl, T, used_hosts))
    normal_resync = not any(f.fault == "cluster.resync" for f in faults) and rng.random() < 0.3
    return Scenario(start, interval, T, cl, faults, workload, float(rng.uniform(0.04, 0.16)), normal_resync)


def place_fault(rng: Rng, fid: str, cause: str, cl: Cluster, T: int, used: set[int]) -> Fault:
    free = [h for h in range(len(cl.hosts)) if h not in used] or list(range(len(cl.hosts)))
    host = int(rng.choice(free))
    used.add(host)
    sev = float(rng.uniform(0.0, 1.0) ** 0.8)
    early = rng.random() < 0.35  # already present when the window opens
    onset = 0 if early else int(rng.integers(int(T * 0.1), int(T * 0.6)))
    end = T
    if fid in ("cluster.low_oio",):
        onset = 0 if rng.random() < 0.7 else int(rng.integers(1, max(2, T // 6)))
    if fid == "host.cpu_contention" and cause == "batch_burst" and not early:
        end = min(T, onset + max(6, int((T - onset) * rng.uniform(0.5, 1.0))))
    f = Fault(fid, cause, sev, onset, end, host)
    hst = cl.hosts[host]
    if fid.startswith("net."):
        f.nic = hst.vsan_nic
    if fid.startswith("disk.") or fid == "dg.write_buffer":
        f.dg = int(rng.integers(len(hst.dgs)))
        ncap = len(hst.dgs[f.dg].caps)
        if fid == "disk.hotspot":
            f.disk = int(rng.integers(ncap))
            if ncap < 2:  # the other capacity disks of the group are the reference
                hst.dgs[f.dg].caps.append(_clone_cap(rng, hst.dgs[f.dg].caps[0]))
        elif fid == "disk.latency":
            f.disk = -1 if rng.random() < 0.3 else int(rng.integers(ncap))
    if fid in ("cluster.low_oio", "cluster.resync"):
        f.host = -1
    return f


def _clone_cap(rng: Rng, d: Disk) -> Disk:
    return Disk(uuid(rng, "52"), device_name(rng, d.kind), d.kind, False, d.suffix, d.size_gb)
