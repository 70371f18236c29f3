"""Queueing model of one cluster over time: VM I/O, replica placement, devices, uplinks, CPU.

Every counter in the dump derives from one solved state, so a fault changes all of its consequences together.
Closed-loop workloads (benchmarks) keep outstanding I/O fixed and let iops follow latency (Little's law);
open-loop ones (production) keep iops fixed and let outstanding I/O grow.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from data.cleanroom.topology import Cluster

F = np.ndarray
DESTAGE_IO = 131072.0
RESYNC_IO = 262144.0


@dataclass
class Event:
    """Something a log shows: t in seconds after the first sample (negative: before the window)."""

    t: float
    host: int
    kind: str
    info: dict[str, object] = field(default_factory=dict)


@dataclass
class Effects:
    """What faults and background activity impose on the model; neutral values mean healthy."""

    nh: int
    ng: int
    nd: int
    t: int
    dev_factor: F = field(init=False)  # device latency multiplier (disk, t)
    hot_q: F = field(init=False)  # outstanding reads on a hot device (disk, t)
    hot_us: F = field(init=False)  # per-read service time on the hot flash channel (disk,)
    fill: F = field(init=False)  # write-buffer fill override, NaN = derived from load (dg, t)
    drain_cap: F = field(init=False)  # destage ceiling override in B/s, NaN = hardware limit (dg,)
    ready: F = field(init=False)  # vSAN worlds' CPU ready % (host, t)
    util: F = field(init=False)  # pCPU utilisation % (host, t)
    loss: F = field(init=False)  # per-mille loss on the vSAN uplink (host, t)
    loss_pen: F = field(init=False)  # mean extra µs per crossing from retransmits (host, t)
    link_bps: F = field(init=False)  # usable uplink rate, bytes/s (host, t)
    half: F = field(init=False)  # half duplex (host,)
    rs_read: F = field(init=False)  # resync bytes/s read on a disk group (dg, t)
    rs_write: F = field(init=False)  # recovery bytes/s written to a disk group (dg, t)
    rs_pen: F = field(init=False)  # guest latency multiplier from resync contention (dg, t)
    down: F = field(init=False)  # host not reporting (host, t)
    dead: F = field(init=False)  # device failed (disk, t)
    events: list[Event] = field(default_factory=list)

    def __post_init__(self) -> None:
        nh, ng, nd, t = self.nh, self.ng, self.nd, self.t
        self.dev_factor = np.ones((nd, t))
        self.hot_q = np.zeros((nd, t))
        self.hot_us = np.full(nd, 120.0)
        self.fill = np.full((ng, t), np.nan)
        self.drain_cap = np.full(ng, np.nan)
        self.ready = np.zeros((nh, t))
        self.util = np.zeros((nh, t))
        self.loss = np.zeros((nh, t))
        self.loss_pen = np.zeros((nh, t))
        self.link_bps = np.zeros((nh, t))
        self.half = np.zeros(nh, dtype=bool)
        self.rs_read = np.zeros((ng, t))
        self.rs_write = np.zeros((ng, t))
        self.rs_pen = np.ones((ng, t))
        self.down = np.zeros((nh, t), dtype=bool)
        self.dead = np.zeros((nd, t), dtype=bool)


@dataclass
class State:
    r: F  # VM read iops (vm, t)
    w: F
    lat_r: F  # VM latency seen at the DOM client, µs
    lat_w: F
    oio: F  # outstanding I/O per VM
    dg_r: F  # guest read iops per disk group
    dg_w: F
    dg_rlat: F
    dg_wlat: F
    drained: F  # destaged bytes/s per group
    fill: F
    cong: F
    dev_r: F  # device read iops (disk, t)
    dev_w: F
    dev_rb: F  # device read bytes/s
    dev_wb: F
    dev_rlat: F
    dev_wlat: F
    tx: F  # vSAN bytes/s per host
    rx: F
    cpu_pen: F


def _congestion(fill: F) -> F:
    return np.asarray(255.0 * np.clip((fill - 0.55) / 0.4, 0.0, 1.0) ** 1.6)


def solve(cl: Cluster, eff: Effects, oio: F, demand: F, closed: F, rng: np.random.Generator) -> State:
    """oio/demand: (vm, t) outstanding I/O (closed loop) or iops (open loop); closed: (vm,) bool."""
    vms, dgs, disks = cl.vms, cl.dgs, cl.disks()
    nv, ng, nd, nh, t = len(vms), len(dgs), len(disks), len(cl.hosts), oio.shape[1]
    rf = np.array([v.read_frac for v in vms])[:, None]
    blk = np.array([v.block for v in vms])[:, None]
    client = np.array([v.host for v in vms])
    rep = np.array([v.replicas for v in vms])
    dg_host = np.array([g.host for g in dgs])
    spread = np.array([v.spread for v in vms])
    m_r = np.tile(spread / ng, (ng, 1))
    m_w = np.tile(2 * spread / ng, (ng, 1))
    for i, (a, b) in enumerate(rep):
        m_r[a, i] += 0.5 * (1 - spread[i])
        m_r[b, i] += 0.5 * (1 - spread[i])
        m_w[a, i] += 1 - spread[i]
        if b != a:
            m_w[b, i] += 1 - spread[i]
    hybrid = np.array([not g.all_flash for g in dgs])
    hit = np.where(hybrid, np.array([g.rc_hit for g in dgs]) / 100.0, 0.0)[:, None]
    limit = np.where(np.isnan(eff.drain_cap), [g.destage_bps for g in dgs], eff.drain_cap)[:, None]
    base_fill = rng.uniform(0.04, 0.25, (ng, 1))
    cpu_pen = eff.ready * 45.0  # µs of run-queue wait per vSAN world hop and % ready
    rtt = 35.0 + 80.0 * float(rng.random())
    client_us = float(rng.uniform(110, 220))
    lsom_us = float(rng.uniform(15, 40))
    lat_r = np.full((nv, t), 800.0)
    lat_w = np.full((nv, t), 1200.0)
    iops = np.where(closed[:, None], oio * 1e6 / 1000.0, demand)
    st: State | None = None
    for _ in range(7):
        r, w = iops * rf, iops * (1 - rf)
        dg_r, dg_w = m_r @ r, m_w @ w
        dg_wb = m_w @ (w * blk) + eff.rs_write
        inc = dg_wb
        # Destage keeps up with the smoothed inflow until it reaches the capacity tier's limit.
        kern = np.ones(5) / 5
        smooth = np.array([np.convolve(np.pad(x, 2, mode="edge"), kern, "valid") for x in inc])
        drained = np.minimum(smooth, limit)
        fill = np.where(np.isnan(eff.fill), base_fill + 0.3 * np.clip(smooth / limit, 0, 1), eff.fill)
        cong = _congestion(fill)
        dev_r, dev_w = np.zeros((nd, t)), np.zeros((nd, t))
        dev_rb, dev_wb = np.zeros((nd, t)), np.zeros((nd, t))
        dev_rlat, dev_wlat = np.zeros((nd, t)), np.zeros((nd, t))
        dg_rlat, dg_wlat = np.zeros((ng, t)), np.zeros((ng, t))
        rbytes = m_r @ (r * blk)
        di = 0
        for gi, g in enumerate(dgs):
            cache = di
            ncap = len(g.capacity)
            cap_idx = np.arange(di + 1, di + 1 + ncap)
            di += 1 + ncap
            alive = ~eff.dead[cap_idx]
            share = alive / np.maximum(alive.sum(axis=0), 1)
            dev_w[cache] = dg_w[gi] + eff.rs_write[gi] / RESYNC_IO
            dev_wb[cache] = dg_wb[gi]
            dev_r[cache] = drained[gi] / DESTAGE_IO + hit[gi] * dg_r[gi]
            dev_rb[cache] = drained[gi] + hit[gi] * rbytes[gi]
            cap_reads = (1 - hit[gi]) * dg_r[gi] + eff.rs_read[gi] / RESYNC_IO
            cap_rbytes = (1 - hit[gi]) * rbytes[gi] + eff.rs_read[gi]
            hot = eff.hot_q[cap_idx] > 0
            phi = np.zeros((ncap, t))
            if hot.any():
                k = int(np.argmax(hot.any(axis=1)))
                phi[k] = np.clip(1e6 / eff.hot_us[cap_idx[k]] / np.maximum(cap_reads, 1.0), 0, 0.85) * hot[k]
                rest = (1 - phi[k]) * share / np.maximum(1 - share[k], 1e-9)
                rest[k] = phi[k]
                share = np.where(hot[k], rest, share)
            dev_r[cap_idx] = share * cap_reads
            dev_rb[cap_idx] = share * cap_rbytes
            dev_w[cap_idx] = (alive / np.maximum(alive.sum(axis=0), 1)) * drained[gi] / DESTAGE_IO
            dev_wb[cap_idx] = dev_w[cap_idx] * DESTAGE_IO
            idx = np.r_[cache, cap_idx]
            devs = (g.cache, *g.capacity)
            maxi = np.array([d.max_iops for d in devs])[:, None]
            seq = np.array([d.seq_bps for d in devs])[:, None]
            # Guest writes hit the cache device at random; destage reaches capacity devices as large writes.
            wload = np.where(np.arange(len(devs))[:, None] == 0, dev_w[idx] / maxi, dev_wb[idx] / seq)
            rho = np.clip(dev_r[idx] / maxi + wload, 0, 0.92)
            qf = 1.0 / (1.0 - rho)
            base_r = np.array([d.read_us for d in (g.cache, *g.capacity)])[:, None]
            base_w = np.array([d.write_us for d in (g.cache, *g.capacity)])[:, None]
            dev_rlat[idx] = base_r * qf * eff.dev_factor[idx]
            dev_wlat[idx] = base_w * qf * eff.dev_factor[idx]
            hq = eff.hot_q[cap_idx]
            dev_rlat[cap_idx] = np.where(
                hq > 0, np.maximum(dev_rlat[cap_idx], hq * eff.hot_us[cap_idx, None]), dev_rlat[cap_idx]
            )
            cap_rl = (share * dev_rlat[cap_idx]).sum(axis=0)
            dg_rlat[gi] = hit[gi] * dev_rlat[cache] + (1 - hit[gi]) * cap_rl + lsom_us
            delay = (cong[gi] / 255.0) ** 2 * 38000.0  # LSOM back-pressure on incoming writes
            dg_wlat[gi] = dev_wlat[cache] + lsom_us + delay
            dg_rlat[gi] *= eff.rs_pen[gi]
            dg_wlat[gi] *= eff.rs_pen[gi]
        # Network: bytes crossing each host's vSAN uplink.
        tx, rx = np.zeros((nh, t)), np.zeros((nh, t))
        prim = (1 - spread)[:, None]
        for k in range(2):
            hg = dg_host[rep[:, k]]
            remote = (hg != client)[:, None]
            rd = 0.5 * r * blk * remote * prim
            # An FTT=0 object lists its one replica twice; its writes cross the wire once.
            once = (k == 0) | (rep[:, 0] != rep[:, 1])
            wr = w * blk * (remote & once[:, None]) * prim
            np.add.at(tx, hg, rd)
            np.add.at(rx, client, rd)
            np.add.at(tx, client, wr)
            np.add.at(rx, hg, wr)
        # The striped share is spread evenly: it leaves the client for every other host alike.
        far = spread[:, None] * (1 - 1 / nh)
        sr, sw = r * blk * far, 2 * w * blk * far
        np.add.at(rx, client, sr)
        np.add.at(tx, client, sw)
        tx += (sr.sum(0) / nh)[None, :]
        rx += (sw.sum(0) / nh)[None, :]
        rs_host_r = np.zeros((nh, t))
        rs_host_w = np.zeros((nh, t))
        np.add.at(rs_host_r, dg_host, eff.rs_read)
        np.add.at(rs_host_w, dg_host, eff.rs_write)
        tx += rs_host_r
        rx += rs_host_w
        load = np.where(eff.half[:, None], tx + rx, np.maximum(tx, rx))
        rho_net = load / eff.link_bps
        rho_c = np.clip(rho_net, 0, 0.97)
        qwait = rho_c / (1 - rho_c)
        lw = np.zeros((nv, t))
        lr = np.zeros((nv, t))
        for k in range(2):
            gk = rep[:, k]
            hg = dg_host[gk]
            remote = (hg != client)[:, None]
            xfer = blk / eff.link_bps[hg] * 1e6
            xfer_c = blk / eff.link_bps[client] * 1e6
            net = remote * (
                rtt + xfer + xfer * qwait[hg] + xfer_c * qwait[client] + eff.loss_pen[hg] + eff.loss_pen[client]
            )
            lr += 0.5 * (dg_rlat[gk] + cpu_pen[hg] + net)
            lw = np.maximum(lw, dg_wlat[gk] + cpu_pen[hg] + net)
        # The DOM client and vSCSI path queue on host CPU once a host pushes near its limit.
        host_iops = np.zeros((nh, t))
        np.add.at(host_iops, client, iops)
        rho_cl = np.clip(host_iops / np.array([h.client_iops for h in cl.hosts])[:, None], 0, 0.95)
        cl_us = client_us / (1 - rho_cl[client])
        new_lr = cl_us + cpu_pen[client] + lr
        new_lw = cl_us + cpu_pen[client] + lw + 60.0
        lat_r = 0.5 * lat_r + 0.5 * new_lr
        lat_w = 0.5 * lat_w + 0.5 * new_lw
        mix = rf * lat_r + (1 - rf) * lat_w
        new_iops = np.where(closed[:, None], oio * 1e6 / mix, demand)
        # An uplink cannot carry more than its rate: flows through a saturated host are throttled.
        over = np.maximum(rho_net / 0.97, 1.0)
        scale = np.ones((nv, t))
        for k in range(2):
            hg = dg_host[rep[:, k]]
            remote = (hg != client)[:, None]
            scale = np.minimum(scale, np.where(remote, 1.0 / np.maximum(over[hg], over[client]), 1.0))
        iops = 0.5 * iops + 0.5 * new_iops * scale
        st = State(r, w, lat_r, lat_w, iops * mix / 1e6, dg_r, dg_w, dg_rlat, dg_wlat, drained, fill, cong,
                   dev_r, dev_w, dev_rb, dev_wb, dev_rlat, dev_wlat, tx, rx, cpu_pen)  # fmt: skip
    assert st is not None
    st.r, st.w = iops * rf, iops * (1 - rf)
    # Closed loops throttled at a saturated uplink wait in its queue: Little's law sets their latency.
    mix = rf * lat_r + (1 - rf) * lat_w
    need = np.where(closed[:, None], oio * 1e6 / np.maximum(iops, 1e-6), mix)
    stretch = np.maximum(need / mix, 1.0)
    st.lat_r, st.lat_w = lat_r * stretch, lat_w * stretch
    st.oio = np.where(closed[:, None], oio, iops * mix / 1e6)
    return st
