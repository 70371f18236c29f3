"""Filling one kind's arrays: unit conversion and masks (`KindFill`), VM aggregates, esxtop, log events."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from pipeline.channels import KIND_CHANNEL_DEFS, Channel
from pipeline.grid import Grid, count_events, resample
from pipeline.parse.linkvob import LINK_KINDS, collapse_links
from pipeline.parse.logs import LogEvent
from pipeline.parse.perfdump import PerfEntity
from pipeline.tensors import KindTensors
from pipeline.topology import Topology
from vsandx.components import CLUSTER_ID, host_id, nic_id

_DEVICE_EVENTS = frozenset(
    {"scsi_fail_medium", "scsi_fail_benign", "scsi_fail_host", "scsi_fail_other", "deteriorated", "improved"}
)


class KindFill:
    """One kind's arrays being filled, with channel lookup by source key."""

    def __init__(self, kt: KindTensors) -> None:
        self.kt = kt
        self.row = {cid: i for i, cid in enumerate(kt.ids)}
        self.defs = KIND_CHANNEL_DEFS[kt.kind]
        self.by_key = {(c.source, c.key): i for i, c in enumerate(self.defs)}

    def put(self, cid: str, ch: int, vals: np.ndarray, valid: np.ndarray, interval: int) -> None:
        """Convert units, log-scale, and write where nothing was written before."""
        r = self.row.get(cid)
        if r is None:
            return
        c: Channel = self.defs[ch]
        v = vals * (c.scale / interval if c.per_interval else c.scale)
        if c.log:
            v = np.log1p(np.clip(v, 0.0, None))
        free = valid & ~self.kt.mask[r, ch]
        self.kt.values[r, ch][free] = v[free]
        self.kt.mask[r, ch] |= free


def vm_aggregates(vms: list[PerfEntity], grid: Grid, k: KindFill) -> None:
    if not vms:
        return
    stacks: dict[str, list[np.ndarray]] = {}
    busy: list[np.ndarray] = []  # per VM, (T,): NaN unseen, 1.0 where it reads or writes, else 0.0
    for e in vms:
        have = [
            lb
            for lb in (
                "iopsRead",
                "iopsWrite",
                "throughputRead",
                "throughputWrite",
                "latencyRead",
                "latencyWrite",
            )
            if lb in e.metrics
        ]
        if not have:
            continue
        v, ok = resample(e.times, np.stack([e.metrics[lb] for lb in have]), grid, e.interval or grid.native)
        for i, lb in enumerate(have):
            stacks.setdefault(lb, []).append(np.where(ok[i], v[i], np.nan))
        ways = [i for i, lb in enumerate(have) if lb in ("iopsRead", "iopsWrite")]
        if ways:  # a VM that reads and writes is one active VM, not two
            seen = ok[ways].any(axis=0)
            busy.append(np.where(seen, (np.nan_to_num(v[ways]) > 0).any(axis=0), np.nan))

    def agg(labels: Iterable[str], how: str) -> tuple[np.ndarray, np.ndarray] | None:
        arrs = [a for lb in labels for a in stacks.get(lb, [])]
        if not arrs:
            return None
        m = np.stack(arrs)
        ok = np.isfinite(m).any(axis=0)
        with np.errstate(all="ignore"):
            if how == "sum":
                out = np.nansum(m, axis=0)
            elif how == "max":
                out = np.nanmax(np.where(np.isfinite(m), m, -np.inf), axis=0)
            else:
                cnt = np.isfinite(m).sum(axis=0)
                out = np.where(cnt > 0, np.nansum(m, axis=0) / np.maximum(cnt, 1), 0.0)
        return np.nan_to_num(out, nan=0.0, neginf=0.0), ok

    specs: tuple[tuple[str, tuple[str, ...], str], ...] = (
        ("iops", ("iopsRead", "iopsWrite"), "sum"),
        ("throughput", ("throughputRead", "throughputWrite"), "sum"),
        ("latencyRead_mean", ("latencyRead",), "mean"),
        ("latencyWrite_mean", ("latencyWrite",), "mean"),
        ("latency_max", ("latencyRead", "latencyWrite"), "max"),
    )
    for key, labels, how in specs:
        got = agg(labels, how)
        if got is not None:
            k.put(CLUSTER_ID, k.by_key[("vm", key)], got[0], got[1], grid.native)
    if busy:  # VMs doing any I/O at each step
        b = np.stack(busy)
        k.put(CLUSTER_ID, k.by_key[("vm", "active")], np.nansum(b, axis=0), np.isfinite(b).any(axis=0), grid.native)


def _event_target(ev: LogEvent, hn: str, topo: Topology) -> list[tuple[str, str]]:
    """[(kind, component id)] an event counts for."""
    if ev.kind in _DEVICE_EVENTS or (ev.kind == "vob" and ev.device):
        did = topo.disk_of_dev.get((hn, ev.device or ""))
        if did:
            return [("disk", did)]
    if ev.kind in ("link_down", "link_up", "link_speed") or (ev.kind == "vob" and ev.vmnic):
        nid = nic_id(hn, ev.vmnic or "")
        if nid in topo.components:
            return [("nic", nid)]
    if ev.uuid:
        if ev.uuid in topo.dg_of_uuid and ev.kind != "perm_error":
            return [("diskgroup", topo.dg_of_uuid[ev.uuid])]
        did = topo.disk_of_uuid.get(ev.uuid)
        if did:
            grp = topo.components[did].group
            if ev.kind.startswith("lsom") and grp:
                return [("diskgroup", grp)]
            return [("disk", did)]
    if ev.kind.startswith("lsom"):  # congestion line without a UUID: every group of the host
        return [("diskgroup", c.id) for c in topo.of_kind("diskgroup") if c.host == hn]
    if ev.kind == "vob":
        return [("host", host_id(hn))]
    return []


def _order(ev: LogEvent) -> tuple[float, str, str, str, str, str]:
    """Time first, then a total order on the rest: two lines of one second and kind, one naming a device
    and the other none, cannot be compared field by field (None < str raises)."""
    return ev.t, ev.kind, ev.device or "", ev.vmnic or "", ev.uuid or "", ev.detail or ""


def host_events(topo: Topology) -> dict[str, list[LogEvent]]:
    """Per host, its events with vmkwarning copies of vmkernel lines removed, and one link event per
    transition where vmkernel's `Link Down` and vobd's link VOBs both report it (linkvob)."""
    out = {}
    for hn, files in topo.logs.items():
        seen: set[LogEvent] = set()
        for lf in files:
            seen.update(lf.events)
        out[hn] = collapse_links(sorted(seen, key=_order))
    return out


def esxtop_channels(topo: Topology, grid: Grid, kinds: dict[str, KindFill]) -> None:
    for hn, caps in topo.esxtop.items():
        for cap in caps:
            if len(cap.times) == 0:
                continue
            order = np.argsort(cap.times, kind="stable")
            times = cap.times[order]
            interval = max(1, int(np.median(np.diff(times)))) if len(times) > 1 else grid.step
            interval = min(interval, grid.step)  # esxtop is finer than the grid: bin means
            for kind, series in (("host", {"": cap.host}), ("nic", cap.nic), ("disk", cap.disk)):
                k = kinds[kind]
                for inst, cols in series.items():
                    if kind == "host":
                        cid = host_id(hn)
                    elif kind == "nic":
                        cid = nic_id(hn, inst)
                    else:  # only vSAN devices are components; the boot device is not
                        cid = topo.disk_of_dev.get((hn, inst), "")
                    names = [n for n in cols if ("esxtop", n) in k.by_key]
                    if not cid or not names:
                        continue
                    v, ok = resample(times, np.stack([cols[n][order] for n in names]), grid, interval)
                    for i, n in enumerate(names):
                        k.put(cid, k.by_key[("esxtop", n)], v[i], ok[i], interval)


def event_channels(topo: Topology, evs: dict[str, list[LogEvent]], grid: Grid, kinds: dict[str, KindFill]) -> None:
    cluster_vobs: list[float] = []
    vob_cover = np.zeros(grid.T, bool)  # steps some host's vobd log covers
    for hn, lst in evs.items():
        files = topo.logs.get(hn, [])
        # A log covers from its first line to the bundle's collection time (quiet periods are zeros).
        end = topo.collected.get(hn)
        spans = {
            src: [(f.first, max(f.last or 0, end or 0)) for f in files if f.source in src and f.first is not None]
            for src in (("vmkernel", "vmkwarning"), ("vobd",))
        }
        cover = {}
        for src, sp in spans.items():
            steps = grid.start + grid.step * np.arange(grid.T)
            ok = np.zeros(grid.T, bool)
            for a, b in sp:
                ok |= (steps + grid.step > a) & (steps <= (b or a))
            cover[src] = ok
        vob_cover |= cover[("vobd",)]
        buckets: dict[tuple[str, str, str], list[float]] = {}
        for ev in lst:
            for kind, cid in _event_target(ev, hn, topo):
                buckets.setdefault((kind, cid, ev.kind), []).append(ev.t)
            if ev.kind == "vob":
                cluster_vobs.append(ev.t)
        # every component of this host gets a (possibly all-zero) count where its logs cover the grid
        for c in topo.components.values():
            if c.host != hn:
                continue
            k = kinds[c.kind]
            for (source, ev_kind), ch in k.by_key.items():
                if source != "event":
                    continue
                if ev_kind == "vob":
                    ok = cover[("vobd",)]
                elif ev_kind in LINK_KINDS:  # vmkernel's Link Down/Up lines and vobd's link VOBs
                    ok = cover[("vobd",)] | cover[("vmkernel", "vmkwarning")]
                else:
                    ok = cover[("vmkernel", "vmkwarning")]
                ts = buckets.get((c.kind, c.id, ev_kind), [])
                counts = count_events(np.asarray(ts, float), grid) if ts else np.zeros(grid.T)
                k.put(c.id, ch, counts, ok, grid.step)
    if evs:
        k = kinds["cluster"]
        k.put(
            CLUSTER_ID,
            k.by_key[("event", "vob")],
            count_events(np.asarray(cluster_vobs, float), grid),
            vob_cover,
            grid.step,
        )
