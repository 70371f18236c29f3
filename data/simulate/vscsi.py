"""vscsiStats `-p all -c` captures: what an engineer collects on a suspect VM's virtual disks.

Some bundles carry one: an engineer ran vscsiStats on one host for the VMs in question (a benchmark's
where it runs one, else its busiest) over the last 10-30 minutes of the window. Each virtual disk gets
vscsiStats' histograms of I/O lengths, latency and outstanding I/Os (all, Read, Write), with its buckets
and its integer `mean` line. Outstanding I/Os when a new one is issued count the new one: a closed loop
of N threads on the disk issues each I/O as the last one completes, beside its N-1 others (N); a paced
guest's arrivals find Little's law's in-flight level (1 + Poisson(iops x latency)). The draws use their
own stream (`capture_rng`), so a bundle without a capture is byte for byte what it was before captures
existed.
"""

from __future__ import annotations

import numpy as np

from data.simulate.physics import State
from data.simulate.topology import Cluster, Rng
from data.simulate.workload import Workload

LENGTHS = (512, 1024, 2048, 4095, 4096, 8191, 8192, 16383, 16384, 32768, 49152, 65535, 65536, 81920, 131072,
           262144, 524288, 524288)  # fmt: skip
LATENCY_US = (1, 10, 100, 500, 1000, 5000, 15000, 30000, 50000, 100000, 100000)
OUTSTANDING = (1, 2, 4, 6, 8, 12, 16, 20, 24, 28, 32, 64, 64)
_SAMPLE = 4000  # values drawn per histogram; frequencies are scaled to the capture's I/O count


def capture_rng(profile: str, seed: int, index: int) -> Rng:
    return np.random.default_rng([0x76736369, int(profile == "field"), seed, index])


def _hist(title: str, target: str, xs: np.ndarray, count: int, buckets: tuple[int, ...]) -> list[str]:
    """One histogram: min/max/mean (integers, as vscsiStats prints them), count, then (frequency, limit)
    rows; the last limit repeats the one before it and holds everything past it."""
    if count <= 0 or not len(xs):
        xs, count = np.zeros(1), 0
    edges = np.searchsorted(np.asarray(buckets[:-1], float), xs, side="left")  # bucket i: x <= buckets[i]
    freq = np.bincount(np.minimum(edges, len(buckets) - 1), minlength=len(buckets)) * (count / len(xs))
    freq = np.floor(freq).astype(int)
    freq[int(np.argmax(freq))] += count - int(freq.sum())  # the rounding's remainder in the commonest
    head = [f"Histogram: {title},{target}", f"min,{int(xs.min())}", f"max,{int(xs.max())}",
            f"mean,{int(xs.mean()) if count else 0}", f"count,{count}", "Frequency,Histogram Bucket Limit"]  # fmt: skip
    return head + [f"{int(f)},{b}" for f, b in zip(freq, buckets, strict=True)]


def _disk(rng: Rng, wl: Workload, st: State, v: int, span: slice, dt: float, target: str) -> list[str]:
    """The nine histograms of one virtual disk of VM v over the capture's samples."""
    n_vmdk = max(int(wl.n_vmdk[v]), 1)
    ir, iw = st.iops_r[span, v] / n_vmdk, st.iops_w[span, v] / n_vmdk  # (K,) per disk
    lr, lw = st.lat_r[span, v], st.lat_w[span, v]  # s
    counts = (int(np.sum(ir) * dt), int(np.sum(iw) * dt))
    closed = bool(np.isinf(wl.rate[span, v]).mean() > 0.5)
    # a closed loop holds its threads' I/Os out; a paced guest holds Little's law's iops x latency
    inflight = float(np.median(wl.oio[span, v]) / n_vmdk) if closed else float(np.mean(ir * lr + iw * lw))
    out: list[str] = []

    def outstanding(k: int) -> np.ndarray:
        if closed:  # N threads: the N-1 others are out as it issues; now and then one more completed
            n = max(round(inflight), 1)
            return np.maximum(n - (rng.random(k) < 0.08) * rng.integers(1, n + 1, k), 1).astype(float)
        return 1.0 + rng.poisson(inflight, k)

    k = _SAMPLE
    sizes = (np.full(k, float(wl.size_r[v])), np.full(k, float(wl.size_w[v])))
    lat_us = tuple(1e6 * rng.choice(x, k) * np.exp(rng.normal(0, 0.35, k)) for x in (lr, lw))
    oio = (outstanding(k), outstanding(k))
    share_r = counts[0] / max(sum(counts), 1)
    both = rng.random(k) < share_r
    for title, pair, buckets in (
        ("IO lengths of {}commands", sizes, LENGTHS),
        ("latency of {}IOs in Microseconds (us)", lat_us, LATENCY_US),
        ("number of outstanding {}IOs when a new {}IO is issued", oio, OUTSTANDING),
    ):
        mixed = np.where(both, pair[0], pair[1])
        for part, xs, count in (
            ("", mixed, sum(counts)),
            ("Read ", pair[0], counts[0]),
            ("Write ", pair[1], counts[1]),
        ):
            out += _hist(title.format(part, part), target, xs, count, buckets)
    return out


def vscsi_files(
    cluster: Cluster, wl: Workload, st: State, dt: float, files: dict[str, bytes], rng: Rng
) -> dict[str, bytes]:
    """A capture on one uploaded host, or none: a third of lab bundles and a quarter of field ones carry
    one. The engineer captures the VMs in question: a benchmark's (HCIBench's `hci-` VMs) where the
    host runs some, else its busiest; one to three VMs, one or two disks each."""
    if rng.random() >= (0.35 if cluster.profile == "lab" else 0.25):
        return {}
    folders = sorted({p.split("/", 1)[0] for p in files if p.startswith("esx-")})
    bench = np.array([nm.startswith("hci-") for nm in wl.names])
    up = [h for h, host in enumerate(cluster.hosts) if any(f.startswith(f"esx-{host.name}-") for f in folders)]
    hosts = [h for h in up if (bench & (wl.client == h)).any()] or [h for h in up if (wl.client == h).any()]
    if not hosts:
        return {}
    h = int(rng.choice(hosts))
    n = st.iops_r.shape[0]
    span = slice(max(0, n - max(1, int(rng.uniform(600, 1800) // dt))), n)
    mine = wl.client == h
    vms = np.flatnonzero(mine & bench) if (mine & bench).any() else np.flatnonzero(mine)
    busy = (st.iops_r[span][:, vms] + st.iops_w[span][:, vms]).mean(0)
    lines: list[str] = []
    for v in vms[np.argsort(-busy)][: int(rng.integers(1, 4))]:
        world = int(rng.integers(2_090_000, 2_400_000))
        for d in range(min(int(wl.n_vmdk[v]), int(rng.integers(1, 3)))):
            target = f"virtual machine worldGroupID,{world},virtual disk handleID,{8192 + d} (scsi0:{d})"
            lines += _disk(rng, wl, st, int(v), span, dt, target)
    top = next(f for f in folders if f.startswith(f"esx-{cluster.hosts[h].name}-"))
    return {f"{top}/vscsiStats-helper__{cluster.hosts[h].name}.txt": ("\n".join(lines) + "\n").encode()}
