"""Network entities of the performance dump: vsan-host-net (the vSAN vmknic's TCP/IP view) and
vsan-pnic-net (every physical uplink, vSAN or not)."""

from __future__ import annotations

import numpy as np

from data.simulate.conditions import Conditions
from data.simulate.netfx import NetFx
from data.simulate.physics import State
from data.simulate.topology import Cluster, Rng
from data.simulate.workload import smooth

Series = dict[str, np.ndarray]
Metrics = dict[str, dict[str, Series]]


def _sparse(rng: Rng, n: int, p: float, hi: float) -> np.ndarray:
    """Benign blips: healthy networks report a little loss now and then."""
    return np.where(rng.random(n) < p, rng.uniform(0.01, hi, size=n), 0.0)


def network_metrics(out: Metrics, cluster: Cluster, cond: Conditions, st: State, dt: float, rng: Rng) -> None:
    n, n_h = st.tx.shape
    loss, fx = cond.loss, cond.net
    peer = (loss.sum(1, keepdims=True) - loss) / max(n_h - 1, 1)  # (T, H) mean loss of the other hosts
    seen = nic_seen(cond)  # what the physical NIC itself counts of the loss
    mtu = float(cluster.mtu)
    for h, host in enumerate(cluster.hosts):
        # heartbeats, CMMDS, RDT keep-alives; a link never carries more than its payload rate
        rx = np.minimum(st.rx[:, h] + 2e4, cond.link_bps[:, h])
        tx = np.minimum(st.tx[:, h] + 2e4, cond.link_bps[:, h])
        frame = 0.7 * np.where(fx.small[:, h], 1500.0, mtu)  # an uplink at MTU 1500 in a jumbo cluster
        rx_pk = rx / frame + tx / frame * 0.4  # data segments plus ACKs for what we send
        tx_pk = tx / frame + rx / frame * 0.4
        txl = fx.txloss[:, h]  # jumbo frames the MTU drops, resent (no draw where none: v5's streams)
        txl = txl * rng.uniform(0.8, 1.2, n) if txl.any() else txl
        rho = st.net_rho[:, h]
        lh = loss[:, h]
        over = np.clip(rho - 0.92, 0, None)
        m = {
            "rxThroughput": rx,
            "txThroughput": tx,
            "rxPackets": rx_pk,
            "txPackets": tx_pk,
            "rxPacketsLossRate": 1000 * lh * rng.uniform(0.8, 1.1, n) + _sparse(rng, n, 0.02, 0.05),
            "txPacketsLossRate": 1000 * (lh * 0.35 * rng.uniform(0.8, 1.2, n) + txl),
            "portRxDrops": 1000 * (fx.pdrop[:, h] + 0.02 * over) + _sparse(rng, n, 0.02, 0.05),
            "portTxDrops": 1000 * 0.01 * np.clip(rho - 0.95, 0, None),
            # senders retransmit what the lossy host's uplink dropped: peers see some of it too
            "tcpTxRexmitRate": 1000 * (0.8 * lh + 0.3 * peer[:, h] + txl) + _sparse(rng, n, 0.03, 0.2),
            "tcpRxErrRate": 1000 * (0.5 * lh + 0.02 * peer[:, h]),
        }
        out["vsan-host-net"][host.uuid] = m
        for i, nic in enumerate(host.nics):
            eid = f"{host.uuid}|{nic.name}"
            if not nic.link_up:  # an unused port without a cable: listed, nothing moves
                out["vsan-pnic-net"][eid] = {k: np.zeros(n) for k in _PNIC}
                continue
            pn = _pnic(rng, n, dt, i, host.vsan_nic, host.standby_nic, m, rho, speed=nic.speed_mbps)
            if i == host.vsan_nic:
                _vsan_uplink(pn, rng, dt, h, seen[:, h], fx, cond.half_duplex[:, h])
            out["vsan-pnic-net"][eid] = pn


_PNIC = ("rxThroughput", "txThroughput", "rxPackets", "txPackets", "rxPacketsLossRate", "txPacketsLossRate",
         "portRxDrops", "portTxDrops", "pauseCount", "rxErr", "txErr", "rxCrcErr")  # fmt: skip


def nic_seen(cond: Conditions) -> np.ndarray:
    """(T, H) share of received packets the vSAN uplink's NIC counts as lost (CRC, errors, port drops):
    all of the loss for a bad cable, none of it for a drop in the vmkernel stack."""
    fx = cond.net
    return np.asarray(np.minimum(cond.loss, fx.crc + fx.rxerr + fx.pdrop))


def _vsan_uplink(pn: Series, rng: Rng, dt: float, h: int, seen: np.ndarray, fx: NetFx, half: np.ndarray) -> None:
    """The vSAN uplink's error counters, per sample interval, from what its NIC sees of the loss."""
    rx_pk, tx_pk = pn["rxPackets"], pn["txPackets"]
    crc = rng.poisson(rx_pk * dt * fx.crc[:, h]) + fx.blip[:, h]
    pn["rxPacketsLossRate"] = 1000 * seen * rng.uniform(0.8, 1.1, len(seen)) + _sparse(rng, len(seen), 0.02, 0.05)
    pn["txPacketsLossRate"] = 1000 * seen * 0.35 * rng.uniform(0.8, 1.2, len(seen))
    pn["pauseCount"] = pn["pauseCount"] + rng.poisson(fx.pause[:, h] * dt)
    pn["rxErr"] = crc + rng.poisson(rx_pk * dt * fx.rxerr[:, h])
    pn["txErr"] = rng.poisson(tx_pk * dt * 4e-4 * half)  # late collisions on a half-duplex link
    pn["rxCrcErr"] = crc


def _pnic(
    rng: Rng, n: int, dt: float, i: int, vsan: int, standby: int | None, m: Series, rho: np.ndarray, speed: int
) -> Series:
    pauses_base = rng.poisson(0.15 * dt / 20, size=n) * (rng.random() < 0.35)
    if i == vsan:
        z = np.zeros(n)
        return {
            "rxThroughput": m["rxThroughput"],
            "txThroughput": m["txThroughput"],
            "rxPackets": m["rxPackets"],
            "txPackets": m["txPackets"],
            "rxPacketsLossRate": z,
            "txPacketsLossRate": z,
            "portRxDrops": m["portRxDrops"],
            "portTxDrops": m["portTxDrops"],
            "pauseCount": pauses_base + rng.poisson(60 * np.clip(rho - 0.85, 0, None) * dt),
            "rxErr": z,
            "txErr": z,
            "rxCrcErr": z,
        }
    if i == standby:
        rx = rng.uniform(200, 2000, size=n)  # broadcast and beacon probes only
    elif i == 0:
        rx = smooth(rng, n, 1, max(3, n // 15), 5e4, 2e6)[:, 0]  # management
    else:
        rx = smooth(rng, n, 1, max(3, n // 15), 1e6, min(6e7, speed / 8 * 1e6 * 0.3))[:, 0]  # VM network
    tx = rx * rng.uniform(0.3, 1.2)
    return {
        "rxThroughput": rx,
        "txThroughput": tx,
        "rxPackets": rx / 900,
        "txPackets": tx / 900,
        "rxPacketsLossRate": _sparse(rng, n, 0.01, 0.05),
        "txPacketsLossRate": np.zeros(n),
        "portRxDrops": _sparse(rng, n, 0.02, 0.1),
        "portTxDrops": np.zeros(n),
        "pauseCount": pauses_base,
        "rxErr": np.zeros(n),
        "txErr": np.zeros(n),
        "rxCrcErr": np.zeros(n),
    }
