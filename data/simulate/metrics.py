"""From the solved model to what the vSAN performance service reports, per entity and in its units.

Returns {entity type: {entity id: {metric label: (T,) float array}}}; NaN marks a missing sample.
Units as bundle-format.md section 3: latency us, throughput B/s, loss/drop/retransmit per-mille,
congestion 0-255, *Pct and *Rate percent, NIC error and pause counters per sample interval.
"""

from __future__ import annotations

import numpy as np

from data.simulate.conditions import Conditions
from data.simulate.netmetrics import Metrics, Series, network_metrics
from data.simulate.physics import RESYNC_IO, State
from data.simulate.topology import Cluster, Rng
from data.simulate.workload import Workload


def _wmean(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Weighted mean over axis 1 (T, k) -> (T,)."""
    return (x * w).sum(1) / np.maximum(w.sum(1), 1e-9)


def _client(st: State, wl: Workload, rows: np.ndarray, cong_v: np.ndarray) -> Series:
    r, w = st.iops_r[:, rows], st.iops_w[:, rows]
    lr, lw = st.lat_r[:, rows], st.lat_w[:, rows]
    return {
        "iopsRead": r.sum(1),
        "iopsWrite": w.sum(1),
        "throughputRead": (r * wl.size_r[rows]).sum(1),
        "throughputWrite": (w * wl.size_w[rows]).sum(1),
        "latencyAvgRead": _wmean(lr, r) * 1e6,
        "latencyAvgWrite": _wmean(lw, w) * 1e6,
        "congestion": _wmean(cong_v[:, rows], w + 1e-6),
        "oio": (r * lr + w * lw).sum(1),
    }


def build_metrics(cluster: Cluster, wl: Workload, cond: Conditions, st: State, dt: float, rng: Rng) -> Metrics:
    n = st.iops_r.shape[0]
    hosts = cluster.hosts
    n_h = len(hosts)
    dgs = cluster.disk_groups
    host_of_g = np.array([h for h, _ in dgs])
    cong_v = st.cong @ (wl.write_w / 2).T  # (T, V) congestion each VM's writes meet
    out: Metrics = {
        k: {}
        for k in (
            "cluster-domclient",
            "host-domclient",
            "host-domcompmgr",
            "disk-group",
            "cache-disk",
            "capacity-disk",
            "vsan-host-net",
            "vsan-pnic-net",
            "host-cpu",
            "vsan-cpu",
            "virtual-machine",
        )
    }
    out["cluster-domclient"][cluster.uuid] = _client(st, wl, np.arange(len(wl.names)), cong_v)

    rs_r_h = np.zeros((n, n_h))
    rs_w_h = np.zeros((n, n_h))
    np.add.at(rs_r_h.T, host_of_g, cond.resync_r.T)
    np.add.at(rs_w_h.T, host_of_g, cond.resync_w.T)
    for h, host in enumerate(hosts):
        rows = np.flatnonzero(wl.client == h)
        m = _client(st, wl, rows, cong_v)
        reads = st.iops_r[:, rows].sum(1)
        m["clientCacheHitRate"] = 100.0 * (st.iops_r[:, rows] * st.client_hit[rows]).sum(1) / np.maximum(reads, 1e-9)
        out["host-domclient"][host.uuid] = m

        ow = wl.owner_w[:, h]
        r_own, w_own = st.iops_r * (1 - st.client_hit) * ow, st.iops_w * ow
        mine = host_of_g == h
        rec_iops, rs_iops = rs_w_h[:, h] / RESYNC_IO, rs_r_h[:, h] / RESYNC_IO
        rec_lat = _wmean(st.dg_lat_w[:, mine], cond.resync_w[:, mine] + 1e-3) * 1e6 + 150.0
        rs_lat = _wmean(st.dg_lat_r[:, mine], cond.resync_r[:, mine] + 1e-3) * 1e6 + 200.0
        lr, lw = _wmean(st.owner_lat_r, r_own) * 1e6, _wmean(st.owner_lat_w, w_own) * 1e6
        out["host-domcompmgr"][host.uuid] = {
            "iopsRead": r_own.sum(1),
            "iopsWrite": w_own.sum(1),
            "latencyAvgRead": lr,
            "latencyAvgWrite": lw,
            "iopsRecWrite": rec_iops,
            "latencyAvgRecWrite": np.where(rec_iops > 0.05, rec_lat, 0.0),
            "iopsResyncRead": rs_iops,
            "tputResyncRead": rs_r_h[:, h],
            "latAvgResyncRead": np.where(rs_iops > 0.05, rs_lat, 0.0),
            "congestion": st.cong[:, mine].max(1) if mine.any() else np.zeros(n),
            "oio": (r_own.sum(1) * lr + w_own.sum(1) * lw) / 1e6 + rec_iops * rec_lat / 1e6,
        }
        cpu = st.cpu_util[:, h] * 100
        out["host-cpu"][host.uuid] = {
            "pcpuUtilPct": cpu,
            "coreUtilPct": np.minimum(100.0, cpu * 1.18),
            "pcpuUsedPct": np.minimum(100.0, cpu * rng.uniform(0.82, 0.95)),
        }
        out["vsan-cpu"][host.uuid] = {"usedPct": st.vsan_cpu[:, h] * 100, "readyPct": st.ready[:, h]}

    _disks(out, cluster, cond, st, rng)
    network_metrics(out, cluster, cond, st, dt, rng)
    for v, uuid in enumerate(cluster.vm_uuids):
        r, w = st.iops_r[:, v], st.iops_w[:, v]
        out["virtual-machine"][uuid] = {
            "iopsRead": r,
            "iopsWrite": w,
            "throughputRead": r * wl.size_r[v],
            "throughputWrite": w * wl.size_w[v],
            "latencyRead": st.lat_r[:, v] * 1e6 + 15.0,
            "latencyWrite": st.lat_w[:, v] * 1e6 + 15.0,
        }
    return out


def _disks(out: Metrics, cluster: Cluster, cond: Conditions, st: State, rng: Rng) -> None:
    n = st.dev_r.shape[0]
    for g, (_, grp) in enumerate(cluster.disk_groups):
        caps = [i for i, (_, gi, d) in enumerate(cond.devices) if gi == g and d.tier == "capacity"]
        cap_util = st.dev_util[:, caps].max(1)
        sched = st.dg_r[:, g] + st.dg_w[:, g] + (cond.resync_r[:, g] + cond.resync_w[:, g]) / RESYNC_IO
        lat = (st.dg_r[:, g] * st.dg_lat_r[:, g] + st.dg_w[:, g] * st.dg_lat_w[:, g]) / np.maximum(
            st.dg_r[:, g] + st.dg_w[:, g], 1e-9
        )
        c = st.cong[:, g]
        small = rng.poisson(0.3, size=(n, 3)).astype(float)  # memory / slab / component: tiny, benign
        out["disk-group"][grp.uuid] = {
            "iopsSched": sched,
            "latencySched": lat * 1e6,
            "wbFreePct": 100.0 * (1 - st.fill[:, g]),
            "rcHitRate": 100.0 * st.rc_hit[:, g],
            "ssdCongestion": np.minimum(255.0, 0.9 * c + small[:, 0]),
            "logCongestion": c,
            "memCongestion": small[:, 1],
            "slabCongestion": np.zeros(n),
            "iopsCongestion": 255.0 * np.clip((cap_util - 0.85) / 0.15, 0, 1) ** 2,
            "compCongestion": small[:, 2] * (cluster.dedup is True),
            "oioWrite": st.dg_w[:, g] * st.dg_lat_w[:, g],
            "ssdBytesDrained": st.destage[:, g],
        }
    for i, (_, _, d) in enumerate(cond.devices):
        kavg = 8e-6 + 4e-6 * st.dev_util[:, i] ** 2 + cond.kavg_extra[:, i]  # kernel queueing on top
        r, w = st.dev_r[:, i], st.dev_w[:, i]
        davg = (r * st.dev_lat_r[:, i] + w * st.dev_lat_w[:, i]) / np.maximum(r + w, 1e-9)
        m = {
            "iopsDevRead": r,
            "iopsDevWrite": w,
            "throughputDevRead": st.dev_rb[:, i],
            "throughputDevWrite": st.dev_wb[:, i],
            "latencyDevRead": (st.dev_lat_r[:, i] + kavg) * 1e6,
            "latencyDevWrite": (st.dev_lat_w[:, i] + kavg) * 1e6,
            "latencyDevDAvg": davg * 1e6,
            "latencyDevGAvg": (davg + kavg) * 1e6,
        }
        if d.tier == "capacity":
            m.update(
                {
                    "iopsRead": r,
                    "iopsWrite": w,
                    "latencyRead": (st.dev_lat_r[:, i] + 2 * kavg) * 1e6 + 20,
                    "latencyWrite": (st.dev_lat_w[:, i] + 2 * kavg) * 1e6 + 20,
                }
            )
            out["capacity-disk"][d.uuid] = m
        else:
            out["cache-disk"][d.uuid] = m
