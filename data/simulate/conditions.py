"""How each injected fault (and benign background) changes the environment over time.

The physical model only sees these arrays; it never looks at labels. Shapes: T samples, H hosts,
G disk groups, D devices (cluster.disk_groups order, cache device first in each group).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from data.simulate import netfx
from data.simulate.netfx import NetFx
from data.simulate.plan import Injected, Plan
from data.simulate.topology import Cluster, Disk, Rng
from data.simulate.workload import Workload, smooth


@dataclass
class Conditions:
    devices: list[tuple[int, int, Disk]]  # (host, dg, disk) per device index
    dev_mult: np.ndarray  # (T, D) service-time multiplier (a failing device retries, times out)
    hot: np.ndarray  # (T, D) share of its group's capacity reads that serialise on this device
    hot_svc: np.ndarray  # (D,) a hot read's time on its one channel over the device's own service time
    destage_mult: np.ndarray  # (T, G) capacity-tier destage speed relative to nominal
    link_bps: np.ndarray  # (T, H) vSAN uplink payload capacity, bytes/s
    half_duplex: np.ndarray  # (T, H) bool
    loss: np.ndarray  # (T, H) share of packets lost on the vSAN uplink
    cpu_base: np.ndarray  # (T, H) CPU used by guests and other worlds, 0..1
    ready_extra: np.ndarray  # (T, H) extra vSAN world ready time from oversubscription, %
    resync_r: np.ndarray  # (T, G) resync read bytes/s sourced from each group
    resync_w: np.ndarray  # (T, G) recovery-write bytes/s landing on each group
    net: NetFx  # what the pnic counts of the loss, pauses, benign CRC blips, flaps
    kavg_extra: np.ndarray  # (T, D) s of kernel queueing on top of the device (a saturated controller queue)


def _after(n: int, onset: int, ramp: int = 2) -> np.ndarray:
    """(T,) 0 before onset, ramping to 1 over `ramp` samples."""
    return np.clip((np.arange(n) - onset + 1) / max(ramp, 1), 0.0, 1.0)


def build_conditions(cluster: Cluster, plan: Plan, wl: Workload, rng: Rng) -> Conditions:
    n = plan.grid.n
    hosts = cluster.hosts
    n_h = len(hosts)
    dgs = cluster.disk_groups
    devices = [(h, g, d) for g, (h, grp) in enumerate(dgs) for d in (grp.cache, *grp.capacity)]
    n_d, n_g = len(devices), len(dgs)
    dev_index = {d.dev: i for i, (_, _, d) in enumerate(devices)}

    dev_mult = np.exp(rng.normal(0, 0.06, size=(n, n_d))) * rng.uniform(0.85, 1.15, size=n_d)
    hot = np.zeros((n, n_d))
    hot_svc = np.ones(n_d)
    destage_mult = rng.uniform(0.9, 1.1, size=n_g) * np.ones((n, 1))
    # each host's vSAN uplink at its own speed: a cluster may keep hosts of an older, slower generation
    speeds = np.array([h.nics[h.vsan_nic].speed_mbps for h in hosts], dtype=float)
    link_bps = np.tile(speeds / 8 * 1e6 * 0.94, (n, 1))
    half = np.zeros((n, n_h), dtype=bool)
    net = netfx.new_netfx(n, n_h)
    hours = plan.grid.dt * np.arange(n) / 3600.0
    cpu_base = smooth(rng, n, n_h, max(3, n // 20), 0.12, 0.6)
    cpu_base *= 1 + 0.2 * np.sin(2 * np.pi * (hours / 24.0 + rng.random()))[:, None]
    ready_extra = np.zeros((n, n_h))
    resync_r = np.zeros((n, n_g))
    resync_w = np.zeros((n, n_g))
    kavg_extra = np.zeros((n, n_d))

    for e in plan.benign:
        if e.kind == "rebalance_trickle":  # a small rebalance, no visible effect on guests
            resync_r[e.start : e.start + e.length, e.dg] += e.level
            to = (e.dg + 1 + int(rng.integers(max(1, n_g - 1)))) % n_g
            resync_w[e.start : e.start + e.length, to] += e.level
        elif e.kind == "crc_blip":
            netfx.crc_blip(net, e.host, n, rng)

    for f in plan.faults:
        on = _after(n, f.onset, 1 if f.cause in ("runaway_world", "stack_drop") else 2)
        s = f.severity
        if f.fault == "disk.latency":
            i = dev_index[f.disk]
            dev_mult[:, i] *= 1 + on * (_slowdown(f, devices[i][2].hw.svc_ms, n, rng) - 1)
            if f.cause == "controller_queue":  # commands wait in the kernel for a queue slot
                kavg_extra[:, i] = on * (1e-3 + 12e-3 * s) * np.exp(rng.normal(0, 0.4, size=n))
        elif f.fault == "disk.hotspot":
            share = (0.75 + 0.2 * s) if f.cause == "dedup_zero" else (0.55 + 0.3 * s)
            # faults.md gives a hot spot no I/O rate: reads of one block wait on one flash channel (one die,
            # the dedup map's lookup before it), each `slow` = 1-8x the device's own service time. That
            # channel is as busy (as many reads outstanding) at 1/slow of the reads, so the hot device serves
            # from about its siblings' I/O to many times it (33 of the quick preset's 49 hot spots under 4x),
            # where v7's (every hot read at the device's own time) served over 4x in 46: the other sources'
            # serve under 4x in 29 of 38 (README)
            slow = float(np.exp(rng.uniform(0.0, np.log(8.0))))
            hot[:, dev_index[f.disk]] = on * share / slow
            hot_svc[dev_index[f.disk]] = slow
        elif f.fault == "dg.write_buffer" and f.cause == "slow_capacity":
            destage_mult[:, f.dg] *= 0.5 - 0.3 * s  # destages a fraction of nominal
        elif f.fault == "net.link_degraded" and f.cause == "mtu_mismatch":  # param: the ceiling in MB/s
            link_bps[:, f.host] = np.where(on > 0, np.minimum(f.param * 1e6, link_bps[:, f.host]), link_bps[:, f.host])
            netfx.mtu_mismatch(net, f, on, rng)
        elif f.fault == "net.link_degraded":
            link_bps[:, f.host] = np.where(on > 0, f.param / 8 * 1e6 * 0.94, link_bps[:, f.host])
            if f.cause == "half_duplex":
                half[:, f.host] = on > 0
        elif f.fault == "net.packet_loss":
            netfx.packet_loss(net, f, on, wl, rng)
        elif f.fault == "host.cpu_contention":
            _cpu(f, on, cpu_base, ready_extra, rng)
        elif f.fault == "cluster.resync":
            _resync(rng, n, f, cluster, resync_r, resync_w)
    return Conditions(
        devices,
        dev_mult,
        hot,
        hot_svc,
        destage_mult,
        link_bps,
        half,
        net.loss,
        np.clip(cpu_base, 0, 1),
        ready_extra,
        resync_r,
        resync_w,
        net,
        kavg_extra,
    )


def _slowdown(f: Injected, svc_ms: float, n: int, rng: Rng) -> np.ndarray:
    """(T,) service-time multiplier of a failing device, by cause: retries and media recovery (errors),
    aborts (timeouts, spikier), a steadily slow device (firmware) or a saturated queue."""
    s = f.severity
    if f.cause == "firmware_degraded":
        target = max(3 + 47 * s**1.5, svc_ms * (3 + 6 * s)) * np.exp(rng.normal(0, 0.25, size=n))
    elif f.cause == "timeout":
        spikes = np.where(rng.random(n) < 0.15, rng.uniform(2, 5, size=n), 1.0)
        target = max(6 + 60 * s**1.5, svc_ms * (3 + 8 * s)) * np.exp(rng.normal(0, 0.6, size=n)) * spikes
    elif f.cause == "controller_queue":
        target = max(4 + 30 * s**1.5, svc_ms * (3 + 5 * s)) * np.exp(rng.normal(0, 0.35, size=n))
    else:  # medium_error, hardware_error: commands take 4-65 ms, bursty per sample
        target = max(4 + 60 * s**1.5, svc_ms * (3 + 8 * s)) * np.exp(rng.normal(0, 0.45, size=n))
    return np.asarray(np.maximum(target / svc_ms, 2.0))


def _cpu(f: Injected, on: np.ndarray, cpu_base: np.ndarray, ready_extra: np.ndarray, rng: Rng) -> None:
    n, s, h = len(on), f.severity, f.host
    if f.cause == "runaway_world":  # a flat plateau from one moment on
        target = 0.93 + 0.065 * s + rng.normal(0, 0.004, size=n)
        jitter = np.exp(rng.normal(0, 0.1, size=n))
    else:  # oversubscribed: busy VMs follow their users through the day
        hours = np.arange(n) / max(n, 1) * rng.uniform(2, 24)
        target = 0.9 + 0.09 * s + 0.015 * np.sin(2 * np.pi * hours / 24) + rng.normal(0, 0.01, size=n)
        jitter = np.exp(rng.normal(0, 0.25, size=n))
    cpu_base[:, h] = cpu_base[:, h] * (1 - on) + on * np.minimum(target, 1.0)
    ready_extra[:, h] = on * (2 + 18 * s) * jitter


def _sources(rng: Rng, cluster: Cluster, k: int) -> np.ndarray:
    """k disk groups (at least two hosts' worth) that resync reads from."""
    dgs = cluster.disk_groups
    n_g = len(dgs)
    src = rng.choice(n_g, size=min(n_g, max(2, k)), replace=False)
    if len({dgs[int(g)][0] for g in src}) < 2:  # a single host's groups: add one of another host
        other = [g for g in range(n_g) if dgs[g][0] != dgs[int(src[0])][0]]
        src = np.append(src, other[int(rng.integers(len(other)))])
    return np.asarray(src)


def _resync(rng: Rng, n: int, f: Injected, cluster: Cluster, out_r: np.ndarray, out_w: np.ndarray) -> None:
    """Resync by cause: a rebuild after a host or disk failure reads surviving replicas on several hosts
    and writes elsewhere; a policy change rewrites objects on most groups; a rebalance moves a little."""
    onset, s = f.onset, f.severity
    dgs = cluster.disk_groups
    n_g = len(dgs)
    hybrid = cluster.storage == "hybrid"
    if f.cause == "rebalance":
        total = 40e6 + 160e6 * s
        src = _sources(rng, cluster, 2)
    elif f.cause == "policy_change":
        total = (60e6 + 400e6 * s) * (0.5 if hybrid else 1.0)
        src = _sources(rng, cluster, int(0.8 * n_g))
    else:
        total = 60e6 + 200e6 * s if hybrid else 150e6 + 500e6 * s
        src = _sources(rng, cluster, int(0.6 * n_g))
    total *= min(1.0, len(cluster.hosts) / 4)
    dst = np.setdiff1d(np.arange(n_g), src) if n_g > 2 else np.arange(n_g)
    if len(dst) == 0 or f.cause == "policy_change":
        dst = np.arange(n_g)
    lo = n // 2 if f.cause in ("policy_change", "rebalance") else max(3, n // 4)
    dur = int(rng.integers(min(lo, n), n + 1))
    shape = np.zeros(n)
    shape[onset : onset + dur] = 1.0
    shape *= np.clip((np.arange(n) - onset + 1) / 2.0, 0, 1)
    tail = np.clip((onset + dur - np.arange(n)) / max(2.0, dur / 5), 0, 1)  # tapers as it completes
    shape *= tail * np.exp(rng.normal(0, 0.08, size=n))
    ws = np.full(len(src), 1.0 / len(src)) if f.cause == "rebalance" else rng.dirichlet(np.ones(len(src)))
    wd = rng.dirichlet(np.ones(len(dst)))
    out_r[:, src] += total * shape[:, None] * ws
    out_w[:, dst] += total * shape[:, None] * wd
