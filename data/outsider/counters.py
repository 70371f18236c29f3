"""From the solved I/O path to the counters the vSAN performance service reports, per entity."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from data.outsider.effects import Effects
from data.outsider.engine import US, Engine, util_mult
from data.outsider.hostcounters import cpu, vms
from data.outsider.layout import Rng

F = NDArray[np.float64]


@dataclass
class Counters:
    ents: dict[str, dict[str, F]] = field(default_factory=dict)
    disk_lat: dict[str, tuple[F, F, F, F]] = field(default_factory=dict)  # uuid -> davg, kavg, iops, read share
    nic_drop: dict[tuple[int, str], F] = field(default_factory=dict)  # (host, vmnic) -> % rx dropped (esxtop)
    nic_mbps: dict[tuple[int, str], F] = field(default_factory=dict)
    cpu_util: F | None = None
    cong: F | None = None


def build(rng: Rng, eng: Engine, st: dict[str, F], ef: Effects, wb: tuple[F, F, F, F]) -> Counters:
    sc, ld, H, T = eng.sc, eng.load, eng.H, eng.T
    cl = sc.cluster
    dt = float(sc.interval)
    out = Counters()

    def nz(x: F, s: float | None = None) -> F:
        sig = sc.noise if s is None else s
        return np.asarray(np.maximum(x, 0) * np.exp(rng.normal(0, sig, np.shape(x))), dtype=np.float64)

    R, W, Lr, Lw, oio = st["R"], st["W"], st["Lr"], st["Lw"], st["oio"]
    fill, cong, drained, _ = wb
    out.cong = cong
    dcong = np.clip(cong.max(axis=0) * 0.6, 0, 255)
    Rn, Wn = nz(R), nz(W)
    Lrn, Lwn = nz(Lr), nz(Lw)
    tot_r, tot_w = Rn.sum(axis=0), Wn.sum(axis=0)
    cl_ent = {
        "iopsRead": tot_r,
        "iopsWrite": tot_w,
        "throughputRead": tot_r * ld.bsr,
        "throughputWrite": tot_w * ld.bsw,
        "latencyAvgRead": (Rn * Lrn).sum(0) / np.maximum(tot_r, 1e-9),
        "latencyAvgWrite": (Wn * Lwn).sum(0) / np.maximum(tot_w, 1e-9),
        "congestion": np.round(dcong),
        "oio": oio.sum(axis=0),
    }
    out.ents[f"cluster-domclient:{cl.uuid}"] = cl_ent
    res_bs = float(rng.choice([65536, 131072, 262144]))
    hitc = rng.uniform(2, 30, H)
    for h, host in enumerate(cl.hosts):
        hu = host.uuid
        out.ents[f"host-domclient:{hu}"] = {
            "iopsRead": Rn[h],
            "iopsWrite": Wn[h],
            "throughputRead": Rn[h] * ld.bsr,
            "throughputWrite": Wn[h] * ld.bsw,
            "latencyAvgRead": Lrn[h],
            "latencyAvgWrite": Lwn[h],
            "congestion": np.round(dcong * rng.uniform(0.5, 1)),
            "oio": oio[h],
            "clientCacheHitRate": np.clip(nz(np.full(T, hitc[h]), 0.2), 0, 100),
        }
        sel = eng.gh == h
        Ro, Wo = st["R_g"][sel].sum(0), st["W_g"][sel].sum(0)
        Sr, Sw = st["Sr"][h], st["Sw"][h]
        pen = ef.res_pen[h] if ef.res_pen is not None else np.zeros(T)
        rr, rw = eng.res_r[h], eng.res_w[h]
        out.ents[f"host-domcompmgr:{hu}"] = {
            "iopsRead": nz(Ro),
            "iopsWrite": nz(Wo),
            "latencyAvgRead": nz(Sr),
            "latencyAvgWrite": nz(Sw),
            "iopsRecWrite": nz(rw / res_bs),
            "latencyAvgRecWrite": np.where(rw > 0, nz(Sw * 1.6 + 2 * pen + rw / 2e5), 0.0),
            "iopsResyncRead": nz(rr / res_bs),
            "tputResyncRead": nz(rr),
            "latAvgResyncRead": np.where(rr > 0, nz(Sr * 1.4 + pen + rr / 4e5), 0.0),
            "congestion": np.round(np.clip(cong[sel].max(0) * 0.8, 0, 255)),
            "oio": (Ro * Sr + Wo * Sw) * US,
        }
    _groups(rng, eng, st, out, fill, cong, drained, nz)
    _network(rng, eng, st, ef, out, nz, dt)
    out.cpu_util = cpu(rng, eng, st, ef, out.ents, nz)
    vms(rng, eng, out.ents, Rn, Wn, Lrn, Lwn)
    return out


def _groups(rng: Rng, eng: Engine, st: dict[str, F], out: Counters, fill: F, cong: F, drained: F, nz: object) -> None:
    assert callable(nz)
    ld, T = eng.load, eng.T
    _, c_rd, c_wr, _, caps = eng.devices(st["R_g"], st["W_g"])
    m = util_mult(eng.u)
    for gi, (h, g) in enumerate(eng.groups):
        dg = eng.sc.cluster.hosts[h].dgs[g]
        Rg, Wg = st["R_g"][gi], st["W_g"][gi]
        res = (eng.res_r[h] + eng.res_w[h]) * eng.wdg[gi] / 131072
        dbs = float(rng.choice([65536, 262144]))
        destage = drained[gi] / dbs
        slow = sum(float(np.mean(c)) for c in caps[gi]) / len(caps[gi]) / max(float(eng.caprd[gi]), 1.0)
        sched = nz(rng.uniform(20, 120) * m[gi] + eng.wbpen[gi] * 0.5 + np.clip(c_rd[gi] - eng.crd[gi], 0, None) * 0.3)
        sched = sched * max(1.0, 0.5 + 0.5 * slow)
        lc = np.round(cong[gi])
        out.ents[f"disk-group:{dg.cache.uuid}"] = {
            "iopsSched": nz(Rg + Wg + res),
            "latencySched": sched,
            "wbFreePct": np.clip(100 * (1 - fill[gi]) + rng.normal(0, 0.5, T), 0, 100),
            "rcHitRate": np.clip(nz(np.full(T, 100 * eng.hit[gi]), 0.01), 0, 100) if not dg.all_flash else np.zeros(T),
            "ssdCongestion": np.round(lc * rng.uniform(0.55, 1.0)),
            "logCongestion": lc,
            "memCongestion": np.zeros(T),
            "slabCongestion": np.zeros(T),
            "iopsCongestion": np.zeros(T),
            "compCongestion": np.zeros(T),
            "oioWrite": Wg * (c_wr[gi] + eng.wbpen[gi]) * US,
            "ssdBytesDrained": nz(drained[gi], 0.03),
        }
        hit = eng.hit[gi]
        cr = nz(Rg * hit + destage)
        cw = nz(Wg + eng.res_w[h] * eng.wdg[gi] / 131072)
        _disk(rng, out, "cache-disk", dg.cache.uuid, cr, cw, ld.bsr, ld.bsw, c_rd[gi], c_wr[gi], nz, False)
        n = len(dg.caps)
        hot_iops = np.zeros(T)
        if eng.hot is not None and eng.hot[0] == gi:
            hot_iops = eng.hot[2] / (eng.hot_lat * US)
        for k, d in enumerate(dg.caps):
            share = np.maximum(Rg - hot_iops, 0) * (1 - hit) / n
            if eng.hot is not None and eng.hot[0] == gi and eng.hot[1] == k:
                share = share + hot_iops
            wr_lat = eng.capwr[gi] * m[gi] * (caps[gi][k] / np.maximum(eng.caprd[gi] * m[gi], 1e-9)) ** 0.7
            if eng.hot is not None and eng.hot[0] == gi and eng.hot[1] == k:
                wr_lat = eng.capwr[gi] * m[gi]
            _disk(
                rng,
                out,
                "capacity-disk",
                d.uuid,
                nz(share),
                nz(destage / n * (1 + 0 * k)),
                ld.bsr,
                np.full(T, dbs),
                caps[gi][k],
                wr_lat,
                nz,
                True,
            )


def _disk(
    rng: Rng, out: Counters, et: str, u: str, r: F, w: F, bsr: F, bsw: F, lr: F, lw: F, nz: object, cap: bool
) -> None:
    assert callable(nz)
    lrn, lwn = nz(lr, 0.08), nz(lw, 0.08)
    tot = np.maximum(r + w, 1e-9)
    davg = (r * lrn + w * lwn) / tot
    kavg = nz(np.full(len(r), rng.uniform(4, 25)), 0.3) + 0.02 * davg
    e = {
        "iopsDevRead": r,
        "iopsDevWrite": w,
        "throughputDevRead": r * bsr,
        "throughputDevWrite": w * bsw,
        "latencyDevRead": lrn,
        "latencyDevWrite": lwn,
        "latencyDevDAvg": davg,
        "latencyDevGAvg": davg + kavg,
    }
    if cap:
        e |= {
            "iopsRead": r * 0.98,
            "iopsWrite": w * 0.98,
            "latencyRead": lrn + rng.uniform(15, 60),
            "latencyWrite": lwn + rng.uniform(15, 60),
        }
    out.ents[f"{et}:{u}"] = e
    out.disk_lat[u] = (davg, kavg, r + w, r / tot)


def _network(rng: Rng, eng: Engine, st: dict[str, F], ef: Effects, out: Counters, nz: object, dt: float) -> None:
    assert callable(nz)
    T = eng.T
    pay = 8900.0 if eng.sc.cluster.mtu == 9000 else 1440.0
    for h, host in enumerate(eng.sc.cluster.hosts):
        rx, tx = nz(st["rx"][h]), nz(st["tx"][h])
        cap = np.minimum(eng.rate[h] * 0.97, eng.link_cap[h]) * rng.uniform(0.985, 1.0, T)
        if eng.half[h]:
            over = np.maximum((rx + tx) / cap, 1.0)
            rx, tx = rx / over, tx / over
        rx, tx = np.minimum(rx, cap), np.minimum(tx, cap)
        loss = ef.loss.get(h, np.zeros(T))
        fcause = next((f.cause for f in eng.sc.faults if f.fault == "net.packet_loss" and f.host == h), "")
        blip = np.where(rng.random(T) < 0.02, rng.uniform(0.0, 0.08, T), 0.0)
        rxp, txp = rx / pay + tx / pay * 0.5, tx / pay + rx / pay * 0.5
        txl = loss * rng.uniform(0.3, 1.0) if fcause == "bad_optic" else np.zeros(T)
        rex = loss * rng.uniform(0.6, 1.2) + (ef.peer_rexmit[h] if ef.peer_rexmit is not None else 0) + blip
        mtu_bad = any(
            f.fault == "net.link_degraded" and f.cause == "mtu_mismatch" and f.host == h for f in eng.sc.faults
        )
        if mtu_bad:
            txl = np.where(np.isfinite(eng.link_cap[h]), rng.uniform(0.02, 0.25, T), 0.0)
        pdrop = loss * rng.uniform(0.6, 1.0) if fcause in ("nic_firmware", "injected") else np.zeros(T)
        out.ents[f"vsan-host-net:{host.uuid}"] = {
            "rxThroughput": rx,
            "txThroughput": tx,
            "rxPackets": rxp,
            "txPackets": txp,
            "rxPacketsLossRate": loss + blip * 0.5,
            "txPacketsLossRate": txl,
            "portRxDrops": pdrop,
            "portTxDrops": np.zeros(T),
            "tcpTxRexmitRate": rex,
            "tcpRxErrRate": loss * rng.uniform(0.2, 0.6),
        }
        link_f = next((f for f in eng.sc.faults if f.fault == "net.link_degraded" and f.host == h), None)
        for k, nic in enumerate(host.nics):
            if not nic.up and rng.random() < 0.5:
                continue
            if k == host.vsan_nic:
                nrx, ntx = rx * 1.0, tx * 1.0
                bg = rng.uniform(0.05, 3) * 1e6
            else:
                bg = {
                    "mgmt": rng.uniform(0.02, 1.5),
                    "vm": rng.uniform(2, 150),
                    "vmotion": rng.uniform(0, 40),
                    "standby": 0.002,
                    "unused": 0.0,
                    "vsan": 0.0,
                }[nic.role] * 1e6
                if not nic.up:
                    bg = 0.0
                nrx, ntx = np.zeros(T), np.zeros(T)
            brx, btx = nz(np.full(T, bg), 0.5), nz(np.full(T, bg * 0.8), 0.5)
            if nic.role == "vmotion":
                brx = brx * np.where(rng.random(T) < 0.05, rng.uniform(20, 100, T), 1.0)
            arx, atx = nrx + brx, ntx + btx
            if k == host.vsan_nic:
                arx, atx = np.minimum(arx, cap * 1.01), np.minimum(atx, cap * 1.01)
            pk_r = arx / pay * dt
            isv = k == host.vsan_nic
            crc = np.zeros(T)
            err = np.zeros(T)
            if isv and fcause == "bad_optic":
                crc = np.round(pk_r * loss / 1000 * rng.uniform(0.6, 0.9))
                err = crc + np.round(pk_r * loss / 1000 * 0.1)
            elif isv and fcause == "nic_firmware":
                err = np.round(pk_r * loss / 1000 * rng.uniform(0.5, 1.0))
            pause = np.zeros(T)
            txerr = np.zeros(T)
            if isv and link_f is not None:
                sat = np.clip(np.maximum(arx, atx) / eng.link_cap[h] - 0.85, 0, None) * np.isfinite(eng.link_cap[h])
                if link_f.cause == "autoneg_1g" and rng.random() < 0.7:
                    pause = np.round(sat * rng.uniform(200, 3000) * dt / 60)
                if link_f.cause == "half_duplex":
                    txerr = np.round(sat * rng.uniform(5, 80) * dt / 60)
            out.ents[f"vsan-pnic-net:{host.uuid}|{nic.name}"] = {
                "rxThroughput": arx,
                "txThroughput": atx,
                "rxPackets": arx / pay + atx / pay * 0.5,
                "txPackets": atx / pay + arx / pay * 0.5,
                "rxPacketsLossRate": (loss + blip * 0.5) if isv else np.zeros(T),
                "txPacketsLossRate": txl if isv else np.zeros(T),
                "portRxDrops": pdrop if isv else np.zeros(T),
                "portTxDrops": np.zeros(T),
                "pauseCount": pause,
                "rxErr": err,
                "txErr": txerr,
                "rxCrcErr": crc,
            }
            out.nic_drop[(h, nic.name)] = (
                (pdrop + (loss * 0.2 if fcause == "bad_optic" else 0)) / 10 if isv else np.zeros(T)
            )
            out.nic_mbps[(h, nic.name)] = arx * 8 / 1e6
