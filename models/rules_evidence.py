"""What an engineer reads off a bundle, per component and in physical units: the inputs of models/rules.py.

`bundle_evidence(bt)` gives, per component kind, named measures: each an (n_components,) float64 array
in the unit its name says (ms, percent, MB/s, ...), NaN where the bundle cannot show it (a counter the
site does not collect, a host whose folder is missing, esxtop not captured). Nothing here is learned.

Levels are robust window statistics of the converted series (log-scaled channels are expm1'd back):
`p90` is what the component sustains for at least a tenth of the window (a fault with a late onset
still shows), `p50` its typical level. Peer-relative measures compare a component with the median of
its siblings (the same kind in the bundle, the same disk group and tier): a fault is usually one
component standing out, whatever the cluster's size, hardware or sampling interval.
"""

from __future__ import annotations

import warnings

import numpy as np

from models.rules_disk import disk_evidence
from models.rules_read import (
    NAN,
    events,
    level,
    lvl,
    mtu_below_peers,
    nanmax,
    other_hosts_median,
    peer_median,
    row_median,
    series,
    static,
    vsan_ports,
)
from pipeline.tensors import BundleTensors, KindTensors

Evidence = dict[str, dict[str, np.ndarray]]  # kind -> measure name -> (n_components,) float64


def _nic(bt: BundleTensors) -> dict[str, np.ndarray]:
    kt, host = bt.kinds["nic"], bt.kinds["host"]
    n = len(kt.ids)
    share = static(kt, "traffic_share")
    uplink = np.nan_to_num(share) >= 0.5  # carries most of its host's vSAN traffic (read from the data)
    ports = vsan_ports(kt)  # ... and not a VM-network port half following the vmknic (the MTU checks)
    speed, duplex, rated = static(kt, "speed_gbps"), static(kt, "duplex_full"), static(kt, "rated_gbps")
    ref = uplink & np.isfinite(speed) & (speed > 0)
    design = float(np.max(speed[ref])) if ref.any() else NAN  # the speed the vSAN network was built for
    # loss rates (per-mille -> percent) beyond the cluster's usual level; port drops apart: a healthy
    # uplink flat-topping at its line rate drops at the switch port too (an overrun, not a bad path)
    loss = nanmax(lvl(kt, "pnic.rxPacketsLossRate"), lvl(kt, "pnic.txPacketsLossRate"))
    drops = lvl(kt, "pnic.portRxDrops")
    pause = lvl(kt, "pnic.pauseCount")  # flow-control pause frames per second: the link is saturated
    rx_pk = series(kt, "pnic.rxPackets")
    with np.errstate(all="ignore"):
        errs = nanmax(series(kt, "pnic.rxErr"), series(kt, "pnic.rxCrcErr"))
        err_pct = level(100 * errs / np.where(rx_pk > 1, rx_pk, np.nan), 90)
    # the host's TCP view (retransmits, receive errors), per-mille -> percent, lent to its vSAN uplink only
    h_rex = nanmax(lvl(host, "net.tcpTxRexmitRate"), lvl(host, "net.tcpRxErrRate"))
    h_rex_rel = _over_usual(h_rex)
    hi = kt.host_index
    rex = np.where(uplink & (hi >= 0), h_rex_rel[np.clip(hi, 0, None)] if len(h_rex) else NAN, NAN)
    # the host's vSAN vmknic loses packets its uplink never counts where the host's own stack drops them
    h_loss = nanmax(lvl(host, "net.rxPacketsLossRate"), lvl(host, "net.txPacketsLossRate"))
    h_loss_rel = _over_usual(h_loss)
    h_loss_lent = np.where(uplink & (hi >= 0), h_loss_rel[np.clip(hi, 0, None)] if len(h_loss) else NAN, NAN)
    tput = nanmax(series(kt, "pnic.rxThroughput"), series(kt, "pnic.txThroughput"))  # MB/s
    top = level(tput, 99)
    with np.errstate(all="ignore"):
        near_top = np.nanmean(np.where(np.isfinite(tput), tput >= 0.9 * top[:, None], np.nan), axis=1)
    return {
        "uplink": uplink.astype(np.float64),
        "vsan_share": share,
        "peer_top_mbs": _others_max(np.where(uplink, top, np.nan)),
        "speed_gbps": speed,
        "design_gbps": np.full(n, design),
        # the port's own rating: a 10/25 GbE NIC at 1000 Mb/s is degraded even where every other vSAN
        # uplink whose speed is known runs at 1 Gb/s too (the design speed then reads 1 Gb/s)
        "rated_gbps": rated,
        "half_duplex": np.where(np.isfinite(duplex), (duplex < 0.5) & uplink, NAN),
        "mtu_below_peers": mtu_below_peers(kt, ports),
        **_frames(kt, ports, tput),
        "loss_pct": _over_usual(loss),
        "host_loss_pct": h_loss_lent,
        "drops_pct": _over_usual(drops),
        "pause_per_s": _over_usual(pause),
        "err_pct": err_pct,
        "rexmit_pct": rex,
        "esxtop_drop_pct": nanmax(lvl(kt, "esxtop.rx_drop_pct"), lvl(kt, "esxtop.tx_drop_pct")),
        "tput_top_mbs": top,
        "tput_at_top": near_top,
        **_cap(tput),  # a link that renegotiated mid-window sits at one payload rate from the onset on
        "link_events": events(kt, "ev.link_down", "ev.link_up"),
    }


def _cap(x: np.ndarray) -> dict[str, np.ndarray]:
    """(n, T) MB/s -> per row (n,): the rate it repeats (`cap_mbs`), the share of the observed window at
    it, the share of the samples from the step on at it, and the most carried before the step over it;
    NaN where a row never repeats its rate. A port at its line rate moves the same payload step after
    step (within 0.5 %) where a guest mix or a paced benchmark wanders: the cap is the median of those
    repeated samples, the step the first repeated sample at it (within 2 %). Unlike the window's top
    (`tput_top_mbs`), it finds a link that renegotiated mid-window below what it carried before."""
    n, T = x.shape
    ok = np.isfinite(x) & (x > 0)
    prev = np.pad(x, ((0, 0), (1, 0)), constant_values=np.nan)[:, :-1]
    nxt = np.pad(x, ((0, 0), (0, 1)), constant_values=np.nan)[:, 1:]
    with np.errstate(invalid="ignore"):
        flat = ok & ((np.abs(x - prev) <= 0.005 * x) | (np.abs(x - nxt) <= 0.005 * x))
    out = {k: np.full(n, np.nan) for k in ("cap_mbs", "cap_share", "cap_held", "cap_before")}
    rows = flat.sum(axis=1) >= 3
    if not rows.any():
        return out
    x, ok, flat = x[rows], ok[rows], flat[rows]
    cap = row_median(np.where(flat, x, np.nan))
    with np.errstate(invalid="ignore"):
        at = ok & (np.abs(x - cap[:, None]) <= 0.02 * cap[:, None])
    after = np.arange(T)[None, :] >= np.argmax(at & flat, axis=1)[:, None]
    before = np.where(ok & ~after, x, 0.0).max(axis=1)
    out["cap_mbs"][rows] = cap
    out["cap_share"][rows] = at.sum(axis=1) / ok.sum(axis=1)
    out["cap_held"][rows] = (at & after).sum(axis=1) / (ok & after).sum(axis=1)
    out["cap_before"][rows] = before / cap
    return out


def _over_usual(x: np.ndarray) -> np.ndarray:
    """Each component's level over the bundle's usual one (the median of those observed); NaN stays NaN."""
    return x - np.nanmedian(x) if np.isfinite(x).any() else x


def _frames(kt: KindTensors, uplink: np.ndarray, tput: np.ndarray) -> dict[str, np.ndarray]:
    """Bytes per packet a vSAN uplink carries over its busier half (data, not heartbeats), and the median
    of the other hosts' vSAN uplinks': `frame_bytes`, `peer_frame_bytes`. An uplink at MTU 1500 cannot
    average more than 1500 whatever nicinfo is missing; a jumbo-frame one under load averages several
    thousand (9000-byte segments, small ACKs). NaN for other ports, an uplink under 10 MB/s at its p90
    (heartbeats and keep-alives are small whatever the MTU) or without packet counters."""
    rx, tx = series(kt, "pnic.rxThroughput"), series(kt, "pnic.txThroughput")  # MB/s
    packets = series(kt, "pnic.rxPackets") + series(kt, "pnic.txPackets")  # 1/s
    with np.errstate(all="ignore"):
        frame = 1e6 * (rx + tx) / np.where(packets > 0, packets, np.nan)
        busy = tput >= level(tput, 50)[:, None]
    mine = np.where(uplink & (level(tput, 90) >= 10.0), row_median(np.where(busy, frame, np.nan)), NAN)
    return {"frame_bytes": mine, "peer_frame_bytes": other_hosts_median(mine, kt.host_index)}


def _others_max(x: np.ndarray) -> np.ndarray:
    """Each row's max over the other rows with a value (NaN where none): the largest value, and for the
    row that holds it the second largest (ties included), on one sort rather than a pass per row."""
    out = np.full(len(x), np.nan)
    ok = np.flatnonzero(np.isfinite(x))
    if len(ok):
        order = ok[np.argsort(x[ok], kind="stable")]
        out[:] = x[order[-1]]
        out[order[-1]] = x[order[-2]] if len(order) > 1 else np.nan
    return out


def _host(bt: BundleTensors) -> dict[str, np.ndarray]:
    kt = bt.kinds["host"]
    return {
        "ready_pct": 100 * lvl(kt, "vsancpu.readyPct"),
        "esxtop_ready_pct": lvl(kt, "esxtop.ready_max"),
        "cpu_util_pct": 100 * nanmax(lvl(kt, "cpu.pcpuUtilPct"), lvl(kt, "esxtop.cpu_util")),
    }


def _diskgroup(bt: BundleTensors) -> dict[str, np.ndarray]:
    kt = bt.kinds["diskgroup"]
    cong = 255 * nanmax(lvl(kt, "dg.ssdCongestion"), lvl(kt, "dg.logCongestion"))
    sched = lvl(kt, "dg.latencySched")
    return {
        "congestion": cong,
        "wb_free_pct": 100 * lvl(kt, "dg.wbFreePct", 10),
        "sched_ms": sched,
        "sched_vs_peers": sched / peer_median(sched, np.zeros(len(kt.ids), np.int64)),
        "lsom_events": events(kt, "ev.lsom_congestion"),
        **_resync_fill(bt),
    }


def _resync_fill(bt: BundleTensors) -> dict[str, np.ndarray]:
    """Per disk group (n,), what says a resync fills its write buffer (a rebuild's writes land in the
    buffers of the groups it rebuilds onto, its reads take the capacity devices' time from destaging;
    faults.md labels that on the cluster, not the group):

    - `resync_share`: the resync's share of what the group's host moves, median over the fifth of the
      window where the group's buffer is fullest (lowest wbFreePct). The resync's MB/s are the host's
      resync reads plus its recovery writes (iopsRecWrite times the cluster's resync chunk, tputResyncRead
      / iopsResyncRead: a rebuild writes what it read); the rest is its cache tier's device writes (guest
      and recovery writes land in the buffer).
    - `wb_free_quiet_pct`: the group's median free buffer while the cluster's resync is quiet (under a
      fifth of its p90): a buffer the resync fills drains when it stops; a congested group's stays full.

    NaN where the group's buffer, its host's resync counters or its cache devices' writes are not
    collected (the quiet level also where the resync never stops)."""
    kt, host, disk = bt.kinds["diskgroup"], bt.kinds["host"], bt.kinds["disk"]
    out = {"resync_share": np.full(len(kt.ids), NAN), "wb_free_quiet_pct": np.full(len(kt.ids), NAN)}
    hi = kt.host_index
    if not len(kt.ids) or not len(host.ids) or (hi < 0).all():
        return out
    reads_mb = series(host, "domcompmgr.tputResyncRead")  # (h, T)
    rr, rw = series(host, "domcompmgr.iopsResyncRead"), series(host, "domcompmgr.iopsRecWrite")
    with np.errstate(all="ignore"):
        chunk = np.nansum(reads_mb) / np.nansum(rr)  # MB a resync I/O (NaN: no resync read anywhere)
    writes_mb = rw * (chunk if np.isfinite(chunk) else 0.0)
    cache = np.nan_to_num(static(disk, "is_cache")) > 0.5
    cw = series(disk, "disk.throughputDevWrite")  # (d, T) MB/s
    on = np.flatnonzero(cache & (disk.host_index >= 0))
    intake, seen = np.zeros(reads_mb.shape), np.zeros(reads_mb.shape)  # (h, T) the host's cache tier's writes
    np.add.at(intake, disk.host_index[on], np.nan_to_num(cw[on]))
    np.add.at(seen, disk.host_index[on], np.isfinite(cw[on]))
    resync = np.nan_to_num(reads_mb) + np.nan_to_num(writes_mb)  # (h, T)
    wb = 100 * series(kt, "dg.wbFreePct")  # (n, T)
    total = resync.sum(axis=0, keepdims=True)  # (1, T) the cluster's resync MB/s
    with np.errstate(all="ignore"):
        share = np.where((seen > 0) & np.isfinite(reads_mb), resync / (resync + intake), np.nan)  # (h, T)
        fullest = wb <= level(wb, 20)[:, None]  # (n, T) each group's fullest fifth
        quiet = np.isfinite(reads_mb).any(axis=0) & (total[0] < 0.2 * level(total, 90)[0])  # (T,)
    own = np.where((hi >= 0)[:, None], share[np.clip(hi, 0, None)], np.nan)  # (n, T) its host's share
    out["resync_share"] = row_median(np.where(fullest, own, np.nan))
    out["wb_free_quiet_pct"] = row_median(np.where(quiet[None, :], wb, np.nan))
    return out


def _cluster(bt: BundleTensors) -> dict[str, np.ndarray]:
    kt, host, dg = bt.kinds["cluster"], bt.kinds["host"], bt.kinds["diskgroup"]
    n = len(kt.ids)
    resync = nanmax(lvl(host, "domcompmgr.tputResyncRead"), lvl(host, "domcompmgr.iopsRecWrite") * 64e-3)
    busy = np.sort(np.nan_to_num(resync))[::-1]
    oio, vms = series(kt, "domclient.oio")[:1], series(kt, "vm.active")[:1]
    lat = nanmax(series(kt, "domclient.latencyAvgRead")[:1], series(kt, "domclient.latencyAvgWrite")[:1])
    iops = (series(kt, "domclient.iopsRead") + series(kt, "domclient.iopsWrite"))[:1]
    if not oio.size:  # no cluster component: every measure below is unobserved
        oio = vms = lat = iops = np.full((1, 1), NAN)
    active = np.isfinite(oio) & (oio > 0.05)
    n_cap = float(np.nansum(static(dg, "n_capacity"))) if len(dg.ids) else NAN
    with np.errstate(all="ignore"):
        oio_act = np.where(active, oio, np.nan)
        # The plateau: steps at >= 80 % of the busiest level. A closed-loop benchmark keeps its threads'
        # I/Os outstanding whatever the latency, so from its start on the cluster's oio is flat at
        # (VM disks x threads); a healthy guest mix (daily cycle, bursts, paced benchmarks that follow
        # latency) is not. p95/p60 reads the top 40 % of the active window: the plateau of a benchmark
        # that ran for at least that long, unmoved by background guests before it started.
        top = level(oio_act, 95)[0]
        plateau = active & (oio >= 0.8 * top)

        def on(x: np.ndarray) -> float:
            return float(level(np.where(plateau, x, np.nan), 50)[0])

        one = {
            "resync_mbs_total": float(busy.sum()) if len(busy) else NAN,
            "resync_mbs_2nd_host": float(busy[1]) if len(busy) > 1 else NAN,
            "oio_per_disk": float(level(oio_act, 50)[0] / n_cap) if n_cap > 0 else NAN,
            "oio_per_vm": on(oio) / on(vms),  # on the plateau: the benchmark's VMs, not the idle hours
            "oio_plateau_spread": float(top / level(oio_act, 60)[0]),
            # the VMs themselves: +1 they hold their I/Os in flight (threads), -1 they pace a rate
            "closed_loop": float(static(kt, "vm_closed_loop")[0]) if n else NAN,
            # how much the in-flight level of the VMs that could be the benchmark moves (log IQR)
            "inflight_spread": float(static(kt, "vm_inflight_spread")[0]) if n else NAN,
            # vscsiStats, where an engineer captured it: I/Os outstanding per virtual disk (threads per disk)
            "disk_oio": float(static(kt, "vm_disk_oio")[0]) if n else NAN,
            "active_share": float(active.mean()),
            "latency_ms": on(lat),
            # spindles serve in 5-10 ms unloaded: what "every latency low" means depends on the tier
            "hybrid": float(np.nanmean(static(dg, "all_flash") < 0.5)) if len(dg.ids) else NAN,
            "iops": on(iops),
            "congestion": float(np.nanmax(255 * lvl(dg, "dg.ssdCongestion"), initial=0.0)),
            "dev_ms_max": float(np.nanmax(lvl(bt.kinds["disk"], "disk.latencyDevDAvg", 50), initial=0.0)),
        }
    return {k: np.full(n, v) for k, v in one.items()}


def bundle_evidence(bt: BundleTensors) -> Evidence:
    """Every kind's measures (a kind without components gets arrays of length 0)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices are the point: missing data
        return {
            "cluster": _cluster(bt),
            "host": _host(bt),
            "nic": _nic(bt),
            "diskgroup": _diskgroup(bt),
            "disk": disk_evidence(bt),
        }
