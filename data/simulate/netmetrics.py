"""Network entities of the performance dump: vsan-host-net (the vSAN vmknic's TCP/IP view) and
vsan-pnic-net (every physical uplink, vSAN or not)."""

from __future__ import annotations

import numpy as np

from data.simulate.conditions import Conditions
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
    loss = cond.loss
    peer = (loss.sum(1, keepdims=True) - loss) / max(n_h - 1, 1)  # (T, H) mean loss of the other hosts
    mtu = float(cluster.mtu)
    for h, host in enumerate(cluster.hosts):
        # heartbeats, CMMDS, RDT keep-alives; a link never carries more than its payload rate
        rx = np.minimum(st.rx[:, h] + 2e4, cond.link_bps[:, h])
        tx = np.minimum(st.tx[:, h] + 2e4, cond.link_bps[:, h])
        rx_pk = rx / (0.7 * mtu) + tx / (0.7 * mtu) * 0.4  # data segments plus ACKs for what we send
        tx_pk = tx / (0.7 * mtu) + rx / (0.7 * mtu) * 0.4
        rho = st.net_rho[:, h]
        lh = loss[:, h]
        over = np.clip(rho - 0.92, 0, None)
        m = {
            "rxThroughput": rx,
            "txThroughput": tx,
            "rxPackets": rx_pk,
            "txPackets": tx_pk,
            "rxPacketsLossRate": 1000 * lh * rng.uniform(0.8, 1.1, n) + _sparse(rng, n, 0.02, 0.05),
            "txPacketsLossRate": 1000 * lh * 0.35 * rng.uniform(0.8, 1.2, n),
            "portRxDrops": 1000 * (0.4 * lh + 0.02 * over) + _sparse(rng, n, 0.02, 0.05),
            "portTxDrops": 1000 * 0.01 * np.clip(rho - 0.95, 0, None),
            # senders retransmit what the lossy host's uplink dropped: peers see some of it too
            "tcpTxRexmitRate": 1000 * (0.8 * lh + 0.3 * peer[:, h]) + _sparse(rng, n, 0.03, 0.2),
            "tcpRxErrRate": 1000 * (0.5 * lh + 0.02 * peer[:, h]),
        }
        out["vsan-host-net"][host.uuid] = m
        for i, nic in enumerate(host.nics):
            out["vsan-pnic-net"][f"{host.uuid}|{nic.name}"] = _pnic(
                rng, n, dt, i, host.vsan_nic, host.standby_nic, m, rho, lh, cond.half_duplex[:, h], nic.speed_mbps
            )


def _pnic(
    rng: Rng,
    n: int,
    dt: float,
    i: int,
    vsan: int,
    standby: int | None,
    m: Series,
    rho: np.ndarray,
    loss: np.ndarray,
    half: np.ndarray,
    speed: int,
) -> Series:
    pauses_base = rng.poisson(0.15 * dt / 20, size=n) * (rng.random() < 0.35)
    if i == vsan:
        rx, tx = m["rxThroughput"], m["txThroughput"]
        rx_pk, tx_pk = m["rxPackets"], m["txPackets"]
        crc = rng.poisson(rx_pk * dt * loss * 0.6)
        return {
            "rxThroughput": rx,
            "txThroughput": tx,
            "rxPackets": rx_pk,
            "txPackets": tx_pk,
            "rxPacketsLossRate": m["rxPacketsLossRate"],
            "txPacketsLossRate": m["txPacketsLossRate"],
            "portRxDrops": m["portRxDrops"],
            "portTxDrops": m["portTxDrops"],
            "pauseCount": pauses_base + rng.poisson(60 * np.clip(rho - 0.85, 0, None) * dt),
            "rxErr": crc + rng.poisson(rx_pk * dt * loss * 0.1),
            "txErr": rng.poisson(tx_pk * dt * 4e-4 * half),  # late collisions on a half-duplex link
            "rxCrcErr": crc,
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
