"""The physical model: guest I/O through DOM client -> network -> DOM owner -> cache -> capacity.

Everything is solved on the whole time grid at once. Latency depends on load (utilisation-driven
queueing at devices and uplinks, LSOM congestion, CPU ready) and load depends on latency (Little's
law for closed loops, oio caps for open ones), so we iterate to a damped fixed point. The write
buffer is the one state carried from sample to sample.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from data.simulate.conditions import Conditions
from data.simulate.lsom import US, congestion, congestion_delay, queue_factor, throttled_buffer, write_buffer
from data.simulate.topology import Cluster
from data.simulate.workload import Workload

DESTAGE_IO = 128 * 1024  # destage and resync move large chunks
RESYNC_IO = 256 * 1024


@dataclass
class State:
    """Solved model, SI units (seconds, bytes/s, iops). T samples x {V VMs, G groups, D devices, H hosts}."""

    iops_r: np.ndarray  # (T, V) guest reads/s, client-cache hits included
    iops_w: np.ndarray  # (T, V)
    lat_r: np.ndarray  # (T, V) s
    lat_w: np.ndarray  # (T, V) s
    client_hit: np.ndarray  # (V,) share of reads the DOM client cache answers
    owner_lat_r: np.ndarray  # (T, V) s, owner-side part of the read latency
    owner_lat_w: np.ndarray  # (T, V)
    dg_r: np.ndarray  # (T, G) backend read iops
    dg_w: np.ndarray  # (T, G) write iops (guest copies)
    dg_lat_r: np.ndarray  # (T, G) s
    dg_lat_w: np.ndarray  # (T, G) s
    fill: np.ndarray  # (T, G) write-buffer fill 0..1
    destage: np.ndarray  # (T, G) bytes/s
    cong: np.ndarray  # (T, G) LSOM log congestion 0..255
    rc_hit: np.ndarray  # (T, G) read-cache hit share (hybrid), 0 on flash
    dev_r: np.ndarray  # (T, D) iops
    dev_w: np.ndarray  # (T, D)
    dev_rb: np.ndarray  # (T, D) bytes/s
    dev_wb: np.ndarray  # (T, D)
    dev_lat_r: np.ndarray  # (T, D) s (device: DAVG-like)
    dev_lat_w: np.ndarray  # (T, D)
    dev_util: np.ndarray  # (T, D)
    tx: np.ndarray  # (T, H) vSAN bytes/s sent
    rx: np.ndarray  # (T, H)
    net_rho: np.ndarray  # (T, H) uplink utilisation
    cpu_util: np.ndarray  # (T, H) 0..1
    vsan_cpu: np.ndarray  # (T, H) share of the host's CPU used by vSAN worlds, 0..1
    ready: np.ndarray  # (T, H) vSAN world ready %


def solve(
    cluster: Cluster, wl: Workload, cond: Conditions, dt: float, fill0: np.ndarray, iterations: int = 10
) -> State:
    n, n_v = wl.oio.shape
    n_h = len(cluster.hosts)
    groups = [g for _, g in cluster.disk_groups]
    n_g, n_d = len(groups), len(cond.devices)
    dev_g = np.array([g for _, g, _ in cond.devices])
    is_cache = np.array([d.tier == "cache" for _, _, d in cond.devices])
    svc = np.array([d.hw.svc_ms * 1e-3 for _, _, d in cond.devices])  # (D,)
    bw = np.array([d.hw.bw_mbs * 1e6 for _, _, d in cond.devices])
    par = np.array([d.hw.par for _, _, d in cond.devices])
    n_cap = np.array([len(g.capacity) for g in groups], dtype=float)
    member = np.zeros((n_d, n_g))
    member[np.arange(n_d), dev_g] = 1.0
    cap_member = member * ~is_cache[:, None]  # (D, G) capacity devices of each group
    wb = np.array([g.wb_bytes for g in groups])
    destage_cap = np.array([g.destage_mbs * 1e6 for g in groups]) * cond.destage_mult  # (T, G)
    hybrid = cluster.storage == "hybrid"
    host_of_g = np.array([h for h, _ in cluster.disk_groups])
    g_host = np.zeros((n_g, n_h))
    g_host[np.arange(n_g), host_of_g] = 1.0
    n_cpus = np.array([h.n_cpus for h in cluster.hosts], dtype=float)
    pkt = max(cluster.mtu - 100, 1400)

    client_hit = 0.03 + 0.3 * wl.locality  # (V,) DOM client cache (in-memory) answers these reads
    rep_host = (wl.write_w / 2.0) @ g_host  # (V, H) replica hosts of each VM
    client_m = np.zeros((n_v, n_h))
    client_m[np.arange(n_v), wl.client] = 1.0
    rs_r_iops, rs_w_iops = cond.resync_r / RESYNC_IO, cond.resync_w / RESYNC_IO

    lat_r = np.full((n, n_v), 0.8e-3)
    lat_w = np.full((n, n_v), 1.2e-3)
    iops = np.zeros((n, n_v))
    read_util = np.zeros((n, n_d))
    # what a capacity device absorbs in destage writes when idle (elevator-sorted, 128 KiB)
    destage_dev = np.where(is_cache, 0.0, par / (svc * 0.25 + DESTAGE_IO / bw) * DESTAGE_IO)
    # LSOM throttles a writer that fills its group's buffer: it settles near the fill its severity sets
    writers = np.flatnonzero((wl.wb_group >= 0) & np.isfinite(wl.wb_fill))
    rate = wl.rate.copy() if writers.size else wl.rate
    g_e, e_of = np.unique(wl.wb_group[writers], return_inverse=True)
    f_e = np.array([wl.wb_fill[writers][e_of == e][0] for e in range(len(g_e))])
    w_dem = np.where(np.isfinite(wl.rate[:, writers]), wl.rate[:, writers], 0.0) * (1 - wl.rf[:, writers])
    w_dem = w_dem * wl.size_w[writers]  # (T, W) bytes/s each writer asks for
    demand = (
        np.stack([w_dem[:, e_of == e] @ wl.write_w[writers[e_of == e]] for e in range(len(g_e))])
        if len(g_e)
        else np.zeros((0, n, n_g))
    )
    for it in range(iterations):
        lat = wl.rf * lat_r + (1 - wl.rf) * lat_w
        new = np.minimum(rate, wl.oio / lat)
        iops = new if it == 0 else 0.5 * (iops + new)
        ri = wl.rf * iops * (1 - client_hit)  # (T, V) reads reaching the backend
        wi = (1 - wl.rf) * iops
        rb, wbytes = ri * wl.size_r, wi * wl.size_w
        dg_r, dg_w = ri @ wl.read_w, wi @ wl.write_w  # (T, G)
        dg_rb, dg_wb = rb @ wl.read_w, wbytes @ wl.write_w
        # destage gets what guest reads leave of the capacity devices
        free = (np.clip(0.92 - read_util, 0.05, None) * destage_dev * cond.dev_mult**-1) @ member
        cap = np.minimum(destage_cap, free)
        if writers.size:
            other = dg_wb + cond.resync_w - wbytes[:, writers] @ wl.write_w[writers]
            fill, destage, thr = throttled_buffer(other, demand, g_e, f_e, wb, cap, dt, fill0)
            rate[:, writers] = wl.rate[:, writers] * thr[:, e_of]
        else:
            fill, destage = write_buffer(dg_wb + cond.resync_w, wb, cap, dt, fill0)
        cong = congestion(fill)

        if hybrid:
            loc = (ri * wl.locality) @ wl.read_w / np.maximum(dg_r, 1e-9)
            rc_hit = np.clip(0.6 + 0.38 * loc, 0, 0.99)
            cache_share = rc_hit
        else:
            rc_hit = np.zeros_like(dg_r)
            cache_share = np.full_like(dg_r, 0.08)  # recently written blocks still in the buffer
        read_size = dg_rb / np.maximum(dg_r, 1e-9)
        cap_reads = dg_r * (1 - cache_share) + rs_r_iops  # (T, G)
        hot_g = cond.hot @ cap_member  # (T, G) share of each group's capacity reads that is hot
        share = (1 - hot_g[:, dev_g]) / n_cap[dev_g] + cond.hot  # (T, D) for capacity devices
        dev_r = np.where(
            is_cache, (dg_r * cache_share)[:, dev_g] + (destage / DESTAGE_IO)[:, dev_g], cap_reads[:, dev_g] * share
        )
        dev_w = np.where(is_cache, (dg_w + rs_w_iops)[:, dev_g], (destage / DESTAGE_IO / n_cap)[:, dev_g])
        rsz = np.where(
            is_cache,
            read_size[:, dev_g],
            (read_size * dg_r + cond.resync_r)[:, dev_g] / np.maximum(cap_reads[:, dev_g], 1e-9),
        )
        wsz = np.where(is_cache, ((dg_wb + cond.resync_w) / np.maximum(dg_w + rs_w_iops, 1e-9))[:, dev_g], DESTAGE_IO)
        svc_r = svc * cond.dev_mult + rsz / bw
        # destage writes are elevator-sorted: far cheaper than random writes on a spindle
        svc_w = svc * cond.dev_mult * np.where(is_cache, 1.0, 0.25) + wsz / bw
        read_util = dev_r * svc_r / par
        util = read_util + dev_w * svc_w / par
        q = np.minimum(queue_factor(util), 30.0)  # past that, commands abort and retry (SCSI timeouts)
        dev_lat_r, dev_lat_w = svc_r * q, svc_w * q
        # hot LBAs: those reads queue on one flash channel, one at a time, each hot_svc times the device's own
        hot_iops = cap_reads[:, dev_g] * cond.hot
        svc_hot = svc_r * cond.hot_svc
        # the device takes ~128 commands; past ~12 ms the excess waits in the kernel queue instead
        hot_lat = np.minimum(svc_hot * queue_factor(hot_iops * svc_hot), 12.5e-3)
        dev_lat_r = np.where(
            hot_iops > 0, (hot_iops * hot_lat + (dev_r - hot_iops) * dev_lat_r) / np.maximum(dev_r, 1e-9), dev_lat_r
        )
        cache_r = (dev_lat_r * is_cache) @ member  # (T, G) the cache device's read latency
        cap_r = ((dev_r * dev_lat_r) @ cap_member) / np.maximum(dev_r @ cap_member, 1e-9)
        # resync I/Os are large and share the group's scheduler with guest I/O
        sched = 80 * US * ((cond.resync_r + cond.resync_w) / 10e6) ** 0.7
        dg_lat_r = cache_share * cache_r + (1 - cache_share) * cap_r + 40 * US + sched
        dg_lat_w = (dev_lat_w * is_cache) @ member + 30 * US + congestion_delay(cong) + sched

        # network: vSAN payload per host uplink, queueing, and retransmissions on lossy links
        tx = rb @ wl.net["tx_r"] + wbytes @ wl.net["tx_w"] + cond.resync_r @ g_host
        rx = rb @ wl.net["rx_r"] + wbytes @ wl.net["rx_w"] + cond.resync_w @ g_host
        load = np.where(cond.half_duplex, (tx + rx) * 1.15, np.maximum(tx, rx))
        rho = load / cond.link_bps
        per_byte = queue_factor(rho) / cond.link_bps  # (T, H) s/B
        lost = cond.loss * 25e-3  # expected delay per lost packet: fast retransmits and ~1 in 8 RTOs
        pk_r, pk_w = np.ceil(wl.size_r / pkt) + 1, np.ceil(wl.size_w / pkt) + 1
        net_r = (
            25 * US * wl.net["cross_r"].sum(1)
            + (per_byte @ wl.net["cross_r"].T) * wl.size_r
            + (lost @ wl.net["cross_r"].T) * pk_r
        )
        net_w = (
            25 * US * wl.net["cross_w"].sum(1)
            + (per_byte @ wl.net["cross_w"].T) * wl.size_w
            + (lost @ wl.net["cross_w"].T) * pk_w
        )

        # CPU: vSAN worlds on a busy host wait to run
        served = (iops @ wl.owner_w) + (ri + 2 * wi) @ rep_host + (rs_r_iops + rs_w_iops) @ g_host
        vsan_cpu = served * 45 * US / n_cpus  # ~45 us of CPU per I/O per hop
        cpu_util = np.clip(cond.cpu_base + vsan_cpu, 0, 1)
        ready = np.clip(0.2 + 8.0 * np.clip(cpu_util - 0.8, 0, None) ** 2 / 0.04 + cond.ready_extra, 0, 60)
        cpu_delay = 12 * US + ready / 100.0 * 2.5e-3  # (T, H) per visit

        own_r = dg_lat_r @ wl.read_w.T + cpu_delay @ wl.owner_w.T + 0.6 * net_r
        own_w = 1.1 * (dg_lat_w @ (wl.write_w / 2).T) + cpu_delay @ wl.owner_w.T + 0.6 * net_w
        new_r = client_hit * 40 * US + (1 - client_hit) * (cpu_delay @ client_m.T + 0.4 * net_r + own_r)
        new_w = cpu_delay @ client_m.T + 0.4 * net_w + own_w
        lat_r = new_r if it == 0 else 0.5 * (lat_r + new_r)
        lat_w = new_w if it == 0 else 0.5 * (lat_w + new_w)

    return State(
        wl.rf * iops,
        (1 - wl.rf) * iops,
        lat_r,
        lat_w,
        client_hit,
        own_r,
        own_w,
        dg_r,
        dg_w,
        dg_lat_r,
        dg_lat_w,
        fill,
        destage,
        cong,
        rc_hit,
        dev_r,
        dev_w,
        dev_r * rsz,
        dev_w * wsz,
        dev_lat_r,
        dev_lat_w,
        util,
        tx,
        rx,
        rho,
        cpu_util,
        vsan_cpu,
        ready,
    )
