"""Reading a bundle's tensors back in physical units, for the rules' evidence (models/rules_evidence.py):
a channel's series (log scale undone, NaN where not observed), its window levels, peer medians, static
features and event counts."""

from __future__ import annotations

from typing import Final

import numpy as np

from pipeline.channels import KIND_CHANNELS, KIND_STATIC, LOG_SCALED
from pipeline.tensors import KindTensors

NAN: Final = float("nan")


def series(kt: KindTensors, channel: str) -> np.ndarray:
    """(n, T) float64 of one channel in its converted unit (log1p undone), NaN where not observed."""
    j = KIND_CHANNELS[kt.kind].index(channel)
    v = kt.values[:, j].astype(np.float64)
    if LOG_SCALED[kt.kind][j]:
        v = np.expm1(v)
    return np.where(kt.mask[:, j], v, np.nan)


def level(x: np.ndarray, q: float) -> np.ndarray:
    """(n, T) -> (n,): the q-th percentile over observed steps; NaN for a row never observed.

    np.nanpercentile(x, q, axis=1) value for value (its linear interpolation, its t >= 0.5 branch), on
    one sort of the whole array: nanpercentile goes row by row through apply_along_axis where a row
    holds a NaN, and the rules read ~80 levels a bundle (0.05 s of 0.07 before this)."""
    out = np.full(x.shape[0], np.nan)
    ok = np.isfinite(x).any(axis=1)
    if ok.any():
        s = np.sort(x[ok], axis=1)  # (m, T), NaN last
        n = (~np.isnan(s)).sum(axis=1)
        virt = (n - 1) * (q / 100)
        lo = np.floor(virt)
        t = virt - lo
        rows = np.arange(len(s))
        a = s[rows, lo.astype(np.intp)]
        b = s[rows, np.minimum(lo + 1, n - 1).astype(np.intp)]  # at the top (q = 100, one value): a itself
        with np.errstate(invalid="ignore"):
            d = b - a
            out[ok] = np.where(t >= 0.5, b - d * (1 - t), a + d * t)
    return out


def row_median(x: np.ndarray) -> np.ndarray:
    """(n, T) -> (n,): np.nanmedian(x, axis=1) value for value (NaN for a row with none), on one sort."""
    if not x.shape[1]:
        return np.full(len(x), np.nan)
    s = np.sort(x, axis=1)  # NaN last
    n = (~np.isnan(s)).sum(axis=1)
    rows = np.arange(len(s))
    lo, hi = s[rows, np.maximum(n - 1, 0) // 2], s[rows, n // 2]
    return np.where(n == 0, np.nan, np.where(n % 2 == 1, lo, (lo + hi) / 2))


def lvl(kt: KindTensors, channel: str, q: float = 90.0) -> np.ndarray:
    return level(series(kt, channel), q)


def nanmax(*xs: np.ndarray) -> np.ndarray:
    """Elementwise max ignoring NaN (NaN only where every input is NaN)."""
    stack = np.stack(xs)
    out = np.full(stack.shape[1:], np.nan)
    ok = np.isfinite(stack).any(axis=0)
    out[ok] = np.nanmax(stack[:, ok], axis=0)
    return out


def peer_median(x: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Each row's median over the *other* rows of its group with a value (NaN: no such peer; group -1: none).

    One sort a group, each row's own value skipped by index: memory stays linear in the group, which
    the ladder's last rung makes the whole bundle (up to max_components disks of a hostile upload)."""
    out = np.full(len(x), np.nan)
    for g in np.unique(groups[groups >= 0]):
        rows = np.flatnonzero(groups == g)
        fin = np.isfinite(x[rows])
        order = np.argsort(np.where(fin, x[rows], np.inf), kind="stable")[: fin.sum()]
        v = x[rows][order]  # the group's values, ascending
        if not len(v):
            continue
        own = np.full(len(rows), len(v))  # each row's place in v; past the end where it has no value
        own[order] = np.arange(len(v))
        n = len(v) - (own < len(v))  # its peers with a value
        mid = np.stack([np.maximum(n - 1, 0) // 2, n // 2])  # (2, rows): the middle pair among its peers
        lo, hi = v[np.minimum(np.where(mid >= own, mid + 1, mid), len(v) - 1)]  # its own value skipped
        out[rows] = np.where(n == 0, np.nan, np.where(n % 2 == 1, lo, (lo + hi) / 2))
    return out


def peer_step_median(x: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """(n, T) -> (n, T): at each step, the median over the *other* rows of the row's group with a value
    there (NaN: none; group -1: none); np.nanmedian's values, +-inf counted as values as it counts them.

    One sort of every step by (group, value), each row's own value skipped by index: memory and time stay
    linear in the rows (a whole bundle of a hostile upload on the last rung), with no work a group (a
    bundle holds a group a disk group and tier, most of two or three disks)."""
    out = np.full(x.shape, np.nan)
    rows = np.flatnonzero(groups >= 0)
    if not len(rows):
        return out
    g = groups[rows]
    sub = x[rows].T  # (T, m): a step a row
    order = np.lexsort((sub, np.broadcast_to(g, sub.shape)))  # by group, then value (NaN last)
    v = np.take_along_axis(sub, order, axis=1)
    _, inv, size = np.unique(g, return_inverse=True, return_counts=True)  # each row's group; group sizes
    start = np.cumsum(size) - size  # where each group's block starts in a step's order
    block, top = start[inv], (start + size - 1)[inv][None, :]  # each row's block: first and last place
    have = ~np.isnan(sub)
    n = np.add.reduceat(have[:, np.argsort(g, kind="stable")], start, axis=1)[:, inv] - have  # peers
    own = np.empty_like(order)  # each row's place in its step's order
    np.put_along_axis(own, order, np.broadcast_to(np.arange(len(rows)), order.shape), axis=1)
    own -= block  # ... within its group's block
    lo_i, hi_i = np.maximum(n - 1, 0) // 2, n // 2
    lo = np.take_along_axis(v, np.minimum(block + np.where(lo_i >= own, lo_i + 1, lo_i), top), axis=1)
    hi = np.take_along_axis(v, np.minimum(block + np.where(hi_i >= own, hi_i + 1, hi_i), top), axis=1)
    with np.errstate(invalid="ignore"):
        out[rows] = np.where(n == 0, np.nan, np.where(n % 2 == 1, lo, (lo + hi) / 2)).T
    return out


def static(kt: KindTensors, name: str) -> np.ndarray:
    j = KIND_STATIC[kt.kind].index(name)
    return np.where(kt.static_mask[:, j], kt.static[:, j].astype(np.float64), np.nan)


def events(kt: KindTensors, *channels: str) -> np.ndarray:
    """(n,) log events of these channels over the window (0 where the logs were not read)."""
    total = np.zeros(len(kt.ids))
    for c in channels:
        total += np.nansum(np.nan_to_num(series(kt, c)), axis=1)
    return total


def vsan_ports(kt: KindTensors) -> np.ndarray:
    """(n,) bool: the NICs that carry their host's vSAN traffic, its largest share and any within 3/4
    of it, at least half (two active uplinks split it ~0.5 each). A busy VM-network port whose traffic
    partly follows the vmknic's reads ~0.5 beside the real uplink's 1.0: not a vSAN port."""
    share = np.nan_to_num(static(kt, "traffic_share"))
    _, host = np.unique(kt.host_index, return_inverse=True)
    top = np.zeros(host.max(initial=-1) + 1)
    np.maximum.at(top, host, share)  # each host's largest share
    return (share >= 0.5) & (share >= 0.75 * top[host])


def mtu_below_peers(kt: KindTensors, ports: np.ndarray | None = None) -> np.ndarray:
    """(n,) 1.0 where a vSAN port's MTU (nicinfo) is below what the other hosts' vSAN ports run (their
    median), 0.0 where it is not, NaN where it or they are unknown or it is no vSAN port (vsan_ports).

    vSAN wants one MTU end to end (its health check pings with the vmknic's frame size), so a host whose
    uplink runs 1500 in a cluster of 9000 is a mismatch whatever the port's speed. The reference is the
    other hosts' (not the cluster's max or this host's): one host moved to jumbo frames ahead of the
    others flags nothing on theirs, and two active uplinks of one host do not vote for each other.
    `ports`: vsan_ports(kt) where the caller has it already."""
    mtu, share = static(kt, "mtu_k"), np.nan_to_num(static(kt, "traffic_share"))
    _, host = np.unique(kt.host_index, return_inverse=True)
    known = (vsan_ports(kt) if ports is None else ports) & np.isfinite(mtu)
    ref = other_hosts_median(np.where(known, mtu, np.nan), kt.host_index) - 0.05  # mtu_k: thousands of bytes
    # A port of its host at the peers' MTU carrying a fifth or more of its vSAN traffic is the vSAN uplink
    # the traffic share misread (a busy VM-network port followed the vmknic closer). The reference is one
    # per host (the other hosts' median), so the twin is looked for once per host.
    host_ref = np.full(host.max(initial=-1) + 1, np.nan)
    host_ref[host[np.isfinite(ref)]] = ref[np.isfinite(ref)]
    with np.errstate(invalid="ignore"):
        twin = np.zeros(len(host_ref), dtype=bool)
        twin[host[(mtu >= host_ref[host]) & (share >= 0.2)]] = True
        return np.where(np.isfinite(ref), ((mtu < ref) & ~twin[host]).astype(float), np.nan)


def other_hosts_median(x: np.ndarray, hosts: np.ndarray) -> np.ndarray:
    """(n,) for each row with a value, the median of x over the rows of other hosts that have one; NaN
    elsewhere. A host's own rows never vote for it (two active uplinks of one host, say).

    np.median over the other hosts' rows, on one sort: a host's k rows hold positions p_0 < ... of the
    sorted values, and the r-th value of the rest is the sorted one at r + #{i: p_i - i <= r}, so each
    host costs O(k log k) and a bundle O(n log n), where a median per row was O(n^2) in NICs."""
    out = np.full(len(x), np.nan)
    rows = np.flatnonzero(np.isfinite(x))
    order = rows[np.argsort(x[rows], kind="stable")]
    vals, owner = x[order], np.asarray(hosts)[order]
    by_host = np.argsort(owner, kind="stable")  # sorted positions, grouped by host, ascending within one
    cuts = np.flatnonzero(np.diff(owner[by_host])) + 1
    for pos in np.split(by_host, cuts) if len(by_host) else []:
        m = len(vals) - len(pos)
        if m == 0:
            continue
        gaps = pos - np.arange(len(pos))  # kept values before each removed one
        ranks = np.array([(m - 1) // 2, m // 2])  # the middle one, or the two middle ones of an even count
        mid = vals[ranks + np.searchsorted(gaps, ranks, side="right")]
        out[order[pos]] = float(mid.mean())
    return out
