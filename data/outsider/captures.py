"""Side captures an engineer takes during the problem: esxtop batch CSV and vscsiStats histograms."""

from __future__ import annotations

import datetime as dt

import numpy as np

from data.outsider.counters import Counters
from data.outsider.layout import Host, Rng
from data.outsider.scenario import Scenario

FILLER = (
    "Memory\\Memory Overcommit (1 Minute Avg)",
    "Memory\\Machine MBytes",
    "Memory\\Kernel MBytes",
    "Memory\\Free MBytes",
    "Physical Cpu Load\\Cpu Load (1 Minute Avg)",
    "Physical Cpu Load\\Cpu Load (5 Minute Avg)",
    "Memory\\Swap MBytes Read/sec",
)
DISK_CTR = (
    "Commands/sec",
    "Reads/sec",
    "Writes/sec",
    "MBytes Read/sec",
    "Average Driver MilliSec/Command",
    "Average Kernel MilliSec/Command",
    "Average Guest MilliSec/Command",
    "Average Queue MilliSec/Command",
)
NET_CTR = (
    "Packets Transmitted/sec",
    "MBits Transmitted/sec",
    "Packets Received/sec",
    "MBits Received/sec",
    "% Outbound Packets Dropped",
    "% Received Packets Dropped",
)
CPU_CTR = ("% Used", "% Run", "% Ready", "% Wait")


def esxtop(rng: Rng, sc: Scenario, c: Counters, h: int, at: int) -> tuple[str, bytes]:
    """An esxtop -b capture on host h starting at sample `at`; returns (host name written, bytes)."""
    host: Host = sc.cluster.hosts[h]
    step = int(rng.choice([2, 5, 5, 10, 15]))
    n = int(rng.integers(20, 180))
    t0 = sc.start + dt.timedelta(seconds=at * sc.interval + int(rng.integers(0, sc.interval)))
    idx = np.minimum((at + (np.arange(n) * step) // sc.interval).astype(int), sc.T - 1)
    label = str(rng.choice([host.name, host.name.split(".")[0], "localhost.home", "localhost"]))
    cols: list[str] = []
    vals: list[np.ndarray] = []

    def add(name: str, v: np.ndarray, rate: bool = False) -> None:
        v = np.maximum(v, 0.0).astype(np.float64)
        if rate:
            v = v.copy()
            v[0] = 0.0
        cols.append(f"\\\\{label}\\{name}")
        vals.append(v)

    jit = lambda: np.exp(rng.normal(0, 0.15, n))  # noqa: E731
    for k, name in enumerate(FILLER[: int(rng.integers(2, len(FILLER) + 1))]):
        add(name, np.full(n, float(rng.uniform(0.1, 9000))) * (1 + 0.01 * k))
    util = c.cpu_util[h][idx] if c.cpu_util is not None else np.full(n, 30.0)
    for p in range(int(rng.integers(2, 6))):
        add(f"Physical Cpu({p})\\% Util Time", np.clip(util * jit(), 0, 100))
    add("Physical Cpu(_Total)\\% Util Time", np.clip(util * np.exp(rng.normal(0, 0.03, n)), 0, 100))
    for d in host.disks:
        davg, kavg, iops, rs = (x[idx] for x in c.disk_lat[d.uuid])
        io = iops * jit()
        dv = davg / 1000 * jit()
        kv = kavg / 1000 * jit()
        for ctr, v in zip(
            DISK_CTR, (io, io * rs, io * (1 - rs), io * rs * 0.03, dv, kv, dv + kv, kv * 0.5), strict=True
        ):
            add(f"Physical Disk SCSI Device({d.dev})\\{ctr}", v, rate=ctr.endswith("/sec"))
    for k, nic in enumerate(host.nics):
        if (h, nic.name) not in c.nic_mbps:
            continue
        mb = c.nic_mbps[(h, nic.name)][idx] * jit()
        drop = c.nic_drop[(h, nic.name)][idx] * jit()
        port = f"{sc.cluster.portset}:{(2214592512 if 'Dvs' in sc.cluster.portset else 33554432) + 4 + k}:{nic.name}"
        pk = mb * 1e6 / 8 / 4000
        for ctr, v in zip(NET_CTR, (pk * 0.9, mb * 0.9, pk, mb, np.zeros(n), drop), strict=True):
            add(f"Network Port({port})\\{ctr}", v, rate=ctr.endswith("/sec"))
    rdy = c.ents[f"vsan-cpu:{host.uuid}"]["readyPct"][idx]
    groups = [(1, "system"), (2, "vim"), (3, "helper"), (4, "drivers")]
    groups += [(int(rng.integers(100000, 9999999)), v.name) for v in sc.cluster.vms if v.host == h][:6]
    for gid, gname in groups:
        r = rdy * jit() * (1.0 if gid > 4 else 0.3)
        u = np.clip(util * rng.uniform(0.05, 0.6) * jit(), 0, 800)
        for ctr, v in zip(CPU_CTR, (u, u * 1.05, np.clip(r, 0, 100), np.clip(100 - u - r, 0, 100)), strict=True):
            add(f"Group Cpu({gid}:{gname})\\{ctr}", v)
    times = [t0 + dt.timedelta(seconds=step * i) for i in range(n)]
    dirty = rng.random() < 0.2
    trailing = not dirty and rng.random() < 0.5
    if dirty:
        hdr = ["(PDH-CSV 4.0) (UTC)(0)", *cols]
        rows = [
            ",".join(
                [f"{t.month}/{t.day}/{t.year} {t.hour}:{t.minute:02d}"]
                + [f"{float(v[i]):.2f}".rstrip("0").rstrip(".") for v in vals]
            )
            for i, t in enumerate(times)
        ]
        text = "\r\n".join([",".join(hdr), *rows]) + "\r\n"
    else:
        q = lambda s: '"' + s + '"'  # noqa: E731
        tail = "," + q("") if trailing else ""
        head = ",".join(q(x) for x in ["(PDH-CSV 4.0) (UTC)(0)", *cols]) + tail
        rows = [
            ",".join([q(t.strftime("%m/%d/%Y %H:%M:%S"))] + [q(f"{float(v[i]):.2f}") for v in vals]) + tail
            for i, t in enumerate(times)
        ]
        pre = ["esxtop: running in batch mode"] if rng.random() < 0.15 else []
        text = "\n".join([*pre, head, *rows]) + "\n"
    return label, text.encode()


BUCKETS_LAT = (1, 10, 100, 500, 1000, 5000, 15000, 30000, 50000, 100000, 100000)
BUCKETS_OIO = (1, 2, 4, 6, 8, 12, 16, 20, 24, 28, 32, 64, 64)


def vscsistats(rng: Rng, sc: Scenario, c: Counters, h: int) -> str:
    host = sc.cluster.hosts[h]
    ent = c.ents[f"host-domclient:{host.uuid}"]
    lat_r, lat_w = float(np.median(ent["latencyAvgRead"][-10:])), float(np.median(ent["latencyAvgWrite"][-10:]))
    oio = float(np.median(ent["oio"][-10:])) / max(1, sum(v.ndisks for v in sc.cluster.vms if v.host == h))
    wg, hd = int(rng.integers(2090000, 2150000)), int(rng.integers(8192, 8300))
    tag = f",virtual machine worldGroupID,{wg},virtual disk handleID,{hd} (scsi0:{int(rng.integers(0, 4))})"
    out: list[str] = []

    def hist(title: str, mean: float, buckets: tuple[int, ...], count: int) -> None:
        xs = np.exp(rng.normal(np.log(max(mean, 1.0)), 0.6, count))
        freq = np.histogram(np.clip(xs, 0, buckets[-1] - 1), bins=[0, *buckets[:-1], np.inf])[0]
        out.append(f"Histogram: {title}{tag}")
        out.extend(
            [
                f"min,{int(xs.min())}",
                f"max,{int(xs.max())}",
                f"mean,{int(xs.mean())}",
                f"count,{count}",
                "Frequency,Histogram Bucket Limit",
            ]
        )
        out.extend(f"{int(f)},{b}" for f, b in zip(freq, buckets, strict=True))

    cnt = int(rng.integers(2000, 60000))
    hist("latency of IOs in Microseconds (us)", 0.5 * (lat_r + lat_w), BUCKETS_LAT, cnt)
    hist("latency of Read IOs in Microseconds (us)", lat_r, BUCKETS_LAT, cnt // 2)
    hist("latency of Write IOs in Microseconds (us)", lat_w, BUCKETS_LAT, cnt // 2)
    hist("number of outstanding IOs when a new IO is issued", max(oio, 1.0), BUCKETS_OIO, cnt)
    return "\n".join(out) + "\n"
