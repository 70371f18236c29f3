"""Benign look-alikes (causes.BENIGN) drawn for a bundle: they move a fault's counter on a healthy
component, so that a model must learn the fault's signature rather than "this counter moved"."""

from __future__ import annotations

from data.simulate.plan import BenignEvent, Plan
from data.simulate.topology import Cluster, Rng

# probability per bundle, lab and field
_P = {
    "wb_burst": (0.08, 0.2),
    "crc_blip": (0.05, 0.15),
    "rebalance_trickle": (0.25, 0.25),
    "idle_flap": (0.1, 0.1),
}


def draw_benign(cluster: Cluster, plan: Plan, rng: Rng) -> None:
    """Append the bundle's benign events to `plan.benign` (never on a component at fault)."""
    n = plan.grid.n
    field = cluster.profile == "field"
    faulty_dg = {f.dg for f in plan.faults if f.fault in ("dg.write_buffer", "disk.hotspot", "disk.latency")}
    lossy = {f.host for f in plan.faults if f.fault.startswith("net.")}
    n_g, n_h = len(cluster.disk_groups), len(cluster.hosts)
    u = rng.random(len(_P))
    p = [v[1] if field else v[0] for v in _P.values()]
    if u[0] < p[0] and n >= 40 and not any(f.fault == "cluster.low_oio" for f in plan.faults):
        free = [g for g in range(n_g) if g not in faulty_dg]
        if free:
            g = free[int(rng.integers(len(free)))]
            w = int(rng.integers(max(3, n // 30), max(4, n // 12)))
            a = int(rng.integers(0, n - w))
            plan.benign.append(
                BenignEvent("wb_burst", a, w, float(rng.uniform(0.5, 0.7)), cluster.disk_groups[g][0], g)
            )
    if u[1] < p[1]:
        hosts = [h for h in range(n_h) if h not in lossy]
        if hosts:
            h = hosts[int(rng.integers(len(hosts)))]
            plan.benign.append(BenignEvent("crc_blip", 0, n, 0.0, h, nic=cluster.hosts[h].vsan_nic))
    if u[2] < p[2]:
        g = int(rng.integers(n_g))
        a = int(rng.integers(n))
        w = int(rng.integers(max(2, n // 10), max(3, n // 3)))
        plan.benign.append(BenignEvent("rebalance_trickle", a, w, float(rng.uniform(2e6, 15e6)), dg=g))
    if u[3] < p[3]:
        h = int(rng.integers(n_h))
        host = cluster.hosts[h]
        others = [i for i, x in enumerate(host.nics) if i != host.vsan_nic and x.link_up]
        if others:
            plan.benign.append(
                BenignEvent("idle_flap", int(rng.integers(n)), 1, 0.0, h, nic=others[int(rng.integers(len(others)))])
            )
