"""Perturbations of a simulated bundle's files that change what a fault does not determine, for the
generalisation benchmark: a model that learnt the signature keeps its accuracy under each of them.

Each works on the upload's files (path -> bytes, as `simulate_bundle` writes them) and leaves the
labels alone: a coarser sampling interval (the perf service averages over its interval), host folders
left out, no esxtop capture, the other ESXi log style, and the whole cluster's load scaled (units kept:
IOPS stay IOPS, only the level moves). Named as `kind` or `kind:arg`, e.g. `interval:3`, `load:0.5`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final

import numpy as np

__all__ = [
    "PERTURBATIONS",
    "apply",
    "coarser_interval",
    "drop_esxtop",
    "drop_hosts",
    "rescale_latency",
    "rescale_load",
    "restyle_logs",
]

Files = dict[str, bytes]
DUMP_MARK = "perf_stats_with_dump"
_INFO = re.compile(rb"<sampleInfo>([^<]*)</sampleInfo>")
_VALUES = re.compile(rb"<label>([^<]{1,200})</label>(?:<metricsCollectInterval>(\d{1,6})</metricsCollectInterval>)?"
                     rb"</metricId><values>([^<]*)</values>")  # fmt: skip
# Load counters: operations and bytes per second (perf dump) and esxtop's per-second columns.
_LOAD = re.compile(r"^(iops|tput|throughput|rxThroughput|txThroughput|rxPackets|txPackets|ioCount|ops)", re.I)
_LATENCY = re.compile(r"^lat", re.I)  # the labels the pipeline reads as microseconds (pipeline.channels)


def _is_dump(path: str) -> bool:
    return DUMP_MARK in path


def _decimals(vals: list[bytes]) -> int:
    for v in vals:
        if v != b"None":
            return len(v.split(b".")[1]) if b"." in v else 0
    return 0


def _fmt(x: float, decimals: int) -> bytes:
    return b"None" if np.isnan(x) else (b"%.*f" % (decimals, x) if decimals else b"%d" % round(x))


def _block_mean(raw: bytes, k: int) -> bytes:
    vals = raw.split(b",")
    x = np.array([np.nan if v == b"None" else float(v) for v in vals])
    n = len(x) // k * k
    if n == 0:
        return raw
    blocks = x[:n].reshape(-1, k)
    seen = (~np.isnan(blocks)).sum(axis=1)
    m = np.where(seen > 0, np.nansum(blocks, axis=1) / np.maximum(seen, 1), np.nan)  # None where all are
    d = _decimals(vals)
    return b",".join(_fmt(v, d) for v in m)


def coarser_interval(files: Files, k: int) -> Files:
    """The perf dump sampled every k-th interval: each new sample is the mean of k old ones (as the
    service averages over its collection interval), stamped with the block's first time."""
    if k <= 1:
        return files

    def info(m: re.Match[bytes]) -> bytes:
        stamps = m.group(1).split(b",")
        n = len(stamps) // k * k
        return b"<sampleInfo>" + b",".join(stamps[:n:k]) + b"</sampleInfo>"

    def values(m: re.Match[bytes]) -> bytes:
        label, iv, raw = m.group(1), m.group(2), m.group(3)
        head = b"<label>" + label + b"</label>"
        if iv is not None:
            head += b"<metricsCollectInterval>%d</metricsCollectInterval>" % (int(iv) * k)
        return head + b"</metricId><values>" + _block_mean(raw, k) + b"</values>"

    out = dict(files)
    for p, b in files.items():
        if _is_dump(p):
            out[p] = _VALUES.sub(values, _INFO.sub(info, b))
    return out


def drop_hosts(files: Files, rng: np.random.Generator) -> Files:
    """The same bundle with the folders of a random non-empty proper subset of its hosts left out.

    Every component stays labelled (CMMDS and the perf dump in the remaining folders still list it);
    what goes is that host's nicinfo, storage list, logs and esxtop, as when a customer uploads some hosts.
    """
    tops = sorted({p.split("/", 1)[0] for p in files if p.startswith("esx-") and "/" in p})
    if len(tops) < 2:
        return files
    keep = set(rng.choice(tops, size=int(rng.integers(1, len(tops))), replace=False).tolist())
    return {p: b for p, b in files.items() if not (p.startswith("esx-") and "/" in p) or p.split("/", 1)[0] in keep}


def drop_esxtop(files: Files) -> Files:
    """Every esxtop capture left out (the site collected none)."""
    return {p: b for p, b in files.items() if not (p.rsplit("/", 1)[-1].startswith("esxtop") and p.endswith(".csv"))}


_TS = re.compile(rb"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)(:? )")
_TAG8 = re.compile(rb"(?:In|Wa|Er|No)\(\d{1,3}\) [a-z]{1,12}(?:\[\d{1,9}\])?: ")


def _log_kind(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return next((k for k in ("vmkwarning", "vmkernel", "vobd") if name.startswith(k)), "")


def _restyle_line(line: bytes, kind: str, major: int) -> bytes:
    m = _TS.match(line)
    if m is None:
        return line
    rest = line[m.end() :]
    tagged = _TAG8.match(rest)
    if major >= 8:
        if tagged:
            return line
        sev = b"In(14)" if kind == "vobd" else b"Wa(180)" if kind == "vmkwarning" or b"WARNING" in rest else b"In(182)"
        who = b"vobd[2097702]" if kind == "vobd" else kind.encode()
        return m.group(1) + b" " + sev + b" " + who + b": " + rest
    if not tagged:
        return line
    return m.group(1) + (b": " if kind == "vobd" else b" ") + rest[tagged.end() :]


def restyle_logs(files: Files, major: int) -> Files:
    """vmkernel, vmkwarning and vobd lines rewritten in the ESXi `major` style (7: bare timestamp;
    8: `In(182) vmkernel:` tags, `Wa(180)` for warnings, `In(14) vobd[pid]:`). Rotated `.gz` copies
    are left as they are (a real upgrade leaves old rotations in the old style)."""
    out = dict(files)
    for p, b in files.items():
        kind = _log_kind(p)
        if kind and not p.endswith(".gz"):
            out[p] = b"\n".join(_restyle_line(line, kind, major) for line in b.split(b"\n"))
    return out


def _scale(raw: bytes, c: float, cap: float = np.inf) -> bytes:
    vals = raw.split(b",")
    d = _decimals(vals)
    return b",".join(v if v == b"None" else _fmt(min(float(v) * c, cap), d) for v in vals)


def _rescale(files: Files, labels: re.Pattern[str], c: float, cap: float = np.inf) -> Files:
    """The perf dump's counters whose label matches `labels` multiplied by `c` (at most `cap`); the
    rest unchanged."""

    def values(m: re.Match[bytes]) -> bytes:
        label = m.group(1)
        if not labels.match(label.decode("ascii", "replace")):
            return m.group(0)
        return m.group(0)[: m.start(3) - m.start(0)] + _scale(m.group(3), c, cap) + b"</values>"

    return {p: _VALUES.sub(values, b) if _is_dump(p) else b for p, b in files.items()}


def rescale_load(files: Files, c: float) -> Files:
    """Every load counter of the perf dump (IOPS, throughput, packets) multiplied by `c`; latencies,
    percentages, errors and congestion unchanged."""
    return _rescale(files, _LOAD, c)


MAX_LATENCY_US: Final = 1e8  # the largest latency bundle-format allows (check_bundle.py refuses more)


def rescale_latency(files: Files, c: float) -> Files:
    """Every latency counter of the perf dump multiplied by `c` (1000: written in nanoseconds where
    microseconds are expected), at most MAX_LATENCY_US so that the bundle stays one the spec allows
    (x1000 passes it only for latencies past 100 ms); everything else, esxtop's milliseconds
    included, unchanged."""
    return _rescale(files, _LATENCY, c, MAX_LATENCY_US)


PERTURBATIONS: dict[str, Callable[[Files, str, np.random.Generator], Files]] = {
    "interval": lambda f, a, r: coarser_interval(f, int(a or 3)),
    "hosts": lambda f, a, r: drop_hosts(f, r),
    "esxtop": lambda f, a, r: drop_esxtop(f),
    "logs": lambda f, a, r: restyle_logs(f, int(a or 7)),
    "load": lambda f, a, r: rescale_load(f, float(a or 2.0)),
    "units": lambda f, a, r: rescale_latency(f, float(a or 1000.0)),
}


def apply(spec: str, files: Files, rng: np.random.Generator) -> Files:
    """Apply `kind[:arg]` (see PERTURBATIONS); an empty spec returns the files unchanged."""
    if not spec:
        return files
    kind, _, arg = spec.partition(":")
    if kind not in PERTURBATIONS:
        raise ValueError(f"unknown perturbation {kind!r}; one of {', '.join(PERTURBATIONS)}")
    return PERTURBATIONS[kind](files, arg, rng)
