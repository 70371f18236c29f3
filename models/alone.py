"""Faults the taxonomy defines as the only thing wrong in a bundle: an under-driven cluster is "healthy
but under-driven" (faults.md: every latency low and devices idle, no congestion, no errors anywhere).

A hot spot's benchmark, a congested group or a slow link under a light load leaves the cluster's other
devices as idle as an under-driven one, so a model that reads the cluster alone calls it under-driven
beside the fault that explains it. Both generators written from the spec by other authors
(data.sources) never label the two together, and an engineer would not: the fault found elsewhere is
the diagnosis. `alone` weighs the cluster's under-driven score by how healthy the rest of the bundle
reads (its least healthy component's `none` score) and renormalises: with nothing else suspect the
scores stand, with another component called faulty at p the under-driven score is scaled by 1 - p.

`counted`: where an engineer captured vscsiStats, it counts the I/Os each virtual disk holds outstanding
(faults.md's "threads per disk"). The rules read that count (models.rules_thresholds, disk_oio_max); the
learnt members never see it (models.features.RULES_ONLY_STATIC) and still call a cluster whose VMs hold
6-12 I/Os in flight under-driven, which one thread on 6-12 disks and three on 2-4 both read. A count of
three or more a disk is a benchmark driven as it should be, and one between one thread's whole 1 and two
threads' near 2 an open stream (a benchmark paced at its rate): no member's under-driven score stands there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from models.base import Proba
from models.rules_margins import no_thread_count
from models.rules_read import static
from models.rules_thresholds import THRESHOLDS
from pipeline.tensors import BundleTensors
from vsandx.components import kind_of
from vsandx.faults import LABELS, NONE

ALONE = ("cluster.low_oio",)
_NONE = LABELS.index(NONE)


def alone(probs: Proba, faults: Sequence[str] = ALONE) -> Proba:
    """One bundle's scores with each of `faults` (a cluster fault) weighed by the rest's health."""
    if not faults:
        return probs
    rest = [float(p[_NONE]) for cid, p in probs.items() if kind_of(cid) != "cluster"]
    if not rest:
        return probs
    return _scaled(probs, [LABELS.index(f) for f in faults], min(rest))


def _scaled(probs: Proba, idx: Sequence[int], by: float) -> Proba:
    """The cluster components' scores at `idx` scaled by `by`, each renormalised; the rest as they were."""
    out = dict(probs)
    for cid, p in probs.items():
        if kind_of(cid) != "cluster":
            continue
        q = np.array(p, dtype=np.float64)
        q[list(idx)] *= by
        total = q.sum()
        out[cid] = q / total if total > 0 else p
    return out


def threads_counted(bt: BundleTensors) -> float:
    """vscsiStats' outstanding I/Os per virtual disk in this bundle (NaN where no capture was read)."""
    kt = bt.kinds.get("cluster")
    if kt is None or not len(kt.ids):
        return float("nan")
    return float(static(kt, "vm_disk_oio")[0])


def counted(probs: Proba, threads: float, th: Mapping[str, float] = THRESHOLDS) -> Proba:
    """One bundle's scores with cluster.low_oio taken away where vscsiStats' count rules out one or two
    threads a disk (`threads`: threads_counted; NaN, no capture, leaves them): more than three, or a
    count between one thread's and two's (models.rules_margins.no_thread_count)."""
    if not no_thread_count(np.array([threads]), th)[0]:
        return probs
    return _scaled(probs, [LABELS.index("cluster.low_oio")], 0.0)
