"""The metrics behind each finding: the faulty component against its peers over time, onset marked.

Pure functions from a parsed bundle (`BundleTensors`) and a diagnosis document (interface.md) to
`Chart`s; `diagnosis.chart_render` draws them as inline SVG (the web UI) or PNG (emailed reports), when
the diagnosis is made (`service.store.chart_store`).

Which channels: `SPECS` follows the signature column of faults.md — for each fault, the counters an
engineer would open first, on the faulty component and, where the signature lives there, on related
components (the NIC's host for TCP retransmits, a disk's group for scheduler latency, every host for
resync traffic).

Peers are components of the same kind in the same role (diagnosis.series.peers_of, which the evidence
uses too): the other hosts' vSAN uplinks, disks and disk groups of the same tier, the other hosts. The
cluster has no peers: its chart shows its own series, with each host's as thin lines where it has them.

A bundle without findings gets one chart, the cluster's overview (`overview`): its latency, throughput
and IOPS, each host beside it, so that "healthy" can be checked by eye.

Onset: `diagnosis.onset.estimate_onset` (its docstring says how), on the panels a spec marks, else the
first panel whose series departs from its peers.
"""

from __future__ import annotations

import calendar
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np

from diagnosis.onset import Onset, estimate_onset
from diagnosis.series import decoded, display, peers_of
from pipeline.channels import KIND_CHANNEL_DEFS, KIND_CHANNELS
from pipeline.tensors import BundleTensors, KindTensors


@dataclass(frozen=True)
class PanelSpec:
    channel: str
    title: str
    target: str = "self"  # self | host (the component's host) | group (a disk's group) | hosts (every host)
    direction: int = 1  # +1: the fault pushes it up; -1: down
    onset: bool = False  # dates the onset (tried in order); none marked: the first panel with data


_P = PanelSpec
SPECS: Final[dict[str, tuple[PanelSpec, ...]]] = {
    "net.packet_loss": (
        _P("pnic.rxPacketsLossRate", "Received packet loss"),
        _P("pnic.rxCrcErr", "Receive CRC errors"),
        _P("esxtop.rx_drop_pct", "esxtop % received packets dropped"),
        _P("net.tcpTxRexmitRate", "Host TCP retransmit rate", "host"),
        _P("net.rxPacketsLossRate", "Host vSAN network receive loss", "host"),
    ),
    "net.link_degraded": (
        _P("pnic.rxThroughput", "Receive throughput"),
        _P("pnic.txThroughput", "Transmit throughput"),
        _P("pnic.pauseCount", "Pause frames", onset=True),
        _P("domclient.latencyAvgWrite", "Host DOM client write latency", "host", onset=True),
    ),
    "disk.latency": (
        _P("disk.latencyDevDAvg", "Device latency (DAVG)"),
        _P("disk.iopsDevRead", "Device read IOPS"),
        _P("ev.scsi_fail_medium", "SCSI medium errors"),
        _P("dg.latencySched", "Disk group scheduler latency", "group"),
    ),
    "disk.hotspot": (
        _P("disk.latencyDevRead", "Device read latency"),
        _P("disk.iopsDevRead", "Device read IOPS"),
        _P("disk.latencyDevWrite", "Device write latency"),
    ),
    "dg.write_buffer": (
        _P("dg.wbFreePct", "Write buffer free", direction=-1),
        _P("dg.logCongestion", "Log congestion"),
        _P("dg.latencySched", "Scheduler latency"),
        _P("dg.ssdBytesDrained", "Destage rate (bytes drained)"),
    ),
    "host.cpu_contention": (
        _P("cpu.pcpuUtilPct", "Physical CPU utilisation"),
        _P("vsancpu.readyPct", "vSAN worlds' CPU ready", onset=True),
        _P("esxtop.ready_max", "esxtop %RDY (max)"),
        _P("domcompmgr.latencyAvgRead", "DOM owner read latency"),
    ),
    "cluster.low_oio": (
        _P("domclient.oio", "Cluster outstanding I/O"),
        _P("domclient.iopsRead", "Cluster read IOPS"),
        _P("domclient.latencyAvgRead", "Cluster read latency"),
    ),
    "cluster.resync": (
        _P("domcompmgr.iopsResyncRead", "Resync read IOPS (all hosts)", "hosts"),
        _P("domcompmgr.iopsRecWrite", "Recovery write IOPS (all hosts)", "hosts"),
        _P("domclient.latencyAvgWrite", "Guest write latency (cluster)"),
    ),
}
OVERVIEW: Final = "overview"  # the fault of a healthy bundle's one chart (no fault: the cluster's overview)
# The overview's panels: the cluster's own DOM client view, each host's beside it.
OVERVIEW_PANELS: Final = (
    ("domclient.latencyAvgRead", "Read latency"),
    ("domclient.latencyAvgWrite", "Write latency"),
    ("domclient.throughputRead", "Read throughput"),
    ("domclient.throughputWrite", "Write throughput"),
    ("domclient.iopsRead", "Read IOPS"),
    ("domclient.iopsWrite", "Write IOPS"),
)
PEER_NAMES: Final = {
    "nic": "vSAN uplinks of other hosts",
    "disk": "disks of the same tier",
    "diskgroup": "other disk groups",
    "host": "other hosts",
}


@dataclass
class Panel:
    title: str
    channel: str
    unit: str  # display unit after `display_scale`
    subject_label: str
    subject: list[float | None]  # one value per step in display units, None where not observed
    peer_label: str = ""
    peers: list[list[float | None]] = field(default_factory=list)
    ref: float | None = None  # a horizontal reference line (a link's rate), in display units
    ref_label: str = ""


@dataclass
class Chart:
    component: str
    fault: str
    start: int  # epoch seconds of step 0
    step_s: int
    panels: list[Panel]
    onset: Onset | None
    span: tuple[int, int] | None = None  # [first, end) steps that drove the verdict (diagnosis.drivers)

    @property
    def title(self) -> str:
        return "Cluster overview" if self.fault == OVERVIEW else f"{self.fault} on {self.component}"

    def time_of(self, step: int) -> int:
        return self.start + step * self.step_s


def _rows(series: np.ndarray, rows: list[int], factor: float) -> list[list[float | None]]:
    return [[None if np.isnan(v) else round(float(v) * factor, 6) for v in series[j]] for j in rows]


def _target(bt: BundleTensors, kind: str, i: int, target: str) -> tuple[str, int | None]:
    """(kind, row) a panel is about; row None: every row of the kind (the hosts of a cluster fault)."""
    kt = bt.kinds[kind]
    if target == "host" and kind != "host":
        return "host", int(kt.host_index[i])
    if target == "group":
        return "diskgroup", int(kt.group_index[i])
    if target == "hosts":
        return "host", None
    return kind, i


def _short(cid: str) -> str:
    return cid.split(":", 1)[-1]


def _locate(bt: BundleTensors, component: str, spec: PanelSpec) -> tuple[str, int | None, int] | None:
    """(kind, row, channel index) a panel of `spec` reads for `component` (row None: every host); None
    when the component or the channel is not in the bundle."""
    kind = component.split(":", 1)[0]
    if kind not in bt.kinds or component not in bt.kinds[kind].ids:
        return None
    tkind, row = _target(bt, kind, bt.kinds[kind].ids.index(component), spec.target)
    kt: KindTensors = bt.kinds[tkind]
    if spec.channel not in KIND_CHANNELS[tkind] or (row is not None and row < 0) or not kt.ids:
        return None
    return tkind, row, KIND_CHANNELS[tkind].index(spec.channel)


def _dating(bt: BundleTensors, component: str, spec: PanelSpec) -> tuple[np.ndarray, np.ndarray] | None:
    """The subject's and its peers' series in the tensor's own scale, as the onset reads them; None
    when the subject has no data on this channel."""
    got = _locate(bt, component, spec)
    if got is None:
        return None
    tkind, row, c = got
    kt = bt.kinds[tkind]
    raw = np.where(kt.mask[:, c, :], kt.values[:, c, :], np.nan)
    if row is None:  # every host: their total is the subject
        if np.isnan(raw).all():
            return None
        return np.where(np.isnan(raw).all(axis=0), np.nan, np.nansum(raw, axis=0)), raw[:0]
    if np.isnan(raw[row]).all():
        return None
    return raw[row], raw[peers_of(bt, tkind, row)]


def panel(bt: BundleTensors, component: str, spec: PanelSpec) -> Panel | None:
    """The panel in display units; None when the channel has no data for the subject."""
    got = _locate(bt, component, spec)
    if got is None:
        return None
    tkind, row, c = got
    kt = bt.kinds[tkind]
    unit, factor = display(KIND_CHANNEL_DEFS[tkind][c].unit)
    x = decoded(kt, spec.channel)
    if row is None:  # every host: their total is the subject, each host a thin line
        if np.isnan(x).all():
            return None
        total = np.where(np.isnan(x).all(axis=0), np.nan, np.nansum(x, axis=0))
        return Panel(spec.title, spec.channel, unit, "all hosts, total", _rows(total[None], [0], factor)[0],
                     "each host", _rows(x, list(range(len(kt.ids))), factor))  # fmt: skip
    if np.isnan(x[row]).all():
        return None
    peers = peers_of(bt, tkind, row)
    p = Panel(spec.title, spec.channel, unit, _short(kt.ids[row]), _rows(x, [row], factor)[0],
              PEER_NAMES.get(tkind, ""), _rows(x, peers, factor))  # fmt: skip
    if tkind == "nic":
        _link_rate(p, kt, row, float(np.nanmax(x[row])) * factor)
    return p


def _link_rate(p: Panel, kt: KindTensors, row: int, top: float) -> None:
    """A degraded link shows in its negotiated speed (nicinfo) and throughput flat-topping at it."""
    s = kt.static_names.index("speed_gbps")
    if not kt.static_mask[row, s] or kt.static[row, s] <= 0:
        return
    gbps = float(kt.static[row, s])
    p.subject_label += f" ({gbps:g} Gb/s)"
    rate = gbps * 125.0  # MB/s
    if p.unit == "MB/s" and top >= 0.3 * rate:  # drawn only where the series comes near it
        p.ref, p.ref_label = rate, f"negotiated rate ({gbps:g} Gb/s)"


def onset_for(bt: BundleTensors, component: str, fault: str) -> Onset | None:
    """When the fault began on `component`, as its chart marks it: dated on the panels a spec marks, then
    on the others in order (a cause that leaves a counter flat, such as a loss in the vmkernel TCP/IP
    stack that moves no pnic counter, is dated by the one that moved). Reads the series only: the
    findings ask for it on the prediction path, where no chart is drawn."""
    specs = SPECS.get(fault, ())
    for spec in [s for s in specs if s.onset] + [s for s in specs if not s.onset]:
        got = _dating(bt, component, spec)
        if got is not None and (onset := estimate_onset(got[0], got[1], spec.direction)) is not None:
            return onset
    return None


def chart_for(bt: BundleTensors, component: str, fault: str) -> Chart | None:
    panels = [p for spec in SPECS.get(fault, ()) if (p := panel(bt, component, spec)) is not None]
    if not panels:
        return None
    return Chart(component, fault, bt.start, bt.step_s, panels, onset_for(bt, component, fault))


def overview(bt: BundleTensors) -> Chart | None:
    """The cluster's latency, throughput and IOPS (DOM client, as the guests see them), each host's as
    thin lines beside it; None when the bundle has none of them."""
    if not bt.kinds["cluster"].ids:
        return None
    cluster, hosts = bt.kinds["cluster"], bt.kinds["host"]
    panels = []
    for channel, title in OVERVIEW_PANELS:
        x = decoded(cluster, channel)[0]
        if np.isnan(x).all():
            continue
        unit, factor = display(KIND_CHANNEL_DEFS["cluster"][KIND_CHANNELS["cluster"].index(channel)].unit)
        per_host = decoded(hosts, channel) if channel in KIND_CHANNELS["host"] else np.empty((0, bt.T))
        rows = [j for j in range(per_host.shape[0]) if not np.isnan(per_host[j]).all()]
        panels.append(Panel(title, channel, unit, "cluster", _rows(x[None], [0], factor)[0],
                            "each host" if rows else "", _rows(per_host, rows, factor)))  # fmt: skip
    return Chart(cluster.ids[0], OVERVIEW, bt.start, bt.step_s, panels, None) if panels else None


def charts_for(bt: BundleTensors, diagnosis: dict[str, Any]) -> list[Chart]:
    """One chart per finding of the diagnosis document, in its order; findings whose channels have
    no data in this bundle get none. A document without findings gets the cluster's overview."""
    found = diagnosis.get("findings", [])
    if not found:
        return [c] if (c := overview(bt)) is not None else []
    out = []
    for f in found:
        ch = chart_for(bt, str(f.get("component", "")), str(f.get("fault", "")))
        if ch is not None:
            ch.span = _steps(bt, (f.get("drivers") or {}).get("span"))
            out.append(ch)
    return out


def _steps(bt: BundleTensors, span: Mapping[str, str] | None) -> tuple[int, int] | None:
    """A drivers span's ISO times as [first, end) steps of the bundle's grid (None: no span)."""
    if not span:
        return None
    a, b = (calendar.timegm(time.strptime(span[k], "%Y-%m-%dT%H:%M:%SZ")) for k in ("start", "end"))
    first, end = max(0, (a - bt.start) // bt.step_s), min(bt.T, -(-(b - bt.start) // bt.step_s))
    return (first, end) if end > first else None
