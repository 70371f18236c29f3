"""Guest workload over the window: outstanding I/Os per client host, read mix and I/O sizes.

Every workload is a closed loop (a fixed number of outstanding I/Os issues the next I/O when one
completes); `beta` makes production loads partly open: when latency rises they keep more I/Os in flight
instead of simply slowing down.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from data.outsider.layout import Rng
from data.outsider.scenario import Scenario

F = NDArray[np.float64]
KB = 1024.0


@dataclass
class Load:
    oio: F  # (H, T) outstanding guest I/Os issued from VMs on each host
    rf: F  # (T,) read share of I/Os
    bsr: F  # (T,) read size, bytes
    bsw: F  # (T,) write size, bytes
    beta: float
    vmdisks: int
    per_disk: float  # benchmark threads per VM disk (0 for production)


def smooth(rng: Rng, T: int, sigma: float, corr: float = 0.8) -> F:
    """Multiplicative AR(1) noise around 1."""
    e = rng.normal(0.0, sigma, T)
    out = np.empty(T)
    acc = 0.0
    for i in range(T):
        acc = corr * acc + float(e[i]) * np.sqrt(1 - corr * corr)
        out[i] = acc
    return np.exp(out)


def make_load(rng: Rng, sc: Scenario) -> Load:
    cl = sc.cluster
    H, T = len(cl.hosts), sc.T
    disks_h = np.zeros(H)
    for vm in cl.vms:
        disks_h[vm.host] += vm.ndisks
    vmdisks = int(disks_h.sum())
    rf = np.full(T, 0.7)
    bsr = np.full(T, 4 * KB)
    bsw = np.full(T, 4 * KB)
    per_disk = 0.0
    if sc.workload in ("bench", "lowoio"):
        level = np.zeros(T)
        if sc.workload == "lowoio":
            low = next(f for f in sc.faults if f.fault == "cluster.low_oio")
            per_disk = 1.0 if low.sev > 0.45 else 2.0
            level[low.onset :] = per_disk
            level[: low.onset] = 0.05
            rf[:] = float(rng.choice([0.0, 0.3, 0.5, 0.7, 1.0]))
            bsr[:] = bsw[:] = float(rng.choice([4, 4, 8, 16])) * KB
        else:
            per_disk = float(rng.choice([4, 4, 8, 8, 16]))
            nph = int(rng.integers(1, 4))
            edges = np.linspace(0, T, nph + 1).astype(int)
            for p in range(nph):
                a, b = int(edges[p]), int(edges[p + 1])
                gap = int(rng.integers(0, max(1, (b - a) // 8)))
                level[a + gap : b] = per_disk * float(rng.choice([1.0, 1.0, 2.0]))
                rf[a:b] = float(rng.choice([0.0, 0.3, 0.5, 0.7, 0.7, 1.0]))
                bsr[a:b] = float(rng.choice([4, 4, 8, 16, 32, 64, 256])) * KB
                bsw[a:b] = float(rng.choice([4, 8, 16, 64, 256])) * KB
                level[a : a + gap] = 0.1
        oio = disks_h[:, None] * level[None, :] * (1 + 0.01 * rng.normal(size=(H, T)))
        beta = 0.0
    else:
        hours = (np.arange(T) * sc.interval / 3600.0) + sc.start.hour + sc.start.minute / 60
        peak = float(rng.uniform(10, 16))
        amp = float(rng.uniform(0.2, 0.6))
        day = 1 + amp * np.cos(2 * np.pi * (hours - peak) / 24)
        base = float(rng.uniform(1.5, 6.0)) if sc.workload == "prod" else float(rng.uniform(0.8, 2.5))
        shape = day * smooth(rng, T, 0.25)
        nb = int(rng.integers(1, 4)) if sc.workload == "batch" else int(rng.integers(0, 3))
        for _ in range(nb):
            a = int(rng.integers(0, T))
            shape[a : a + int(rng.integers(2, max(3, T // 5)))] *= float(rng.uniform(2.0, 5.0))
        oio = disks_h[:, None] * base * shape[None, :] * smooth(rng, H * T, 0.15).reshape(H, T)
        rf = np.clip(0.68 + 0.12 * np.cos(2 * np.pi * (hours - peak) / 24) + rng.normal(0, 0.04, T), 0.3, 0.95)
        bsr = np.where(rng.random(T) < 0.02, 64 * KB, float(rng.choice([8, 16, 32])) * KB) * smooth(rng, T, 0.2)
        bsw = float(rng.choice([8, 16, 32])) * KB * smooth(rng, T, 0.2)
        night = (hours % 24 > 1) & (hours % 24 < 4)  # backup window: large sequential reads
        if rng.random() < 0.5:
            bsr = np.where(night, 256 * KB, bsr)
            rf = np.where(night, np.maximum(rf, 0.85), rf)
        beta = float(rng.uniform(0.2, 0.7))
    return Load(np.maximum(oio, 0.05), rf, bsr, bsw, beta, vmdisks, per_disk)


def shape_for_faults(rng: Rng, sc: Scenario, load: Load) -> None:
    """Workload traits a fault's cause implies (heavy writes for a write-buffer fault, read-heavy
    small-block benchmark for a hot spot)."""
    for f in sc.faults:
        a, b = f.onset, f.end
        if f.fault == "disk.hotspot":
            load.rf[:] = np.maximum(load.rf, float(rng.uniform(0.7, 1.0)))
            load.bsr[:] = float(rng.choice([4, 4, 8])) * KB
            load.oio[:] = np.maximum(load.oio, load.oio.mean() * 0.8)
        elif f.fault == "dg.write_buffer":
            if f.cause == "large_seq_writes":
                load.bsw[a:b] = float(rng.choice([256, 512, 1024])) * KB
                load.rf[a:b] = np.minimum(load.rf[a:b], float(rng.uniform(0.05, 0.4)))
                load.oio[:, a:b] *= float(rng.uniform(1.2, 2.0))
            elif f.cause == "write_benchmark":
                load.bsw[a:b] = float(rng.choice([64, 128, 256])) * KB
                load.rf[a:b] = float(rng.uniform(0.0, 0.3))
            else:
                load.oio[:, a:b] *= float(rng.uniform(1.3, 2.0))
                load.bsw[a:b] = np.maximum(load.bsw[a:b], 32 * KB)
                load.rf[a:b] = np.minimum(load.rf[a:b], 0.55)
        elif f.fault == "net.link_degraded":
            load.bsr[:] = np.maximum(load.bsr, 32 * KB)
            load.bsw[:] = np.maximum(load.bsw, 32 * KB)
