"""vsan-host-net and vsan-pnic-net entities: traffic from the model, errors from the network faults' causes."""

from __future__ import annotations

import numpy as np

from data.cleanroom.metrics import Entities, _blips, _noisy
from data.cleanroom.model import Effects, State
from data.cleanroom.scenario import Plan
from data.cleanroom.topology import Cluster, Rng


def build(rng: Rng, cl: Cluster, p: Plan, eff: Effects, st: State, ent: Entities) -> None:
    n, iv = p.tl.n, p.tl.interval
    frame = 8200.0 if cl.mtu == 9000 else 1420.0
    causes = {f.target: f.cause for f in p.faults if f.fid == "net.packet_loss"}
    slow = {f.target for f in p.faults if f.fid == "net.link_degraded"}
    nh = len(cl.hosts)
    total_loss = eff.loss.sum(axis=0)
    for h in cl.hosts:
        i = h.idx
        tx = _noisy(rng, st.tx[i] + 2e4, 0.03)
        rx = _noisy(rng, st.rx[i] + 2e4, 0.03)
        if i in slow:
            # A saturated link flat-tops: what the model offered above the line rate never got through.
            top = eff.link_bps[i] * (0.985 if not eff.half[i] else 1.0)
            tx, rx = np.minimum(tx, top * rng.uniform(0.97, 1.0, n)), np.minimum(rx, top * rng.uniform(0.97, 1.0, n))
        txp = tx / frame + 0.35 * rx / frame + 40
        rxp = rx / frame + 0.35 * tx / frame + 40
        loss = eff.loss[i]
        cause = causes.get(i, "")
        peers = (total_loss - loss) / max(nh - 1, 1)
        if cause:
            rxl = loss
            txl = loss * rng.uniform(0.05, 0.3)
            rexmit = loss * rng.uniform(0.6, 1.3) * np.exp(0.15 * rng.standard_normal(n))
            rxerr = loss * rng.uniform(0.3, 0.8)
        else:
            rxl = _blips(rng, n, 0.01, 0.01)
            txl = _blips(rng, n, 0.005, 0.01)
            rexmit = _blips(rng, n, 0.03, 0.02) + 0.25 * peers
            rxerr = _blips(rng, n, 0.01, 0.01)
        port = loss * (rng.uniform(0.7, 1.0) if cause.startswith(("switch", "stack")) else rng.uniform(0.0, 0.1))
        ent[f"vsan-host-net:{h.uuid}"] = {
            "rxThroughput": rx,
            "txThroughput": tx,
            "rxPackets": rxp,
            "txPackets": txp,
            "rxPacketsLossRate": np.clip(rxl, 0, 1000),
            "txPacketsLossRate": np.clip(txl, 0, 1000),
            "portRxDrops": np.clip(port, 0, 1000),
            "portTxDrops": np.zeros(n),
            "tcpTxRexmitRate": np.clip(rexmit, 0, 1000),
            "tcpRxErrRate": np.clip(rxerr, 0, 1000),
        }
        for nic in h.nics:
            if not nic.role.startswith("vsan"):
                continue
            key = f"vsan-pnic-net:{h.uuid}|{nic.name}"
            if nic.role == "vsan-standby":
                # A standby uplink only sees discovery and broadcast frames.
                ent[key] = _idle(rng, n, iv)
                continue
            lost = rxp * iv * loss / 1000.0
            crc = np.zeros(n)
            err = np.round(_blips(rng, n, 0.004, 1.0))
            pause = np.round(_blips(rng, n, 0.01, 2.0))
            txerr = np.zeros(n)
            if cause == "cable_optic":
                crc = np.round(lost * rng.uniform(0.7, 1.0))
                err = crc + np.round(lost * rng.uniform(0.0, 0.15))
            elif cause == "nic_firmware":
                err = np.round(lost * rng.uniform(0.5, 1.0))
            elif cause == "switch_overrun":
                err = np.round(lost * rng.uniform(0.05, 0.2))
                pause = pause + np.round(lost * rng.uniform(0.5, 3.0))
            if i in slow:
                load = np.maximum(tx, rx) if not eff.half[i] else tx + rx
                rho = load / eff.link_bps[i]
                pause = pause + np.round(np.clip(rho - 0.85, 0, None) * iv * rng.uniform(5, 60))
                if eff.half[i]:
                    txerr = np.round(rng.poisson(np.clip(rho, 0, 1) * 0.4 * iv / 60.0)).astype(float)
            extra = 1.0 + (rng.uniform(0.0, 0.05) if len(h.nics) == 2 else 0.0)
            ent[key] = {
                "rxThroughput": rx * extra,
                "txThroughput": tx * extra,
                "rxPackets": rxp * extra,
                "txPackets": txp * extra,
                "rxPacketsLossRate": np.clip(rxl, 0, 1000),
                "txPacketsLossRate": np.clip(txl, 0, 1000),
                "portRxDrops": np.clip(port, 0, 1000),
                "portTxDrops": np.zeros(n),
                "pauseCount": pause,
                "rxErr": err,
                "txErr": txerr,
                "rxCrcErr": crc,
            }
        for k, v in list(ent.items()):
            if k.startswith(("vsan-host-net:" + h.uuid, "vsan-pnic-net:" + h.uuid)):
                for arr in v.values():
                    arr[eff.down[i]] = np.nan


def _idle(rng: Rng, n: int, iv: int) -> dict[str, np.ndarray]:
    pk = _noisy(rng, np.full(n, float(rng.uniform(0.3, 2.0))), 0.2)
    z = np.zeros(n)
    return {
        "rxThroughput": pk * 110,
        "txThroughput": pk * 20,
        "rxPackets": pk,
        "txPackets": pk * 0.2,
        "rxPacketsLossRate": z,
        "txPacketsLossRate": z.copy(),
        "portRxDrops": z.copy(),
        "portTxDrops": z.copy(),
        "pauseCount": z.copy(),
        "rxErr": z.copy(),
        "txErr": z.copy(),
        "rxCrcErr": z.copy(),
    }
