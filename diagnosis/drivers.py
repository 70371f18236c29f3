"""What drove a finding's verdict, for the diagnosis document: the CNN members' integrated gradients
(models.attribution) averaged with their weights in the served ensemble, turned into the sources that
pushed towards the verdict (channels, static fields, checks, the expert rule; largest share first)
and the span of time where the component's series did.

    drivers(model, bt, "disk:esx-03/naa.5000...", "disk.latency")
    -> {"method": "integrated gradients (32 steps) ...", "members": 2, "gain": 15.6,
        "sources": [{"source": "ev.scsi_fail_host", "share": 0.19}, ...],
        "span": {"start": "2026-04-18T06:05:20Z", "end": "2026-04-18T06:45:20Z"} | None}

None for a model without CNNs (the expert rules and the baselines say why in their own evidence), and
for a finding none of whose members believes its verdict more than for a peer-like component (gain
<= 0: the verdict came from elsewhere in the ensemble, nothing here to show). The cluster has no peers:
its baseline is the training mean, and its series rarely localise a period, so it gets no span.
diagnosis.digest.drivers_sentence says a finding's drivers in words (without importing torch).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from models.attribution import STEPS, Attribution, cnn_members, integrated_gradients, sources, span
from models.base import Diagnoser
from pipeline.tensors import BundleTensors

MAX_SOURCES = 5
MIN_SHARE = 0.03  # sources below this share of the push are not named
METHOD = (
    "integrated gradients ({steps} steps) of the CNN members' log-probability of the verdict, from the "
    "component as its peers show it (the median of the other components of its kind) to the component as collected"
)


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def combined(model: Diagnoser, bt: BundleTensors, component: str, label: str, steps: int = STEPS) -> Attribution | None:
    """The CNN members' attributions averaged with their ensemble weights; None without CNN members."""
    members = cnn_members(model)
    if not members:
        return None
    parts = [(integrated_gradients(cnn, bt, component, label, steps), w) for cnn, w in members]
    total = sum(w for _, w in parts) or 1.0
    first = parts[0][0]
    return Attribution(
        component,
        first.kind,
        label,
        sum((a.series * (w / total) for a, w in parts), np.zeros_like(first.series)),
        sum((a.features * (w / total) for a, w in parts), np.zeros_like(first.features)),
        float(sum(a.gain * w for a, w in parts) / total),
        float(sum(a.delta * w for a, w in parts) / total),
    )


def drivers(
    model: Diagnoser, bt: BundleTensors, component: str, label: str, steps: int = STEPS
) -> dict[str, Any] | None:
    attr = combined(model, bt, component, label, steps)
    if attr is None or attr.gain <= 0:
        return None
    shares = [(k, v) for k, v in sources(attr).items() if v >= MIN_SHARE][:MAX_SOURCES]
    window = None if attr.kind == "cluster" else span(attr)
    return {
        "method": METHOD.format(steps=steps),
        "members": len(cnn_members(model)),
        "gain": round(attr.gain, 3),
        "sources": [{"source": k, "share": round(v, 3)} for k, v in shares],
        "span": None
        if window is None
        else {"start": _iso(bt.start + window[0] * bt.step_s), "end": _iso(bt.start + window[1] * bt.step_s)},
    }
