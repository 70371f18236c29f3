"""Engineered per-component features for the classical baselines (SVM, logistic regression, MLP, NB).

A baseline sees one fixed-length row per component, built from the bundle's tensors:

1. own window statistics, per channel: masked mean, std, max, p90, trend (last quarter minus first
   quarter), the change at the largest step (the CUSUM-weighted split point: a fault's onset), coverage,
   and the share of time at the window's ceiling (a link flat-topping at its rate);
2. peer-relative values: the component's mean and max minus the median of its same-kind peers in the
   bundle, of its peers on the same host, and (disks) of the disks in the same disk group — a fault is
   usually *one* component standing out from its siblings;
3. log-event counts: log1p of the events in the window, per event channel;
4. its static side features (with their masks); for a NIC, faults.md's nicinfo checks of a vSAN uplink
   (slower than the cluster's other vSAN uplinks, half duplex), weighted by its share of vSAN traffic;
5. context: the mean/max of its host's channels (nic, diskgroup, disk), of its disk group's (disk),
   the median/max/min over hosts and over disk groups of those (cluster: a resync shows on several
   hosts at once), and the cluster's channels and static context (every kind);
6. the expert rules (models/rules_margins.py), one column per fault of its kind: the rule's margin
   clipped to +-1, so "fires by a doubling or more" reads the same whichever cause made it fire (a 1 GbE
   link and a 100 Mb/s link, one thread per disk and two). A model that learnt a fault through one
   cause's counters finds the other causes through this column (leave-one-cause-out, README).

Everything is vectorised numpy over (components, channels, T); one 4-host bundle takes a few ms.
No scikit-learn here: the CNNs read these rows at serving time, and importing scikit-learn costs
seconds (models/scalers.py holds the baselines' sklearn transformers).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

import numpy as np

from models.memo import per_bundle
from models.rules_margins import named_margins
from models.rules_read import mtu_below_peers
from pipeline.channels import KIND_CHANNELS, KIND_STATIC
from pipeline.tensors import BundleTensors, KindTensors
from vsandx.faults import COMPONENT_KINDS, faults_for_kind

STATS: Final = ("mean", "std", "max", "p90", "trend", "step", "cover", "ceiling")
PEER_STATS: Final = ("mean", "max")  # the stats compared with peers
_PEER_IDX: Final = [STATS.index(s) for s in PEER_STATS]
EVENT_CHANNELS: Final = {k: [i for i, c in enumerate(v) if c.startswith("ev.")] for k, v in KIND_CHANNELS.items()}


def _block_sums(x: np.ndarray, b: int) -> np.ndarray:
    """(R, T) -> (R, T // b): sums over consecutive blocks of b steps (a tail shorter than b dropped)."""
    nb = x.shape[1] // b
    out = x[:, 0 : nb * b : b].copy()
    for i in range(1, b):
        out += x[:, i : nb * b : b]
    return out


def _stats_2d(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """(R, T) series -> (R, len(STATS)). Masked entries of `values` are 0 (the pipeline's contract)."""
    r, t = values.shape
    m = mask.astype(np.float32)
    v = values  # 0 where masked
    count = m.sum(-1)
    safe = np.maximum(count, 1.0)
    mean = v.sum(-1) / safe
    std = np.sqrt(np.maximum((v * v).sum(-1) / safe - mean**2, 0.0))
    lowest = np.where(mask, values, np.float32(-np.inf))
    vmax = np.where(count > 0, lowest.max(-1), 0.0)
    # p90: one partition at a fixed rank serves the fully observed rows; partly observed ones are sorted.
    k90 = int(0.9 * (t - 1))
    p90 = np.partition(lowest, k90, axis=-1)[:, k90]
    part = np.flatnonzero((count > 0) & (count < t))
    if len(part):
        srt = np.sort(np.where(mask[part], values[part], np.float32(np.inf)), axis=-1)
        k = np.floor(0.9 * (count[part] - 1)).astype(np.int64)
        p90[part] = np.take_along_axis(srt, k[:, None], -1)[:, 0]
    p90 = np.where(count > 0, p90, 0.0)
    # Trend and step work on block sums (~48 blocks): the same answer at a fraction of the cost.
    b = max(1, t // 48)
    vs, ms = _block_sums(v, b), _block_sums(m, b)
    q = max(vs.shape[1] // 4, 1)
    trend = vs[:, -q:].sum(-1) / np.maximum(ms[:, -q:].sum(-1), 1.0) - vs[:, :q].sum(-1) / np.maximum(
        ms[:, :q].sum(-1), 1.0
    )
    # step: mean after minus mean before, at the split that maximises the CUSUM statistic
    # |diff| * sqrt(n_before * n_after / n) (plain |diff| would favour noisy splits at the edges).
    if vs.shape[1] > 1:
        cs, cn = np.cumsum(vs, -1)[:, :-1], np.cumsum(ms, -1)[:, :-1]
        tot, tn = vs.sum(-1, keepdims=True), ms.sum(-1, keepdims=True)
        na = tn - cn
        diff = (tot - cs) / np.maximum(na, 1.0) - cs / np.maximum(cn, 1.0)
        score = np.abs(diff) * np.sqrt(cn * na / np.maximum(tn, 1.0))
        step = np.take_along_axis(diff, score.argmax(-1)[:, None], -1)[:, 0]
    else:
        step = np.zeros(r, np.float32)
    cover = count / max(t, 1)
    # ceiling: share of observed steps within 0.05 of the window's max (5 % on log1p channels): a link
    # flat-topping at its rate or a CPU pinned at 100 % sits there; a bursty healthy series touches it once.
    ceiling = (mask & (values >= vmax[:, None] - 0.05)).sum(-1) / safe
    return np.stack([mean, std, vmax, p90, trend, step, cover, ceiling], -1).astype(np.float32)


def channel_stats(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """(n, C, T) values and mask -> (n, C, len(STATS)) masked window statistics (0 where no data)."""
    n, c, t = values.shape
    return _stats_2d(values.reshape(n * c, t), mask.reshape(n * c, t)).reshape(n, c, len(STATS))


def all_stats(bt: BundleTensors) -> dict[str, np.ndarray]:
    """channel_stats of every kind, computed in one pass over all series of the bundle."""
    kinds = [bt.kinds[k] for k in COMPONENT_KINDS]
    flat = _stats_2d(
        np.concatenate([kt.values.reshape(-1, kt.values.shape[-1]) for kt in kinds]),
        np.concatenate([kt.mask.reshape(-1, kt.mask.shape[-1]) for kt in kinds]),
    )
    out, at = {}, 0
    for kt in kinds:
        n, c = kt.values.shape[:2]
        out[kt.kind] = flat[at : at + n * c].reshape(n, c, len(STATS))
        at += n * c
    return out


def _minus_group_median(x: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """x (n, F) minus the median of the rows sharing its group id; rows with group -1 get 0.

    Vectorised: rows are scattered into a (groups, largest group, F) array padded with +inf, sorted
    along the group axis, and each group's median read at its own middle position(s)."""
    out = np.zeros_like(x)
    ok = groups >= 0
    if not ok.any():
        return out
    xs = x[ok]
    _, inv, cnt = np.unique(groups[ok], return_inverse=True, return_counts=True)
    order = np.argsort(inv, kind="stable")
    pos = np.empty(len(inv), np.int64)
    pos[order] = np.arange(len(inv)) - (np.cumsum(cnt) - cnt)[inv[order]]  # index within its group
    pad = np.full((len(cnt), int(cnt.max()), x.shape[1]), np.inf, x.dtype)
    pad[inv, pos] = xs
    pad.sort(axis=1)
    lo = np.take_along_axis(pad, ((cnt - 1) // 2)[:, None, None], 1)[:, 0]
    hi = np.take_along_axis(pad, (cnt // 2)[:, None, None], 1)[:, 0]
    out[ok] = xs - ((lo + hi) / 2)[inv]
    return out


def _mean_max(stats: np.ndarray) -> np.ndarray:
    """(n, C, STATS) -> (n, 2C): the per-channel mean and max, as context for other components."""
    n, c, _ = stats.shape
    return stats[..., _PEER_IDX].reshape(n, c * len(_PEER_IDX))


def _event_counts(kt: KindTensors) -> np.ndarray:
    """(n, E): log1p(events in the window) per event channel (the channel holds log1p(events/step))."""
    idx = EVENT_CHANNELS[kt.kind]
    ev = np.where(kt.mask[:, idx], np.expm1(kt.values[:, idx]), 0.0)
    return np.log1p(ev.sum(-1)).astype(np.float32)


# Statics only the expert rules read; a learnt model sees them masked out. vm_closed_loop reads a VM's
# closed loop through how its iops and latency counters wander, which our simulator renders its own way
# (an idle two-thread benchmark's steady counters score -0.5..-0.1, on noise alone): held-out one-thread
# clusters of leave-one-cause-out fold 0 scored 0.5-0.9, a range no training cluster had, and the served
# ensemble's low_oio recall there fell 0.82 -> 0.72 when the CNN read it (README). The rules read it with
# thresholds Little's law sets (models.rules_margins), not ones learnt from our noise. vm_inflight_spread
# reads that noise directly (how much a benchmark's in-flight level wanders is the counters' noise).
# vm_disk_oio (vscsiStats) is faults.md's "threads per disk" itself: a number with a meaning the rules
# read at a threshold, in the few bundles that carry a capture, not a column to learn a generator's from.
RULES_ONLY_STATIC: Final[dict[str, frozenset[str]]] = {
    "cluster": frozenset({"vm_closed_loop", "vm_inflight_spread", "vm_disk_oio"})
}
_LEARNT_STATIC: Final[dict[str, np.ndarray]] = {
    k: np.array([s not in RULES_ONLY_STATIC.get(k, ()) for s in names]) for k, names in KIND_STATIC.items()
}


def learnt_static_mask(kind: str, static_mask: np.ndarray) -> np.ndarray:
    """(n, S) bool: `static_mask` less the statics only the rules read (RULES_ONLY_STATIC)."""
    return static_mask & _LEARNT_STATIC[kind]


def _bundle_features(bt: BundleTensors) -> dict[str, np.ndarray]:
    """Per kind, an (n_components, n_features(kind)) float32 matrix; rows in `kinds[kind].ids` order."""
    stats = all_stats(bt)
    host_ctx = _mean_max(stats["host"])  # (n_hosts, 2C_host)
    dg_ctx = _mean_max(stats["diskgroup"])
    cl = bt.kinds["cluster"]
    cl_mask = learnt_static_mask("cluster", cl.static_mask[:1])
    cluster_ctx = np.concatenate([_mean_max(stats["cluster"])[:1], cl.static[:1] * cl_mask], 1)
    if cluster_ctx.shape[0] == 0:
        cluster_ctx = np.zeros((1, 2 * len(KIND_CHANNELS["cluster"]) + len(KIND_STATIC["cluster"])), np.float32)
    rules = named_margins(bt)
    out: dict[str, np.ndarray] = {}
    for kind in COMPONENT_KINDS:
        kt, st = bt.kinds[kind], stats[kind]
        n = len(kt.ids)
        peer = _mean_max(st)
        parts = [
            st.reshape(n, st.shape[1] * len(STATS)),
            peer - np.median(peer, axis=0) if n else peer,
            _minus_group_median(peer, kt.host_index),
        ]
        if kind == "disk":
            parts.append(_minus_group_median(peer, kt.group_index))
        sm = learnt_static_mask(kind, kt.static_mask)
        parts += [_event_counts(kt), kt.static * sm, sm.astype(np.float32)]
        if kind == "nic":
            parts.append(_uplink_checks(kt))
        if kind in ("nic", "diskgroup", "disk"):
            parts.append(_gather(host_ctx, kt.host_index))
        if kind == "disk":
            parts.append(_gather(dg_ctx, kt.group_index))
        if kind == "cluster":  # cluster faults show on several hosts (resync) or every group (low oio)
            parts += [_spread(host_ctx, n), _spread(dg_ctx, n)]
        parts.append(np.repeat(cluster_ctx, n, axis=0))
        parts.append(np.stack([np.clip(rules[f], -1.0, 1.0).reshape(n) for f in faults_for_kind(kind)], 1))
        f = np.concatenate(parts, axis=1)
        out[kind] = np.nan_to_num(f, nan=0.0, posinf=0.0, neginf=0.0).astype(np.float32)
    return out


# Every member of an ensemble reads the same rows of the bundle being diagnosed: computed once.
bundle_features = per_bundle(_bundle_features)
_RECENT, _RECENT_SIZE = bundle_features.entries, bundle_features.size


@contextmanager
def hold_features(n: int) -> Iterator[None]:
    """Within the block keep the engineered rows and the rule margins (named_margins, which the rules
    member reads too) of the last `n` bundles: a training run or benchmark that reads the same datasets
    in every model, refit and scoring pass computes each bundle's once."""
    with bundle_features.holding(n), named_margins.holding(n):
        yield


UPLINK_CHECKS: Final = ("uplink:slow_for_design", "uplink:half_duplex", "uplink:mtu_below_peers")


def _uplink_checks(kt: KindTensors) -> np.ndarray:
    """(n_nics, 3): faults.md's nicinfo checks of a vSAN uplink, each weighted by the NIC's share of its
    host's vSAN traffic (a 1 GbE management port is normal): log2 of how far its speed falls below the
    fastest vSAN uplink of the cluster (the speed the network was designed for) or its own rated speed,
    up to 1; half duplex; an MTU below the other hosts' vSAN uplinks' (rules_read.mtu_below_peers: a
    1500 management or VM port beside 9000 vSAN ports is normal, a 1500 vSAN uplink among 9000 ones is
    not). 0 where unknown (no nicinfo row, no logged link up)."""
    names = KIND_STATIC["nic"]
    st = np.where(kt.static_mask, kt.static, np.nan)  # (n, S)
    speed, duplex, rated = (st[:, names.index(c)] for c in ("speed_gbps", "duplex_full", "rated_gbps"))
    share = np.nan_to_num(st[:, names.index("traffic_share")])
    uplink = share >= 0.5  # carries most of its host's vSAN traffic
    ref = uplink & np.isfinite(speed) & (speed > 0)
    design = speed[ref].max() if ref.any() else np.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        # saturated at one doubling: 1 GbE and 100 Mb/s on a 10 GbE design are the same finding, and a
        # model shown only one of them must not learn how many doublings "slow" takes. Below the port's
        # own rating counts as below the design (a cluster whose known uplinks all run at 1 Gb/s).
        slow = np.clip(np.log2(np.fmax(design, rated) / speed), 0, 1)
    out = np.stack([share * slow, share * (1 - duplex), share * mtu_below_peers(kt)], 1)
    return np.nan_to_num(out, nan=0.0, posinf=0.0, neginf=0.0).astype(np.float32)


def _spread(ctx: np.ndarray, n: int) -> np.ndarray:
    """(m, F) per-host (or per-group) context -> (n, 3F): its median, max and min over the m rows."""
    if len(ctx) == 0:
        return np.zeros((n, 3 * ctx.shape[1]), np.float32)
    agg = np.concatenate([np.median(ctx, 0), ctx.max(0), ctx.min(0)])
    return np.repeat(agg[None], n, axis=0)


def _gather(ctx: np.ndarray, index: np.ndarray) -> np.ndarray:
    """Rows of ctx by index, zeros where index is -1 (no parent)."""
    padded = np.concatenate([ctx, np.zeros((1, ctx.shape[1]), ctx.dtype)], 0)
    return padded[np.where(index >= 0, index, len(ctx))]


def feature_names(kind: str) -> list[str]:
    """Column names of bundle_features(...)[kind], for inspection and feature importances."""
    ch = KIND_CHANNELS[kind]

    def grid(prefix: str, channels: tuple[str, ...], stats: tuple[str, ...]) -> list[str]:
        return [f"{prefix}{c}:{s}" for c in channels for s in stats]

    names = grid("", ch, STATS) + grid("vs_kind:", ch, PEER_STATS) + grid("vs_host:", ch, PEER_STATS)
    if kind == "disk":
        names += grid("vs_group:", ch, PEER_STATS)
    names += [f"count:{ch[i]}" for i in EVENT_CHANNELS[kind]]
    names += [f"static:{s}" for s in KIND_STATIC[kind]] + [f"has:{s}" for s in KIND_STATIC[kind]]
    if kind == "nic":
        names += list(UPLINK_CHECKS)
    if kind in ("nic", "diskgroup", "disk"):
        names += grid("host:", KIND_CHANNELS["host"], PEER_STATS)
    if kind == "disk":
        names += grid("group:", KIND_CHANNELS["diskgroup"], PEER_STATS)
    if kind == "cluster":
        for over in ("host", "diskgroup"):
            for agg in ("median", "max", "min"):
                names += grid(f"{over}s_{agg}:", KIND_CHANNELS[over], PEER_STATS)
    names += grid("cluster:", KIND_CHANNELS["cluster"], PEER_STATS) + [f"cluster:{s}" for s in KIND_STATIC["cluster"]]
    return names + [f"rule:{f}" for f in faults_for_kind(kind)]


def stack_features(
    X: list[BundleTensors] | tuple[BundleTensors, ...],
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Features of many bundles stacked per kind, with each row's bundle index."""
    per = [bundle_features(bt) for bt in X]
    feats = {k: np.concatenate([p[k] for p in per], 0) for k in COMPONENT_KINDS}
    owner = {k: np.concatenate([np.full(len(p[k]), i, np.int64) for i, p in enumerate(per)]) for k in COMPONENT_KINDS}
    return feats, owner
