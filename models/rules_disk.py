"""A disk's evidence (models/rules_evidence.py): its latencies and I/O rate, each against its siblings'
(the same tier of its disk group, else of its host, else of the bundle), its SCSI failures and ESXi's
deterioration lines."""

from __future__ import annotations

import numpy as np

from models.rules_read import (
    NAN,
    events,
    level,
    lvl,
    nanmax,
    peer_median,
    peer_step_median,
    row_median,
    series,
    static,
)
from pipeline.tensors import BundleTensors, KindTensors


def disk_evidence(bt: BundleTensors) -> dict[str, np.ndarray]:
    kt = bt.kinds["disk"]
    cache = np.nan_to_num(static(kt, "is_cache"))
    tier = np.where(kt.group_index >= 0, 2 * kt.group_index + cache.astype(np.int64), -1)
    on_host = np.where(kt.host_index >= 0, 2 * kt.host_index + cache.astype(np.int64), -1)
    ladder = (tier, on_host, cache.astype(np.int64))  # whom a disk is compared with, nearest first
    rd = nanmax(lvl(kt, "disk.latencyDevRead"), lvl(kt, "disk.latencyRead"))
    wr = nanmax(lvl(kt, "disk.latencyDevWrite"), lvl(kt, "disk.latencyWrite"))
    dev = nanmax(lvl(kt, "disk.latencyDevDAvg"), lvl(kt, "esxtop.davg"))
    iops = nanmax(
        lvl(kt, "disk.iopsDevRead", 50) + lvl(kt, "disk.iopsDevWrite", 50),
        lvl(kt, "esxtop.cmds", 50),
    )
    with np.errstate(all="ignore"):
        return {
            "dev_ms": dev,
            "read_ms": rd,
            "write_ms": wr,
            # against the median of the same tier in the same disk group (the capacity disks of a group
            # share its workload; a cache disk has no sibling there, so the host's other cache disks)
            "dev_vs_peers": dev / _peer(dev, ladder),
            "read_vs_peers": rd / _peer(rd, ladder),
            "write_vs_peers": wr / _peer(wr, ladder),
            "iops_vs_peers": iops / _peer(iops, ladder),
            "iops_vs_peers_slow": _iops_when_slow(kt, ladder),
            "scsi_errors": events(kt, "ev.scsi_fail_medium", "ev.scsi_fail_host", "ev.scsi_fail_other"),
            "deteriorated": events(kt, "ev.deteriorated", "ev.perm_error"),
            "capacity_ssd": np.where(
                np.isfinite(static(kt, "is_ssd")), (static(kt, "is_ssd") > 0.5) & (cache < 0.5), NAN
            ),
            "dedup": static(kt, "dedup"),
        }


def _iops_when_slow(kt: KindTensors, ladder: tuple[np.ndarray, ...]) -> np.ndarray:
    """Each disk's I/O rate over its siblings' at the steps of its own highest read latency (its top
    fifth): a hot spot serves more exactly while it is slow, whenever in the window that began (over
    the whole window, the median rate of one that began late reads as its siblings')."""
    rd = np.fmax(series(kt, "disk.latencyDevRead"), series(kt, "disk.latencyRead"))
    io = series(kt, "disk.iopsDevRead") + series(kt, "disk.iopsDevWrite")
    return rate_when_slow(rd, np.where(np.isfinite(io), io, series(kt, "esxtop.cmds")), ladder)


def rate_when_slow(rd: np.ndarray, io: np.ndarray, ladder: tuple[np.ndarray, ...]) -> np.ndarray:
    """(n, T) read latency and I/O rate -> (n,): the median rate at a disk's slow steps over the median,
    across those steps, of its siblings' median rate at each (the first rung of the ladder with any)."""
    with np.errstate(invalid="ignore"):
        slow = rd >= level(rd, 80)[:, None]  # (n, T) each disk's top fifth of read latency
    mine = row_median(np.where(slow, io, np.nan))
    seen = np.isfinite(rd).any(axis=1)
    out = np.full(len(rd), NAN)
    for groups in ladder:
        todo = np.isnan(out) & (groups >= 0) & seen
        if todo.any():
            wanted = np.where(np.isin(groups, groups[todo]), groups, -1)  # the groups of a disk to do
            theirs = row_median(np.where(slow, peer_step_median(io, wanted), np.nan))
            with np.errstate(invalid="ignore"):
                out = np.where(todo, mine / np.maximum(theirs, 1e-3), out)
    return out


def _peer(x: np.ndarray, ladder: tuple[np.ndarray, ...]) -> np.ndarray:
    """Peer level of each disk: its group-and-tier siblings, else the same tier on its host, else the bundle."""
    out = np.full(len(x), NAN)
    for groups in ladder:
        out = np.where(np.isfinite(out), out, peer_median(x, groups))
    return np.maximum(out, 1e-3)
