"""Guest workload: VMs, where their data lives, and what they ask of the cluster over time.

Closed-loop VMs (benchmarks: HCIBench threads, backup streams) keep `oio` I/Os outstanding, so their
iops follow from latency by Little's law; open-loop VMs (OLTP, VDI users) ask for `rate` iops and
queue up to `oio` when the cluster is slow.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from data.simulate import actors as act
from data.simulate.plan import Plan
from data.simulate.topology import Cluster, Rng

KIB = 1024


@dataclass
class Workload:
    names: list[str]  # display name per VM
    client: np.ndarray  # (V,) host index of the VM (its DOM client)
    oio: np.ndarray  # (T, V) I/Os the VM keeps outstanding at most (threads, queue depth)
    rate: np.ndarray  # (T, V) iops it asks for; inf for a pure closed loop (iops = oio / latency)
    rf: np.ndarray  # (T, V) read fraction
    size_r: np.ndarray  # (V,) bytes
    size_w: np.ndarray  # (V,) bytes
    locality: np.ndarray  # (V,) 0..1, how cache-friendly its reads are
    n_vmdk: np.ndarray  # (V,)
    read_w: np.ndarray  # (V, G) share of the VM's reads served by each disk group
    write_w: np.ndarray  # (V, G) copies of each write landing on each disk group (rows sum to 2)
    owner_w: np.ndarray  # (V, H) share of the VM's I/O whose DOM owner is on each host
    net: dict[str, np.ndarray]  # (V, H) per byte / per I/O: tx_r rx_r tx_w rx_w cross_r cross_w
    mix: str  # human-readable description
    wb_fill: np.ndarray  # (V,) write-buffer fill at which LSOM throttles this writer; NaN: never
    wb_group: np.ndarray  # (V,) the group whose fill throttles it; -1: none


def smooth(rng: Rng, n: int, cols: int, knots: int, lo: float, hi: float) -> np.ndarray:
    """(n, cols) smooth random curves in [lo, hi]: random knots, linear interpolation."""
    k = max(2, knots)
    vals = rng.uniform(lo, hi, size=(k, cols))
    pos = np.linspace(0, k - 1, n)
    i = np.minimum(pos.astype(int), k - 2)
    frac = (pos - i)[:, None]
    return vals[i] * (1 - frac) + vals[i + 1] * frac


def _bursts(rng: Rng, n: int, cols: int, per_col: float) -> np.ndarray:
    """(n, cols) multiplicative bursts (boot storms, batch jobs): 1 outside, 1.5-4x inside."""
    out = np.ones((n, cols))
    for c in range(cols):
        for _ in range(rng.poisson(per_col)):
            a = int(rng.integers(n))
            w = int(rng.integers(max(2, n // 40), max(3, n // 8)))
            out[a : a + w, c] *= rng.uniform(1.5, 4.0)
    return out


# kind: (read fraction, read size, write size, locality of reads)
PROFILES: dict[str, tuple[float, int, int, float]] = {
    "oltp": (0.7, 8 * KIB, 8 * KIB, 0.8),
    "vdi": (0.85, 4 * KIB, 8 * KIB, 0.9),
    "seqwrite": (0.02, 256 * KIB, 256 * KIB, 0.3),
    "hcibench": (0.7, 4 * KIB, 4 * KIB, 0.5),
    "fileserver": (0.6, 64 * KIB, 64 * KIB, 0.6),
}
HCIBENCH = ((0.7, 4), (1.0, 4), (0.0, 64), (0.5, 8), (0.0, 256), (0.9, 32))  # (read share, KiB)


def _placement(
    cluster: Cluster, client: np.ndarray, n_vmdk: np.ndarray, rng: Rng, pin_dg: dict[int, int]
) -> dict[str, np.ndarray]:
    """Replica placement (RAID-1, FTT=1): each vmdk has two replicas on disk groups of two hosts.

    Returns (V, G) read/write shares, (V, H) owner shares and the network coefficients: bytes each
    host sends/receives per byte the VM reads/writes, and how often an I/O crosses each host's uplink.
    """
    dgs = cluster.disk_groups
    n_h, n_g, n_v = len(cluster.hosts), len(dgs), len(client)
    by_host: list[list[int]] = [[] for _ in range(n_h)]
    for g, (h, _) in enumerate(dgs):
        by_host[h].append(g)
    m = {k: np.zeros((n_v, n_g)) for k in ("read_w", "write_w")}
    m.update({k: np.zeros((n_v, n_h)) for k in ("owner_w", "tx_r", "rx_r", "tx_w", "rx_w", "cross_r", "cross_w")})
    for v in range(n_v):
        k = int(n_vmdk[v])
        w = 1.0 / k
        c = int(client[v])
        spread = int(rng.integers(n_g))
        for i in range(k):
            ha, hb = (int(x) for x in rng.choice(n_h, size=2, replace=False))
            a, b = int(rng.choice(by_host[ha])), int(rng.choice(by_host[hb]))
            if v in pin_dg:  # a fault's actor keeps one replica of every vmdk on that group, the other
                a = pin_dg[v]  # copies spread evenly over the groups of the other hosts
                ha = dgs[a][0]
                others = [g for g in range(n_g) if dgs[g][0] != ha]
                b = others[(spread + i) % len(others)]
                hb = dgs[b][0]
            m["read_w"][v, a] += 0.5 * w
            m["read_w"][v, b] += 0.5 * w
            m["write_w"][v, a] += w
            m["write_w"][v, b] += w
            # vSAN moves the DOM owner next to the client once it sees I/O; otherwise a replica host
            o = c if rng.random() < 0.8 else (ha if rng.random() < 0.5 else hb)
            m["owner_w"][v, o] += w
            for r in (ha, hb):  # reads: half from each replica to the owner, then to the client
                if r != o:
                    _hop(m, "r", v, r, o, 0.5 * w, 0.5 * w)
                if r != o:  # writes: the owner sends a copy to each replica, in parallel
                    _hop(m, "w", v, o, r, w, 0.6 * w)
            if o != c:
                _hop(m, "r", v, o, c, w, w)
                _hop(m, "w", v, c, o, w, w)
    return m


def _hop(m: dict[str, np.ndarray], io: str, v: int, src: int, dst: int, share: float, cross: float) -> None:
    """One network hop src -> dst for VM v: `share` of its bytes, `cross` uplink traversals per I/O."""
    m[f"tx_{io}"][v, src] += share
    m[f"rx_{io}"][v, dst] += share
    m[f"cross_{io}"][v, src] += cross
    m[f"cross_{io}"][v, dst] += cross


def _tame(
    cluster: Cluster,
    rate: np.ndarray,
    rf: np.ndarray,
    size_r: np.ndarray,
    size_w: np.ndarray,
    locality: np.ndarray,
    m: dict[str, np.ndarray],
    healthy: list[int],
) -> None:
    """Healthy guests stay within what each disk group absorbs (writes destaged, read misses on a
    spindle): an overloaded group would be an unlabelled fault. Scales `rate` in place."""
    groups = [g for _, g in cluster.disk_groups]
    destage = np.array([g.destage_mbs * 1e6 for g in groups])
    miss_cap = np.array(
        [sum(d.hw.par / (d.hw.svc_ms * 1e-3 + 64e3 / (d.hw.bw_mbs * 1e6)) for d in g.capacity) for g in groups]
    )
    miss = 1.0 - (0.6 + 0.38 * locality) if cluster.storage == "hybrid" else np.ones_like(locality)
    idx = np.array(healthy, dtype=int)
    if len(idx) == 0:
        return
    for _ in range(4):
        r = np.where(np.isfinite(rate[:, idx]), rate[:, idx], 0.0)
        wb = (r * (1 - rf[:, idx]) * size_w[idx]) @ m["write_w"][idx]  # (T, G) bytes/s
        rd = (r * rf[:, idx] * miss[idx]) @ m["read_w"][idx]  # (T, G) capacity-tier reads/s
        over = np.maximum(wb / (0.4 * destage), rd / (0.45 * miss_cap))  # (T, G)
        # each VM slows by the worst overload among the groups it touches
        touch = (m["write_w"][idx] + m["read_w"][idx]) > 0  # (V', G)
        worst = np.max(np.where(touch[None, :, :], over[:, None, :], 0.0), axis=2)  # (T, V')
        if worst.max() <= 1.0:
            return
        rate[:, idx] /= np.maximum(worst, 1.0)


def _budgets(cluster: Cluster) -> tuple[float, float]:
    """What the cluster sustains comfortably: guest write bytes/s and backend read iops."""
    w = sum(g.destage_mbs * 1e6 for _, g in cluster.disk_groups) / 2.0  # every write lands twice
    r = 0.0
    for _, g in cluster.disk_groups:
        cap = sum(d.hw.par / (d.hw.svc_ms * 1e-3) for d in g.capacity)
        r += cap / 0.3 if cluster.storage == "hybrid" else cap  # hybrid reads mostly hit the SSD cache
    n_h = len(cluster.hosts)
    link = cluster.link_mbps / 8 * 1e6 * n_h
    # vSAN's own CPU cost caps a host near 100k iops however fast the flash is
    return min(w, 0.25 * link), min(r, 60000.0 * n_h)


def build_workload(cluster: Cluster, plan: Plan, rng: Rng) -> Workload:
    n = plan.grid.n
    n_h = len(cluster.hosts)
    faults = {f.fault: f for f in plan.faults}
    if cluster.profile == "lab":
        base = "hcibench" if rng.random() < 0.6 else str(rng.choice(["oltp", "vdi", "fileserver"]))
        kinds = [base] * (2 * n_h)
        if rng.random() < 0.3:  # the lab's backup job runs in some experiments whatever is injected
            kinds[-1] = "seqwrite"
    else:
        mix = rng.choice(list(PROFILES), size=int(rng.integers(1, 4)), replace=False)
        kinds = [str(mix[i % len(mix)]) for i in range(n_h * int(rng.integers(1, 4)))]
    low = faults.get("cluster.low_oio")
    n_bg = 0
    if low is not None:  # a small benchmark, a VM or two per host, 1-2 threads per disk; maybe light guests
        n_bg = int(rng.integers(0, n_h + 1)) if low.severity < 0.85 else 0
        kinds = ["hcibench"] * int(rng.integers(max(1, n_h // 2), n_h + 1))
        kinds += [str(rng.choice(["oltp", "vdi", "fileserver"])) for _ in range(n_bg)]
    client = [i % n_h for i in range(len(kinds))]
    # fault actors: extra VMs whose I/O starts at the fault's onset (or a benign burst's start)
    pin: dict[int, int] = {}
    actor: dict[int, tuple[str, act.Driver]] = {}
    for kind, ev in act.drivers(plan):
        for _ in range(2):
            pin[len(kinds)] = ev.dg
            actor[len(kinds)] = (kind, ev)
            kinds.append("hcibench" if kind == "disk.hotspot" else "seqwrite")
            client.append(int(rng.integers(n_h)))
    v = len(kinds)
    clients = np.array(client)
    n_vmdk = np.array(
        [
            8 if j in actor else int(rng.integers(4, 9)) if k == "hcibench" else int(rng.integers(1, 4))
            for j, k in enumerate(kinds)
        ]
    )
    m = _placement(cluster, clients, n_vmdk, rng, pin)

    rf = np.empty((n, v))
    size_r, size_w, locality = np.empty(v), np.empty(v), np.empty(v)
    oio = np.empty((n, v))
    level = smooth(rng, n, v, max(3, n // 30), 0.6, 1.3)
    hours = plan.grid.dt * np.arange(n) / 3600.0
    diurnal = 1.0 + 0.35 * np.sin(2 * np.pi * (hours / 24.0 + rng.random()))
    bursts = _bursts(rng, n, v, 0.4 if cluster.profile == "field" else 0.1)
    share = rng.lognormal(0.0, 0.4, size=v)
    share /= share.sum()
    w_budget, r_budget = _budgets(cluster)
    u = rng.uniform(0.08, 0.4)  # how hard the guests push, as a share of what the cluster sustains
    if low is not None:  # devices from idle to moderately busy: the milder, the busier
        u = rng.uniform(0.03, 0.2) * (1.15 - low.severity)
    # an under-driven benchmark is a small-block one: with large blocks one thread already fills the pipe
    profiles = HCIBENCH[:2] + HCIBENCH[3:4] if "cluster.low_oio" in faults else HCIBENCH
    hb_read, hb_kib = profiles[int(rng.integers(len(profiles)))]
    threads = int(low.param) if low is not None else int(rng.choice([2, 4, 8, 16]))
    hb_start = (
        faults["cluster.low_oio"].onset
        if "cluster.low_oio" in faults
        else (0 if rng.random() < 0.6 else int(rng.integers(n // 2)))
    )
    rate = np.empty((n, v))
    for j, k in enumerate(kinds):
        r, sr, sw, loc = PROFILES[k]
        if k == "hcibench":
            r, sr, sw = (0.97, 4 * KIB, 4 * KIB) if j in actor else (hb_read, hb_kib * KIB, hb_kib * KIB)
        rf[:, j] = np.clip(r + (rng.normal(0, 0.03) + 0.04 * (level[:, j] - 1)) * (0 < r < 1), 0, 1)
        size_r[j], size_w[j], locality[j] = sr, sw, np.clip(loc + rng.normal(0, 0.08), 0.05, 0.98)
        # the iops that keep this VM's share of writes and reads within u of the budgets
        iops = share[j] * u * min(w_budget / max(1e-3, (1 - r) * sw), r_budget / max(1e-3, r))
        if k == "hcibench":  # a steady benchmark: its threads, paced at its io-rate setting
            oio[:, j] = threads * n_vmdk[j]
            rate[:, j] = np.inf if "cluster.low_oio" in faults else iops
            oio[:hb_start, j] = 0.0
        elif k == "seqwrite":  # a backup stream, throttled by its source
            oio[:, j] = 8.0 * n_vmdk[j]
            rate[:, j] = iops * level[:, j]
            if cluster.profile == "field" and rng.random() < 0.5:
                rate[: int(rng.integers(n)), j] = 0.0  # a backup window that starts mid-way
        else:  # interactive users: daily cycle and bursts
            oio[:, j] = 32.0 * n_vmdk[j]
            rate[:, j] = iops * level[:, j] * diurnal * np.minimum(bursts[:, j], 1.0 / max(u, 0.25))
    _tame(cluster, rate, rf, size_r, size_w, locality, m, [j for j in range(v) if j not in actor])
    wb_fill, wb_group = np.full(v, np.nan), np.full(v, -1, dtype=int)
    act.drive(cluster, n, plan.grid.dt, actor, oio, rate, size_w, n_vmdk, wb_fill, wb_group, rng)
    # display names as an admin would give them: nothing in a name tells who causes a fault
    stems = {
        "oltp": ("sql", "oradb", "erp"),
        "vdi": ("vdi-pool", "horizon-vm"),
        "seqwrite": ("backup-proxy", "etl"),
        "hcibench": ("hci-vdbench", "hci-fio"),
        "fileserver": ("fs", "nas-gw"),
    }
    names = [f"{stems[k][j % len(stems[k])]}-{j + 1:02d}" for j, k in enumerate(kinds)]
    desc = ",".join(sorted(set(kinds)))
    if "hcibench" in kinds:
        desc += f" (hcibench {hb_kib}K {int(hb_read * 100)}% read, {threads} threads/disk)"
    net = {k: m[k] for k in ("tx_r", "rx_r", "tx_w", "rx_w", "cross_r", "cross_w")}
    return Workload(
        names,
        clients,
        oio,
        rate,
        rf,
        size_r,
        size_w,
        locality,
        n_vmdk,
        m["read_w"],
        m["write_w"],
        m["owner_w"],
        net,
        desc,
        wb_fill,
        wb_group,
    )
