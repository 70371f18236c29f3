"""Log-worthy events that follow from the injected faults and the solved model, per host."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from data.simulate.conditions import Conditions
from data.simulate.events import Event, NicInfo
from data.simulate.physics import State
from data.simulate.plan import Injected, Plan
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
            _disk_errors(f, cond, grid.n, grid.dt, at, out, rng)
        elif f.fault == "net.link_degraded" and f.onset > 0 and f.cause != "mtu_mismatch":  # (netfx.flaps)
            nic = cluster.hosts[f.host].nics[f.nic]
            duplex = "Half" if f.cause == "half_duplex" else "Full"
            _flap(out, f.host, nic, at(f.onset - 1), rng.uniform(2, 9), int(f.param), duplex)
        elif f.fault == "cluster.resync":
            _resync_precursor(cluster, f.cause, f.onset, at, out, rng)
    for h, k, i in cond.net.flaps:  # a marginal optic loses light for a moment, back at full speed
        nic = cluster.hosts[h].nics[k]
        _flap(out, h, nic, at(i), rng.uniform(1, 12), nic.speed_mbps, nic.duplex)
    for e in plan.benign:
        if e.kind == "idle_flap":  # benign: a flap on an uplink that carries no vSAN traffic
            nic = cluster.hosts[e.host].nics[e.nic]
            _flap(out, e.host, nic, at(e.start), rng.uniform(1, 30), nic.speed_mbps, nic.duplex)
    for evs in out.values():
        evs.sort(key=lambda e: e.t)
    return out


def _flap(out: dict[int, list[Event]], h: int, nic: NicInfo, t: float, gap: float, speed: int, duplex: str) -> None:
    out[h].append(Event(t, "link_down", {"vmnic": nic.name, "pci": nic.pci}))
    up: dict[str, str | int | float] = {"vmnic": nic.name, "pci": nic.pci, "speed_mbps": speed, "duplex": duplex}
    out[h].append(Event(t + gap, "link_up", up))


def _disk_errors(
    f: Injected, cond: Conditions, n: int, dt: int, at: Callable[[int], float], out: dict[int, list[Event]], rng: Rng
) -> None:
    """SCSI failures the cause logs: sense data for media/hardware, aborts for timeouts, queue-full or
    busy statuses for a saturated queue, and few or none for a device that is slow without errors."""
    lam = (0.3 + 2.5 * f.severity) * dt / 60.0
    if f.cause == "firmware_degraded":
        lam *= 0.03 if rng.random() < 0.4 else 0.0
    elif f.cause == "controller_queue":
        lam *= 0.6
    counts = rng.poisson(lam, size=max(0, n - f.onset))
    for k in np.flatnonzero(counts):
        for _ in range(int(counts[k])):
            out[f.host].append(_scsi(at(f.onset + int(k)), f.disk, f.cause, rng))
    if f.severity > 0.9 and f.cause in ("medium_error", "hardware_error") and rng.random() < 0.15:
        dev = next(d for _, _, d in cond.devices if d.dev == f.disk)
        out[f.host].append(Event(at(n - 1), "perm_error", {"disk_uuid": dev.uuid}))


def _scsi(t: float, dev: str, cause: str, rng: Rng) -> Event:
    opcode = str(rng.choice(["0x28", "0x2a", "0x88", "0x8a"]))
    if cause == "controller_queue":  # TASK SET FULL / BUSY: the queue, not the media
        ds = str(rng.choice(["0x28", "0x8"], p=[0.7, 0.3]))
        return Event(t, "scsi_fail", {"device": dev, "opcode": opcode, "host_status": "0x0", "device_status": ds,
                                      "sense": ""})  # fmt: skip
    if cause == "timeout":
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
    pool = _HARDWARE if cause == "hardware_error" else _MEDIUM
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
    cluster: Cluster, cause: str, onset: int, at: Callable[[int], float], out: dict[int, list[Event]], rng: Rng
) -> None:
    """A rebuild follows the disk or host event vobd recorded shortly before (when that is still in the
    window); a policy change or a rebalance has no such event."""
    pre = max(0, onset - int(rng.integers(1, 4)))
    hosts = cluster.hosts
    h = int(rng.integers(len(hosts)))
    if cause in ("policy_change", "rebalance") or rng.random() < 0.1:
        pass
    elif cause == "disk_failure":
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
