"""How each injected fault (and benign background) changes the environment over time.

The physical model only sees these arrays; it never looks at labels. Shapes: T samples, H hosts,
G disk groups, D devices (cluster.disk_groups order, cache device first in each group).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from data.simulate.plan import Plan
from data.simulate.topology import Cluster, Disk, Rng
from data.simulate.workload import smooth


@dataclass
class Conditions:
    devices: list[tuple[int, int, Disk]]  # (host, dg, disk) per device index
    dev_mult: np.ndarray  # (T, D) service-time multiplier (a failing device retries, times out)
    hot: np.ndarray  # (T, D) share of its group's capacity reads that serialise on this device
    destage_mult: np.ndarray  # (T, G) capacity-tier destage speed relative to nominal
    link_bps: np.ndarray  # (T, H) vSAN uplink payload capacity, bytes/s
    half_duplex: np.ndarray  # (T, H) bool
    loss: np.ndarray  # (T, H) share of packets lost on the vSAN uplink
    cpu_base: np.ndarray  # (T, H) CPU used by guests and other worlds, 0..1
    ready_extra: np.ndarray  # (T, H) extra vSAN world ready time from oversubscription, %
    resync_r: np.ndarray  # (T, G) resync read bytes/s sourced from each group
    resync_w: np.ndarray  # (T, G) recovery-write bytes/s landing on each group


def _after(n: int, onset: int, ramp: int = 2) -> np.ndarray:
    """(T,) 0 before onset, ramping to 1 over `ramp` samples."""
    return np.clip((np.arange(n) - onset + 1) / max(ramp, 1), 0.0, 1.0)


def build_conditions(cluster: Cluster, plan: Plan, rng: Rng) -> Conditions:
    n = plan.grid.n
    hosts = cluster.hosts
    n_h = len(hosts)
    dgs = cluster.disk_groups
    devices = [(h, g, d) for g, (h, grp) in enumerate(dgs) for d in (grp.cache, *grp.capacity)]
    n_d, n_g = len(devices), len(dgs)
    dev_index = {d.dev: i for i, (_, _, d) in enumerate(devices)}

    dev_mult = np.exp(rng.normal(0, 0.06, size=(n, n_d))) * rng.uniform(0.85, 1.15, size=n_d)
    hot = np.zeros((n, n_d))
    destage_mult = rng.uniform(0.9, 1.1, size=n_g) * np.ones((n, 1))
    link_bps = np.full((n, n_h), cluster.link_mbps / 8 * 1e6 * 0.94)
    half = np.zeros((n, n_h), dtype=bool)
    loss = np.zeros((n, n_h))
    hours = plan.grid.dt * np.arange(n) / 3600.0
    cpu_base = smooth(rng, n, n_h, max(3, n // 20), 0.12, 0.6)
    cpu_base *= 1 + 0.2 * np.sin(2 * np.pi * (hours / 24.0 + rng.random()))[:, None]
    ready_extra = np.zeros((n, n_h))
    resync_r = np.zeros((n, n_g))
    resync_w = np.zeros((n, n_g))

    if rng.random() < 0.25:  # benign: a small rebalance trickle, no visible effect on guests
        g = int(rng.integers(n_g))
        a = int(rng.integers(n))
        w = int(rng.integers(max(2, n // 10), max(3, n // 3)))
        rate = rng.uniform(2e6, 15e6)
        resync_r[a : a + w, g] += rate
        resync_w[a : a + w, (g + 1 + int(rng.integers(max(1, n_g - 1)))) % n_g] += rate

    for f in plan.faults:
        on = _after(n, f.onset)
        s = f.severity
        if f.fault == "disk.latency":
            i = dev_index[f.disk]
            # a failing device: commands take 4-65 ms (retries, media recovery), bursty per sample
            svc_ms = devices[i][2].hw.svc_ms
            target_ms = max(4 + 60 * s**1.5, svc_ms * (3 + 8 * s)) * np.exp(rng.normal(0, 0.45, size=n))
            slow = np.maximum(target_ms / svc_ms, 2.0)
            dev_mult[:, i] *= 1 + on * (slow - 1)
        elif f.fault == "disk.hotspot":
            hot[:, dev_index[f.disk]] = on * (0.55 + 0.4 * s)
        elif f.fault == "dg.write_buffer":
            # a slow capacity tier (large I/O sizes, slow spindles) destages a fraction of nominal
            destage_mult[:, f.dg] *= 0.45 - 0.3 * s
        elif f.fault == "net.link_degraded":
            link_bps[:, f.host] = np.where(on > 0, 1000 / 8 * 1e6 * 0.94, link_bps[:, f.host])
            if f.variant == "duplex":
                half[:, f.host] = on > 0
        elif f.fault == "net.packet_loss":
            level = 0.0015 + 0.03 * s**2
            loss[:, f.host] += on * np.minimum(level * np.exp(rng.normal(0, 0.6, size=n)), 0.05)  # RTO spikes
        elif f.fault == "host.cpu_contention":
            target = 0.93 + 0.065 * s + rng.normal(0, 0.01, size=n)
            cpu_base[:, f.host] = cpu_base[:, f.host] * (1 - on) + on * target
            ready_extra[:, f.host] = on * (3 + 17 * s) * np.exp(rng.normal(0, 0.2, size=n))
        elif f.fault == "cluster.resync":
            _resync(rng, n, f.onset, s, cluster, resync_r, resync_w)
    return Conditions(
        devices,
        dev_mult,
        hot,
        destage_mult,
        link_bps,
        half,
        loss,
        np.clip(cpu_base, 0, 1),
        ready_extra,
        resync_r,
        resync_w,
    )


def _resync(rng: Rng, n: int, onset: int, s: float, cluster: Cluster, out_r: np.ndarray, out_w: np.ndarray) -> None:
    """Rebuild after a host/disk event: reads from surviving replicas on several hosts, writes elsewhere."""
    dgs = cluster.disk_groups
    n_g = len(dgs)
    total = 60e6 + 200e6 * s if cluster.storage == "hybrid" else 150e6 + 500e6 * s
    total *= min(1.0, len(cluster.hosts) / 4)
    src = rng.choice(n_g, size=max(2, int(0.6 * n_g)), replace=False)
    dst = np.setdiff1d(np.arange(n_g), src) if n_g > 2 else np.arange(n_g)
    if len(dst) == 0:
        dst = src
    dur = int(rng.integers(max(3, n // 4), n + 1))
    shape = np.zeros(n)
    shape[onset : onset + dur] = 1.0
    shape *= np.clip((np.arange(n) - onset + 1) / 2.0, 0, 1)
    tail = np.clip((onset + dur - np.arange(n)) / max(2.0, dur / 5), 0, 1)  # tapers as it completes
    shape *= tail * np.exp(rng.normal(0, 0.08, size=n))
    ws = rng.dirichlet(np.ones(len(src)))
    wd = rng.dirichlet(np.ones(len(dst)))
    out_r[:, src] += total * shape[:, None] * ws
    out_w[:, dst] += total * shape[:, None] * wd
