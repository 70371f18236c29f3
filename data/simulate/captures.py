"""esxtop batch captures an engineer ran on some hosts during the window (loose CSVs in the upload)."""

from __future__ import annotations

import datetime as dt

import numpy as np

from data.simulate.conditions import Conditions
from data.simulate.esxtop import render_esxtop
from data.simulate.netmetrics import nic_seen
from data.simulate.physics import State
from data.simulate.plan import Plan
from data.simulate.topology import Cluster, Rng
from data.simulate.workload import Workload

MIB = 1048576.0


def esxtop_files(
    cluster: Cluster, wl: Workload, cond: Conditions, st: State, plan: Plan, files: dict[str, bytes], rng: Rng
) -> dict[str, bytes]:
    field = cluster.profile == "field"
    if rng.random() >= (0.4 if field else 0.6):
        return {}
    grid = plan.grid
    n_h = len(cluster.hosts)
    hosts = (
        list(range(n_h))
        if not field
        else sorted(int(h) for h in rng.choice(n_h, size=int(rng.integers(1, n_h + 1)), replace=False))
    )
    folders = {p.split("/", 1)[0] for p in files if p.startswith("esx-")}
    delay = int(rng.choice([5, 10, 15, 30, 60])) if field else 10
    span = grid.n * grid.dt
    rows = min(span // delay, int(rng.integers(60, 241 if field else 181)))
    t0 = float(grid.times[0]) + rng.uniform(0, max(0.0, span - rows * delay))
    times = t0 + delay * np.arange(rows)
    centers = grid.times + grid.dt / 2.0
    seen = nic_seen(cond)
    out: dict[str, bytes] = {}
    for h in hosts:
        host = cluster.hosts[h]

        def at(x: np.ndarray, noise: float = 0.08) -> np.ndarray:
            y = np.interp(times, centers, x)
            return y * np.exp(rng.normal(0, noise, size=rows))

        disks: dict[str, dict[str, np.ndarray]] = {}
        for i, (hh, _, d) in enumerate(cond.devices):
            if hh != h:
                continue
            r, w = at(st.dev_r[:, i]), at(st.dev_w[:, i])
            lat = (st.dev_r[:, i] * st.dev_lat_r[:, i] + st.dev_w[:, i] * st.dev_lat_w[:, i]) / np.maximum(
                st.dev_r[:, i] + st.dev_w[:, i], 1e-9
            )
            davg = at(lat * 1e3, 0.12)
            kavg = at((0.008 + 0.004 * st.dev_util[:, i] ** 2 + 1e3 * cond.kavg_extra[:, i]), 0.3)
            disks[d.dev] = {
                "davg_ms": davg,
                "kavg_ms": kavg,
                "gavg_ms": davg + kavg,
                "cmds_per_s": r + w,
                "reads_per_s": r,
                "writes_per_s": w,
                "mb_read_per_s": at(st.dev_rb[:, i]) / MIB,
                "mb_written_per_s": at(st.dev_wb[:, i]) / MIB,
            }
        zeros = np.zeros(rows)
        disks[host.boot_dev] = {
            "davg_ms": at(np.full(grid.n, 0.4)),
            "kavg_ms": at(np.full(grid.n, 0.01)),
            "gavg_ms": at(np.full(grid.n, 0.41)),
            "cmds_per_s": at(np.full(grid.n, 3.0)),
            "reads_per_s": at(np.full(grid.n, 0.5)),
            "writes_per_s": at(np.full(grid.n, 2.5)),
            "mb_read_per_s": zeros,
            "mb_written_per_s": at(np.full(grid.n, 0.02)),
        }
        nics: dict[str, dict[str, np.ndarray]] = {}
        for k, nic in enumerate(host.nics):
            vs = k == host.vsan_nic
            idle = 0.0 if not nic.link_up else 1.0  # a port without a cable moves nothing
            rx = at(st.rx[:, h]) if vs else at(np.full(grid.n, 4e5 * idle))
            tx = at(st.tx[:, h]) if vs else at(np.full(grid.n, 2e5 * idle))
            drop = at(seen[:, h] * 100, 0.3) if vs and nic.link_up else zeros
            nics[nic.name] = {
                "rx_drop_pct": drop,
                "tx_drop_pct": drop * 0.2,
                "mbits_rx": rx * 8 / 1e6,
                "mbits_tx": tx * 8 / 1e6,
                "pkts_rx": rx / 6000,
                "pkts_tx": tx / 6000,
            }
        cpu = {"util_pct": np.clip(at(st.cpu_util[:, h] * 100, 0.03), 0, 100)}
        vms = [j for j in range(len(wl.names)) if wl.client[j] == h]
        for j in vms:
            name = wl.names[j]
            cpu[f"ready_pct:{2098176 + 37 * j}:{name}"] = at(st.ready[:, h] * rng.uniform(0.8, 1.6), 0.2)
        cpu["ready_pct:1:system"] = at(st.ready[:, h] * 0.5, 0.2)
        capture_host = host.name if rng.random() < 0.8 else "localhost.home"
        style = "raw" if not field else str(rng.choice(["raw", "resaved", "stray"], p=[0.7, 0.15, 0.15]))
        data = render_esxtop(capture_host, times, disks, nics, cpu, rng, style)
        stamp = dt.datetime.fromtimestamp(t0, dt.UTC).strftime("%Y%m%d-%H%M")
        short = host.name.split(".")[0]
        top = next((f for f in sorted(folders) if f.startswith(f"esx-{host.name}-")), None)
        if top is not None and rng.random() < 0.4:
            out[f"{top}/esxtop-{stamp}.csv"] = data
        else:
            out[f"esxtop/{short}-{stamp}.csv"] = data
    return out
