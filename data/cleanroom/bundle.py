"""One diagnosis bundle: plan, solve, render, label."""

from __future__ import annotations

import datetime as dt
import json

import numpy as np

import data.cleanroom.esxtop as esxtop
import data.cleanroom.faults as faults
import data.cleanroom.metrics as metrics
import data.cleanroom.netmetrics as netmetrics
import data.cleanroom.render as render
import data.cleanroom.storage_faults as storage_faults
from data.cleanroom.logs import HostLog
from data.cleanroom.model import Effects, Event, solve
from data.cleanroom.scenario import Plan, plan, workload
from data.cleanroom.topology import Cluster, Rng, build_cluster, vuuid

PERF = "commands/python_usrlibvmwarevsanperfsvcvsan-perfsvc-statuspyc-perf_stats_with_dump.txt"


def _apply(rng: Rng, cl: Cluster, p: Plan, eff: Effects, oio: np.ndarray, demand: np.ndarray, closed: np.ndarray,
           load: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    for f in p.faults:
        if f.fid == "net.packet_loss":
            faults.packet_loss(rng, cl, p, eff, f, load)
        elif f.fid == "host.cpu_contention":
            faults.cpu_contention(rng, cl, p, eff, f, load)
        elif f.fid == "cluster.resync":
            faults.resync(rng, cl, p, eff, f)
        elif f.fid == "disk.latency":
            storage_faults.disk_latency(rng, cl, p, eff, f)
        elif f.fid == "disk.hotspot":
            storage_faults.hotspot(rng, cl, p, eff, f, oio)
        elif f.fid == "dg.write_buffer":
            demand = storage_faults.write_buffer(rng, cl, p, eff, f, demand)
            extra = demand.shape[0] - oio.shape[0]
            oio = np.vstack([oio, np.zeros((extra, p.tl.n))])
            closed = np.concatenate([closed, np.zeros(extra, dtype=bool)])
        elif f.fid == "cluster.low_oio":
            per_vm = cl.vms[0].ndisks * cl.vms[0].oio
            f.cause = f"{int(cl.vms[0].oio)}_thread_per_disk"
            f.severity = {1.0: 0.9, 2.0: 0.6}.get(per_vm, 0.35)
    for f in p.faults:
        if f.fid == "net.link_degraded":
            # The slow link must be loaded to show: scale the workload so its traffic would exceed the link.
            st0 = solve(cl, eff, oio, demand, closed, rng)
            busy = np.maximum(st0.tx[f.target], st0.rx[f.target])[f.onset :]
            peak = float(np.percentile(busy, 90)) if busy.size else 0.0
            faults.link_degraded(rng, cl, p, eff, f)
            need = float(rng.uniform(1.1, 2.0)) * float(eff.link_bps[f.target, -1])
            if 0 < peak < need:
                touch = np.array(
                    [v.host == f.target or any(cl.dgs[g].host == f.target for g in v.replicas) for v in cl.vms]
                )
                k = np.where(touch, min(need / peak, 10.0), 1.0)[:, None]
                oio = oio * np.where(closed[:, None], np.minimum(k, 4.0), 1.0)
                demand = demand * k
    return oio, demand, closed


def _congestion_events(cl: Cluster, p: Plan, ent: metrics.Entities, rng: Rng) -> list[Event]:
    out: list[Event] = []
    iv = p.tl.interval
    for g in cl.dgs:
        m = ent[f"disk-group:{g.cache.uuid}"]
        log, ssd = np.nan_to_num(m["logCongestion"]), np.nan_to_num(m["ssdCongestion"])
        over = np.maximum(log, ssd) > 200
        prev = False
        for i in range(p.tl.n):
            t = i * iv + float(rng.uniform(0, iv))
            which = "SSD" if ssd[i] >= log[i] else "Log"
            val = int(max(log[i], ssd[i]))
            info: dict[str, object] = {"uuid": g.cache.uuid, "value": val, "which": which}
            # LSOM raises the VOB on crossing, repeats it now and then while above, and logs the way back.
            if over[i] and (not prev or rng.random() < 0.15):
                out.append(Event(t, g.host, "congestion", {**info, "state": "Exceeded"}))
            elif prev and not over[i]:
                out.append(Event(t, g.host, "congestion", {**info, "state": "Normal"}))
            prev = bool(over[i])
    return out


def _labels(seed: int, index: int, cl: Cluster, p: Plan, present: list[int]) -> dict[str, object]:
    comps: dict[str, str] = {"cluster": "none"}
    for h in cl.hosts:
        comps[f"host:{h.name}"] = "none"
        for nic in h.nics:
            if nic.role.startswith("vsan") or h.idx in present:
                comps[f"nic:{h.name}/{nic.name}"] = "none"
    for g in cl.dgs:
        hn = cl.hosts[g.host].name
        comps[f"diskgroup:{hn}/{g.cache.dev}"] = "none"
        for d in (g.cache, *g.capacity):
            comps[f"disk:{hn}/{d.dev}"] = "none"
    out = []
    for f in p.faults:
        f.comp = faults.component(cl, f)
        comps[f.comp] = f.fid
        sev = float(np.round(f.severity, 3))
        onset = p.tl.label(f.onset)
        out.append({"component": f.comp, "fault": f.fid, "onset": onset, "severity": sev, "cause": f.cause})
    return {"schema": "vsandx.labels/1", "profile": "field", "seed": seed, "index": index, "generator": "cleanroom",
            "components": comps, "faults": out}  # fmt: skip


def make(seed: int, index: int) -> tuple[str, dict[str, bytes], dict[str, object]]:
    rng = np.random.default_rng([seed, index, 0xC1EA])
    p = plan(rng)
    cl = build_cluster(rng, all_flash=p.all_flash, dedup=p.dedup)
    oio, demand, closed = workload(rng, cl, p)
    faults.choose_targets(rng, cl, p)
    n = p.tl.n
    eff = Effects(len(cl.hosts), len(cl.dgs), len(cl.disks()), n)
    act = oio.sum(0) if p.bench else demand.sum(0)
    load = act / max(float(act.max()), 1e-9)
    faults.background(rng, cl, p, eff, load)
    oio, demand, closed = _apply(rng, cl, p, eff, oio, demand, closed, load)
    st = solve(cl, eff, oio, demand, closed, rng)
    ent = metrics.build(rng, cl, p, eff, st)
    netmetrics.build(rng, cl, p, eff, st, ent)
    if rng.random() < 0.08:
        a = int(rng.integers(0, n - 3))
        for m in ent.values():
            for v in m.values():
                v[a : a + int(rng.integers(1, 4))] = np.nan  # a perf-service restart
    events = eff.events + _congestion_events(cl, p, ent, rng)
    off = [vuuid(rng, "50") for _ in range(int(rng.random() < 0.15))]
    dump = render.perf_dump(rng, p.tl, ent, off).encode()
    cm = render.cmmds(rng, cl).encode()
    faulty_hosts = {cl.dgs[f.target].host if f.fid == "dg.write_buffer" else
                    (cl.disks()[f.target].host if f.fid.startswith("disk.") else f.target)
                    for f in p.faults if not f.fid.startswith("cluster.")}  # fmt: skip
    present = list(range(len(cl.hosts)))
    if rng.random() < 0.25:
        keep = int(rng.integers(1, len(cl.hosts)))
        spare = [h for h in rng.permutation(len(cl.hosts)) if int(h) not in faulty_hosts]
        drop = {int(h) for h in spare[: max(0, len(cl.hosts) - max(keep, len(faulty_hosts)))]}
        present = [h for h in present if h not in drop] or [int(spare[0])]
    end = p.tl.at(n)
    files: dict[str, bytes] = {}
    logs = {h: HostLog(rng, cl, p.tl, h) for h in present}
    lead = -float(rng.uniform(600, 4 * 3600))
    for e in sorted(events, key=lambda e: e.t):
        if e.kind == "host_down":
            for h in present:
                if h != e.host:
                    logs[h].event(Event(e.t + 5, h, "peer_down", {"uuid": cl.hosts[e.host].uuid}))
        elif e.host in logs:
            logs[e.host].event(e)
    for h in present:
        host = cl.hosts[h]
        when = end + dt.timedelta(minutes=float(rng.uniform(2, 45)))
        top = f"esx-{host.name}-{when.strftime('%Y-%m-%d--%H.%M')}-{int(rng.integers(1, 99999))}"
        logs[h].background(lead, (when - p.tl.start).total_seconds())
        files[f"{top}/{PERF}"] = dump
        files[f"{top}/commands/cmmds-tool_find--f-python.txt"] = cm
        files[f"{top}/commands/localcli_vsan-storage-list.txt"] = render.storage_list(cl, host).encode()
        files[f"{top}/commands/localcli_vsan-network-list.txt"] = render.network_list(rng, host).encode()
        files[f"{top}/commands/nicinfo.sh.txt"] = render.nicinfo(host).encode()
        ver = "VMware ESXi 8.0.2 build-22380479\nVMware ESXi 8.0 Update 2\n"
        if not cl.esxi8:
            ver = "VMware ESXi 7.0.3 build-21930508\nVMware ESXi 7.0 Update 3\n"
        files[f"{top}/commands/vmware_-vl.txt"] = ver.encode()
        for rel, body in logs[h].files(rotate=bool(rng.random() < 0.25)).items():
            files[f"{top}/{rel}"] = body
    if rng.random() < 0.3:
        pick = [h for h in present if h in faulty_hosts] or present
        if rng.random() < 0.5:
            pick = sorted(set(pick) | {int(x) for x in rng.choice(present, size=min(2, len(present)), replace=False)})
        for h in pick:
            host = cl.hosts[h]
            hdr = str(rng.choice([host.name, host.name, "localhost.home", host.name.split(".")[0]]))
            csv = esxtop.capture(rng, cl, p, ent, h, hdr)
            tops = [k.split("/")[0] for k in files if k.startswith(f"esx-{host.name}-")]
            where = (
                f"{tops[0]}/esxtop-{h}.csv" if rng.random() < 0.5 else f"esxtop/capture-{int(rng.integers(1, 999))}.csv"
            )
            files[where] = csv
    name = f"cleanroom-{seed}-{index:05d}"
    return name, files, _labels(seed, index, cl, p, present)


def labels_json(labels: dict[str, object]) -> bytes:
    return (json.dumps(labels, indent=1) + "\n").encode()
