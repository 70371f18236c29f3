"""What a bundle shows: which faults, what kind of cluster, which workload, which window."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

import numpy as np

from data.cleanroom.topology import Cluster, Rng, add_vms

FAULT_IDS = (
    "net.packet_loss",
    "net.link_degraded",
    "disk.latency",
    "disk.hotspot",
    "dg.write_buffer",
    "host.cpu_contention",
    "cluster.low_oio",
    "cluster.resync",
)
CLUSTER_FAULTS = ("cluster.low_oio", "cluster.resync")
# Pairs one cluster cannot show together: a hot-spot read benchmark and a write flood need opposite workloads,
# and an under-driven cluster is by definition free of every other anomaly.
EXCLUSIVE = {("disk.hotspot", "dg.write_buffer"), ("dg.write_buffer", "disk.hotspot")}


@dataclass
class Timeline:
    start: dt.datetime
    interval: int
    n: int

    def at(self, i: float) -> dt.datetime:
        return self.start + dt.timedelta(seconds=float(i) * self.interval)

    def label(self, i: int) -> str:
        return self.at(i).strftime("%Y-%m-%dT%H:%M:%SZ")

    def hours(self) -> np.ndarray:
        t0 = self.start.hour + self.start.minute / 60
        return np.asarray((t0 + np.arange(self.n) * self.interval / 3600.0) % 24)


@dataclass
class FaultPlan:
    fid: str
    severity: float
    cause: str = ""
    onset: int = 0
    target: int = -1  # host, disk-group or disk index (into Cluster.disks()), by kind
    comp: str = ""


@dataclass
class Plan:
    faults: list[FaultPlan]
    bench: bool
    all_flash: bool
    dedup: bool
    tl: Timeline
    on: tuple[int, int] = (0, 0)  # benchmark run, sample indices
    extra: dict[str, float] = field(default_factory=dict)


def plan(rng: Rng) -> Plan:
    ids: list[str] = []
    if rng.random() >= 0.25:
        ids.append(str(rng.choice(FAULT_IDS)))
        if ids[0] != "cluster.low_oio" and rng.random() < 0.2:
            ok = [
                f
                for f in FAULT_IDS
                if f != "cluster.low_oio"
                and (ids[0], f) not in EXCLUSIVE
                and not (f in CLUSTER_FAULTS and ids[0] in CLUSTER_FAULTS)
            ]
            ids.append(str(rng.choice(ok)))
    faults = [FaultPlan(f, float(np.round(rng.uniform(0.05, 1.0), 3))) for f in ids]
    hot = "disk.hotspot" in ids
    all_flash = hot or bool(rng.random() < 0.7)
    dedup = hot or (all_flash and bool(rng.random() < 0.35))
    bench = hot or "cluster.low_oio" in ids or bool(rng.random() < 0.35)
    interval = int(rng.choice([300, 300, 300, 60, 60, 30, 20]))
    if bench:
        hours = float(rng.uniform(1.0, 4.0))
    else:
        hours = {300: float(rng.uniform(4, 30)), 60: float(rng.uniform(2, 6))}.get(interval, float(rng.uniform(1, 2)))
    n = int(np.clip(round(hours * 3600 / interval), 12, 360))
    day = dt.datetime(2024, 1, 1) + dt.timedelta(days=int(rng.integers(0, 900)))
    start = day + dt.timedelta(seconds=int(rng.integers(0, 86400 // interval)) * interval)
    p = Plan(faults, bench, all_flash, dedup, Timeline(start, interval, n))
    if bench:
        a = int(rng.integers(0, max(1, n // 6)))
        b = n - int(rng.integers(0, max(1, n // 8)))
        p.on = (a, max(b, a + int(0.7 * n)))
    for f in faults:
        if f.fid in ("cluster.low_oio", "disk.hotspot"):
            f.onset = p.on[0]
        elif rng.random() < 0.4:
            f.onset = 0
        else:
            f.onset = int(rng.uniform(0.15, 0.55) * n)
    return p


def workload(rng: Rng, cl: Cluster, p: Plan) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Returns (oio, demand, closed) per VM: outstanding I/O for closed loops, iops for open ones."""
    n = p.tl.n
    low = any(f.fid == "cluster.low_oio" for f in p.faults)
    if p.bench:
        # HCIBench/fio style: identical VMs, identical disks, one profile for the whole run.
        ndisks = int(rng.choice([1, 2, 4] if low else [1, 2, 4, 8]))
        per = int(rng.integers(1, 5))
        add_vms(rng, cl, (per, per), (ndisks, ndisks))
        # threads per VM disk: faults.md's under-driven cause is 1-2 per disk, so a healthy run holds 4+
        k = int(rng.choice([1, 2])) if low else int(rng.choice([4, 4, 8, 8, 16, 32]))
        p.extra["threads"] = k
        rf = float(rng.choice([0.0, 0.3, 0.5, 0.7, 0.7, 1.0]))
        blk = float(rng.choice([4096, 4096, 8192, 32768, 65536, 262144]))
        if any(f.fid == "disk.hotspot" for f in p.faults):
            rf, blk = float(rng.choice([0.7, 0.9, 1.0])), float(rng.choice([4096, 8192]))
            k = int(rng.choice([4, 8, 16]))
        for v in cl.vms:
            v.read_frac, v.block, v.oio = rf, blk, float(k)
        for g in cl.dgs:
            # Benchmark working sets are sized to fit the read cache of hybrid groups.
            g.rc_hit = float(rng.uniform(99.0, 99.8))
        run = np.zeros(n)
        run[p.on[0] : p.on[1]] = 1.0
        if p.on[0] < p.on[1] and rng.random() < 0.5:
            run[p.on[0]] = 0.6  # the first sample covers the ramp-up
        per_vm = np.array([v.ndisks * v.oio for v in cl.vms])[:, None]
        oio = per_vm * run[None, :] + 0.02 * (1 - run[None, :])
        oio = oio * (1 + 0.015 * rng.standard_normal(oio.shape))  # the counter's own jitter, fault or not
        return oio, np.zeros_like(oio), np.ones(len(cl.vms), dtype=bool)
    add_vms(rng, cl, (2, 6), (1, 4))
    hrs = p.tl.hours()
    # Business-day shape plus a nightly backup window of large writes.
    day = np.exp(-(((hrs - 13.0) / 4.0) ** 2))
    backup = ((hrs > 1.0) & (hrs < 3.5)).astype(float)
    demand = np.zeros((len(cl.vms), n))
    for i, v in enumerate(cl.vms):
        v.peak_iops = float(np.exp(rng.normal(np.log(350), 0.8)))
        ar = np.zeros(n)
        e = rng.standard_normal(n) * 0.08
        for j in range(1, n):
            ar[j] = 0.85 * ar[j - 1] + e[j]
        shape = 0.25 + 0.75 * day + (0.6 * backup if rng.random() < 0.3 else 0)
        demand[i] = v.peak_iops * np.clip(shape * np.exp(ar), 0.05, None)
    return np.zeros_like(demand), demand, np.zeros(len(cl.vms), dtype=bool)
