"""Which faults a bundle carries: where, from when, how bad (the ground truth of labels.json)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from data.simulate.topology import Cluster, Rng
from vsandx import components as cid


@dataclass(frozen=True)
class Grid:
    start: int  # epoch seconds of the first sample
    dt: int  # sampling interval, s
    n: int  # samples

    @property
    def times(self) -> np.ndarray:
        return self.start + self.dt * np.arange(self.n, dtype=np.int64)


@dataclass(frozen=True)
class Injected:
    fault: str
    component: str  # canonical id
    onset: int  # sample index of the first affected sample
    severity: float  # 0..1
    # where in the topology (indices), and the fault's flavour
    host: int = -1
    nic: int = -1
    dg: int = -1  # index into cluster.disk_groups
    disk: str = ""  # naa of the faulty device
    variant: str = ""


@dataclass
class Plan:
    grid: Grid
    faults: list[Injected] = field(default_factory=list)


def _onset(rng: Rng, n: int, from_start_p: float) -> int:
    if rng.random() < from_start_p:
        return 0
    return int(rng.integers(int(0.12 * n), int(0.6 * n)))


def candidates(cluster: Cluster) -> list[str]:
    """Fault ids this hardware can show (a hotspot needs all-flash with dedup)."""
    out = [
        "net.packet_loss",
        "net.link_degraded",
        "disk.latency",
        "dg.write_buffer",
        "host.cpu_contention",
        "cluster.low_oio",
        "cluster.resync",
    ]
    if cluster.storage != "hybrid" and cluster.dedup:
        out.insert(3, "disk.hotspot")
    return out


def choose(cluster: Cluster, fault: str, onset: int, rng: Rng, taken: set[str]) -> Injected | None:
    """Put `fault` on a random component of the right kind that is not already faulty."""
    sev = float(np.round(rng.uniform(0.25, 1.0), 3))
    hosts = cluster.hosts
    h = int(rng.integers(len(hosts)))
    host = hosts[h]
    if fault in ("net.packet_loss", "net.link_degraded"):
        comp = cid.nic_id(host.name, host.nics[host.vsan_nic].name)
        variant = ""
        if fault == "net.link_degraded":
            variant = "speed" if rng.random() < 0.75 else "duplex"
        inj = Injected(fault, comp, onset, sev, host=h, nic=host.vsan_nic, variant=variant)
    elif fault in ("disk.latency", "disk.hotspot", "dg.write_buffer"):
        dgs = cluster.disk_groups
        g = int(rng.integers(len(dgs)))
        hh, group = dgs[g]
        hn = hosts[hh].name
        if fault == "dg.write_buffer":
            inj = Injected(fault, cid.diskgroup_id(hn, group.cache.dev), onset, sev, host=hh, dg=g)
        else:
            pool = group.capacity if fault == "disk.hotspot" else [group.cache, *group.capacity]
            if fault == "disk.latency" and rng.random() < 0.7:
                pool = group.capacity  # capacity devices far outnumber cache devices in the field
            d = pool[int(rng.integers(len(pool)))]
            variant = str(rng.choice(["medium", "hardware", "timeout"], p=[0.5, 0.2, 0.3]))
            inj = Injected(
                fault,
                cid.disk_id(hn, d.dev),
                onset,
                sev,
                host=hh,
                dg=g,
                disk=d.dev,
                variant=variant if fault == "disk.latency" else "",
            )
    elif fault == "host.cpu_contention":
        inj = Injected(fault, cid.host_id(host.name), onset, sev, host=h)
    else:
        inj = Injected(fault, cid.CLUSTER_ID, onset, sev)
    return None if inj.component in taken else inj


def make_plan(cluster: Cluster, grid: Grid, issue_rate: float, rng: Rng, force: Sequence[str] | None = None) -> Plan:
    """Draw the bundle's faults; `force` names them instead (tests, balanced datasets)."""
    plan = Plan(grid)
    draw = rng.random()
    n_faults = 2 if cluster.profile == "field" and rng.random() < 0.3 else 1
    if force is not None:
        bad = [f for f in force if f not in candidates(cluster)]
        if bad or len(set(force)) != len(force):
            raise ValueError(f"cannot inject {list(force)} on this cluster ({cluster.storage}, dedup={cluster.dedup})")
        pool, n_faults = list(force), len(force)
    elif draw >= issue_rate:
        return plan
    else:
        pool = candidates(cluster)
    from_start = 0.15 if cluster.profile == "lab" else 0.3
    taken: set[str] = set()
    kinds: set[str] = set()
    tries = 0
    while len(plan.faults) < n_faults and tries < 50:
        tries += 1
        fault = pool[len(plan.faults)] if force is not None else str(rng.choice(pool))
        # one cluster-level fault at most, and no fault twice: the cluster has a single label
        if fault in kinds or (fault.startswith("cluster.") and "cluster" in taken):
            continue
        onset = _onset(rng, grid.n, from_start)
        if fault == "cluster.low_oio":
            onset = max(onset, 1)  # the under-driven benchmark starts inside the window
        inj = choose(cluster, fault, onset, rng, taken)
        if inj is None:
            continue
        plan.faults.append(inj)
        taken.add(inj.component)
        kinds.add(fault)
    return plan


def labels(cluster: Cluster, plan: Plan, profile: str, seed: int) -> dict[str, object]:
    comps: dict[str, str] = {cid.CLUSTER_ID: "none"}
    for host in cluster.hosts:
        comps[cid.host_id(host.name)] = "none"
        for nic in host.nics:
            comps[cid.nic_id(host.name, nic.name)] = "none"
        for g in host.disk_groups:
            comps[cid.diskgroup_id(host.name, g.cache.dev)] = "none"
            for d in (g.cache, *g.capacity):
                comps[cid.disk_id(host.name, d.dev)] = "none"
    faults = []
    for f in plan.faults:
        comps[f.component] = f.fault
        t = int(plan.grid.times[f.onset])
        faults.append(
            {
                "component": f.component,
                "fault": f.fault,
                "onset": np.datetime_as_string(np.datetime64(t, "s")) + "Z",
                "severity": f.severity,
            }
        )
    return {"schema": "vsandx.labels/1", "profile": profile, "seed": seed, "components": comps, "faults": faults}
