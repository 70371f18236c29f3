"""Which faults a bundle carries: where, from when, how bad (the ground truth of labels.json)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from data.simulate.causes import ALL, CauseFilter, draw
from data.simulate.topology import Cluster, Rng, to_jumbo
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
    cause: str = ""  # a cause name of causes.CAUSES for this fault
    param: float = 0.0  # the cause's own knob: link speed (Mb/s), MTU ceiling (MB/s), threads per disk, ...


@dataclass(frozen=True)
class BenignEvent:
    """A look-alike on a healthy component (causes.BENIGN): moves a fault's counter, never its signature."""

    kind: str
    start: int  # sample index
    length: int  # samples
    level: float
    host: int = -1
    dg: int = -1
    nic: int = -1


@dataclass
class Plan:
    grid: Grid
    faults: list[Injected] = field(default_factory=list)
    benign: list[BenignEvent] = field(default_factory=list)


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


def mtu_ceiling(severity: float) -> float:
    """MB/s an uplink at MTU 1500 carries of a jumbo-frame vSAN network's traffic: 400 at severity 0.3
    (fragmentation) down to 60 at 0.9 (most jumbo frames dropped and resent)."""
    return float(np.round(400.0 * (60.0 / 400.0) ** ((severity - 0.3) / 0.6), 1))


def _link_severity(link: int, speed: int, half: bool) -> float:
    """How far below the design the link runs: 1 GbE on 10 GbE ~0.42, 100 Mb on 25 GbE 1.0; half duplex +0.1."""
    return float(np.round(np.clip(np.log10(link / speed) / np.log10(250.0) + 0.1 * half, 0.0, 1.0), 3))


def choose(
    cluster: Cluster, fault: str, onset: int, rng: Rng, taken: set[str], flt: CauseFilter = ALL
) -> Injected | None:
    """Put `fault` on a random component of the right kind that is not already faulty, through one of
    its causes the filter allows (None when there is no such cause)."""
    if fault == "dg.write_buffer" and (len(cluster.hosts) - 1) * len(cluster.hosts[0].disk_groups) < 4:
        # few groups take the mirror copies: a writer heavy enough to congest one would congest them all,
        # so on a small cluster only a slow capacity tier congests a single group
        small = CauseFilter(flt.only, flt.exclude | {"dg.write_buffer:large_io", "dg.write_buffer:heavy_writes"})
        flt = small if small.causes(fault) else flt  # unless the filter asks for exactly those
    drawn = draw(fault, cluster.profile, rng, flt)
    if drawn is None:
        return None
    cause, sev = drawn
    name, param = cause.name, 0.0
    hosts = cluster.hosts
    h = int(rng.integers(len(hosts)))
    host = hosts[h]
    if fault in ("net.packet_loss", "net.link_degraded"):
        comp = cid.nic_id(host.name, host.nics[host.vsan_nic].name)
        if fault == "net.link_degraded" and name == "mtu_mismatch":
            if cluster.mtu != 9000:  # a mismatch needs jumbo frames elsewhere: this cluster moved to them
                to_jumbo(cluster)
            param = mtu_ceiling(sev)
        elif fault == "net.link_degraded":
            param = 100.0 if name == "speed_100m" else 1000.0
            if name == "half_duplex" and rng.random() < 0.35:
                param = 100.0
            sev = _link_severity(cluster.link_mbps, int(param), name == "half_duplex")
        elif name == "stack_drop":  # drop every N-th packet: N from the severity's loss
            param = float(int(np.round(1.0 / (5e-4 * 60.0**sev))))
        inj = Injected(fault, comp, onset, sev, host=h, nic=host.vsan_nic, cause=name, param=param)
    elif fault in ("disk.latency", "disk.hotspot", "dg.write_buffer"):
        dgs = cluster.disk_groups
        g = int(rng.integers(len(dgs)))
        hh, group = dgs[g]
        hn = hosts[hh].name
        if fault == "dg.write_buffer":
            inj = Injected(fault, cid.diskgroup_id(hn, group.cache.dev), onset, sev, host=hh, dg=g, cause=name)
        else:
            pool = group.capacity if fault == "disk.hotspot" else [group.cache, *group.capacity]
            if fault == "disk.latency" and rng.random() < 0.7:
                pool = group.capacity  # capacity devices far outnumber cache devices in the field
            d = pool[int(rng.integers(len(pool)))]
            inj = Injected(fault, cid.disk_id(hn, d.dev), onset, sev, host=hh, dg=g, disk=d.dev, cause=name)
    elif fault == "host.cpu_contention":
        inj = Injected(fault, cid.host_id(host.name), onset, sev, host=h, cause=name)
    else:
        if fault == "cluster.low_oio":
            param = 1.0 if name == "one_thread" else 2.0
        inj = Injected(fault, cid.CLUSTER_ID, onset, sev, cause=name, param=param)
    return None if inj.component in taken else inj


def make_plan(
    cluster: Cluster,
    grid: Grid,
    issue_rate: float,
    rng: Rng,
    force: Sequence[str] | None = None,
    flt: CauseFilter = ALL,
) -> Plan:
    """Draw the bundle's faults; `force` names them instead (tests, balanced datasets). Only causes
    `flt` allows are drawn; a fault with none left is not drawn (forcing it is an error)."""
    plan = Plan(grid)
    p_issue = rng.random()
    n_faults = 2 if cluster.profile == "field" and rng.random() < 0.3 else 1
    if force is not None:
        bad = [f for f in force if f not in candidates(cluster)]
        if bad or len(set(force)) != len(force):
            raise ValueError(f"cannot inject {list(force)} on this cluster ({cluster.storage}, dedup={cluster.dedup})")
        held = [f for f in force if not flt.causes(f)]
        if held:
            raise ValueError(f"the cause filter leaves no cause of {held}")
        pool, n_faults = list(force), len(force)
    elif p_issue >= issue_rate:
        return plan
    else:
        pool = [f for f in candidates(cluster) if flt.causes(f)]
        if not pool:
            return plan
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
        if fault == "cluster.low_oio" and force is None:
            # under-driven means healthy otherwise (faults.md): drawn first it is the bundle's only
            # fault, drawn second it is drawn again
            if plan.faults:
                continue
            n_faults = 1
        onset = _onset(rng, grid.n, from_start)
        if fault == "cluster.low_oio":
            onset = max(onset, 1)  # the under-driven benchmark starts inside the window
        inj = choose(cluster, fault, onset, rng, taken, flt)
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
                "cause": f.cause,
            }
        )
    benign = [{"kind": e.kind, "start": np.datetime_as_string(np.datetime64(int(plan.grid.times[e.start]), "s")) + "Z"}
              for e in plan.benign]  # fmt: skip
    return {
        "schema": "vsandx.labels/1",
        "profile": profile,
        "seed": seed,
        "components": comps,
        "faults": faults,
        "benign": benign,
    }
