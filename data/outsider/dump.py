"""The vSAN performance service dump (SOAP XML, one document per entity type), in several dialects."""

from __future__ import annotations

import datetime as dt
from xml.sax.saxutils import escape

import numpy as np
from numpy.typing import NDArray

from data.outsider.layout import Rng

F = NDArray[np.float64]
HEAD = "--------------SOAP stats dump--------------"
SEP = "--------------Stats Segment Separator--------------"
DUMP_NAMES = (
    "commands/python_usrlibvmwarevsanperfsvcvsan-perfsvc-statuspyc-perf_stats_with_dump.txt",
    "commands/python_usrlibvmwarevsanperfsvcvsan-perfsvc-statuspyc-perf_stats_with_dump.txt",
    "commands/vsan-perfsvc-status.pyc_perf_stats_with_dump.txt",
    "commands/python_vsan-perfsvc-status_perf_stats_with_dump.txt",
)


def fmt(label: str, x: F, gaps: NDArray[np.bool_], empty: str) -> str:
    low = label.lower()
    if "lossrate" in low or "drops" in low or "rexmit" in low or "errrate" in low:
        vals = [f"{v:.3f}" for v in x.tolist()]
    elif label.endswith(("Pct", "HitRate")):
        vals = [f"{v:.2f}" for v in x.tolist()]
    elif low.startswith("oio"):
        vals = [f"{v:.1f}" for v in x.tolist()]
    elif low.startswith("iops") and float(np.median(x)) < 50:
        vals = [f"{v:.2f}" for v in x.tolist()]
    else:
        vals = [str(v) for v in np.rint(x).astype(np.int64).tolist()]
    if gaps.any():
        for i in np.flatnonzero(gaps).tolist():
            vals[i] = empty
    return ",".join(vals)


def render(rng: Rng, ents: dict[str, dict[str, F]], start: dt.datetime, interval: int, T: int) -> str:
    times = ",".join((start + dt.timedelta(seconds=interval * i)).strftime("%Y-%m-%d %H:%M:%S") for i in range(T))
    gaps = np.zeros(T, dtype=bool)
    if rng.random() < 0.25:  # perf service restart: a few samples lost everywhere
        a = int(rng.integers(0, T))
        gaps[a : a + int(rng.integers(1, 4))] = True
    empty = "None" if rng.random() < 0.7 else ""
    style = int(rng.integers(0, 3))
    ns = ' xmlns="urn:vim25" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"'
    typed = style != 2
    by_type: dict[str, list[str]] = {}
    for eid, metrics in ents.items():
        et = eid.split(":", 1)[0]
        parts = [f"<entityRefId>{escape(eid)}</entityRefId><sampleInfo>{times}</sampleInfo>"]
        labels = list(metrics)
        if rng.random() < 0.3:
            rng.shuffle(labels)
        for lb in labels:
            mid = f"<label>{lb}</label>"
            if style == 1:
                mid += "<group>" + et + "</group><rollupType>average</rollupType><statsType>absolute</statsType>"
            mid += f"<metricsCollectInterval>{interval}</metricsCollectInterval>"
            thr = ""
            if style == 1 and lb.startswith("latency") and rng.random() < 0.2:
                thr = "<threshold><direction>upper</direction><yellow>30000</yellow><red>50000</red></threshold>"
            v = fmt(lb, metrics[lb], gaps, empty)
            if typed:
                parts.append(
                    f'<value xsi:type="VsanPerfMetricSeriesCSV"><metricId xsi:type="VsanPerfMetricId">{mid}</metricId>'
                    f"{thr}<values>{v}</values></value>"
                )
            else:
                parts.append(f"<value><metricId>{mid}</metricId>{thr}<values>{v}</values></value>")
        item = "".join(parts)
        open_tag = (
            '<VsanPerfEntityMetricCSV xsi:type="VsanPerfEntityMetricCSV">' if typed else "<VsanPerfEntityMetricCSV>"
        )
        by_type.setdefault(et, []).append(f"{open_tag}{item}</VsanPerfEntityMetricCSV>")
    order = list(by_type)
    if rng.random() < 0.5:
        rng.shuffle(order)
    docs = [f'<obj{ns} xsi:type="ArrayOfVsanPerfEntityMetricCSV">' + "".join(by_type[et]) + "</obj>" for et in order]
    return HEAD + "\n" + ("\n" + SEP + "\n").join(docs) + "\n"


def extras(rng: Rng, ents: dict[str, dict[str, F]], cluster_uuid: str) -> None:
    """Entity types and labels real dumps carry beyond the ones the spec names."""
    comp = [e for k, e in ents.items() if k.startswith("host-domcompmgr:")]
    if rng.random() < 0.5 and comp:
        ents[f"cluster-domcompmgr:{cluster_uuid}"] = {
            "iopsRead": sum((c["iopsRead"] for c in comp), np.zeros(len(comp[0]["iopsRead"]))),
            "iopsWrite": sum((c["iopsWrite"] for c in comp), np.zeros(len(comp[0]["iopsRead"]))),
            "latencyAvgRead": np.mean([c["latencyAvgRead"] for c in comp], axis=0),
            "latencyAvgWrite": np.mean([c["latencyAvgWrite"] for c in comp], axis=0),
        }
    if rng.random() < 0.4:
        for k, e in list(ents.items()):
            if k.startswith("host-domclient:"):
                T = len(e["oio"])
                e["iopsUnmap"] = np.zeros(T)
                e["latencyStddev"] = e["latencyAvgRead"] * 0.6
                e["readCongestion"] = e["congestion"] * 0
                e["writeCongestion"] = e["congestion"]
    if rng.random() < 0.4:
        for k, e in list(ents.items()):
            if k.startswith("vsan-host-net:"):
                ents["vsan-vnic-net:" + k.split(":", 1)[1] + "|vmk" + str(int(rng.integers(1, 3)))] = {
                    "rxThroughput": e["rxThroughput"],
                    "txThroughput": e["txThroughput"],
                    "rxPackets": e["rxPackets"],
                    "txPackets": e["txPackets"],
                }
