"""Little's law per VM: whether the guests hold a number of I/Os in flight (a closed loop: a benchmark's
threads, one or two per VM disk in faults.md's under-driven cluster) or ask for a rate (an open loop:
users, a benchmark paced at an I/O rate).

A closed-loop VM keeps N I/Os outstanding whatever the latency, so its iops x latency (the I/Os it has in
flight) stays put while its iops follow the latency; a paced VM keeps its iops put while iops x latency
follows the latency. Which of the two moves less, VM by VM, tells them apart where the cluster's
summed oio cannot (light guests on top of a benchmark move the sum; a paced benchmark at a low rate
holds the sum as flat as threads do).
"""

from __future__ import annotations

import numpy as np

from pipeline.grid import Grid, resample
from pipeline.parse.perfdump import PerfEntity

MIN_STEPS = 10  # active grid steps a VM needs before its spreads mean anything
MIN_IOPS = 0.5  # below this a VM is idle at that step (no I/O to hold in flight)
MIN_INFLIGHT = 0.5  # a VM with fewer I/Os in flight says nothing either way (and weighs nothing)


def _spread(x: np.ndarray) -> float:
    """Interquartile range of log(x): how much a positive series moves, unmoved by the ramp steps where a
    benchmark starts or stops inside a grid step."""
    q75, q25 = np.percentile(np.log(x), [75, 25])
    return float(q75 - q25)


def _vm(e: PerfEntity, grid: Grid) -> tuple[float, float] | None:
    """(I/Os in flight: median over the VM's active steps, closed-loop score in [-1, 1]) or None."""
    ways = [(f"iops{d}", f"latency{d}") for d in ("Read", "Write") if f"iops{d}" in e.metrics]
    ways = [(i, lat) for i, lat in ways if lat in e.metrics]
    if not ways:
        return None
    labels = [lb for pair in ways for lb in pair]
    v, ok = resample(e.times, np.stack([e.metrics[lb] for lb in labels]), grid, e.interval or grid.native)
    seen = ok.all(axis=0)
    iops = v[0::2].sum(axis=0)  # (T,) operations/s
    inflight = (v[0::2] * v[1::2]).sum(axis=0) * 1e-6  # latency in microseconds: iops x seconds = I/Os
    # finite and positive only: counters are the upload's, and a product of two huge ones overflows
    act = seen & (iops > MIN_IOPS) & (inflight > 0) & np.isfinite(inflight) & np.isfinite(iops)
    if act.sum() < MIN_STEPS:
        return None
    level = float(np.median(inflight[act]))
    s_iops, s_inflight = _spread(iops[act]), _spread(inflight[act])
    total = s_iops + s_inflight
    return level, (s_iops - s_inflight) / total if total > 0 else 0.0


def closed_loop_score(vms: list[PerfEntity], grid: Grid) -> float | None:
    """Mean closed-loop score of the VMs, weighted by the I/Os each holds in flight: +1 where every busy VM
    holds its in-flight I/Os flat while its iops move (threads), -1 where every one holds its iops flat
    (a rate), near 0 where measurement noise hides both. None: no VM with enough I/O to tell."""
    num = den = 0.0
    for e in vms:
        got = _vm(e, grid)
        if got is None or got[0] < MIN_INFLIGHT:
            continue
        num += got[0] * got[1]
        den += got[0]
    score = num / den if den > 0 else None
    return score if score is not None and np.isfinite(score) else None
