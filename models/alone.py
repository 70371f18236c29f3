"""Faults the taxonomy defines as the only thing wrong in a bundle: an under-driven cluster is "healthy
but under-driven" (faults.md: every latency low and devices idle, no congestion, no errors anywhere).

A hot spot's benchmark, a congested group or a slow link under a light load leaves the cluster's other
devices as idle as an under-driven one, so a model that reads the cluster alone calls it under-driven
beside the fault that explains it. Both generators written from the spec by other authors
(data.sources) never label the two together, and an engineer would not: the fault found elsewhere is
the diagnosis. `alone` weighs the cluster's under-driven score by how healthy the rest of the bundle
reads (its least healthy component's `none` score) and renormalises: with nothing else suspect the
scores stand, with another component called faulty at p the under-driven score is scaled by 1 - p.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from models.base import Proba
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
    healthy = min(rest)
    idx = [LABELS.index(f) for f in faults]
    out = dict(probs)
    for cid, p in probs.items():
        if kind_of(cid) != "cluster":
            continue
        q = np.array(p, dtype=np.float64)
        q[idx] *= healthy
        total = q.sum()
        out[cid] = q / total if total > 0 else p
    return out
