"""The solved model as vSAN performance-service entities: {"<type>:<id>": {label: values}}, NaN = missing."""

from __future__ import annotations

import numpy as np

from data.cleanroom.model import RESYNC_IO, Effects, State
from data.cleanroom.scenario import Plan
from data.cleanroom.topology import Cluster, Rng

F = np.ndarray
Entities = dict[str, dict[str, F]]


def _wavg(w: F, x: F, axis: int = 0) -> F:
    s = w.sum(axis=axis)
    return np.asarray(np.where(s > 1e-9, (w * x).sum(axis=axis) / np.maximum(s, 1e-9), 0.0))


def _noisy(rng: Rng, x: F, sigma: float) -> F:
    return np.asarray(x * np.exp(sigma * rng.standard_normal(x.shape)))


def _blips(rng: Rng, n: int, p: float, scale: float) -> F:
    """Healthy counters are not all flat zeros: rare small non-zero samples."""
    return np.asarray((rng.random(n) < p) * rng.exponential(scale, n))


def build(rng: Rng, cl: Cluster, p: Plan, eff: Effects, st: State) -> Entities:
    n = p.tl.n
    ent: Entities = {}
    blk = np.array([v.block for v in cl.vms])[:, None]
    client = np.array([v.host for v in cl.vms])
    r, w = _noisy(rng, st.r, 0.04), _noisy(rng, st.w, 0.04)
    lr, lw = _noisy(rng, st.lat_r, 0.05), _noisy(rng, st.lat_w, 0.05)
    vm_cong = np.max(np.stack([st.cong[np.array([v.replicas[k] for v in cl.vms])] for k in (0, 1)]), axis=0)

    def dom(sel: F) -> dict[str, F]:
        rr, ww = r[sel], w[sel]
        return {
            "iopsRead": rr.sum(0),
            "iopsWrite": ww.sum(0),
            "throughputRead": (rr * blk[sel]).sum(0),
            "throughputWrite": (ww * blk[sel]).sum(0),
            "latencyAvgRead": _wavg(rr, lr[sel]),
            "latencyAvgWrite": _wavg(ww, lw[sel]),
            "congestion": np.round(0.8 * _wavg(ww + 1e-6, vm_cong[sel])),
            "oio": st.oio[sel].sum(0),
        }

    ent[f"cluster-domclient:{cl.uuid}"] = dom(np.ones(len(cl.vms), dtype=bool))
    dg_host = np.array([g.host for g in cl.dgs])
    rs_r_iops = eff.rs_read / RESYNC_IO
    rs_w_iops = eff.rs_write / RESYNC_IO
    for h in cl.hosts:
        m = dom(client == h.idx)
        hit = float(rng.uniform(1, 14))
        m["clientCacheHitRate"] = np.where(m["iopsRead"] > 1, np.clip(hit + rng.normal(0, 1.0, n), 0, 100), 0.0)
        ent[f"host-domclient:{h.uuid}"] = m
        gs = dg_host == h.idx
        cpu = st.cpu_pen[h.idx]
        rd, wr = st.dg_r[gs], st.dg_w[gs]
        lat_rd = _noisy(rng, _wavg(rd, st.dg_rlat[gs]) + cpu + 25.0, 0.05)
        lat_wr = _noisy(rng, _wavg(wr, st.dg_wlat[gs]) + cpu + 25.0, 0.05)
        rec, rsr = rs_w_iops[gs].sum(0), rs_r_iops[gs].sum(0)
        rec_lat = np.where(rec > 0.5, _wavg(rs_w_iops[gs] + 1e-9, st.dg_wlat[gs]) * 3.5 + 900.0 + cpu, 0.0)
        rs_lat = np.where(rsr > 0.5, _wavg(rs_r_iops[gs] + 1e-9, st.dg_rlat[gs]) * 3.0 + 1400.0 + cpu, 0.0)
        ent[f"host-domcompmgr:{h.uuid}"] = {
            "iopsRead": _noisy(rng, rd.sum(0), 0.03),
            "iopsWrite": _noisy(rng, wr.sum(0), 0.03),
            "latencyAvgRead": lat_rd,
            "latencyAvgWrite": lat_wr,
            "iopsRecWrite": _noisy(rng, rec, 0.08),
            "latencyAvgRecWrite": _noisy(rng, rec_lat, 0.1),
            "iopsResyncRead": _noisy(rng, rsr, 0.08),
            "tputResyncRead": _noisy(rng, eff.rs_read[gs].sum(0), 0.08),
            "latAvgResyncRead": _noisy(rng, rs_lat, 0.1),
            "congestion": np.round(0.9 * st.cong[gs].max(0)),
            "oio": (rd.sum(0) * lat_rd + wr.sum(0) * lat_wr + rec * rec_lat + rsr * rs_lat) / 1e6,
        }
    _groups(rng, cl, p, eff, st, ent)
    _devices(rng, cl, eff, st, ent)
    for h in cl.hosts:
        served = st.dg_r[dg_host == h.idx].sum(0) + st.dg_w[dg_host == h.idx].sum(0)
        here = (client == h.idx)[:, None]
        own = (st.r * here).sum(0) + (st.w * here).sum(0)
        util = eff.util[h.idx]
        ent[f"host-cpu:{h.uuid}"] = {
            "pcpuUtilPct": np.clip(util, 0, 100),
            "coreUtilPct": np.clip(util * rng.uniform(1.12, 1.35) + rng.normal(0, 1, n), 0, 100),
            "pcpuUsedPct": np.clip(util * rng.uniform(0.85, 1.05) + rng.normal(0, 1, n), 0, 100),
        }
        used = 0.4 + (served + own) * 1.6e-4 * 16 / h.cores
        ent[f"vsan-cpu:{h.uuid}"] = {
            "usedPct": np.clip(_noisy(rng, used, 0.05), 0, 100),
            "readyPct": np.clip(eff.ready[h.idx], 0, 100),
        }
    for i, v in enumerate(cl.vms):
        ent[f"virtual-machine:{v.uuid}"] = {
            "iopsRead": r[i],
            "iopsWrite": w[i],
            "throughputRead": r[i] * v.block,
            "throughputWrite": w[i] * v.block,
            "latencyRead": np.where(r[i] > 0.05, lr[i] + 15.0, 0.0),
            "latencyWrite": np.where(w[i] > 0.05, lw[i] + 15.0, 0.0),
        }
    _blank_down(cl, eff, ent)
    return ent


def _groups(rng: Rng, cl: Cluster, p: Plan, eff: Effects, st: State, ent: Entities) -> None:
    n = p.tl.n
    wb_faults = {f.target for f in p.faults if f.fid == "dg.write_buffer"}
    for g in cl.dgs:
        i = g.idx
        rs = (eff.rs_read[i] + eff.rs_write[i]) / RESYNC_IO
        rd, wr = st.dg_r[i], st.dg_w[i]
        cong = np.clip(np.round(st.cong[i] + (st.cong[i] > 0) * rng.normal(0, 3, n)), 0, 255)
        ssd = np.clip(np.round(cong * (rng.uniform(0.55, 0.95) if i in wb_faults else 1.0)), 0, 255)
        ent[f"disk-group:{g.cache.uuid}"] = {
            "iopsSched": _noisy(rng, rd + wr + rs, 0.03),
            "latencySched": _noisy(rng, _wavg(np.stack([rd, wr]), np.stack([st.dg_rlat[i], st.dg_wlat[i]])), 0.05),
            "wbFreePct": np.clip(100 * (1 - st.fill[i]) + rng.normal(0, 0.6, n), 0, 100),
            "rcHitRate": (
                np.clip(g.rc_hit + rng.normal(0, 1.2, n), 0, 100) * (rd > 1) if not g.all_flash else np.zeros(n)
            ),
            "ssdCongestion": ssd,
            "logCongestion": cong,
            "memCongestion": np.zeros(n),
            "slabCongestion": np.zeros(n),
            "iopsCongestion": np.round(_blips(rng, n, 0.01, 2.0)),
            "compCongestion": np.round(_blips(rng, n, 0.02, 3.0)) if cl.dedup else np.zeros(n),
            "oioWrite": wr * st.dg_wlat[i] / 1e6,
            "ssdBytesDrained": _noisy(rng, st.drained[i], 0.02),
        }


def _devices(rng: Rng, cl: Cluster, eff: Effects, st: State, ent: Entities) -> None:
    for di, d in enumerate(cl.disks()):
        rd, wr = _noisy(rng, st.dev_r[di], 0.04), _noisy(rng, st.dev_w[di], 0.04)
        rl = np.where(rd > 0.2, _noisy(rng, st.dev_rlat[di], 0.06), 0.0)
        wl = np.where(wr > 0.2, _noisy(rng, st.dev_wlat[di], 0.06), 0.0)
        davg = _wavg(np.stack([rd, wr]), np.stack([rl, wl]))
        kavg = np.where(davg > 0, rng.uniform(4, 25) + 0.02 * davg, 0.0)
        m = {
            "iopsDevRead": rd,
            "iopsDevWrite": wr,
            "throughputDevRead": rd * np.where(st.dev_r[di] > 0, st.dev_rb[di] / np.maximum(st.dev_r[di], 1e-9), 0),
            "throughputDevWrite": wr * np.where(st.dev_w[di] > 0, st.dev_wb[di] / np.maximum(st.dev_w[di], 1e-9), 0),
            "latencyDevRead": rl,
            "latencyDevWrite": wl,
            "latencyDevDAvg": davg,
            "latencyDevGAvg": davg + kavg,
        }
        if d.is_cache:
            ent[f"cache-disk:{d.uuid}"] = m
        else:
            m["iopsRead"], m["iopsWrite"] = rd, wr
            m["latencyRead"] = np.where(rd > 0.2, rl + 12.0, 0.0)
            m["latencyWrite"] = np.where(wr > 0.2, wl + 12.0, 0.0)
            ent[f"capacity-disk:{d.uuid}"] = m
        key = f"{'cache' if d.is_cache else 'capacity'}-disk:{d.uuid}"
        for v in ent[key].values():
            v[eff.dead[di]] = np.nan


def _blank_down(cl: Cluster, eff: Effects, ent: Entities) -> None:
    """A host that is down reports nothing, and neither do its groups, devices and VMs."""
    for h in cl.hosts:
        mask = eff.down[h.idx]
        if not mask.any():
            continue
        ids = [h.uuid]
        for gi in h.dgs:
            g = cl.dgs[gi]
            ids += [d.uuid for d in (g.cache, *g.capacity)]
        ids += [v.uuid for v in cl.vms if v.host == h.idx]
        for key, m in ent.items():
            if key.split(":", 1)[1].split("|")[0] in ids:
                for v in m.values():
                    v[mask] = np.nan
