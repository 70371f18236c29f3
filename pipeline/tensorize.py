"""Parsed records + topology -> BundleTensors on one time grid (units converted, masks, log scale)."""

from __future__ import annotations

import numpy as np

from pipeline.channels import KIND_STATIC
from pipeline.citations import cite
from pipeline.config import PipelineConfig
from pipeline.errors import NoPerfData
from pipeline.fill import KindFill, esxtop_channels, event_channels, host_events, vm_aggregates
from pipeline.grid import Grid, best_window, choose_step, count_events, native_interval, resample
from pipeline.littles import closed_loop_score, inflight_spread, vm_loops
from pipeline.parse.bundle import ParsedBundle
from pipeline.parse.perfdump import PerfEntity
from pipeline.parse.vscsistats import disk_oio
from pipeline.static import fill_static
from pipeline.tensors import SCHEMA_VERSION, BundleTensors, KindTensors
from pipeline.topology import KIND_ORDER, Topology
from vsandx.components import CLUSTER_ID, host_id, nic_id

HOST_TYPES = ("host-domclient", "host-domcompmgr", "host-cpu", "vsan-cpu", "vsan-host-net")


def _window(ents: list[PerfEntity], cfg: PipelineConfig, events: list[float]) -> Grid:
    native = native_interval([e.times for e in ents])
    t0 = int(min(e.times[0] for e in ents))
    t1 = int(max(e.times[-1] for e in ents)) + native
    step = choose_step(t1 - t0, native, cfg)
    full = Grid(t0, step, max(1, -(-(t1 - t0) // step)), native)
    if cfg.grid_steps >= full.T:
        return Grid(t0, step, cfg.grid_steps, native)
    # Longer than the window: put it where the activity is. Activity = load on the DOM clients plus
    # anomalies (robust z > 3) in latency, congestion and loss anywhere, plus log events.
    act = np.zeros(full.T)
    for e in ents:
        labels = [lb for lb in e.metrics if _is_activity(e.etype, lb)]
        if not labels:
            continue
        v, ok = resample(e.times, np.stack([e.metrics[lb] for lb in labels]), full, e.interval or native)
        # (m, T) quartiles of the observed samples, all rows at once (sorting puts NaN last)
        srt = np.sort(np.where(ok, v, np.nan), axis=1)
        cnt = ok.sum(axis=1)
        q = [
            np.take_along_axis(srt, (f * np.maximum(cnt - 1, 0)).astype(int)[:, None], 1)[:, 0]
            for f in (0.25, 0.5, 0.75)
        ]
        scale = np.maximum(q[2] - q[0], 1e-3 * np.maximum(np.abs(q[1]), 1.0))
        z = (v - q[1][:, None]) / scale[:, None]
        load = np.array(
            [lb.startswith("iops") and e.etype in ("cluster-domclient", "host-domclient") for lb in labels]
        )[:, None]
        z = np.where(load, np.clip(z, 0, 10), np.clip(z - 3, 0, 10))
        act += np.where(ok & (cnt >= 4)[:, None], z, 0).sum(axis=0)
    if events:
        act += 3 * np.log1p(count_events(np.asarray(events), full))
    return Grid(t0 + step * best_window(act, cfg.grid_steps), step, cfg.grid_steps, native)


def _is_activity(etype: str, label: str) -> bool:
    low = label.lower()
    return (
        low.startswith("lat")
        or low.endswith("congestion")
        or "lossrate" in low
        or (low.startswith("iops") and etype in ("cluster-domclient", "host-domclient"))
    )


def _entity_target(e: PerfEntity, topo: Topology) -> tuple[str, str, str] | None:
    """(kind, component id, channel key prefix) of a perf entity, None when it maps to no component."""
    if e.etype == "cluster-domclient":
        return "cluster", CLUSTER_ID, e.etype
    if e.etype in HOST_TYPES:
        hn = topo.host_of_uuid.get(e.eid)
        return ("host", host_id(hn), e.etype) if hn else None
    if e.etype == "vsan-pnic-net":
        hu, _, nic = e.eid.partition("|")
        hn = topo.host_of_uuid.get(hu)
        return ("nic", nic_id(hn, nic), e.etype) if hn and nic else None
    if e.etype == "disk-group":
        gid = topo.dg_of_uuid.get(e.eid)
        return ("diskgroup", gid, e.etype) if gid else None
    if e.etype in ("cache-disk", "capacity-disk"):
        did = topo.disk_of_uuid.get(e.eid)
        return ("disk", did, "disk") if did else None
    return None


def tensorize(pb: ParsedBundle, topo: Topology, cfg: PipelineConfig) -> BundleTensors:
    ents = [e for e in pb.perf.values() if len(e.times) and e.metrics]
    if not ents:
        raise NoPerfData(pb.source)
    evs = host_events(topo)
    grid = _window(ents, cfg, [e.t for lst in evs.values() for e in lst])
    ids = {k: tuple(c.id for c in topo.of_kind(k)) for k in KIND_ORDER}
    kinds = {k: KindFill(KindTensors.empty(k, ids[k], grid.T)) for k in KIND_ORDER}
    missing: list[str] = []
    vms: list[PerfEntity] = []
    unknown: set[str] = set()
    for e in ents:
        if e.etype == "virtual-machine":
            vms.append(e)
            continue
        tgt = _entity_target(e, topo)
        if tgt is None:
            unknown.add(e.etype)
            continue
        kind, cid, prefix = tgt
        k = kinds[kind]
        chans = [
            (k.by_key[("perf", f"{prefix}/{lb}")], lb) for lb in e.metrics if ("perf", f"{prefix}/{lb}") in k.by_key
        ]
        if not chans:
            continue
        v, ok = resample(e.times, np.stack([e.metrics[lb] for _, lb in chans]), grid, e.interval or grid.native)
        for i, (ch, _lb) in enumerate(chans):
            k.put(cid, ch, v[i], ok[i], e.interval or grid.native)
    vm_aggregates(vms, grid, kinds["cluster"])
    esxtop_channels(topo, grid, kinds)
    event_channels(topo, evs, grid, kinds)
    kinds_out = {k: v.kt for k, v in kinds.items()}
    loops = vm_loops(vms, grid)
    fill_static(
        pb, topo, grid, kinds_out, len(vms), closed_loop_score(loops), inflight_spread(loops), disk_oio(pb.vscsi)
    )
    for kt in kinds_out.values():
        hidx = {cid: i for i, cid in enumerate(ids["host"])}
        gidx = {cid: i for i, cid in enumerate(ids["diskgroup"])}
        for i, cid in enumerate(kt.ids):
            c = topo.components[cid]
            kt.host_index[i] = hidx.get(host_id(c.host), -1) if c.host else -1
            kt.group_index[i] = gidx.get(c.group, -1) if c.group else -1
    missing += _missing(pb, topo, unknown)
    return BundleTensors(
        schema_version=SCHEMA_VERSION,
        hosts=tuple(topo.hosts),
        host_bundles=tuple(sorted(set(topo.folder_host.values()))),
        start=grid.start,
        step_s=grid.step,
        T=grid.T,
        native_interval_s=grid.native,
        kinds=kinds_out,
        missing=tuple(missing),
        warnings=tuple([*pb.read.warnings, *pb.warnings, *topo.warnings, *topo.unattached]),
        citations=cite(topo, evs),
    )


def _missing(pb: ParsedBundle, topo: Topology, unknown: set[str]) -> list[str]:
    out = []
    if not pb.cmmds.hosts:
        out.append("no CMMDS directory: host names and disks cannot be resolved")
    bundled = set(topo.folder_host.values())
    for hn in topo.hosts:
        if hn not in bundled:
            out.append(f"{hn}: no host support bundle (perf data only)")
            continue
        if not topo.esxtop.get(hn):
            out.append(f"{hn}: no esxtop capture")
        if not topo.logs.get(hn):
            out.append(f"{hn}: no vmkernel/vobd logs")
    for path, f in sorted(pb.folders.items()):
        hn = topo.folder_host[path]
        for what, got in (("storage list", f.storage), ("nicinfo", f.nics), ("vSAN network list", f.vmknics)):
            if not got:
                out.append(f"{hn}: no {what}")
    types = {e.etype for e in pb.perf.values()}
    for et in (
        "cluster-domclient",
        "host-domclient",
        "disk-group",
        "cache-disk",
        "capacity-disk",
        "vsan-pnic-net",
        "host-cpu",
        "vsan-cpu",
        "vsan-host-net",
        "host-domcompmgr",
    ):
        if et not in types:
            out.append(f"no {et} entities in the perf dump")
    if unknown - {"cluster-domcompmgr"}:
        out.append(f"perf entities not mapped to a component: {', '.join(sorted(unknown))}")
    return out


__all__ = ["KIND_STATIC", "tensorize"]
