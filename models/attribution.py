"""What drove a CNN's verdict: integrated gradients (Captum) of the verdict's log-probability with respect
to the component's own series and engineered-feature row, from a baseline where the component looks
like its peers.

The question an engineer asks of a verdict is "what about this component made you say so?", so the
baseline is the component as its peers show it: per channel and step, the median of the other
components of its kind in the same bundle (disks: of the same tier), and the median of their feature
rows; a kind with no peers (the cluster) starts from the training mean the network standardises with.
Attributions then split `gain`, how much more the network believes the verdict for this component
than for a peer-like one, over the channels and steps (and features) that made the difference; their
sum equals `gain` up to the integration error `delta` (completeness).

    attr = integrated_gradients(cnn, bt, "disk:naa.5000c5...", "disk.latency")
    attr.series      # (C, T) log-probability units per channel of KIND_CHANNELS[kind] and step
    attr.features    # (F,) per column of models.features.feature_names(kind); zeros without features
    sources(attr)    # {"disk.latencyDevDAvg": 0.61, "rule:disk.latency": 0.2, ...} shares of the positive mass

Only what moves the component's own inputs is attributed: the rest of the bundle (its host, its
peers, the cluster) stays as collected, so its influence on the verdict is in neither term.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import numpy as np
import torch
from torch import Tensor, nn

from models.base import KIND_LABELS, Diagnoser
from models.cnn_train import Batch, KindBatch, collate, to_arrays
from models.features import UPLINK_CHECKS, feature_names
from models.seeds import SeedStack
from pipeline.channels import KIND_CHANNELS
from pipeline.tensors import BundleTensors

if TYPE_CHECKING:
    from models.cnn import CNNDiagnoser
    from models.cnn_net import ClusterCNN

STEPS = 32  # path points: |delta| / gain median 3 % on held-out lab bundles (16 % at 8 steps, 1.6 % at 64)


@dataclass(frozen=True)
class Attribution:
    component: str
    kind: str
    label: str
    series: np.ndarray  # (C, T) float64, attributions of the component's channels per step
    features: np.ndarray  # (F,) float64, attributions of its engineered features
    gain: float  # log p(label | bundle) - log p(label | the component replaced by its baseline)
    delta: float  # gain - (series.sum() + features.sum()): the integral's error


def receptive_field(cnn: CNNDiagnoser) -> int:
    """Steps of input one encoder position sees: the stem's patch, then each block's kernel at a
    resolution that doubles after it (models.cnn_layers.KindEncoder halves T after each block). An
    attribution can spread up to half of it on either side of the steps that matter, so a span is only
    as sharp as this."""
    rf, res = cnn.stride, cnn.stride
    for _ in range(cnn.depth):
        rf += (cnn.kernel_size - 1) * res
        res *= 2
    return int(rf)


def cnn_members(model: Diagnoser) -> list[tuple[CNNDiagnoser, float]]:
    """The CNNs inside a served model with their weight in its average (0..1 of all members), calibration
    wrappers and ensembles unwrapped; [] for a model without CNNs."""
    from models.cnn import CNNDiagnoser

    if isinstance(model, CNNDiagnoser):
        return [(model, 1.0)]
    inner = getattr(model, "base_", None)
    if isinstance(inner, Diagnoser):  # models.calibration.CalibratedDiagnoser
        return cnn_members(inner)
    members: Sequence[Diagnoser] = getattr(model, "models_", ())
    if not members:
        return []
    w = np.asarray(getattr(model, "weights", ()) or np.ones(len(members)), float)
    w = w / w.sum()
    return [(cnn, float(wi * wc)) for m, wi in zip(members, w, strict=True) for cnn, wc in cnn_members(m)]


def _peers(bt: BundleTensors, kind: str, i: int) -> np.ndarray:
    """Row indices of component i's peers: the other components of its kind (disks: of its tier)."""
    kt = bt.kinds[kind]
    rows = np.array([j for j in range(len(kt.ids)) if j != i], dtype=int)
    if kind == "disk" and rows.size:  # static 0 = is_cache: cache and capacity devices are not peers
        rows = rows[kt.static[rows, 0] == kt.static[i, 0]]
    return rows


def _baseline(values: Tensor, mask: Tensor, peers: np.ndarray, fallback: Tensor) -> Tensor:
    """(C, T): per channel and step the median of the peers' observed values, `fallback` (C, 1) where
    no peer observed that step."""
    if peers.size == 0:
        return fallback.expand(values.shape[1:]).clone()
    v = values[peers].masked_fill(~mask[peers], float("nan"))  # (P, C, T)
    med = torch.nanmedian(v, dim=0).values  # (C, T), NaN where no peer has data
    return torch.where(torch.isnan(med), fallback.expand_as(med), med)


def integrated_gradients(
    cnn: CNNDiagnoser, bt: BundleTensors, component: str, label: str, steps: int = STEPS
) -> Attribution:
    from captum.attr import IntegratedGradients  # half a second to import: only when asked

    kind = component.split(":", 1)[0]
    kt = bt.kinds[kind]
    i, target = kt.ids.index(component), KIND_LABELS[kind].index(label)
    net = cnn.network_
    device = next(net.parameters()).device
    batch = collate([to_arrays(bt, features=cnn.features)], device)
    kb = batch.kinds[kind]
    peers = _peers(bt, kind, i)
    core = net.members[0] if isinstance(net, SeedStack) else net  # a SeedStack's members share the stats
    v0 = _baseline(kb.values, kb.mask, peers, getattr(core, f"mu_{kind}"))[None]  # (1, C, T)
    inputs: tuple[Tensor, ...] = (kb.values[i][None],)  # (1, C, T)
    baselines: tuple[Tensor, ...] = (v0,)
    if kb.feat is not None:
        f0 = kb.feat[peers].median(dim=0).values if peers.size else getattr(core, f"fmu_{kind}")
        inputs, baselines = (*inputs, kb.feat[i][None]), (*baselines, f0[None])  # (1, F) each

    log_prob = _row_log_prob(net, batch, kind, i, target)

    was_training = net.training
    net.eval()
    try:
        with torch.enable_grad():
            ig = IntegratedGradients(log_prob)
            attrs, delta = ig.attribute(
                inputs, baselines=baselines, n_steps=steps, method="riemann_trapezoid",
                internal_batch_size=steps + 1, return_convergence_delta=True,
            )  # fmt: skip
            with torch.no_grad():
                gain = float(log_prob(*inputs)[0] - log_prob(*baselines)[0])
    finally:
        net.train(was_training)
    series = attrs[0][0].detach().double().cpu().numpy()
    features = attrs[1][0].detach().double().cpu().numpy() if len(attrs) > 1 else np.zeros(len(feature_names(kind)))
    return Attribution(component, kind, label, series, features, gain, float(delta.abs().max()))


def _row_log_prob(net: nn.Module, batch: Batch, kind: str, i: int, target: int) -> Callable[..., Tensor]:
    """f(v (S, C, T)[, feat (S, F)]) -> (S,) the verdict's log-probability with row i of `kind` replaced
    by v[s] (and feat[s]). Everything else in the bundle stays as collected, so the other components'
    embeddings are computed once and only row i is encoded again, S rows in one pass (a member with
    peer inputs, whose rows depend on each other, encodes its kind whole per step)."""
    members = cast(list["ClusterCNN"], list(net.members) if isinstance(net, SeedStack) else [net])
    kb = batch.kinds[kind]
    with torch.no_grad():
        base = [{k: m.embed(k, batch) for k in m.kinds} for m in members]

    def rows(v: Tensor) -> KindBatch:  # S copies of row i, with the values v
        def rep(t: Tensor) -> Tensor:
            return t[i : i + 1].expand(v.shape[0], *t.shape[1:])

        return KindBatch(v, rep(kb.mask), rep(kb.valid), rep(kb.static), rep(kb.static_mask), rep(kb.bundle),
                         rep(kb.host), rep(kb.target))  # fmt: skip

    def spliced(a: Tensor, row: Tensor) -> Tensor:
        return torch.cat([a[:i], row, a[i + 1 :]])

    def log_prob(v: Tensor, f: Tensor | None = None) -> Tensor:
        per_member = []
        for m, emb in zip(members, base, strict=True):
            own = None if m.peer_inputs else m.embed(kind, Batch({kind: rows(v)}, 1, 0))  # (S, W)
            lps = []
            for s in range(v.shape[0]):
                feat = kb.feat if f is None or kb.feat is None else spliced(kb.feat, f[s : s + 1])
                b = Batch(batch.kinds | {kind: dataclasses.replace(kb, feat=feat)}, batch.n_bundles, batch.n_hosts)
                if own is None:  # peer inputs: the kind's rows read each other, so all are encoded again
                    whole = dataclasses.replace(kb, values=spliced(kb.values, v[s : s + 1]))
                    kind_emb = m.embed(kind, Batch(b.kinds | {kind: whole}, 1, batch.n_hosts))
                else:
                    kind_emb = spliced(emb[kind], own[s : s + 1])
                logits = m.classify(b, emb | {kind: kind_emb})[kind][i]
                lps.append(torch.log_softmax(logits.double(), -1))
            per_member.append(torch.stack(lps))  # (S, L)
        # a SeedStack answers the log of its members' mean probability (models.seeds)
        return (torch.logsumexp(torch.stack(per_member), 0) - math.log(len(per_member)))[:, target]

    return log_prob


def feature_source(kind: str, name: str) -> str:
    """What an engineered feature reads about the component: its channel ("disk.latencyDevDAvg" for
    "vs_kind:disk.latencyDevDAvg:p90"), a static field ("static:speed_gbps"), an uplink check or an
    expert rule ("rule:net.link_degraded"); "context" for what its host, group or cluster show."""
    if name in UPLINK_CHECKS or name.startswith("rule:"):
        return name
    head, _, rest = name.partition(":")
    if head in ("static", "has"):
        return f"static:{rest}"
    if head == "count":
        return rest
    if head in ("vs_kind", "vs_host", "vs_group"):
        return rest.rsplit(":", 1)[0]
    if rest and head in KIND_CHANNELS[kind]:
        return head
    if head == "cluster" and kind == "cluster":
        return rest.rsplit(":", 1)[0]
    if head.startswith(("hosts_", "diskgroups_")):  # the cluster's hosts or groups: median, max, min
        return f"{head.split('_', 1)[0]}:{rest.rsplit(':', 1)[0]}"
    if head in ("host", "group", "cluster") and rest:  # what the component's host, group, cluster show
        return f"{head}:{rest.rsplit(':', 1)[0]}"
    return "context"


def sources(attr: Attribution) -> dict[str, float]:
    """Share of the positive attribution mass (what pushed towards the verdict) per source: a channel
    (its series and the features read from it), a static field, a check or rule, or "context"; largest
    first, summing to 1 (empty when nothing pushed towards it)."""
    mass: dict[str, float] = {}
    for c, ch in enumerate(KIND_CHANNELS[attr.kind]):
        mass[ch] = mass.get(ch, 0.0) + float(np.clip(attr.series[c], 0, None).sum())
    for name, a in zip(feature_names(attr.kind), attr.features, strict=True):
        src = feature_source(attr.kind, name)
        mass[src] = mass.get(src, 0.0) + max(float(a), 0.0)
    total = sum(mass.values())
    if total <= 0:
        return {}
    return {k: v / total for k, v in sorted(mass.items(), key=lambda kv: -kv[1]) if v > 0}


def span(attr: Attribution, share: float = 0.6) -> tuple[int, int] | None:
    """[start, end) steps: the shortest window holding `share` of the series' positive attribution per
    step; None when the series pushed nothing towards the verdict."""
    per_step = np.clip(attr.series, 0, None).sum(axis=0)  # (T,)
    total = float(per_step.sum())
    if total <= 0:
        return None
    need, best = share * total, (0, len(per_step))
    lo, acc = 0, 0.0
    for hi, x in enumerate(per_step):  # two pointers: every window end, its shortest sufficient start
        acc += float(x)
        while lo < hi and acc - per_step[lo] >= need:
            acc -= float(per_step[lo])
            lo += 1
        if acc >= need and hi + 1 - lo < best[1] - best[0]:
            best = (lo, hi + 1)
    return best
