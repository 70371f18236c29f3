"""Training-time augmentation of models/cnn_train.py: a bundle as another collection would show it.

Field uploads differ from the lab's in ways the model must not read as faults: coarser sampling
intervals (`coarsen`) and logs that were not collected or that rotated away (`without_events`). Both
work on a bundle's arrays (models.cnn_train.to_arrays) per batch, so no bundle is re-read.
`rescale_load` works on the bundle's tensors instead (its engineered features are computed again
from them, once per fit): a workload with s times the threads or disks at the same latency.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
import torch

from models.features import feature_names
from pipeline.channels import KIND_CHANNEL_DEFS, KIND_STATIC
from pipeline.tensors import BundleTensors
from vsandx.faults import COMPONENT_KINDS

if TYPE_CHECKING:
    from models.cnn_train import BundleArrays


# Per kind: which channels are log1p-scaled and which count log events per step (pipeline.channels).
_LOG = {k: torch.tensor([c.log for c in KIND_CHANNEL_DEFS[k]])[:, None] for k in COMPONENT_KINDS}
_EVENT = {k: torch.tensor([c.source == "event" for c in KIND_CHANNEL_DEFS[k]])[:, None] for k in COMPONENT_KINDS}
# Load channels: rates, throughputs and outstanding I/Os, which a closed loop with s times the threads
# (or VM disks) shows s times over at the same latency (Little's law: oio = iops x latency). Resync and
# recovery traffic (iopsResyncRead, tputResyncRead, iopsRecWrite) is a fault's own signature in absolute
# MB/s (faults.md), so the pattern leaves it out, as it does congestion and loss rates.
_LOAD_RE = re.compile(
    r"^(\w+\.(iops(Read|Write|DevRead|DevWrite|Sched)?|throughput\w*|[rt]x(Throughput|Packets)|oio\w*)"
    r"|esxtop\.(cmds|rx_mbits))$"
)
_LOAD = {k: np.array([bool(_LOAD_RE.match(c.name)) for c in KIND_CHANNEL_DEFS[k]]) for k in COMPONENT_KINDS}
assert all(c.log for k in COMPONENT_KINDS for c, ld in zip(KIND_CHANNEL_DEFS[k], _LOAD[k], strict=True) if ld)
# Faults whose label a load of 0.5-2x keeps: an under-driven closed loop at one thread per disk or two.
LOAD_INVARIANT = frozenset({"cluster.low_oio"})
# Halved to doubled: one thread per disk reads as two and two as one; a two-thread cluster doubled reads
# as four, past faults.md's "x 1" (the range is kept symmetric rather than tuned to the causes held out).
LOAD_SCALE_RANGE = (0.5, 2.0)
_STEP_STATIC = [KIND_STATIC["cluster"].index(s) for s in ("native_interval_s", "step_s")]
COARSEN_FACTORS = (2, 3, 5, 8, 15)  # lab 40 s steps -> 80 s … 10 min, the field's range
# Engineered feature columns computed from log-event channels (their statistics, counts, peer-relative
# values and context): what bundle_features gives for them when no log event was collected is 0.
_EVENT_FEATURES = {k: torch.tensor(["ev." in n for n in feature_names(k)]) for k in COMPONENT_KINDS}


def without_events(arrays: BundleArrays) -> BundleArrays:
    """The bundle as if its logs had not been collected (rotated away, or lines our parser does not
    know): every log-event channel and the feature columns built from them read "no data"."""
    out: BundleArrays = {}
    for kind, a in arrays.items():
        keep = ~_EVENT[kind]  # (C, 1)
        out[kind] = {**a, "values": a["values"] * keep, "mask": a["mask"] & keep}
        if "feat" in a:
            out[kind]["feat"] = a["feat"].masked_fill(_EVENT_FEATURES[kind], 0.0)
    return out


def coarsen(arrays: BundleArrays, k: int) -> BundleArrays:
    """The bundle as the pipeline would tensorise it at a k times coarser sampling interval.

    Field bundles come at 20–300 s over 1–48 h; the lab's are 20 s over 2 h. Each run of k steps
    becomes one: rates and levels are averaged in linear units (log1p channels through expm1),
    event counts per step are summed; the shorter series sits at the start of the grid and the
    rest is "no data", as for a short field upload. Targets and static features are kept, but the
    cluster's interval and step features follow the new grid.
    """
    out: BundleArrays = {}
    for kind, a in arrays.items():
        v, m = a["values"], a["mask"]  # (N, C, T)
        n, c, t = v.shape
        tk = t // k
        if tk < 2:
            return arrays
        lin = torch.where(_LOG[kind], torch.expm1(v), v) * m  # (N, C, T) linear units, 0 where masked
        mk = m[..., : tk * k].reshape(n, c, tk, k).float()
        tot = lin[..., : tk * k].reshape(n, c, tk, k).sum(-1)  # (N, C, tk)
        cnt = mk.sum(-1)
        pooled = torch.where(_EVENT[kind], tot, tot / cnt.clamp(min=1.0))
        pooled = torch.where(_LOG[kind], torch.log1p(pooled.clamp(min=0.0)), pooled)
        new_v, new_m = torch.zeros_like(v), torch.zeros_like(m)
        new_v[..., :tk] = torch.where(cnt > 0, pooled, 0.0)
        new_m[..., :tk] = cnt > 0
        out[kind] = {**a, "values": new_v, "mask": new_m}
        if kind == "cluster" and len(a["static"]):
            st = a["static"].clone()
            st[:, _STEP_STATIC] *= k
            out[kind]["static"] = st
    return out


def rescale_load(bt: BundleTensors, s: float) -> BundleTensors:
    """The bundle as a workload with `s` times the load at the same latencies would show it: every
    load channel (`_LOAD`, log1p-scaled) multiplied by s in linear units; latencies, utilisations,
    errors, congestion, resync and every static feature unchanged. A new object, so per-bundle memos
    (engineered features, rule margins) are computed afresh for it."""
    kinds = {}
    for k, kt in bt.kinds.items():
        v = kt.values.copy()  # (N, C, T) float32; 0 where masked, and log1p(0 * s) keeps it 0
        sel = _LOAD[k]
        v[:, sel] = np.log1p(np.expm1(v[:, sel].astype(np.float64)) * s)
        kinds[k] = replace(kt, values=v)
    return replace(bt, kinds=kinds)


def load_factor(rng: np.random.Generator) -> float:
    """s log-uniform over LOAD_SCALE_RANGE: as often halved as doubled."""
    lo, hi = np.log(LOAD_SCALE_RANGE[0]), np.log(LOAD_SCALE_RANGE[1])
    return float(np.exp(rng.uniform(lo, hi)))
