"""Storage-side faults: a degraded device, a hot flash channel, a write buffer that cannot drain."""

from __future__ import annotations

import numpy as np

from data.cleanroom.model import Effects, Event
from data.cleanroom.scenario import FaultPlan, Plan
from data.cleanroom.topology import Cluster, Rng, Vm, vuuid

# (opcode list, host status, device status, sense key/asc/ascq) per cause, as vmkernel prints them.
SCSI = {
    "media_errors": ("0x2", "0x0", "0x3 0x11 0x0"),
    "firmware_timeouts": ("0x0", "0x5", "0x0 0x0 0x0"),
    "controller_queue": ("0x0", "0x2", "0x0 0x0 0x0"),
    "media_recovered": ("0x2", "0x0", "0x1 0x18 0x0"),
}


def disk_latency(rng: Rng, cl: Cluster, p: Plan, eff: Effects, f: FaultPlan) -> None:
    n, s, iv = p.tl.n, f.severity, p.tl.interval
    d = cl.disks()[f.target]
    _route(rng, cl, d.dg, 0.25)
    f.cause = str(rng.choice(list(SCSI)))
    factor = (4.0 * 60.0**s) if d.is_ssd else (2.5 * 25.0**s)
    on = np.zeros(n, dtype=bool)
    if rng.random() < 0.55:
        on[f.onset :] = True
    else:
        # Intermittent: stretches of bad behaviour covering at least half of what follows the onset.
        state = True
        for i in range(f.onset, n):
            on[i] = state
            state = rng.random() < (0.8 if state else 0.45)
        on[f.onset] = True
    level = factor * np.exp(0.3 * rng.standard_normal(n))
    eff.dev_factor[f.target] = np.where(on, np.maximum(level, 2.5), 1.0)
    base_us = d.read_us
    per_hour = 2.0 + 60.0 * s
    dstat, hstat, sense = SCSI[f.cause]
    budget = 300  # vmkernel throttles repeats; a support bundle keeps a few hundred such lines
    for j in np.flatnonzero(on):
        i = int(j)
        k = min(int(rng.poisson(per_hour * iv / 3600.0)), budget)
        budget -= k
        if i == f.onset:
            k = max(k, 2)
        for t in np.sort(rng.uniform(0, iv, k)):
            op = str(rng.choice(["0x28", "0x2a", "0x28", "0x88", "0x8a"]))
            info: dict[str, object] = {"dev": d.dev, "op": op, "h": hstat, "d": dstat, "sense": sense, "path": d.path}
            eff.events.append(Event(i * iv + float(t), d.host, "scsi", info))
    if factor >= 6.0:
        prev = False
        for i in range(n):
            if on[i] and not prev:
                to = int(base_us * eff.dev_factor[f.target, i] * rng.uniform(1.5, 4.0))
                frm = int(base_us * rng.uniform(0.8, 1.6))
                t = i * iv + float(rng.uniform(0, iv * 0.5))
                eff.events.append(Event(t, d.host, "deteriorated", {"dev": d.dev, "from": frm, "to": to}))
            elif prev and not on[i]:
                t = i * iv + float(rng.uniform(0, iv * 0.5))
                back = {"dev": d.dev, "from": int(base_us * factor), "to": int(base_us * 1.3)}
                eff.events.append(Event(t, d.host, "improved", back))
            prev = bool(on[i])


def _route(rng: Rng, cl: Cluster, g: int, share: float) -> list[Vm]:
    """Puts one replica of about `share` of the VMs (at least two) on group g."""
    vms = list(cl.vms)
    want = max(2, round(share * len(vms)))
    on_g = [v for v in vms if g in v.replicas]
    for v in [v for v in vms if g not in v.replicas]:
        if len(on_g) >= want:
            break
        other = v.replicas[1] if cl.dgs[v.replicas[1]].host != cl.dgs[g].host else v.replicas[0]
        if cl.dgs[other].host == cl.dgs[g].host:
            other = next((x.idx for x in cl.dgs if x.host != cl.dgs[g].host), g)
        v.replicas = (g, other)
        on_g.append(v)
    return on_g


def hotspot(rng: Rng, cl: Cluster, p: Plan, eff: Effects, f: FaultPlan, oio: np.ndarray) -> None:
    d = cl.disks()[f.target]
    q = round(3.0 * (64.0 / 3.0) ** f.severity)
    f.cause = str(rng.choice(["dedup_zero_blocks", "duplicate_blocks", "narrow_lba_benchmark"]))
    users = _route(rng, cl, d.dg, 0.25)
    idx = [cl.vms.index(v) for v in users]
    a, b = p.on
    # Most of the users' outstanding reads queue on the hot channel; the rest keep the other devices busy.
    want = max(q * float(rng.uniform(1.3, 1.8)), 8.0 * len(idx))
    have = float(oio[idx, a:b].mean(axis=1).sum()) if b > a else 0.0
    oio[idx] *= want / max(have, 1e-3)
    run = np.zeros(p.tl.n)
    run[p.on[0] : p.on[1]] = 1.0
    eff.hot_q[f.target] = q * run * np.clip(1 + 0.08 * rng.standard_normal(p.tl.n), 0.7, 1.3)
    eff.hot_us[f.target] = float(rng.uniform(90, 170))
    f.onset = p.on[0]


def write_buffer(rng: Rng, cl: Cluster, p: Plan, eff: Effects, f: FaultPlan, demand: np.ndarray) -> np.ndarray:
    """Adds the writers (open loop) and returns the widened demand matrix."""
    n, s = p.tl.n, f.severity
    g = cl.dgs[f.target]
    f.cause = str(rng.choice(["slow_capacity_tier", "large_sequential_writes", "ftt0_write_flood"]))
    limit = g.destage_bps
    if f.cause == "slow_capacity_tier":
        cap = limit * float(rng.uniform(0.2, 0.45))
    elif f.cause == "large_sequential_writes":
        cap = limit * float(rng.uniform(0.3, 0.5))
    else:
        cap = limit
    eff.drain_cap[f.target] = cap
    other = [x.idx for x in cl.dgs if x.host != g.host]
    nw = int(rng.integers(1, 4))
    block = float(rng.choice([262144.0, 524288.0, 1048576.0])) if f.cause != "slow_capacity_tier" else 65536.0
    rows = []
    on = np.zeros(n)
    on[f.onset :] = 1.0
    ramp = max(2, int((n - f.onset) * rng.uniform(0.15, 0.5)))
    mult = np.where(np.arange(n) < f.onset + ramp, 1.35, 1.04)
    if f.cause == "ftt0_write_flood":
        mult = np.where(np.arange(n) < f.onset + ramp, 2.0, 1.04)
    for j in range(nw):
        h = int(rng.integers(len(cl.hosts)))
        rep = (g.idx, g.idx) if f.cause == "ftt0_write_flood" else (g.idx, int(rng.choice(other)))
        vm = Vm(vuuid(rng, "50"), f"writer-{j:02d}", h, int(rng.integers(1, 4)), 0.03, block, rep, spread=0.0)
        cl.vms.append(vm)
        byt = cap * mult * on / nw * np.exp(0.05 * rng.standard_normal(n))
        rows.append(byt / block)
    # Fill follows the inflow: it climbs after the onset and settles where back-pressure holds it.
    c_peak = float(np.clip(25 + 230 * s + rng.normal(0, 8), 15, 255))
    if c_peak < 200:
        c_peak = min(c_peak, 185.0)
    f_peak = 0.55 + 0.4 * (c_peak / 255.0) ** (1 / 1.6) + (0.035 if c_peak >= 255 else 0.0)
    traj = np.full(n, np.nan)
    k = np.arange(n - f.onset)
    traj[f.onset :] = 0.4 + (f_peak - 0.4) * np.clip(k / ramp, 0, 1)
    noise = 0.012 * rng.standard_normal(n)
    if c_peak < 200:
        noise = np.minimum(noise, 0)
    eff.fill[f.target] = np.clip(traj + noise, 0, 0.995)
    return np.vstack([demand, np.array(rows)])
