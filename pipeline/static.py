"""Static side features per component (link speed, duplex, MTU, tier, device type, dedup), cluster context."""

from __future__ import annotations

import numpy as np

from pipeline.channels import KIND_STATIC
from pipeline.grid import Grid
from pipeline.parse.bundle import ParsedBundle
from pipeline.tensors import KindTensors
from pipeline.topology import Topology
from vsandx.components import nic_id


def _set(kt: KindTensors, row: int, name: str, value: float | bool | None) -> None:
    if value is None:
        return
    j = KIND_STATIC[kt.kind].index(name)
    kt.static[row, j] = float(value)
    kt.static_mask[row, j] = True


def _traffic_share(pb: ParsedBundle, topo: Topology) -> dict[str, float]:
    """Each vmnic's share of its host's vSAN pnic traffic: which uplink carries vSAN is read from data."""
    tot: dict[str, float] = {}
    per: dict[str, tuple[str, float]] = {}
    for e in pb.perf.values():
        if e.etype != "vsan-pnic-net":
            continue
        hu, _, nic = e.eid.partition("|")
        hn = topo.host_of_uuid.get(hu)
        if not hn:
            continue
        s = 0.0
        for lb in ("rxThroughput", "txThroughput"):
            a = e.metrics.get(lb)
            if a is not None and np.isfinite(a).any():
                s += float(np.nanmean(a))
        per[nic_id(hn, nic)] = (hn, s)
        tot[hn] = tot.get(hn, 0.0) + s
    return {cid: (s / tot[hn] if tot[hn] > 0 else 0.0) for cid, (hn, s) in per.items()}


def fill_static(pb: ParsedBundle, topo: Topology, grid: Grid, kinds: dict[str, KindTensors], n_vms: int) -> None:
    share = _traffic_share(pb, topo)
    pnic_ids = set(share)
    for i, cid in enumerate(kinds["nic"].ids):
        c = topo.components[cid]
        kt = kinds["nic"]
        r = c.nicinfo
        if r is not None:
            _set(kt, i, "speed_gbps", None if r.speed_mbps is None else r.speed_mbps / 1000)
            _set(kt, i, "duplex_full", r.duplex_full)
            _set(kt, i, "mtu_k", None if r.mtu is None else r.mtu / 1000)
            _set(kt, i, "link_up", r.link_up)
        _set(kt, i, "in_perf", cid in pnic_ids)
        _set(kt, i, "traffic_share", share.get(cid))
    for i, cid in enumerate(kinds["disk"].ids):
        c = topo.components[cid]
        kt = kinds["disk"]
        _set(kt, i, "is_cache", c.is_cache)
        _set(kt, i, "is_ssd", c.is_ssd)
        _set(kt, i, "is_capacity", None if c.is_cache is None else not c.is_cache)
        if c.storage is not None:
            _set(kt, i, "dedup", c.storage.dedup)
            _set(kt, i, "compression", c.storage.compression)
    members: dict[str, list[str]] = {}
    for c in topo.of_kind("disk"):
        if c.group:
            members.setdefault(c.group, []).append(c.id)
    for i, cid in enumerate(kinds["diskgroup"].ids):
        c = topo.components[cid]
        kt = kinds["diskgroup"]
        disks = [topo.components[d] for d in members.get(cid, [])]
        if c.storage is not None:
            _set(kt, i, "dedup", c.storage.dedup)
            _set(kt, i, "compression", c.storage.compression)
        if disks and all(d.is_ssd is not None for d in disks):
            _set(kt, i, "all_flash", all(d.is_ssd for d in disks))
        _set(kt, i, "n_capacity", sum(1 for d in disks if not d.is_cache))
    bundled = set(topo.folder_host.values())
    vmk: dict[str, int] = {}
    for path, f in pb.folders.items():
        if f.vmknics:
            vmk[topo.folder_host[path]] = sum(1 for v in f.vmknics if (v.traffic or "vsan").lower().find("vsan") >= 0)
    for i, cid in enumerate(kinds["host"].ids):
        hn = topo.components[cid].host
        kt = kinds["host"]
        _set(kt, i, "has_bundle", hn in bundled)
        _set(kt, i, "has_esxtop", bool(topo.esxtop.get(hn or "")))
        _set(kt, i, "has_logs", bool(topo.logs.get(hn or "")))
        for name, kind in (("n_nics", "nic"), ("n_diskgroups", "diskgroup"), ("n_disks", "disk")):
            _set(kt, i, name, sum(1 for c in topo.of_kind(kind) if c.host == hn))
        _set(kt, i, "n_vsan_vmknics", vmk.get(hn or ""))
    kt = kinds["cluster"]
    dg = kinds["diskgroup"]
    for name, value in (
        ("n_hosts", len(kinds["host"].ids)),
        ("n_host_bundles", len(bundled)),
        ("n_nics", len(kinds["nic"].ids)),
        ("n_diskgroups", len(dg.ids)),
        ("n_disks", len(kinds["disk"].ids)),
        ("n_vms", n_vms),
        ("native_interval_s", grid.native),
        ("step_s", grid.step),
        ("window_h", grid.step * grid.T / 3600),
    ):
        _set(kt, 0, name, value)
    for name, col in (("dedup_share", "dedup"), ("all_flash_share", "all_flash")):
        j = KIND_STATIC["diskgroup"].index(col)
        known = dg.static_mask[:, j]
        if known.any():
            _set(kt, 0, name, float(dg.static[known, j].mean()))
