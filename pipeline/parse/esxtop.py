"""esxtop batch CSV (`esxtop -b`), streamed: only the columns the pipeline uses are kept.

Quirks handled: thousands of columns, a trailing comma, stray terminal text before the header,
spreadsheet re-saves (no quotes, CRLF, `M/D/YYYY H:MM`), rate counters at 0 in the first row.
"""

from __future__ import annotations

import calendar
import csv
import io
import math
from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

import numpy as np

from pipeline.config import PipelineConfig
from pipeline.errors import LimitExceeded
from pipeline.parse.textio import BoundedLines

PDH: Final = "(PDH-CSV 4.0)"
MAX_PREAMBLE_LINES: Final = 50
# (object, counter) -> series name; instance kept per column.
DISK_COUNTERS: Final = {
    "Average Driver MilliSec/Command": "davg",
    "Average Kernel MilliSec/Command": "kavg",
    "Average Guest MilliSec/Command": "gavg",
    "Commands/sec": "cmds",
}
PORT_COUNTERS: Final = {
    "% Received Packets Dropped": "rx_drop_pct",
    "% Outbound Packets Dropped": "tx_drop_pct",
    "MBits Received/sec": "rx_mbits",
}


@dataclass
class EsxtopCapture:
    host_label: str  # host name in the header (often "localhost…", not the CMMDS name)
    times: np.ndarray  # (n_rows,) int64 epoch seconds
    disk: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)  # device -> series -> (n_rows,)
    nic: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)  # vmnic -> series -> (n_rows,)
    host: dict[str, np.ndarray] = field(default_factory=dict)  # cpu_util, ready_max -> (n_rows,)
    columns: int = 0
    rows_skipped: int = 0
    truncated: bool = False  # rows past max_source_bytes or the values budget left out
    long_lines: int = 0
    values: int = 0  # kept, against max_perf_values


def sniff(head: bytes) -> bool:
    for line in head.split(b"\n")[:MAX_PREAMBLE_LINES]:
        if line.lstrip(b"\xef\xbb\xbf").lstrip(b'"').startswith(PDH.encode()):
            return True
    return False


def _split_header(col: str) -> tuple[str, str, str | None, str] | None:
    """`\\\\host\\Object(inst)\\Counter` -> (host, object, instance, counter)."""
    if not col.startswith("\\\\"):
        return None
    host, sep, rest = col[2:].partition("\\")
    obj, sep2, counter = rest.rpartition("\\")
    if not sep or not sep2:
        return None
    inst = None
    i = obj.find("(")
    if i > 0 and obj.endswith(")"):
        obj, inst = obj[:i], obj[i + 1 : -1]
    return host, obj, inst, counter


_DATE_CACHE: dict[str, int] = {}


def parse_time(s: str) -> int | None:
    """`MM/DD/YYYY HH:MM:SS` or a spreadsheet's `M/D/YYYY H:MM` -> epoch seconds."""
    s = s.strip()
    date, _, clock = s.partition(" ")
    base = _DATE_CACHE.get(date)
    if base is None:
        try:
            mo, d, y = (int(x) for x in date.split("/"))
            base = calendar.timegm((y, mo, d, 0, 0, 0))
            if not (1 <= mo <= 12 and 1 <= d <= 31 and 1970 <= y <= 2200):
                return None
        except (ValueError, OverflowError):
            return None
        if len(_DATE_CACHE) < 4096:
            _DATE_CACHE[date] = base
    try:
        parts = [int(x) for x in clock.split(":")]
    except ValueError:
        return None
    if len(parts) == 2:
        parts.append(0)
    if len(parts) != 3 or not (0 <= parts[0] < 24 and 0 <= parts[1] < 60 and 0 <= parts[2] < 61):
        return None
    return base + parts[0] * 3600 + parts[1] * 60 + parts[2]


def _float(s: str) -> float:
    try:
        v = float(s)
    except ValueError:
        return math.nan
    return v if math.isfinite(v) else math.nan


def parse_esxtop(
    stream: io.BufferedIOBase, where: str, config: PipelineConfig | None = None, max_values: int | None = None
) -> EsxtopCapture | None:
    """Rows past max_source_bytes, or past `max_values` kept values, are left out (`truncated`); a
    header wider than max_esxtop_columns is refused (LimitExceeded) before any row is read."""
    cfg = config or PipelineConfig()
    # A header field is under 128 bytes (`\\host\Physical Disk SCSI Device(naa.…)\Average …`):
    # a longer line cannot be within the column budget and is skipped unread.
    lines = BoundedLines(stream, max(cfg.max_line_bytes, 128 * cfg.max_esxtop_columns), cfg.max_source_bytes)
    reader = csv.reader(ln.decode("utf-8", "replace") for ln in lines)
    header: list[str] | None = None
    for i, row in enumerate(reader):
        if row and row[0].lstrip("\ufeff").strip().startswith(PDH):
            header = row
            break
        if i >= MAX_PREAMBLE_LINES:
            return None
    if header is None and lines.long_lines:
        raise LimitExceeded("max_esxtop_columns", where, f"a line of more than {lines.max_line} bytes")
    if header is None:
        return None
    if len(header) > cfg.max_esxtop_columns:
        raise LimitExceeded("max_esxtop_columns", where, f"{len(header)} columns")
    cap = _body(header, reader, cfg.max_perf_values if max_values is None else max_values)
    cap.truncated = cap.truncated or lines.truncated
    cap.long_lines = lines.long_lines
    return cap


def _body(header: list[str], rows: Iterable[list[str]], max_values: int) -> EsxtopCapture:
    sel: list[int] = []
    where_to: list[tuple[str, str, str]] = []  # (scope, key, series) per selected column
    ready: list[int] = []
    pcpu: list[int] = []  # per-CPU % Util Time, averaged when there is no _Total column
    host_label = ""
    for j, col in enumerate(header[1:], start=1):
        if not (
            "Physical Disk SCSI Device(" in col
            or "Network Port(" in col
            or "Physical Cpu(" in col
            or "Group Cpu(" in col
        ):
            continue
        parts = _split_header(col)
        if parts is None:
            continue
        host, obj, inst, counter = parts
        host_label = host_label or host
        if obj == "Physical Disk SCSI Device" and inst and counter in DISK_COUNTERS:
            sel.append(j)
            where_to.append(("disk", inst, DISK_COUNTERS[counter]))
        elif obj == "Network Port" and inst and counter in PORT_COUNTERS:
            nic = inst.rsplit(":", 1)[-1]
            if nic.startswith("vmnic"):
                sel.append(j)
                where_to.append(("nic", nic, PORT_COUNTERS[counter]))
        elif obj == "Physical Cpu" and inst == "_Total" and counter == "% Util Time":
            sel.append(j)
            where_to.append(("host", "", "cpu_util"))
        elif obj == "Physical Cpu" and counter == "% Util Time":
            pcpu.append(j)
        elif obj == "Group Cpu" and counter == "% Ready":
            ready.append(j)
    has_total = any(w == ("host", "", "cpu_util") for w in where_to)
    ready_like = pcpu if pcpu and not has_total else []
    width = len(header)
    times = array("q")
    cols = [array("d") for _ in sel]  # one growing column per selected counter: O(rows x selected)
    rmax = array("d")
    umean = array("d")
    skipped = 0
    per_row = len(sel) + 2
    truncated = False
    for row in rows:
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        if (len(times) + 1) * per_row > max_values:
            truncated = True
            break
        # a trailing comma gives one empty field more (or less, after a re-save)
        if len(row) != width and not (abs(len(row) - width) == 1 and (not row[-1] or not header[-1])):
            skipped += 1
            continue
        t = parse_time(row[0])
        if t is None:
            skipped += 1
            continue
        n = len(row)
        times.append(t)
        for a, j in zip(cols, sel, strict=True):
            a.append(_float(row[j]) if j < n else math.nan)
        if ready:
            rv = [_float(row[j]) for j in ready if j < n]
            rv = [v for v in rv if not math.isnan(v)]
            rmax.append(max(rv) if rv else math.nan)
        if ready_like:
            uv = [v for v in (_float(row[j]) for j in ready_like if j < n) if not math.isnan(v)]
            umean.append(sum(uv) / len(uv) if uv else math.nan)
    nrow = len(times)
    cap = EsxtopCapture(
        host_label,
        np.frombuffer(times, dtype=np.int64).copy(),
        columns=width - 1,
        rows_skipped=skipped,
        truncated=truncated,
        values=nrow * per_row,
    )
    ready_arr = np.frombuffer(rmax, dtype=np.float64).copy() if ready else None
    # Rate counters read 0 in a capture's first sample (nothing to diff against): missing, not 0.
    if nrow > 1 and ready_arr is not None and ready_arr[0] == 0:
        ready_arr[0] = np.nan
    for k, (scope, inst, name) in enumerate(where_to):
        arr = np.array(cols[k], dtype=np.float64)
        cols[k] = array("d")  # free as we go
        if nrow > 1 and arr[0] == 0:
            arr[0] = np.nan
        if scope == "disk":
            cap.disk.setdefault(inst, {})[name] = arr
        elif scope == "nic":
            cap.nic.setdefault(inst, {})[name] = arr
        else:
            cap.host[name] = arr
    if ready_arr is not None:
        cap.host["ready_max"] = ready_arr
    if ready_like:
        cap.host["cpu_util"] = np.frombuffer(umean, dtype=np.float64).copy()
    return cap
