"""Static side features per component (link speed, rated speed, duplex, MTU, tier, device type, dedup),
cluster context."""

from __future__ import annotations

import numpy as np

from pipeline.channels import KIND_STATIC
from pipeline.grid import Grid
from pipeline.parse.bundle import ParsedBundle
from pipeline.parse.linkspeed import last_speeds
from pipeline.parse.perfdump import PerfEntity
from pipeline.tensors import KindTensors
from pipeline.topology import Topology
from vsandx.components import nic_id


def _set(kt: KindTensors, row: int, name: str, value: float | bool | None) -> None:
    if value is None:
        return
    j = KIND_STATIC[kt.kind].index(name)
    kt.static[row, j] = float(value)
    kt.static_mask[row, j] = True


# A vmknic this quiet tells no port by its volume: an idle port moves as many bytes. The quietest vSAN
# vmknic measured moved 0.6 MB/s (rx + tx; ours), 4.2 (the outsider's) and 5.0 (the clean-room's); idle
# ports up to 2.3 KB/s (ours) and 250 B/s (theirs). Below the floor byte shares stand in.
VOLUME_FLOOR_BPS = 64 * 1024


def _both_ways(e: PerfEntity) -> tuple[np.ndarray, np.ndarray] | None:
    """(sample times, rx + tx throughput: NaN where neither was reported), or None without either."""
    parts = [e.metrics[k] for k in ("rxThroughput", "txThroughput") if k in e.metrics]
    if not parts or any(len(p) != len(e.times) for p in parts):
        return None
    both = np.stack(parts)
    return e.times, np.where(np.isfinite(both).any(0), np.nansum(both, axis=0), np.nan)


def _paired(nic: tuple[np.ndarray, np.ndarray], vmk: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(vmnic, vmknic) throughput over the samples both report, finite in both."""
    _, i, j = np.intersect1d(nic[0], vmk[0], return_indices=True)
    a, b = nic[1][i], vmk[1][j]
    ok = np.isfinite(a) & np.isfinite(b)
    return a[ok], b[ok]


def _matched(a: np.ndarray, b: np.ndarray) -> tuple[float, float] | None:
    """(match, shape): how much of the vmknic's traffic b this vmnic's a carries (_paired), the volume
    that matches, 1 - sum|a - b| / sum max(a, b), times the shape, how closely it follows the vmknic's
    ups and downs (Pearson correlation, floored at 0; 1 for a flat series): a VM-network port moving as
    many bytes on its own schedule matches the volume by chance, not the shape. None: nothing to compare."""
    top = float(np.maximum(a, b).sum())
    if top <= 0:
        return None
    volume = max(0.0, 1.0 - float(np.abs(a - b).sum()) / top)
    flat = len(a) < 3 or a.std() == 0 or b.std() == 0
    shape = 1.0 if flat else max(0.0, float(np.corrcoef(a, b)[0, 1]))
    return volume * shape, shape


def _mean_matched(a: np.ndarray, b: np.ndarray) -> float:
    """How closely this vmnic's bytes a over the window match the vmknic's b (_paired):
    1 - |sum a - sum b| / max(sum a, sum b), 0 with nothing to compare. The noise of each sample averages
    out, so a vSAN uplink at light load (a few MB/s, where each sample's noise hides the shape) still
    reads ~1, and a busy VM-network port reads its ratio to the vmknic's."""
    sa, sb = float(a.sum()), float(b.sum())
    top = max(sa, sb)
    return 0.0 if top <= 0 else max(0.0, 1.0 - abs(sa - sb) / top)


def _traffic_share(pb: ParsedBundle, topo: Topology) -> dict[str, float]:
    """Each vmnic's share of its host's vSAN traffic: which uplink carries vSAN is read from the data.

    The host's vSAN vmknic (vsan-host-net) sees all of its vSAN traffic; the vmnic that carries it
    moves the same bytes at the same times, while a VM-network or management port moves its own.
    So a vmnic's share is how much of the vmknic's traffic it matches, sample by sample:
    the volume that matches times how closely it follows (_matched; two active uplinks split it, ~0.5
    each, and the host's vmnics that follow its shape are taken together). Where those carry under half
    of the vmknic's traffic, each vmnic's share of the host's pnic bytes
    stands in (a vSAN uplink capped at 100 Mb/s then reads as a small share beside a busy VM network),
    but first the window's volume alone (_mean_matched): where one vmnic, and only one, moves the
    vmknic's bytes within a tenth over the window, that is its share (the volume match; from a vmknic
    mean of VOLUME_FLOOR_BPS, below which an idle port moves as much), and the host's
    other vmnics keep how little they follow (< 0.5): a VM-network port of about the vmknic's volume is
    not read as a second uplink, and two such ports leave it to byte shares, as before. At light load
    the samples' noise hides the uplink's shape, and by byte shares the busy VM-network port beside it
    read 0.94 (README)."""
    vmk = {e.eid: s for e in pb.perf.values() if e.etype == "vsan-host-net" and (s := _both_ways(e)) is not None}
    tot: dict[str, float] = {}
    per: dict[str, tuple[str, float, float | None, float]] = {}  # id: host, mean, match, volume match
    follows: dict[str, float] = {}  # the matches of the host's vmnics that follow its vmknic's shape
    movers: dict[str, int] = {}  # vmnics that move the vmknic's bytes within a tenth over the window
    for e in pb.perf.values():
        if e.etype != "vsan-pnic-net":
            continue
        hu, _, nic = e.eid.partition("|")
        hn = topo.host_of_uuid.get(hu)
        own = _both_ways(e)
        if not hn or own is None:
            continue
        mean = float(np.nanmean(own[1])) if np.isfinite(own[1]).any() else 0.0
        match, volume = None, 0.0
        if hu in vmk:
            a, b = _paired(own, vmk[hu])
            volume = _mean_matched(a, b) if b.size and float(b.mean()) >= VOLUME_FLOOR_BPS else 0.0
            if (got := _matched(a, b)) is not None:
                match, shape = got
                if shape >= 0.5:
                    follows[hn] = follows.get(hn, 0.0) + match
        per[nic_id(hn, nic)] = (hn, mean, match, volume)
        tot[hn] = tot.get(hn, 0.0) + mean
        movers[hn] = movers.get(hn, 0) + int(volume >= 0.9)

    def share(hn: str, s: float, match: float | None, volume: float) -> float:
        # the host's vmnics that follow the vmknic's shape carry half its traffic or more: two active
        # uplinks read ~0.5 each, and the best of them alone fell either side of 0.5 by a rounding error
        if match is not None and follows.get(hn, 0.0) >= 0.5:
            return match
        if movers[hn] == 1:  # one vmnic moves the vmknic's bytes: the others carry next to none
            return volume if volume >= 0.9 else (match or 0.0)
        # no vmnic of this host follows its vmknic or moves its bytes (counters that disagree, or no
        # vmknic entity): each vmnic's share of the host's pnic bytes
        return s / tot[hn] if tot[hn] > 0 else 0.0

    return {cid: share(*row) for cid, row in per.items()}


def _logged_speeds(topo: Topology) -> dict[str, tuple[float, bool | None]]:
    """Per NIC component, the speed and duplex its driver last logged at link up (and the link did not
    go down after): what an engineer reads in vmkernel where nicinfo does not say."""
    out = {}
    for hn, files in topo.logs.items():
        for nic, got in last_speeds(e for lf in files for e in lf.events).items():
            out[nic_id(hn, nic)] = got
    return out


def fill_static(
    pb: ParsedBundle,
    topo: Topology,
    grid: Grid,
    kinds: dict[str, KindTensors],
    n_vms: int,
    closed_loop: float | None = None,
    inflight_spread: float | None = None,
    disk_oio: float | None = None,
) -> None:
    """`closed_loop`, `inflight_spread`: the VMs' closed-loop score and how much the in-flight level of
    those that could be a one- or two-thread benchmark moves (pipeline.littles); None where no VM tells.
    `disk_oio`: vscsiStats' outstanding I/Os per virtual disk (parse.vscsistats.disk_oio), None uncaptured."""
    share = _traffic_share(pb, topo)
    pnic_ids = set(share)
    logged = _logged_speeds(topo)
    for i, cid in enumerate(kinds["nic"].ids):
        c = topo.components[cid]
        kt = kinds["nic"]
        r = c.nicinfo
        if r is not None:
            _set(kt, i, "speed_gbps", None if r.speed_mbps is None else r.speed_mbps / 1000)
            _set(kt, i, "duplex_full", r.duplex_full)
            _set(kt, i, "mtu_k", None if r.mtu is None else r.mtu / 1000)
            _set(kt, i, "link_up", r.link_up)
            _set(kt, i, "rated_gbps", None if r.rated_mbps is None else r.rated_mbps / 1000)
        # nicinfo missing (the host's, or the speed column): the speed logged at its last link up. A port
        # nicinfo reports down keeps an unknown speed whatever it negotiated before.
        if cid in logged and (r is None or (r.speed_mbps is None and r.link_up is not False)):
            mbps, full = logged[cid]
            _set(kt, i, "speed_gbps", mbps / 1000)
            _set(kt, i, "duplex_full", full)
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
        ("vm_closed_loop", closed_loop),
        ("vm_inflight_spread", inflight_spread),
        ("vm_disk_oio", disk_oio),
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
