"""vSAN performance service dump (`vsan-perfsvc-status.pyc perf_stats_with_dump`): one XML document
per entity type per line, separated by the service's separator lines (bundle-format.md section 3)."""

from __future__ import annotations

import numpy as np

from data.simulate.netmetrics import Metrics

HEAD = "--------------SOAP stats dump--------------"
SEP = "--------------Stats Segment Separator--------------"
OBJ = (
    '<obj xmlns="urn:vim25" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
    'xsi:type="ArrayOfVsanPerfEntityMetricCSV">'
)


def _decimals(label: str) -> int:
    """Printed precision per metric, as the service prints them (integers where the unit is fine)."""
    low = label.lower()
    if "lossrate" in low or label in ("portRxDrops", "portTxDrops", "tcpTxRexmitRate", "tcpRxErrRate"):
        return 2
    if low.endswith("pct") or low.endswith("rate") or label in ("oio", "oioWrite"):
        return 1
    return 0


def format_values(x: np.ndarray, decimals: int) -> str:
    """Comma-separated values; NaN is a missing sample, printed `None` as the service does."""
    missing = np.isnan(x).any()
    y = np.maximum(np.nan_to_num(x, nan=-1.0) if missing else x, 0.0 if not missing else -1.0)
    if decimals == 0:
        parts = list(map(str, np.rint(y).astype(np.int64).tolist()))
    else:
        parts = list(map(f"%.{decimals}f".__mod__, y.tolist()))
    if missing:  # what prints as -1 is a missing sample
        for i in np.flatnonzero(np.round(y, decimals) <= -1).tolist():
            parts[i] = "None"
    return ",".join(parts)


def sample_info(times: np.ndarray) -> str:
    iso = np.datetime_as_string(times.astype("datetime64[s]"))
    return ",".join(t.replace("T", " ") for t in iso.tolist())


def render_dump(
    metrics: Metrics,
    times: np.ndarray,
    interval: int,
    keep: np.ndarray | None = None,
    empty: frozenset[str] = frozenset(),
) -> str:
    """The whole dump. `keep` (T,) bool drops samples the service never collected (gaps);
    entity ids in `empty` are listed with no data yet (a disk or host that just joined)."""
    sel = np.ones(len(times), dtype=bool) if keep is None else keep
    info = sample_info(times[sel])
    docs = []
    for etype, entities in metrics.items():
        parts = [OBJ]
        for eid, series in entities.items():
            ref = f"{etype}:{eid}"
            if ref in empty:
                parts.append(
                    f"<VsanPerfEntityMetricCSV><entityRefId>{ref}</entityRefId><sampleInfo></sampleInfo>"
                    "</VsanPerfEntityMetricCSV>"
                )
                continue
            parts.append(f"<VsanPerfEntityMetricCSV><entityRefId>{ref}</entityRefId><sampleInfo>{info}</sampleInfo>")
            for label, vals in series.items():
                parts.append(
                    f"<value><metricId><label>{label}</label><metricsCollectInterval>{interval}"
                    f"</metricsCollectInterval></metricId><values>"
                    f"{format_values(vals[sel], _decimals(label))}</values></value>"
                )
            parts.append("</VsanPerfEntityMetricCSV>")
        parts.append("</obj>")
        docs.append("".join(parts))
    return HEAD + "\n" + f"\n{SEP}\n".join(docs) + "\n"
