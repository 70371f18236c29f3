"""Verdicts in words an engineer can act on: for every faulty component, the evidence from the bundle
that supports the verdict (the component against its peers, the same peers its chart draws), the
recommendation of faults.md, and what the evidence cites: the log lines behind it (diagnosis.citations),
the worst sample of each metric it names, and when the fault began (diagnosis.onset, as charted)."""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from diagnosis.charts import onset_for
from diagnosis.citations import cited_lines
from diagnosis.onset import Onset, describe
from diagnosis.series import decoded, display, peers_of
from pipeline.channels import KIND_CHANNEL_DEFS, KIND_CHANNELS
from pipeline.tensors import BundleTensors
from vsandx.faults import FAULTS

__all__ = ["CLUES", "Clue", "Finding", "decoded", "evidence", "findings", "series"]


@dataclass(frozen=True)
class Clue:
    channel: str
    agg: str  # max | mean | min | sum | p90
    text: str  # "{v}" is the component's figure, "{p}" the median of its peers (diagnosis.series.peers_of)
    target: str = "self"  # self | hosts: the total over every host (a cluster fault seen where it is made)
    # a ceiling read from the onset on, where the component carried more before it (a link that stepped
    # down to 1 GbE mid-window: its whole-window top is the busy hours before, which the chart contradicts)
    since_onset: bool = False


STEP = 1.2  # the most carried before the onset, against from it on, that makes a ceiling "from the onset on"


_UPLINKS = "other hosts' vSAN uplinks"
_NO_PEERS = re.compile(r" ?\([^()]*\{p\}[^()]*\)")
# What an expert looks at first for each fault (faults.md, signature column).
CLUES: dict[str, tuple[Clue, ...]] = {
    "net.packet_loss": (
        Clue("pnic.rxPacketsLossRate", "max", f"received packet loss peaks at {{v}} ({_UPLINKS} {{p}})"),
        Clue("pnic.rxCrcErr", "sum", f"{{v}} CRC errors in the window ({_UPLINKS} {{p}})"),
        Clue("pnic.portRxDrops", "max", f"port receive drops up to {{v}} ({_UPLINKS} {{p}})"),
        Clue("esxtop.rx_drop_pct", "max", "esxtop shows up to {v} of received packets dropped on the port"),
    ),
    "net.link_degraded": (
        Clue("pnic.rxThroughput", "max", f"receive throughput tops out at {{v}} ({_UPLINKS} {{p}})", since_onset=True),
        Clue("pnic.txThroughput", "max", f"transmit throughput tops out at {{v}} ({_UPLINKS} {{p}})", since_onset=True),
        Clue("pnic.pauseCount", "sum", f"{{v}} pause frames in the window ({_UPLINKS} {{p}})"),
    ),
    "disk.latency": (
        Clue("disk.latencyDevDAvg", "p90", "device latency (DAVG) reaches {v} (disks of the same tier {p})"),
        Clue("esxtop.davg", "max", "esxtop DAVG up to {v}"),
        Clue("ev.scsi_fail_medium", "sum", "{v} SCSI commands failed with medium/hardware sense data"),
        Clue("ev.scsi_fail_host", "sum", "{v} SCSI commands aborted or reset by the host"),
        Clue("ev.deteriorated", "sum", "{v} 'performance has deteriorated' messages"),
    ),
    "disk.hotspot": (
        Clue("disk.latencyDevRead", "p90", "read latency reaches {v} (disks of the same tier {p})"),
        Clue("disk.iopsDevRead", "p90", "reads reach {v}/s (disks of the same tier {p}/s)"),
    ),
    "dg.write_buffer": (
        Clue("dg.wbFreePct", "min", "write buffer free falls to {v} (groups of the same tier {p})"),
        Clue("dg.logCongestion", "max", "log congestion reaches {v} (groups of the same tier {p})"),
        Clue("dg.latencySched", "mean", "scheduler latency averages {v} (groups of the same tier {p})"),
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
        Clue("domcompmgr.tputResyncRead", "max", "resync traffic reaches {v} (resync reads, all hosts)", "hosts"),
        Clue("domcompmgr.iopsResyncRead", "p90", "resync reads run at {v}/s (all hosts)", "hosts"),
        Clue("domcompmgr.iopsRecWrite", "p90", "recovery writes run at {v}/s (all hosts)", "hosts"),
        Clue("domclient.latencyAvgWrite", "mean", "guest write latency averages {v} meanwhile"),
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
    # additive to vsandx.diagnosis/1 (README, "The diagnosis document"): what the evidence cites
    cited_lines: list[dict[str, Any]] = field(default_factory=list)
    series: list[dict[str, Any]] = field(default_factory=list)
    onset: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            "component": self.component,
            "fault": self.fault,
            "confidence": round(self.confidence, 4),
            "summary": self.summary,
            "recommendation": self.recommendation,
            "evidence": self.evidence,
            "cited_lines": self.cited_lines,
            "series": self.series,
            "onset": self.onset,
        }


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


def _iso(t: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def _clue_rows(bt: BundleTensors, component: str, clue: Clue) -> tuple[str, np.ndarray, int, list[int], str] | None:
    """(unit, values (n, T), the subject's row, its peers' rows, the entity named) for one clue; None
    when the clue's channel is not the component's (nor, for `hosts`, the hosts')."""
    kind = component.split(":", 1)[0]
    if clue.target == "hosts":
        hosts = bt.kinds["host"]
        if clue.channel not in KIND_CHANNELS["host"] or not hosts.ids:
            return None
        x = decoded(hosts, clue.channel)
        total = np.where(np.isnan(x).all(axis=0), np.nan, np.nansum(x, axis=0))
        return _unit("host", clue.channel), total[None], 0, [], "all hosts (total)"
    if clue.channel not in KIND_CHANNELS[kind]:
        return None
    kt = bt.kinds[kind]
    i = kt.ids.index(component)
    return _unit(kind, clue.channel), decoded(kt, clue.channel), i, peers_of(bt, kind, i), component


def _unit(kind: str, channel: str) -> str:
    return KIND_CHANNEL_DEFS[kind][KIND_CHANNELS[kind].index(channel)].unit


def _worst(bt: BundleTensors, row: np.ndarray, clue: Clue, unit: str, entity: str) -> dict[str, Any] | None:
    """The worst sample of a clue's series: its lowest for a clue about a fall (`min`), else its highest."""
    if np.isnan(row).all():
        return None
    k = int(np.nanargmin(row) if clue.agg == "min" else np.nanargmax(row))
    shown, factor = display(unit)
    return {"entity": entity, "metric": clue.channel, "time": _iso(bt.start + k * bt.step_s),
            "value": round(float(row[k]) * factor, 6), "unit": shown}  # fmt: skip


def _capture(bt: BundleTensors, row: np.ndarray, onset: int | None) -> str:
    """When an esxtop capture ran, against the onset: esxtop runs for minutes at collection time, so its
    figures may predate (or follow) the fault the perf counters show, and say so rather than contradict."""
    seen = np.flatnonzero(~np.isnan(row))
    if not seen.size:
        return ""
    a, b = (time.strftime("%H:%M", time.gmtime(bt.start + k * bt.step_s)) for k in (seen[0], seen[-1] + 1))
    when = ""
    if onset is not None and seen[-1] < onset:
        when = ", before the onset"
    elif onset is not None and seen[0] >= onset:
        when = ", after the onset"
    return f" (esxtop captured {a}-{b} UTC{when})"


def _read(bt: BundleTensors, component: str, fault: str, onset: int | None = None) -> list[tuple[str, dict[str, Any]]]:
    """(evidence line, worst sample) of each clue of the fault that the bundle has data for; `onset`
    (a step, None when unknown or at the window's start) places esxtop's capture against it."""
    out = []
    for clue in CLUES.get(fault, ()):
        got = _clue_rows(bt, component, clue)
        if got is None:
            continue
        unit, x, i, peers, entity = got
        per, text = _agg(x, clue.agg), clue.text
        if clue.since_onset and onset is not None:
            before, after = _agg(x[:, :onset], clue.agg), _agg(x[:, onset:], clue.agg)
            if before[i] > STEP * after[i]:  # the subject and its peers from the onset on
                x = np.where(np.arange(x.shape[1]) >= onset, x, np.nan)
                per = after
                was = _fmt(float(before[i]), unit)
                text = text.replace("{v}", f"{{v}} from the onset on, after up to {was} before it")
        if clue.agg == "sum" and unit == "1/s":  # a rate per second summed over steps: count it
            per = per * bt.step_s
        if np.isnan(per[i]) or (clue.agg == "sum" and per[i] == 0):
            continue
        vals = per[peers]
        peer = float(np.nanmedian(vals)) if vals.size and not np.isnan(vals).all() else np.nan
        # no peer with data: the figure stands alone, without its "(peers …)"
        text = text if not np.isnan(peer) else _NO_PEERS.sub("", text)
        text = text.replace("{v}", _fmt(float(per[i]), unit)).replace("{p}", _fmt(peer, unit))
        if clue.channel.startswith("esxtop."):
            text += _capture(bt, x[i], onset)
        worst = _worst(bt, x[i], clue, unit, entity)
        if worst is not None:
            out.append((text, worst))
    return out


def evidence(bt: BundleTensors, component: str, fault: str) -> list[str]:
    return [text for text, _ in _read(bt, component, fault)]


def series(bt: BundleTensors, component: str, fault: str) -> list[dict[str, Any]]:
    """The worst sample (entity, metric, ISO UTC time, value, unit) of each metric the evidence names."""
    return [worst for _, worst in _read(bt, component, fault)]


def onset_of(onset: Onset | None, bt: BundleTensors) -> dict[str, Any] | None:
    """The document's onset: when (ISO UTC), whether it predates the window, and in words; None when the
    series show no departure to date."""
    if onset is None:
        return None
    # "Onset: " + words is the chart's sentence (diagnosis.onset.describe), word for word
    words = describe(onset, bt.start, bt.step_s).removeprefix("Onset: ")
    return {"time": _iso(bt.start + onset.step * bt.step_s), "at_start": onset.at_start, "words": words}


def findings(bt: BundleTensors, verdicts: Mapping[str, tuple[str, float]]) -> list[Finding]:
    """Non-`none` verdicts (component -> (fault, confidence)), most confident first."""
    out = []
    for comp, (fault, conf) in verdicts.items():
        if fault == "none":
            continue
        f = FAULTS[fault]
        where = comp.split(":", 1)[1] if ":" in comp else "the cluster"
        onset = onset_for(bt, comp, fault)
        at = onset if onset is not None and not onset.at_start else None
        read = _read(bt, comp, fault, at.step if at is not None else None)
        out.append(Finding(comp, fault, conf, f"{f.title} ({where})", f.recommendation, [t for t, _ in read],
                           cited_lines(bt, comp, fault), [w for _, w in read],
                           onset_of(onset, bt)))  # fmt: skip
    return sorted(out, key=lambda x: -x.confidence)
