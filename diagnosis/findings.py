"""Verdicts in words an engineer can act on: for every faulty component, the evidence from the bundle
that supports the verdict (the component against its peers), and the recommendation of faults.md."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from pipeline.channels import KIND_CHANNEL_DEFS, KIND_CHANNELS
from pipeline.tensors import BundleTensors, KindTensors
from vsandx.faults import FAULTS


@dataclass(frozen=True)
class Clue:
    channel: str
    agg: str  # max | mean | min | sum | p90
    text: str  # "{v}" is the component's figure, "{p}" the median of its peers of the same kind


# What an expert looks at first for each fault (faults.md, signature column).
CLUES: dict[str, tuple[Clue, ...]] = {
    "net.packet_loss": (
        Clue("pnic.rxPacketsLossRate", "max", "received packet loss peaks at {v} (other uplinks {p})"),
        Clue("pnic.rxCrcErr", "sum", "{v} CRC errors in the window (other uplinks {p})"),
        Clue("pnic.portRxDrops", "max", "port receive drops up to {v} (other uplinks {p})"),
        Clue("esxtop.rx_drop_pct", "max", "esxtop shows up to {v} of received packets dropped on the port"),
    ),
    "net.link_degraded": (
        Clue("pnic.rxThroughput", "max", "receive throughput tops out at {v} (other uplinks {p})"),
        Clue("pnic.txThroughput", "max", "transmit throughput tops out at {v} (other uplinks {p})"),
        Clue("pnic.pauseCount", "sum", "{v} pause frames in the window (other uplinks {p})"),
    ),
    "disk.latency": (
        Clue("disk.latencyDevDAvg", "p90", "device latency (DAVG) reaches {v} (peers {p})"),
        Clue("esxtop.davg", "max", "esxtop DAVG up to {v}"),
        Clue("ev.scsi_fail_medium", "sum", "{v} SCSI commands failed with medium/hardware sense data"),
        Clue("ev.scsi_fail_host", "sum", "{v} SCSI commands aborted or reset by the host"),
        Clue("ev.deteriorated", "sum", "{v} 'performance has deteriorated' messages"),
    ),
    "disk.hotspot": (
        Clue("disk.latencyDevRead", "p90", "read latency reaches {v} (peers {p})"),
        Clue("disk.iopsDevRead", "p90", "reads reach {v}/s (peers {p}/s)"),
    ),
    "dg.write_buffer": (
        Clue("dg.wbFreePct", "min", "write buffer free falls to {v} (other groups {p})"),
        Clue("dg.logCongestion", "max", "log congestion reaches {v} (other groups {p})"),
        Clue("dg.latencySched", "mean", "scheduler latency averages {v} (other groups {p})"),
        Clue("dg.ssdBytesDrained", "mean", "destage drains {v} on average"),
        Clue("ev.lsom_congestion", "sum", "{v} LSOM congestion threshold messages"),
    ),
    "host.cpu_contention": (
        Clue("cpu.pcpuUtilPct", "p90", "physical CPU utilisation reaches {v} (other hosts {p})"),
        Clue("vsancpu.readyPct", "p90", "vSAN worlds wait ready {v} of the time (other hosts {p})"),
        Clue("esxtop.ready_max", "max", "esxtop %RDY up to {v}"),
    ),
    "cluster.low_oio": (
        Clue("domclient.oio", "mean", "cluster outstanding I/O averages {v}"),
        Clue("domclient.latencyAvgRead", "mean", "read latency averages {v}"),
        Clue("domclient.congestion", "max", "congestion peaks at {v}"),
    ),
    "cluster.resync": (
        Clue("domclient.latencyAvgWrite", "mean", "guest write latency averages {v}"),
        Clue("domclient.latencyAvgRead", "mean", "guest read latency averages {v}"),
    ),
}


@dataclass
class Finding:
    component: str
    fault: str
    confidence: float
    summary: str
    recommendation: str
    evidence: list[str]

    def to_dict(self) -> dict[str, object]:
        return {
            "component": self.component,
            "fault": self.fault,
            "confidence": round(self.confidence, 4),
            "summary": self.summary,
            "recommendation": self.recommendation,
            "evidence": self.evidence,
        }


def decoded(kt: KindTensors, channel: str) -> np.ndarray:
    """(n, T) channel values in its unit (log1p undone), NaN where not observed."""
    c = KIND_CHANNELS[kt.kind].index(channel)
    x = kt.values[:, c, :].astype(float)
    if KIND_CHANNEL_DEFS[kt.kind][c].log:
        x = np.expm1(x)
    return np.where(kt.mask[:, c, :], x, np.nan)


def _fmt(v: float, unit: str) -> str:
    if np.isnan(v):
        return "n/a"
    if unit == "fraction":
        return f"{100 * v:.1f} %"
    if unit == "fraction of 255":
        return f"{255 * v:.0f}"
    if unit in ("ms", "MB/s", "percent"):
        return f"{v:.3g} {'%' if unit == 'percent' else unit}"
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"


def _agg(x: np.ndarray, how: str) -> np.ndarray:
    """(n, T) -> (n,), ignoring NaN; rows with no data give NaN."""
    ok = ~np.isnan(x).all(axis=1)
    out = np.full(x.shape[0], np.nan)
    if ok.any():
        y = x[ok]
        # p90: the sustained level once a fault has set in, whatever its onset
        q = {"max": 100.0, "min": 0.0, "p90": 90.0}.get(how)
        if q is not None:
            out[ok] = np.nanpercentile(y, q, axis=1)
        else:
            out[ok] = np.nansum(y, axis=1) if how == "sum" else np.nanmean(y, axis=1)
    return out


def evidence(bt: BundleTensors, component: str, fault: str) -> list[str]:
    kind = component.split(":", 1)[0]
    kt = bt.kinds[kind]
    i = kt.ids.index(component)
    lines = []
    for clue in CLUES.get(fault, ()):
        if clue.channel not in KIND_CHANNELS[kind]:
            continue
        unit = KIND_CHANNEL_DEFS[kind][KIND_CHANNELS[kind].index(clue.channel)].unit
        per = _agg(decoded(kt, clue.channel), clue.agg)
        if clue.agg == "sum" and unit == "1/s":  # a rate per second summed over steps: count it
            per = per * bt.step_s
        if np.isnan(per[i]) or (clue.agg == "sum" and per[i] == 0):
            continue
        peers = np.delete(per, i)
        peer = float(np.nanmedian(peers)) if peers.size and not np.isnan(peers).all() else np.nan
        text = clue.text.replace("{v}", _fmt(float(per[i]), unit)).replace("{p}", _fmt(peer, unit))
        lines.append(text.replace(" (peers n/a)", "").replace(" (other uplinks n/a)", ""))
    return lines


def findings(bt: BundleTensors, verdicts: Mapping[str, tuple[str, float]]) -> list[Finding]:
    """Non-`none` verdicts (component -> (fault, confidence)), most confident first."""
    out = []
    for comp, (fault, conf) in verdicts.items():
        if fault == "none":
            continue
        f = FAULTS[fault]
        where = comp.split(":", 1)[1] if ":" in comp else "the cluster"
        out.append(Finding(comp, fault, conf, f"{f.title} ({where})", f.recommendation, evidence(bt, comp, fault)))
    return sorted(out, key=lambda x: -x.confidence)
