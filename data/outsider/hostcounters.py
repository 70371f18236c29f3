"""Host CPU and per-VM counters."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from data.outsider.effects import Effects
from data.outsider.engine import Engine
from data.outsider.layout import Rng

F = NDArray[np.float64]


def cpu(rng: Rng, eng: Engine, st: dict[str, F], ef: Effects, ents: dict[str, dict[str, F]], nz: object) -> F:
    assert callable(nz)
    T = eng.T
    util = np.zeros((eng.H, T))
    for h, host in enumerate(eng.sc.cluster.hosts):
        io = st["R"][h] + st["W"][h] + st["R_g"][eng.gh == h].sum(0) + st["W_g"][eng.gh == h].sum(0)
        vs = np.clip(io * rng.uniform(8, 20) / (host.cores * 1e4), 0.3, 30)
        base = rng.uniform(12, 50) * (0.7 + 0.3 * eng.load.oio[h] / max(float(eng.load.oio[h].mean()), 1e-9))
        busy = ef.busy[h] if ef.busy is not None else np.zeros(T)
        pc = np.clip(np.maximum(nz(base + vs, 0.08), busy * rng.uniform(0.9, 1.0, T)), 0, 100)
        pc = np.where(busy > 50, np.clip(busy * rng.uniform(0.88, 1.0, T), 0, 100), np.clip(pc, 0, 82))
        util[h] = pc
        rdy = ef.ready[h] if ef.ready is not None else np.zeros(T)
        ents[f"host-cpu:{host.uuid}"] = {
            "pcpuUtilPct": pc,
            "coreUtilPct": np.clip(pc * rng.uniform(1.15, 1.45), 0, 100),
            "pcpuUsedPct": np.clip(pc * rng.uniform(0.75, 1.05), 0, 100),
        }
        ents[f"vsan-cpu:{host.uuid}"] = {"usedPct": np.clip(vs, 0, 100), "readyPct": np.clip(rdy, 0, 100)}
    return util


def vms(rng: Rng, eng: Engine, ents: dict[str, dict[str, F]], R: F, W: F, Lr: F, Lw: F) -> None:
    ld = eng.load
    for h in range(eng.H):
        vms = [v for v in eng.sc.cluster.vms if v.host == h]
        if not vms:
            continue
        wts = np.array([v.ndisks for v in vms], dtype=float) * rng.uniform(0.6, 1.4, len(vms))
        wts /= wts.sum()
        for v, w in zip(vms, wts, strict=True):
            j = rng.uniform(0.9, 1.15)
            r, wr = R[h] * w, W[h] * w
            ents[f"virtual-machine:{v.uuid}"] = {
                "iopsRead": r,
                "iopsWrite": wr,
                "throughputRead": r * ld.bsr,
                "throughputWrite": wr * ld.bsw,
                "latencyRead": Lr[h] * j,
                "latencyWrite": Lw[h] * j,
            }
