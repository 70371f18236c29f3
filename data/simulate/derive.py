"""Log-worthy events that follow from the injected faults and the solved model, per host."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from data.simulate.conditions import Conditions
from data.simulate.events import Event
from data.simulate.physics import State
from data.simulate.plan import Plan
from data.simulate.topology import Cluster, Rng

_MEDIUM = ("0x3 0x11 0x0", "0x3 0x11 0x0", "0x3 0x0 0x0", "0x3 0x14 0x1")
_HARDWARE = ("0x4 0x44 0x0", "0x4 0x0 0x0", "0x4 0x3 0x0")


def derive_events(cluster: Cluster, plan: Plan, cond: Conditions, st: State, rng: Rng) -> dict[int, list[Event]]:
    grid = plan.grid
    times = grid.times.astype(float)
    out: dict[int, list[Event]] = {h: [] for h in range(len(cluster.hosts))}

    def at(i: int) -> float:
        return float(times[min(i, grid.n - 1)] + rng.uniform(0, grid.dt))

    _latency_monitor(cond, st, times, grid.dt, out, rng)
    for g, (h, grp) in enumerate(cluster.disk_groups):
        _congestion_crossings(st.cong[:, g], grp.uuid, h, times, grid.dt, out, rng)
    for f in plan.faults:
        if f.fault == "disk.latency":
            dev_i = next(i for i, (_, _, d) in enumerate(cond.devices) if d.dev == f.disk)
            lam = (0.3 + 2.5 * f.severity) * grid.dt / 60.0
            for i in range(f.onset, grid.n):
                for _ in range(rng.poisson(lam)):
                    out[f.host].append(_scsi(at(i), f.disk, f.variant, rng))
            if f.severity > 0.9 and rng.random() < 0.15:
                out[f.host].append(Event(at(grid.n - 1), "perm_error", {"disk_uuid": cond.devices[dev_i][2].uuid}))
        elif f.fault == "net.link_degraded" and f.onset > 0:
            nic = cluster.hosts[f.host].nics[f.nic]
            t = at(f.onset - 1)
            out[f.host].append(Event(t, "link_down", {"vmnic": nic.name, "pci": nic.pci}))
            out[f.host].append(
                Event(
                    t + rng.uniform(2, 9),
                    "link_up",
                    {
                        "vmnic": nic.name,
                        "pci": nic.pci,
                        "speed_mbps": 1000,
                        "duplex": "Half" if f.variant == "duplex" else "Full",
                    },
                )
            )
        elif f.fault == "cluster.resync":
            _resync_precursor(cluster, f.onset, at, out, rng)
    if rng.random() < 0.1:  # benign: a flap on an uplink that carries no vSAN traffic
        h = int(rng.integers(len(cluster.hosts)))
        host = cluster.hosts[h]
        others = [n for i, n in enumerate(host.nics) if i != host.vsan_nic]
        if others:
            nic = others[int(rng.integers(len(others)))]
            t = at(int(rng.integers(grid.n)))
            out[h].append(Event(t, "link_down", {"vmnic": nic.name, "pci": nic.pci}))
            out[h].append(
                Event(
                    t + rng.uniform(1, 30),
                    "link_up",
                    {"vmnic": nic.name, "pci": nic.pci, "speed_mbps": nic.speed_mbps, "duplex": nic.duplex},
                )
            )
    for evs in out.values():
        evs.sort(key=lambda e: e.t)
    return out


def _scsi(t: float, dev: str, variant: str, rng: Rng) -> Event:
    opcode = str(rng.choice(["0x28", "0x2a", "0x88", "0x8a"]))
    if variant == "timeout":
        return Event(
            t,
            "scsi_fail",
            {
                "device": dev,
                "opcode": opcode,
                "host_status": str(rng.choice(["0x5", "0x8"])),
                "device_status": "0x0",
                "sense": "",
            },
        )
    pool = _MEDIUM if variant == "medium" else _HARDWARE
    return Event(
        t,
        "scsi_fail",
        {"device": dev, "opcode": opcode, "host_status": "0x0", "device_status": "0x2", "sense": str(rng.choice(pool))},
    )


def _latency_monitor(
    cond: Conditions, st: State, times: np.ndarray, dt: int, out: dict[int, list[Event]], rng: Rng
) -> None:
    """ESXi's device latency watch: logs when a device's latency jumps far above its running average,
    again when it doubles, and once it recovers."""
    lat = (st.dev_r * st.dev_lat_r + st.dev_w * st.dev_lat_w) / np.maximum(st.dev_r + st.dev_w, 1e-9) * 1e6
    alpha = min(1.0, dt / 1800.0)
    for i, (h, _, d) in enumerate(cond.devices):
        x = lat[:, i]
        if x.max() < 15000:
            continue
        avg = float(x[0])
        reported = 0.0
        for k in range(len(x)):
            now = float(x[k])
            t = float(times[k] + rng.uniform(0, dt))
            if (reported == 0.0 and now >= max(6 * avg, 15000)) or (reported and now >= 2 * reported):
                out[h].append(Event(t, "dev_deteriorated", {"device": d.dev, "avg_us": int(avg), "now_us": int(now)}))
                reported = now
            elif reported and now <= reported / 2:
                out[h].append(Event(t, "dev_improved", {"device": d.dev, "from_us": int(reported), "to_us": int(now)}))
                reported = 0.0 if now < 3 * avg else now
            if not reported:
                avg += alpha * (now - avg)


def _congestion_crossings(
    cong: np.ndarray, dg_uuid: str, h: int, times: np.ndarray, dt: int, out: dict[int, list[Event]], rng: Rng
) -> None:
    above = False
    last = -1e18
    for k, c in enumerate(cong):
        t = float(times[k] + rng.uniform(0, dt))
        if c >= 200 and (not above or t - last > 1800):
            ctype = "SSD" if rng.random() < 0.5 else "Log"
            out[h].append(
                Event(
                    t,
                    "lsom_congestion",
                    {"dg_uuid": dg_uuid, "ctype": ctype, "threshold": 200, "current": int(min(255, c))},
                )
            )
            above, last = True, t
        elif c < 150 and above:
            out[h].append(Event(t, "lsom_congestion_clear", {"dg_uuid": dg_uuid, "ctype": "SSD", "current": int(c)}))
            above = False


def _resync_precursor(
    cluster: Cluster, onset: int, at: Callable[[int], float], out: dict[int, list[Event]], rng: Rng
) -> None:
    """Resync usually follows a disk or host event that vobd recorded shortly before."""
    if rng.random() > 0.75:
        return
    pre = max(0, onset - int(rng.integers(1, 4)))
    hosts = cluster.hosts
    h = int(rng.integers(len(hosts)))
    if rng.random() < 0.5:
        d = hosts[h].disks[int(rng.integers(len(hosts[h].disks)))]
        out[h].append(Event(at(pre), "disk_offline", {"disk_uuid": d.uuid, "device": d.dev}))
        if rng.random() < 0.6:
            out[h].append(
                Event(at(onset + int(rng.integers(0, 3))), "disk_online", {"disk_uuid": d.uuid, "device": d.dev})
            )
    else:
        for o in range(len(hosts)):
            if o != h:
                out[o].append(Event(at(pre), "node_left", {"node_uuid": hosts[h].uuid}))
                out[o].append(Event(at(onset), "node_joined", {"node_uuid": hosts[h].uuid}))
    src = int(rng.integers(len(hosts)))
    out[src].append(
        Event(
            at(onset),
            "resync_start",
            {"objects": int(rng.integers(20, 600)), "bytes_to_sync": int(rng.uniform(5e10, 2e12))},
        )
    )
