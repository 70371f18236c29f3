"""Fault actors: the extra VMs whose I/O *is* a workload-borne fault or a benign burst.

A hot spot is a benchmark keeping 4 to 64 reads outstanding on one capacity SSD; a write-buffer fault
is a writer pushing more than its group destages, throttled by LSOM (physics.solve) once the buffer
reaches the fill that its severity sets; a benign burst is a short writer capped below congestion.
"""

from __future__ import annotations

import numpy as np

from data.simulate.plan import BenignEvent, Injected, Plan
from data.simulate.topology import Cluster, Rng

KIB = 1024
Driver = Injected | BenignEvent
ACTOR_KINDS = ("dg.write_buffer", "disk.hotspot", "wb_burst")
HOT_PATH_MS = 0.2  # a read's round trip outside the device: vSAN stack, network hops, CPU


def drivers(plan: Plan) -> list[tuple[str, Driver]]:
    """(kind, event) of every fault or benign event that runs its own VMs."""
    out: list[tuple[str, Driver]] = [(f.fault, f) for f in plan.faults if f.fault in ACTOR_KINDS]
    out += [(e.kind, e) for e in plan.benign if e.kind in ACTOR_KINDS]
    return out


def target_fill(severity: float) -> float:
    """The write-buffer fill LSOM settles a writer at: congestion ~20 (mild, never logs) to 255 (full)."""
    cong = 20.0 + 235.0 * severity**1.2
    return float(0.7 + 0.27 * (cong / 255.0) ** (1 / 1.6))


def drive(
    cluster: Cluster,
    n: int,
    dt: int,
    actors: dict[int, tuple[str, Driver]],
    oio: np.ndarray,
    rate: np.ndarray,
    size_w: np.ndarray,
    n_vmdk: np.ndarray,
    wb_fill: np.ndarray,
    wb_group: np.ndarray,
    rng: Rng,
) -> None:
    """Set the actors' demand in place (oio, rate, write size, and the fill LSOM throttles them at)."""
    groups: dict[int, list[int]] = {}
    for j, (_, ev) in actors.items():
        groups.setdefault(id(ev), []).append(j)
    dgs = cluster.disk_groups
    for idx in groups.values():
        kind, ev = actors[idx[0]]
        grp = dgs[ev.dg][1]
        # destage the other groups absorb for the writer's mirror copies
        others = sum(g.destage_mbs for h, g in dgs if h != dgs[ev.dg][0]) * 1e6
        if isinstance(ev, Injected):
            ramp = np.clip((np.arange(n) - ev.onset + 1) / 3.0, 0, 1)
        else:
            ramp = np.zeros(n)
            ramp[ev.start : ev.start + ev.length] = 1.0
        for j in idx:
            wb_group[j] = ev.dg
        if kind == "disk.hotspot":  # benchmark threads, 4 to 64 outstanding reads on the hot device
            assert isinstance(ev, Injected)
            q = 4.0 * 16.0**ev.severity
            # A closed loop's I/O spends part of its round trip outside the device (stack, network, CPU:
            # ~0.2 ms): with q threads a fast device would hold fewer than q (an NVMe device at 0.03 ms
            # held 0.8 of 4.7, 0.05 ms against its siblings' 0.03, no hot spot an engineer could call).
            # Once the hot range serialises, the device holds what the threads keep beyond that trip.
            (hot,) = [d for d in grp.capacity if d.dev == ev.disk]
            q += HOT_PATH_MS / (hot.hw.svc_ms + 4 * KIB / (hot.hw.bw_mbs * 1e3))
            for j in idx:
                oio[:, j] = q / 0.7 / len(idx) * ramp
                rate[:, j] = np.inf
            continue
        nominal = grp.destage_mbs * 1e6
        if kind == "wb_burst":
            assert isinstance(ev, BenignEvent)
            demand = min(1.6 * nominal, 0.35 * others)
            fill, size = ev.level, 256.0 * KIB
        else:
            assert isinstance(ev, Injected)
            slow = (0.5 - 0.3 * ev.severity) if ev.cause == "slow_capacity" else 1.0
            demand = min(nominal * slow * (1.4 + 1.6 * ev.severity), 0.55 * others)
            fill = target_fill(ev.severity)
            size = {
                "large_io": float(rng.choice([512, 1024])) * KIB,
                "heavy_writes": float(rng.choice([64, 128])) * KIB,
            }.get(ev.cause, 256 * KIB)
        for j in idx:
            size_w[j] = size
            oio[:, j] = 16.0 * n_vmdk[j] * ramp
            rate[:, j] = demand / len(idx) / size * ramp * np.exp(rng.normal(0, 0.05, size=n))
            wb_fill[j] = fill
