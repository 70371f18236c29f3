"""Little's law per VM: whether the guests hold a number of I/Os in flight (a closed loop: a benchmark's
threads, one or two per VM disk in faults.md's under-driven cluster) or ask for a rate (an open loop:
users, a benchmark paced at an I/O rate).

A closed-loop VM keeps N I/Os outstanding whatever the latency, so its iops x latency (the I/Os it has in
flight) stays put while its iops follow the latency; a paced VM keeps its iops put while iops x latency
follows the latency. Which of the two moves less, VM by VM, tells them apart where the cluster's
summed oio cannot (light guests on top of a benchmark move the sum; a paced benchmark at a low rate
holds the sum as flat as threads do).

Where latency holds still the score reads noise: a benchmark's iops then hold still too. What threads
never do is let their in-flight level wander: the VMs that could be a benchmark of one or two threads per
disk (up to THREADED_MAX in flight), if each one's in-flight level moves, are paced or bursting guests
whatever the score says (`inflight_spread`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipeline.grid import Grid, resample
from pipeline.parse.perfdump import PerfEntity

MIN_STEPS = 10  # active grid steps a VM needs before its spreads mean anything
MIN_IOPS = 0.5  # below this a VM is idle at that step (no I/O to hold in flight)
MIN_INFLIGHT = 0.5  # a VM with fewer I/Os in flight says nothing either way (and weighs nothing)
# HCIBench VMs carry up to 8 data disks: one or two threads per disk hold at most 16 I/Os in flight. A VM
# holding more is no under-driven benchmark (guests queued behind a fault hold 30-170 at 30-170 ms).
THREADED_MAX = 16.0


def _spread(x: np.ndarray) -> float:
    """Interquartile range of log(x): how much a positive series moves, unmoved by the ramp steps where a
    benchmark starts or stops inside a grid step."""
    q75, q25 = np.percentile(np.log(x), [75, 25])
    return float(q75 - q25)


@dataclass(frozen=True)
class VmLoop:
    level: float  # I/Os in flight: median over the VM's active steps
    score: float  # closed-loop score in [-1, 1]
    inflight_spread: float  # interquartile range of log(I/Os in flight) over those steps


def _vm(e: PerfEntity, grid: Grid) -> VmLoop | None:
    """The VM's loop over its active steps (iops and latency both seen, some I/O), or None: too few."""
    ways = [(f"iops{d}", f"latency{d}") for d in ("Read", "Write") if f"iops{d}" in e.metrics]
    ways = [(i, lat) for i, lat in ways if lat in e.metrics]
    if not ways:
        return None
    labels = [lb for pair in ways for lb in pair]
    v, ok = resample(e.times, np.stack([e.metrics[lb] for lb in labels]), grid, e.interval or grid.native)
    seen = ok.all(axis=0)
    # counters are the upload's: huge ones overflow a product or sum to inf (or inf - inf to NaN)
    with np.errstate(over="ignore", invalid="ignore"):
        iops = v[0::2].sum(axis=0)  # (T,) operations/s
        inflight = (v[0::2] * v[1::2]).sum(axis=0) * 1e-6  # latency in microseconds: iops x seconds = I/Os
    # active: finite and positive only, so an overflowed step is no step
    act = seen & (iops > MIN_IOPS) & (inflight > 0) & np.isfinite(inflight) & np.isfinite(iops)
    if act.sum() < MIN_STEPS:
        return None
    level = float(np.median(inflight[act]))
    s_iops, s_inflight = _spread(iops[act]), _spread(inflight[act])
    total = s_iops + s_inflight
    return VmLoop(level, (s_iops - s_inflight) / total if total > 0 else 0.0, s_inflight)


def vm_loops(vms: list[PerfEntity], grid: Grid) -> list[VmLoop]:
    """Each VM with enough active steps to tell (in no particular order)."""
    return [got for got in (_vm(e, grid) for e in vms) if got is not None]


def closed_loop_score(loops: list[VmLoop]) -> float | None:
    """Mean closed-loop score of the VMs (vm_loops), weighted by the I/Os each holds in flight: +1 where every busy VM
    holds its in-flight I/Os flat while its iops move (threads), -1 where every one holds its iops flat
    (a rate), near 0 where measurement noise hides both. None: no VM with enough I/O to tell."""
    num = den = 0.0
    for v in loops:
        if v.level >= MIN_INFLIGHT:
            num += v.level * v.score
            den += v.level
    score = num / den if den > 0 else None
    return score if score is not None and np.isfinite(score) else None


def inflight_spread(loops: list[VmLoop]) -> float | None:
    """How much the in-flight level of the VMs holding MIN_INFLIGHT..THREADED_MAX I/Os moves: the median
    of their spreads, each VM weighing what it holds in flight (log units; a benchmark's threads read
    about 0.05, measurement noise only). None where no such VM."""
    small = sorted((v.inflight_spread, v.level) for v in loops if MIN_INFLIGHT <= v.level <= THREADED_MAX)
    if not small:
        return None
    spread, weight = np.array(small).T
    half = np.searchsorted(np.cumsum(weight), 0.5 * weight.sum())
    return float(spread[min(half, len(spread) - 1)])
