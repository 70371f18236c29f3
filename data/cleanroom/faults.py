"""Targets, healthy background, and the network / CPU / resync faults.

Storage-side faults live in `storage_faults`. Each function writes the fault's causes into `Effects` (and
the log events it leaves); the model then produces every counter from them.
"""

from __future__ import annotations

import numpy as np

from data.cleanroom.model import Effects, Event
from data.cleanroom.scenario import FaultPlan, Plan
from data.cleanroom.topology import Cluster, Rng


def component(cl: Cluster, f: FaultPlan) -> str:
    if f.fid.startswith("cluster."):
        return "cluster"
    if f.fid.startswith("net."):
        h = cl.hosts[f.target]
        nic = h.nic("vsan-active")
        assert nic is not None
        return f"nic:{h.name}/{nic.name}"
    if f.fid == "host.cpu_contention":
        return f"host:{cl.hosts[f.target].name}"
    if f.fid == "dg.write_buffer":
        g = cl.dgs[f.target]
        return f"diskgroup:{cl.hosts[g.host].name}/{g.cache.dev}"
    d = cl.disks()[f.target]
    return f"disk:{cl.hosts[d.host].name}/{d.dev}"


def choose_targets(rng: Rng, cl: Cluster, p: Plan) -> None:
    hosts = [int(h) for h in rng.permutation(len(cl.hosts))]
    for f in p.faults:
        if f.fid.startswith("cluster."):
            continue
        h = hosts.pop(0)
        if f.fid.startswith(("net.", "host.")):
            f.target = h
            continue
        g = int(rng.choice(cl.hosts[h].dgs))
        if f.fid == "dg.write_buffer":
            f.target = g
            continue
        base = sum(1 + len(x.capacity) for x in cl.dgs[:g])
        caps = len(cl.dgs[g].capacity)
        if f.fid == "disk.latency" and rng.random() < 0.3:
            f.target = base
        else:
            f.target = base + 1 + int(rng.integers(caps))


def background(rng: Rng, cl: Cluster, p: Plan, eff: Effects, load: np.ndarray) -> None:
    """Healthy CPU and link state; load in 0..1 is the cluster's activity over time."""
    for h in cl.hosts:
        nic = h.nic("vsan-active")
        assert nic is not None
        eff.link_bps[h.idx] = nic.speed * 1e6 / 8 * 0.94
        base = float(rng.uniform(12, 60))
        util = base * (0.55 + 0.45 * load) * (1 + 0.06 * rng.standard_normal(p.tl.n))
        eff.util[h.idx] = np.clip(util, 2, 82)
        eff.ready[h.idx] = np.clip(0.15 + 0.02 * eff.util[h.idx] + 0.25 * rng.standard_normal(p.tl.n), 0.05, 3.0)


def _after(p: Plan, f: FaultPlan) -> np.ndarray:
    m = np.zeros(p.tl.n)
    m[f.onset :] = 1.0
    return m


def cpu_contention(rng: Rng, cl: Cluster, p: Plan, eff: Effects, f: FaultPlan, load: np.ndarray) -> None:
    h, s, n = f.target, f.severity, p.tl.n
    f.cause = str(rng.choice(["oversubscribed", "runaway_world"]))
    on = _after(p, f)
    peak_ready = 6.0 * (40.0 / 6.0) ** s
    ready = peak_ready * (0.75 + 0.25 * load) * np.exp(0.15 * rng.standard_normal(n))
    util = np.clip(91.0 + 8.5 * min(1.0, 0.4 + s) + 1.2 * rng.standard_normal(n), 86, 100)
    eff.ready[h] = np.where(on > 0, np.clip(ready, 5.2, 60), eff.ready[h])
    eff.util[h] = np.where(on > 0, util, eff.util[h])


def packet_loss(rng: Rng, cl: Cluster, p: Plan, eff: Effects, f: FaultPlan, load: np.ndarray) -> None:
    h, s, n = f.target, f.severity, p.tl.n
    f.cause = str(rng.choice(["cable_optic", "switch_overrun", "nic_firmware", "stack_injection"]))
    pm = 0.5 * 100.0**s  # per-mille: 0.5 .. 50
    on = _after(p, f)
    if f.cause == "stack_injection":
        every = max(20, round(1000.0 / pm))
        pm = 1000.0 / every
        f.cause = f"stack_injection_every_{every}"
        rate = np.full(n, pm)
    elif f.cause == "switch_overrun":
        rate = pm * (0.3 + 1.4 * load) * np.exp(0.3 * rng.standard_normal(n))
    elif f.cause == "nic_firmware":
        bursts = rng.random(n) < 0.6
        bursts[f.onset] = True
        rate = pm * np.where(bursts, 1.4, 0.35) * np.exp(0.25 * rng.standard_normal(n))
    else:
        rate = pm * np.exp(0.2 * rng.standard_normal(n))
    eff.loss[h] = np.clip(rate * on, 0, 600)
    # Each lost segment costs a fast retransmit (~0.5 ms) or, for a tail loss, a retransmit timeout.
    rto = float(rng.uniform(20e3, 200e3))
    pkts = 6.0 if cl.mtu == 9000 else 24.0
    spikes = rng.gamma(0.6, 1 / 0.6, n)
    eff.loss_pen[h] = pkts * eff.loss[h] / 1000.0 * (0.75 * 500.0 + 0.25 * rto) * spikes
    if f.cause == "cable_optic" and rng.random() < 0.4 and f.onset > 0:
        nic = cl.hosts[h].nic("vsan-active")
        assert nic is not None
        t = f.onset * p.tl.interval - float(rng.uniform(5, 60))
        down = float(rng.uniform(2, 9))
        _flap(eff, h, nic.name, nic.pci, t, down, nic.speed, nic.duplex)


def link_degraded(rng: Rng, cl: Cluster, p: Plan, eff: Effects, f: FaultPlan) -> None:
    h, s = f.target, f.severity
    nic = cl.hosts[h].nic("vsan-active")
    assert nic is not None
    f.cause = "100Mb" if s > 0.75 else str(rng.choice(["1GbE", "1GbE", "half_duplex"]))
    speed, duplex = {"100Mb": (100, "Full"), "1GbE": (1000, "Full"), "half_duplex": (1000, "Half")}[f.cause]
    if f.cause == "half_duplex" and rng.random() < 0.3:
        speed = 100
    rate = speed * 1e6 / 8 * (0.94 if duplex == "Full" else 0.8)
    nic.speed, nic.duplex = speed, duplex
    eff.link_bps[h, f.onset :] = rate
    eff.half[h] = duplex == "Half"
    if f.onset > 0 or rng.random() < 0.3:
        # The renegotiation that left the link slow: a flap, then up at the lower rate.
        t = (
            f.onset * p.tl.interval - float(rng.uniform(5, 0.8 * p.tl.interval))
            if f.onset
            else -float(rng.uniform(600, 7200))
        )
        _flap(eff, h, nic.name, nic.pci, t, float(rng.uniform(2, 12)), speed, duplex)


def _flap(eff: Effects, h: int, nic: str, pci: str, t: float, down: float, speed: int, duplex: str) -> None:
    eff.events.append(Event(t, h, "link_down", {"nic": nic, "pci": pci}))
    eff.events.append(Event(t + down, h, "link_up", {"nic": nic, "pci": pci, "speed": speed, "duplex": duplex}))


def resync(rng: Rng, cl: Cluster, p: Plan, eff: Effects, f: FaultPlan) -> None:
    s, n, iv = f.severity, p.tl.n, p.tl.interval
    ng = len(cl.dgs)
    f.cause = str(rng.choice(["host_reboot", "disk_failure", "policy_change", "rebalance"]))
    total = 30e6 * 40.0**s
    if f.cause == "rebalance":
        total = min(total, 250e6)
    ev = eff.events
    x = int(rng.integers(len(cl.hosts)))
    others = [g for g in range(ng) if cl.dgs[g].host != x]
    start = f.onset
    if f.cause == "host_reboot":
        gone = max(1, int(np.ceil(float(rng.uniform(420, 1200)) / iv)))
        if f.onset == 0:
            te = -float(rng.uniform(900, 5400))
        else:
            start = min(n - 3, f.onset + gone)
            eff.down[x, f.onset : start] = True
            te = f.onset * iv - float(rng.uniform(0, 0.5 * iv))
        ev.append(Event(te, x, "host_down", {}))
        ev.append(Event(te + gone * iv - float(rng.uniform(30, 120)), x, "host_boot", {}))
        f.onset = start
        dst, src = list(cl.hosts[x].dgs), others
        total = min(total, 0.8 * float(eff.link_bps[x, 0]))  # everything flows into one host's uplink
    elif f.cause == "disk_failure":
        g = int(rng.choice(cl.hosts[x].dgs))
        base = sum(1 + len(d.capacity) for d in cl.dgs[:g])
        k = int(rng.integers(len(cl.dgs[g].capacity)))
        te = f.onset * iv - float(rng.uniform(10, 0.9 * iv)) if f.onset > 0 else -float(rng.uniform(600, 5400))
        eff.dead[base + 1 + k, f.onset :] = True
        ev.append(Event(te, x, "perm_error", {"disk": base + 1 + k}))
        src = [int(v) for v in rng.choice(others, size=min(len(others), int(rng.integers(2, 5))), replace=False)]
        dst = [int(v) for v in rng.choice(others, size=min(len(others), int(rng.integers(2, 5))), replace=False)]
    elif f.cause == "policy_change":
        src = dst = list(range(ng))
    else:
        src = [int(v) for v in rng.choice(ng, size=min(ng, 3), replace=False)]
        rest = [g for g in range(ng) if g not in src] or list(range(ng))
        dst = [int(v) for v in rng.choice(rest, size=min(len(rest), 3), replace=False)]
    # Several hosts must take part: spread over groups on distinct hosts where the cluster allows it.
    act = np.zeros(n)
    end = n
    if rng.random() < 0.35 and n - start > 8:
        end = start + int((n - start) * rng.uniform(0.5, 0.9))
    act[start:end] = np.exp(0.15 * rng.standard_normal(end - start))
    if start + 1 < end and rng.random() < 0.5:
        act[start] *= 0.5
    ws = rng.uniform(0.5, 1.5, len(dst))
    rs = rng.uniform(0.5, 1.5, len(src))
    for g, w in zip(dst, ws / ws.sum(), strict=True):
        eff.rs_write[g] += total * w * act
    for g, w in zip(src, rs / rs.sum(), strict=True):
        eff.rs_read[g] += total * w * act
    touched = np.zeros(ng)
    touched[dst] = 1
    touched[src] = 1
    eff.rs_pen *= 1 + (0.06 + 0.9 * s) * touched[:, None] * (act[None, :] > 0)
    f.severity = float(np.round(s, 3))
