"""How each cause of a network fault changes the vSAN uplink: what TCP loses, what the NIC counts.

TCP on the host sees `loss` whatever drops the packet; the physical NIC counts only what reaches it
(CRC-corrupt frames, receive errors, port drops). A frame dropped in the vmkernel stack (PerfPsychic's
injection) or in a switch buffer is never corrupted, so those causes show no CRC errors.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from data.simulate.plan import Injected
from data.simulate.topology import Rng
from data.simulate.workload import Workload

# (CRC-corrupt, other receive errors, port drops) as shares of the lost packets, per cause
_SEEN: dict[str, tuple[float, float, float]] = {
    "cable_crc": (0.6, 0.1, 0.4),
    "intermittent_optic": (0.6, 0.1, 0.4),
    "switch_overrun": (0.0, 0.0, 0.9),
    "firmware_drop": (0.0, 0.5, 0.5),
    "stack_drop": (0.0, 0.0, 0.0),
}


@dataclass
class NetFx:
    """(T, H) shares of received packets, plus flap and pause events."""

    loss: np.ndarray  # lost on the vSAN path (what TCP retransmits)
    crc: np.ndarray  # CRC-corrupt frames the pnic counts
    rxerr: np.ndarray  # other receive errors the pnic counts (no CRC)
    pdrop: np.ndarray  # dropped at the port (portRxDrops)
    pause: np.ndarray  # extra pause frames per second the switch sends
    blip: np.ndarray  # benign CRC-error counts per sample (no loss)
    flaps: list[tuple[int, int, int]]  # (host, nic, sample) of a link flap that recovered at full speed
    txloss: np.ndarray  # sent jumbo frames the uplink's MTU drops (retransmitted; no NIC counts them)
    small: np.ndarray  # (T, H) bool: the uplink carries 1500-byte frames in a jumbo-frame cluster


def new_netfx(n: int, n_h: int) -> NetFx:
    z = np.zeros((n, n_h))
    return NetFx(z, z.copy(), z.copy(), z.copy(), z.copy(), z.copy(), [], z.copy(), np.zeros((n, n_h), bool))


def loss_level(severity: float) -> float:
    """Mean loss share for a severity: 0.5 per-mille at 0, 30 per-mille at 1."""
    return 5e-4 * 60.0**severity


def host_demand(wl: Workload, h: int) -> np.ndarray:
    """(T,) a proxy of the bytes/s host h's uplink carries, before the physical model has run."""
    iops = np.where(np.isfinite(wl.rate), wl.rate, wl.oio / 2e-3)
    rb = iops * wl.rf * wl.size_r
    wb = iops * (1 - wl.rf) * wl.size_w
    net = wl.net
    out = rb @ (net["tx_r"][:, h] + net["rx_r"][:, h]) + wb @ (net["tx_w"][:, h] + net["rx_w"][:, h])
    return np.asarray(out, dtype=float)


def packet_loss(fx: NetFx, f: Injected, on: np.ndarray, wl: Workload, rng: Rng) -> None:
    n = len(on)
    h = f.host
    level = loss_level(f.severity)
    if f.cause == "stack_drop":  # exactly every N-th packet: very steady
        x = np.full(n, 1.0 / max(f.param, 2.0)) * np.exp(rng.normal(0, 0.03, size=n))
    elif f.cause == "switch_overrun":  # bursty, and the more the uplink carries, the more it drops
        d = host_demand(wl, h)
        med = np.median(d[on > 0]) if (on > 0).any() else 1.0
        x = level * np.clip(d / max(med, 1.0), 0.1, 4.0) ** 1.5 * np.exp(rng.normal(0, 0.9, size=n))
        fx.pause[:, h] += on * rng.uniform(2, 20) * np.clip(x / level, 0, 5)
    elif f.cause == "firmware_drop":
        x = level * np.exp(rng.normal(0, 0.25, size=n))
    elif f.cause == "intermittent_optic":
        x = np.zeros(n)
        share = rng.uniform(0.2, 0.5)
        starts = []
        i = f.onset
        while i < n:
            w = int(rng.integers(max(1, n // 40), max(2, n // 10)))
            gap = int(w * (1 - share) / share * rng.uniform(0.5, 1.5))
            starts.append(i)
            x[i : i + w] = level * np.exp(rng.normal(0, 0.5, size=len(x[i : i + w])))
            i += w + max(gap, 1)
        if rng.random() < 0.5:  # the marginal optic loses light now and then: the link flaps
            for s in starts[: int(rng.integers(1, 4))]:
                fx.flaps.append((h, f.nic, s))
    else:  # cable_crc: persistent, with retransmit-timeout spikes
        x = level * np.exp(rng.normal(0, 0.6, size=n))
    x = on * np.minimum(x, 0.05)
    crc, err, drop = _SEEN.get(f.cause, _SEEN["cable_crc"])
    fx.loss[:, h] += x
    fx.crc[:, h] += crc * x
    fx.rxerr[:, h] += err * x
    fx.pdrop[:, h] += drop * x


def mtu_mismatch(fx: NetFx, f: Injected, on: np.ndarray, rng: Rng) -> None:
    """The uplink at MTU 1500 in a jumbo-frame cluster: 1500-byte frames from the onset, and a little of
    what the host sends (0.02-0.4 per-mille, more the worse the mismatch) dropped beyond the NIC and
    retransmitted. An MTU change resets the link (a flap at full speed) where it happened in the window."""
    h, n = f.host, len(on)
    fx.small[:, h] = on > 0
    fx.txloss[:, h] += on * 2e-5 * 20.0**f.severity * np.exp(rng.normal(0, 0.4, size=n))
    if f.onset > 0:
        fx.flaps.append((h, f.nic, f.onset - 1))


def crc_blip(fx: NetFx, h: int, n: int, rng: Rng) -> None:
    """A handful of CRC errors on a healthy uplink: counted frames, no loss anyone would notice."""
    idx = rng.choice(n, size=min(n, int(rng.integers(2, 9))), replace=False)
    fx.blip[idx, h] += rng.integers(1, 4, size=len(idx))
