"""esxtop batch captures (`esxtop -b -d D -n N`) of one host, taken late in the window while the problem is on."""

from __future__ import annotations

import datetime as dt

import numpy as np

from data.cleanroom.metrics import Entities
from data.cleanroom.scenario import Plan
from data.cleanroom.topology import Cluster, Rng


def capture(rng: Rng, cl: Cluster, p: Plan, ent: Entities, h: int, header_host: str) -> bytes:
    tl = p.tl
    host = cl.hosts[h]
    delay = int(rng.choice([2, 5, 5, 5, 10, 15, 60]))
    rows = int(rng.integers(12, 90))
    span = tl.n * tl.interval
    t0 = float(rng.uniform(0.55, 0.95)) * span - rows * delay
    t0 = max(0.0, min(t0, span - rows * delay - 1))
    times = t0 + np.arange(rows) * delay
    idx = np.clip((times // tl.interval).astype(int), 0, tl.n - 1)

    def series(key: str, label: str) -> np.ndarray:
        x = ent[key][label][idx]
        return np.asarray(np.nan_to_num(x, nan=0.0) * np.exp(0.08 * rng.standard_normal(rows)))

    cols: list[str] = []
    data: list[np.ndarray] = []
    rate: list[bool] = []

    def add(obj: str, counter: str, values: np.ndarray, is_rate: bool = True) -> None:
        cols.append(f"\\\\{header_host}\\{obj}\\{counter}")
        data.append(np.clip(values, 0, None))
        rate.append(is_rate)

    util = series(f"host-cpu:{host.uuid}", "pcpuUtilPct")
    add("Physical Cpu(_Total)", "% Processor Time", np.minimum(util * 0.93, 100), False)
    add("Physical Cpu(_Total)", "% Util Time", np.minimum(util, 100), False)
    ready = series(f"vsan-cpu:{host.uuid}", "readyPct")
    add("Group Cpu(1:system)", "% Ready", ready * rng.uniform(0.8, 1.2), False)
    add("Group Cpu(1:system)", "% Used", series(f"vsan-cpu:{host.uuid}", "usedPct") * 4, False)
    cpu_fault = next((f for f in p.faults if f.fid == "host.cpu_contention" and f.target == h), None)
    gid = int(rng.integers(200000, 900000))
    for v in [v for v in cl.vms if v.host == h]:
        gid += int(rng.integers(100, 5000))
        add(f"Group Cpu({gid}:{v.name})", "% Used", np.full(rows, float(rng.uniform(20, 180))), False)
        add(f"Group Cpu({gid}:{v.name})", "% Ready", ready * rng.uniform(0.6, 2.0), False)
    if cpu_fault is not None and cpu_fault.cause == "runaway_world":
        gid += int(rng.integers(100, 5000))
        add(f"Group Cpu({gid}:{rng.choice(['python.2101885', 'sfcb-vmware_bas.2103374', 'hostd.2099331'])})",
            "% Used", np.full(rows, float(rng.uniform(700, 2400))), False)  # fmt: skip
    for gi in host.dgs:
        g = cl.dgs[gi]
        for d in (g.cache, *g.capacity):
            key = f"{'cache' if d.is_cache else 'capacity'}-disk:{d.uuid}"
            obj = f"Physical Disk SCSI Device({d.dev})"
            cmds = series(key, "iopsDevRead") + series(key, "iopsDevWrite")
            davg = series(key, "latencyDevDAvg") / 1000.0
            kavg = np.abs(series(key, "latencyDevGAvg") / 1000.0 - davg)
            add(obj, "Commands/sec", cmds)
            add(obj, "Average Driver MilliSec/Command", davg)
            add(obj, "Average Kernel MilliSec/Command", kavg)
            add(obj, "Average Guest MilliSec/Command", davg + kavg)
            add(obj, "Average Queue MilliSec/Command", kavg * 0.3)
    portset = str(rng.choice(["DvsPortset-0", "vSwitch1", "DvsPortset-1"]))
    pid = 33554434 + int(rng.integers(0, 40)) if portset == "vSwitch1" else 2214592512 + int(rng.integers(0, 40))
    for k, nic in enumerate(n for n in host.nics if n.role.startswith("vsan")):
        key = f"vsan-pnic-net:{host.uuid}|{nic.name}"
        obj = f"Network Port({portset}:{pid + 2 * k}:{nic.name})"
        add(obj, "MBits Transmitted/sec", series(key, "txThroughput") * 8 / 1e6)
        add(obj, "MBits Received/sec", series(key, "rxThroughput") * 8 / 1e6)
        drop_rx = np.maximum(series(key, "rxPacketsLossRate"), series(key, "portRxDrops")) / 10.0
        add(obj, "% Outbound Packets Dropped", series(key, "txPacketsLossRate") / 10.0)
        add(obj, "% Received Packets Dropped", drop_rx)
    net = f"vsan-host-net:{host.uuid}"
    obj = f"Network Port({portset}:{pid + 9}:vmk{int(rng.integers(1, 3))})"
    add(obj, "MBits Transmitted/sec", series(net, "txThroughput") * 8 / 1e6)
    add(obj, "MBits Received/sec", series(net, "rxThroughput") * 8 / 1e6)
    return _format(rng, tl.at(0), times, cols, data, rate)


def _format(
    rng: Rng,
    start: dt.datetime,
    times: np.ndarray,
    cols: list[str],
    data: list[np.ndarray],
    rate: list[bool],
) -> bytes:
    style = str(rng.choice(["quoted", "quoted", "quoted", "spreadsheet", "noisy"]))
    stamps = [start + dt.timedelta(seconds=float(t)) for t in times]
    table = np.array(data).T
    table[0, np.array(rate)] = 0.0  # esxtop has no rates until its second sample
    lines: list[str] = []
    if style == "spreadsheet":
        lines.append(",".join(["(PDH-CSV 4.0) (UTC)(0)", *cols]))
        for s, row in zip(stamps, table, strict=True):
            ts = f"{s.month}/{s.day}/{s.year} {s.hour}:{s.minute:02d}"
            lines.append(",".join([ts, *(f"{x:.2f}".rstrip("0").rstrip(".") for x in row)]))
        return ("\r\n".join(lines) + "\r\n").encode()
    if style == "noisy":
        lines.append("Terminal type 'xterm-256color' not known, using 'dumb'.")
    lines.append(",".join(f'"{c}"' for c in ["(PDH-CSV 4.0) (UTC)(0)", *cols]) + ",")
    for s, row in zip(stamps, table, strict=True):
        ts = s.strftime("%m/%d/%Y %H:%M:%S")
        lines.append(",".join([f'"{ts}"', *(f'"{x:.2f}"' for x in row)]) + ",")
    return ("\n".join(lines) + "\n").encode()
