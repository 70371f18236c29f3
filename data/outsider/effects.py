"""Each fault's physics, by cause, applied to the engine; plus the write-buffer (LSOM) dynamics."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from data.outsider.engine import US, Engine
from data.outsider.layout import Rng
from data.outsider.scenario import Fault
from data.outsider.workload import smooth

F = NDArray[np.float64]
MB = 1e6


@dataclass
class Effects:
    loss: dict[int, F] = field(default_factory=dict)  # host -> rx loss per-mille of its vSAN uplink
    peer_rexmit: F | None = None  # (H, T) retransmit per-mille seen on the other hosts
    ready: F | None = None  # (H, T) vSAN world ready %
    busy: F | None = None  # (H, T) extra pCPU utilisation %
    davg_x: dict[tuple[int, int], F] = field(default_factory=dict)  # device latency factor
    kavg_x: dict[tuple[int, int], F] = field(default_factory=dict)
    wb: tuple[F, F, F, F] | None = None  # fill, congestion, drained B/s, in B/s per group
    resync_hosts: list[int] = field(default_factory=list)
    res_pen: F | None = None


def ramp(T: int, a: int, b: int, width: int) -> F:
    x = np.zeros(T)
    x[a:b] = np.clip((np.arange(a, b) - a + 1) / max(1, width), 0, 1)
    return x


def apply(rng: Rng, eng: Engine, faults: list[Fault], normal_resync: bool, base: dict[str, F]) -> Effects:
    sc, T, H = eng.sc, eng.T, eng.H
    ld = eng.load
    ef = Effects()
    ef.ready = np.clip(rng.uniform(0.2, 1.6, (H, 1)) * smooth(rng, H * T, 0.3).reshape(H, T), 0.05, 3.0)
    ef.busy = np.zeros((H, T))
    ef.peer_rexmit = np.zeros((H, T))
    ef.res_pen = np.zeros((H, T))
    load_shape = ld.oio.sum(axis=0) / max(float(ld.oio.sum(axis=0).mean()), 1e-9)
    for f in faults:
        a, b, s = f.onset, f.end, f.sev
        on = ramp(T, a, b, int(rng.integers(1, 4)))
        if f.fault == "net.packet_loss":
            p = 0.5 * 80.0**s
            if f.cause == "injected":
                n = max(20, round(1000 / p))
                f.params["drop_every"] = n
                shape = np.full(T, 1000.0 / n) * rng.uniform(0.97, 1.03, T)
            elif f.cause == "switch_overrun":
                shape = p * np.clip(load_shape, 0.2, 3) ** 1.5 * smooth(rng, T, 0.6, 0.3)
            else:
                shape = p * smooth(rng, T, 0.45, 0.5)
            loss = np.clip(shape * on, 0, 400)
            ef.loss[f.host] = loss
            bs = 0.5 * (ld.bsr + ld.bsw)
            k = np.ceil(bs / (8960 if sc.cluster.mtu == 9000 else 1460)) + 1
            hit = 1 - (1 - loss / 1000) ** k
            rto = float(rng.uniform(20e3, 200e3))
            spikes = np.where(rng.random(T) < 0.06, rng.uniform(3, 8, T), 1.0)
            eng.np_loss[f.host] += hit * (0.7 * 300 + 0.3 * rto) * smooth(rng, T, 0.5, 0.2) * spikes
            others = [h for h in range(H) if h != f.host]
            ef.peer_rexmit[others] += loss / max(1, len(others)) * rng.uniform(0.5, 1.0)
        elif f.fault == "net.link_degraded":
            nic = sc.cluster.hosts[f.host].nics[f.nic]
            if f.cause in ("autoneg_1g", "speed_100m", "half_duplex"):
                nic.speed = (
                    100 if f.cause == "speed_100m" or (f.cause == "half_duplex" and rng.random() < 0.6) else 1000
                )
                nic.duplex = "Half" if f.cause == "half_duplex" else "Full"
                cap = nic.speed * 1e6 / 8 * rng.uniform(0.93, 0.975)
                if nic.duplex == "Half":
                    cap *= rng.uniform(0.6, 0.75)
                    eng.half[f.host] = True
            else:
                nic.mtu = 1500
                for hh in sc.cluster.hosts:
                    for other in hh.nics:
                        if other.role in ("vsan", "standby") and other is not nic:
                            other.mtu = 9000
                sc.cluster.mtu = 9000
                cap = rng.uniform(60, 400) * MB
            f.params["speed"] = nic.speed
            eng.link_cap[f.host, a:] = cap
            if f.cause != "mtu_mismatch":
                eng.rate[f.host, a:] = nic.speed * 1e6 / 8
            need = cap * (1.15 + 3.0 * s)
            peak = float(np.percentile(np.maximum(base["rx"][f.host, a:], base["tx"][f.host, a:]), 90))
            if peak < need:
                ld.oio[:, a:] *= min(need / max(peak, 1.0), 50.0)
        elif f.fault == "disk.latency":
            gi = eng.groups.index((f.host, f.dg))
            kind = (
                sc.cluster.hosts[f.host].dgs[f.dg].cache.kind
                if f.disk < 0
                else sc.cluster.hosts[f.host].dgs[f.dg].caps[f.disk].kind
            )
            target = (30e3 * 20.0**s) if kind == "hdd" else (1.5e3 * 60.0**s)
            base = eng.crd[gi] if f.disk < 0 else eng.caprd[gi]
            x = max(target / base, 3.0)
            if f.cause == "media_errors":
                shape = 1 + (x - 1) * np.clip(ramp(T, a, b, max(2, (b - a) // 3)), 0, 1) * smooth(rng, T, 0.5, 0.4)
            elif f.cause == "firmware_stalls":
                stall = rng.random(T) < rng.uniform(0.15, 0.4)
                shape = 1 + (x - 1) * np.where(stall, rng.uniform(1.0, 2.2, T), rng.uniform(0.1, 0.3, T)) * on
            else:
                shape = 1 + (x - 1) * np.clip(load_shape, 0.3, 2.5) * on * smooth(rng, T, 0.2)
                ef.kavg_x[(f.host, f.disk + 1000 * f.dg)] = 1 + (x - 1) * 0.3 * on
            shape = np.maximum(shape, 1.0)
            eng.fm[(gi, f.disk)] = shape
            ef.davg_x[(f.host, f.disk + 1000 * f.dg)] = shape
        elif f.fault == "disk.hotspot":
            gi = eng.groups.index((f.host, f.dg))
            qt = 3.0 * (64.0 / 3.0) ** s
            q = np.clip(qt * np.clip(load_shape, 0.5, 1.5) * smooth(rng, T, 0.1), 1.0, 64.0) * on
            alpha = float(rng.uniform(0.9, 1.05))
            eng.hot_lat = float(rng.uniform(85, 120)) * np.maximum(q, 1.0) ** alpha * smooth(rng, T, 0.06)
            eng.hot = (gi, f.disk, q)
            read_oio = (ld.oio * ld.rf).sum(axis=0)
            need = np.max(q / np.maximum(read_oio, 1e-3))
            if need > 0.5:
                ld.oio *= need / 0.5
            f.params["oio"] = float(q[a:b].mean())
        elif f.fault == "host.cpu_contention":
            rdy = 5.0 + 35.0 * s**1.3
            if f.cause == "oversubscribed":
                shape = ramp(T, a, b, max(2, (b - a) // 4)) * smooth(rng, T, 0.2)
            else:
                shape = on * smooth(rng, T, 0.12)
            ef.ready[f.host] = np.maximum(ef.ready[f.host], rdy * shape)
            ef.busy[f.host] = 100.0 * shape
            eng.cpu_pen[f.host] += rdy * shape * float(rng.uniform(40, 120))
        elif f.fault == "cluster.resync":
            _resync(rng, eng, ef, f, big=True)
    if normal_resync:
        T0 = int(rng.integers(0, T - 2))
        f = Fault("cluster.resync", "rebalance", 0.0, T0, min(T, T0 + max(2, int(T * rng.uniform(0.03, 0.08)))), -1)
        _resync(rng, eng, ef, f, big=False)
    return ef


def _resync(rng: Rng, eng: Engine, ef: Effects, f: Fault, big: bool) -> None:
    H, T = eng.H, eng.T
    hosts = list(range(H))
    if big:
        per = 40 * MB * 20.0**f.sev
        if f.cause == "host_reboot":
            dst = [int(rng.integers(H))]
            src = [h for h in hosts if h not in dst]
        elif f.cause == "disk_failure":
            lost = int(rng.integers(H))
            src = [h for h in hosts if h != lost]
            dst = list(src)
            f.params["lost_host"] = lost
        elif f.cause == "policy_change":
            src = dst = hosts
        else:
            src = [int(x) for x in rng.choice(H, size=max(2, H // 2), replace=False)]
            dst = [h for h in hosts if h not in src] or hosts
        f.params["dst"] = float(dst[0])
    else:
        per = float(rng.uniform(4, 30)) * MB
        src = [int(rng.integers(H))]
        dst = [int((src[0] + 1 + rng.integers(H - 1)) % H)]
    per = min(per, 0.4 * float(eng.rate.min()))
    dur = f.end - f.onset
    done = f.onset + (dur if (not big or rng.random() < 0.6) else int(dur * rng.uniform(0.5, 1.0)))
    shape = ramp(T, f.onset, max(done, f.onset + 1), 1) * smooth(rng, T, 0.15)
    total = per * len(src)
    for h in src:
        eng.res_r[h] += per * shape
    for h in dst:
        eng.res_w[h] += total / len(dst) * shape
    ef.resync_hosts = sorted(set(src) | set(dst))
    if big:
        pen = float(rng.uniform(1.5, 3.0)) * (eng.res_r + eng.res_w) / MB
        eng.cpu_pen += pen
        ef.res_pen = ef.res_pen + pen if ef.res_pen is not None else pen


def write_buffer(rng: Rng, eng: Engine, faults: list[Fault], W_g: F, dt: float) -> tuple[F, F, F, F]:
    """LSOM write buffer: fill integrates in - destage; congestion rises past ~45 % full and throttles
    incoming writes until they match the destage rate."""
    G, T = W_g.shape
    inb = W_g * eng.load.bsw[None, :] + (eng.res_w[eng.gh] * eng.wdg[:, None])
    drain = np.maximum(eng.drain, inb.max(axis=1) / rng.uniform(0.45, 0.7, G))
    wb = np.array([eng.sc.cluster.hosts[h].dgs[g].wb_bytes for h, g in eng.groups])
    f0 = 0.45
    for f in faults:
        if f.fault != "dg.write_buffer":
            continue
        gi = eng.groups.index((f.host, f.dg))
        k = 1.12 + 6.5 * f.sev**1.6
        mean_in = float(inb[gi, f.onset : f.end].mean())
        drain[gi] = mean_in / k
        pre = inb[gi, : f.onset]
        inb[gi, : f.onset] = np.minimum(pre, drain[gi] * rng.uniform(0.3, 0.6))
        fill_s = (f.end - f.onset) * dt * rng.uniform(0.1, 0.4)
        wb[gi] = max(1e9, 1.5 * drain[gi] * fill_s)
    r = inb / drain[:, None]
    grid = np.linspace(0.0, 40.0, 4001)
    xeq = np.interp(r, grid, _equilibrium(grid, f0))
    tau = wb[:, None] / (1.5 * drain[:, None] + 1e-9)
    keep = np.broadcast_to(np.exp(-dt / tau), (G, T))
    fill = np.zeros((G, T))
    x = np.minimum(xeq[:, 0], 0.3)
    for t in range(T):
        x = xeq[:, t] + (x - xeq[:, t]) * keep[:, t]
        fill[:, t] = x
    cong = _cong(fill, f0)
    thr = 0.97 * (cong / 255.0) ** 0.8
    eff = inb * (1 - thr)
    out = np.minimum(drain[:, None] * np.minimum(1.0, 0.25 + 1.5 * fill), np.maximum(eff, drain[:, None] * 0.25))
    sw = eng.cwr[:, None] * 2 + 200.0
    eng.wbpen = sw * thr / (1 - thr) + cong * 0.5
    return fill, cong, out, eff


def _cong(x: F, f0: float) -> F:
    return np.asarray(255.0 * np.clip((x - f0) / (0.99 - f0), 0, 1) ** 1.5, dtype=np.float64)


def _equilibrium(r: F, f0: float) -> F:
    """Fill level where throttled writes (in * (1 - throttle)) equal the destage rate, per in/destage ratio."""
    lo, hi = np.zeros_like(r), np.full_like(r, 0.995)
    for _ in range(30):
        mid = 0.5 * (lo + hi)
        thr = 0.97 * (_cong(mid, f0) / 255.0) ** 0.8
        net = r * (1 - thr) - np.minimum(1.0, 0.25 + 1.5 * mid)
        lo, hi = np.where(net > 0, mid, lo), np.where(net > 0, hi, mid)
    return np.asarray(0.5 * (lo + hi), dtype=np.float64)


__all__ = ["US", "Effects", "apply", "write_buffer"]
