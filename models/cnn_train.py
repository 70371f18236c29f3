"""Batching and the plain-PyTorch fit loop of models/cnn.py, readable top to bottom.

    arrays = to_arrays(bundle, labels)     # once per bundle: torch views of its tensors + targets
    batch = collate([arrays, ...], device) # components of every bundle concatenated per kind
    history = fit_network(net, train, val, params, device)

The loop: AdamW, cosine learning-rate decay, class-weighted cross-entropy per component (summed over
kinds, averaged over labelled components), gradient-norm clipping, and early stopping on the
validation exact match (best weights restored) when a validation set is given. A `deadline` (wall
clock, time.time()) ends training early where the next epoch would finish past it: a sweep's budget
on a machine slower than its preset assumed. Deterministic for a seed on CPU: weights and dropout come
from torch.manual_seed (set by the caller), batch order from its own generator.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from models.base import Labels, kind_targets
from models.cnn_augment import COARSEN_FACTORS, LOAD_INVARIANT, coarsen, load_factor, rescale_load, without_events
from models.cnn_stats import class_weights, feature_stats, normalisation_stats
from models.features import bundle_features, learnt_static_mask
from models.seeds import clip_members, member_outputs
from pipeline.tensors import BundleTensors
from vsandx.faults import COMPONENT_KINDS


@dataclass
class KindBatch:
    values: Tensor  # (N, C, T) float32, 0 where masked
    mask: Tensor  # (N, C, T) bool
    valid: Tensor  # (N, T) bool: the step exists in its bundle (False in time padding)
    static: Tensor  # (N, S) float32
    static_mask: Tensor  # (N, S) bool
    bundle: Tensor  # (N,) int64 bundle index within the batch
    host: Tensor  # (N,) int64 host index within the batch; n_hosts for "no host" (the cluster)
    target: Tensor  # (N,) int64 index into KIND_LABELS[kind]; -1 = unlabelled
    feat: Tensor | None = None  # (N, F) engineered features (models.features), when the network reads them


@dataclass
class Batch:
    kinds: dict[str, KindBatch]
    n_bundles: int
    n_hosts: int


BundleArrays = dict[str, dict[str, Tensor]]  # kind -> field -> tensor, one bundle
EpochCallback = Callable[[Mapping[str, Any]], None]  # gets each epoch's history record


def to_arrays(bt: BundleTensors, labels: Labels | None = None, features: bool = False) -> BundleArrays:
    """One bundle's tensors as torch tensors (views, no copy) plus its targets; with `features`, each
    component's engineered feature row too (computed here, once per bundle, not per epoch)."""
    out: BundleArrays = {}
    feats = bundle_features(bt) if features else None
    for k in COMPONENT_KINDS:
        kt = bt.kinds[k]
        target = kind_targets(bt, labels, k) if labels is not None else np.full(len(kt.ids), -1, np.int64)
        out[k] = {
            "values": torch.from_numpy(kt.values),
            "mask": torch.from_numpy(kt.mask),
            "static": torch.from_numpy(kt.static),
            "static_mask": torch.from_numpy(learnt_static_mask(k, kt.static_mask)),
            "host": torch.from_numpy(kt.host_index.astype(np.int64)),
            "target": torch.from_numpy(target),
            "n_hosts": torch.tensor(len(bt.kinds["host"].ids)),
        }
        if feats is not None:
            out[k]["feat"] = torch.from_numpy(feats[k])
    return out


def collate(bundles: Sequence[BundleArrays], device: torch.device | str = "cpu") -> Batch:
    """Concatenate the bundles' components per kind; pad time to the longest bundle."""
    t_max = max(b[k]["values"].shape[-1] for b in bundles for k in COMPONENT_KINDS)
    host_offset = np.cumsum([0] + [int(b["host"]["n_hosts"]) for b in bundles])
    n_hosts = int(host_offset[-1])
    kinds = {}
    for k in COMPONENT_KINDS:
        parts = [b[k] for b in bundles]

        def cat(field: str, pad_time: bool = False, parts: list[dict[str, Tensor]] = parts) -> Tensor:
            xs = [p[field] for p in parts]
            if pad_time:
                xs = [x if x.shape[-1] == t_max else F.pad(x, (0, t_max - x.shape[-1])) for x in xs]
            return (xs[0] if len(xs) == 1 else torch.cat(xs)).to(device)  # one bundle: no copy

        valid = [p["values"].new_ones(p["values"].shape[0], p["values"].shape[-1], dtype=torch.bool) for p in parts]
        valid = [v if v.shape[-1] == t_max else F.pad(v, (0, t_max - v.shape[-1])) for v in valid]
        host = [
            torch.where(p["host"] >= 0, p["host"] + int(off), n_hosts)
            for p, off in zip(parts, host_offset, strict=False)
        ]
        kinds[k] = KindBatch(
            values=cat("values", pad_time=True),
            mask=cat("mask", pad_time=True),
            valid=torch.cat(valid).to(device),
            static=cat("static"),
            static_mask=cat("static_mask"),
            bundle=torch.cat([torch.full((len(p["host"]),), i) for i, p in enumerate(parts)]).to(device),
            host=torch.cat(host).to(device),
            target=cat("target"),
            feat=cat("feat") if "feat" in parts[0] else None,
        )
    return Batch(kinds, len(bundles), n_hosts)


def batch_loss(
    logits: Mapping[str, Tensor], batch: Batch, weights: Mapping[str, Tensor], kind_balance: float = 0.0
) -> Tensor:
    """Class-weighted cross-entropy over every labelled component.

    kind_balance 0: summed over components and divided by their number, so a kind weighs by its count
    (a 4-host bundle: ~40 disks, one cluster). 1: every kind weighs the same (the mean of each kind's
    mean), so the cluster's faults, one label per bundle, are not drowned by the disks'. In between:
    kind k's components weigh (n / n_k) ** kind_balance.
    """
    sums, counts = {}, {}
    for k in COMPONENT_KINDS:
        target = batch.kinds[k].target
        w = weights[k].to(logits[k].device)
        sums[k] = F.cross_entropy(logits[k], target, weight=w, ignore_index=-1, reduction="sum")
        counts[k] = int((target >= 0).sum())
    n = sum(counts.values())
    kw = {k: (n / c) ** kind_balance if c else 0.0 for k, c in counts.items()}
    total = sum(kw[k] * sums[k] for k in COMPONENT_KINDS)
    return total / max(sum(kw[k] * counts[k] for k in COMPONENT_KINDS), 1e-9)  # type: ignore[return-value]


@torch.inference_mode()
def evaluate(
    net: nn.Module,
    data: Sequence[BundleArrays],
    weights: Mapping[str, Tensor],
    device: torch.device,
    batch_size: int = 16,
    kind_balance: float = 0.0,
) -> dict[str, float]:
    """Mean loss (weighted across kinds as in training), component accuracy and exact match of `net` on
    labelled bundles."""
    net.eval()
    loss, hits, n, exact = 0.0, 0, 0, 0
    for i in range(0, len(data), batch_size):
        batch = collate(data[i : i + batch_size], device)
        logits = net(batch)
        n_lab = sum(int((batch.kinds[k].target >= 0).sum()) for k in COMPONENT_KINDS)
        loss += float(batch_loss(logits, batch, weights, kind_balance)) * n_lab
        wrong = torch.zeros(batch.n_bundles, device=device)
        for k in COMPONENT_KINDS:
            kb = batch.kinds[k]
            lab = kb.target >= 0
            ok = (logits[k].argmax(-1) == kb.target) & lab
            hits += int(ok.sum())
            n += int(lab.sum())
            wrong.index_add_(0, kb.bundle, (lab & ~ok).float())
        exact += int((wrong == 0).sum())
    return {"loss": loss / max(n, 1), "component_accuracy": hits / max(n, 1), "exact_match": exact / max(len(data), 1)}


class TrainParams(Protocol):
    lr: float
    weight_decay: float
    epochs: int
    batch_size: int
    class_weight_power: float
    kind_balance: float
    grad_clip: float
    patience: int
    seed: int
    coarsen_p: float
    event_dropout: float
    load_scale_p: float
    features: bool


def fit_network(
    net: nn.Module,
    train: Sequence[tuple[BundleTensors, Labels]],
    val: Sequence[tuple[BundleTensors, Labels]] | None,
    p: TrainParams,
    device: torch.device,
    on_epoch: EpochCallback | None = None,
    deadline: float | None = None,
) -> list[dict[str, Any]]:
    """Train `net` in place, its input statistics first (from the training bundles: models/cnn_stats.py);
    returns the per-epoch history (each record also goes to `on_epoch`). No epoch starts that, taking as
    long as the one before it, would end past `deadline` (time.time()); the last record then carries
    `out_of_time` = 1. At least one epoch always runs."""
    train_arrays = [to_arrays(bt, lab, p.features) for bt, lab in train]
    val_arrays = [to_arrays(bt, lab, p.features) for bt, lab in val] if val else []
    net.set_normalisation(normalisation_stats([bt for bt, _ in train]))  # type: ignore[operator]
    if p.features:
        net.set_feature_normalisation(feature_stats(train_arrays))  # type: ignore[operator]
    weights = class_weights(train_arrays, p.class_weight_power)
    net.to(device)
    opt = torch.optim.AdamW(net.parameters(), lr=p.lr, weight_decay=p.weight_decay)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(p.epochs, 1))
    order = torch.Generator().manual_seed(p.seed)
    aug = np.random.default_rng(p.seed)  # augmentation draws: their own stream
    # An under-driven cluster's bundles once more at another load (models.cnn_augment.rescale_load): its
    # label holds at one thread per disk as at two (faults.md), while a healthy paced benchmark shown
    # at half its load would teach the network that low oio is healthy. Features are computed again from
    # the rescaled tensors once per fit, not per epoch.
    rescaled: dict[int, BundleArrays] = {}
    if p.load_scale_p > 0:
        rescaled = {
            j: to_arrays(rescale_load(bt, load_factor(aug)), lab, p.features)
            for j, (bt, lab) in enumerate(train)
            if LOAD_INVARIANT.intersection(lab.values())
        }
    history: list[dict[str, Any]] = []
    # Model selection on the validation set's exact match (the figure that counts), loss breaking ties:
    # under the lab -> field shift the validation loss climbs from the first epochs (a few confident
    # misses dominate it) while exact match still improves, so stopping on loss kept epoch-2 models.
    best_score, best_state, since_best = (-1.0, 0.0), None, 0
    for epoch in range(p.epochs):
        t0 = time.perf_counter()
        net.train()
        perm = torch.randperm(len(train_arrays), generator=order).tolist()
        losses = []
        for i in range(0, len(perm), p.batch_size):
            chosen = [train_arrays[j] for j in perm[i : i + p.batch_size]]
            if rescaled:
                draws = aug.random(len(chosen))
                idx = perm[i : i + p.batch_size]
                chosen = [
                    rescaled[j] if j in rescaled and d < p.load_scale_p else a
                    for j, a, d in zip(idx, chosen, draws, strict=True)
                ]
            if p.coarsen_p > 0:
                draws = aug.random(len(chosen))
                chosen = [
                    coarsen(a, int(aug.choice(COARSEN_FACTORS))) if d < p.coarsen_p else a
                    for a, d in zip(chosen, draws, strict=True)
                ]
            if p.event_dropout > 0:  # the metrics alone must still tell: logs are not always there
                draws = aug.random(len(chosen))
                chosen = [without_events(a) if d < p.event_dropout else a for a, d in zip(chosen, draws, strict=True)]
            batch = collate(chosen, device)  # once for every member of a seed stack
            outs = member_outputs(net, batch)
            member_losses = [batch_loss(out, batch, weights, p.kind_balance) for out in outs]
            loss = torch.stack(member_losses).sum()  # members share no weights: independent gradients
            opt.zero_grad(set_to_none=True)
            loss.backward()
            clip_members(net, p.grad_clip)
            opt.step()
            losses.append(loss.item() / len(member_losses))
        sched.step()
        record: dict[str, Any] = {
            "epoch": epoch + 1,
            "train_loss": float(np.mean(losses)),
            "lr": sched.get_last_lr()[0],
        }
        if val_arrays:
            scores = evaluate(net, val_arrays, weights, device, kind_balance=p.kind_balance)
            record.update({f"val_{k}": v for k, v in scores.items()})
            score = (scores["exact_match"], -scores["loss"])
            if score > best_score:
                best_score, best_state, since_best = score, copy.deepcopy(net.state_dict()), 0
            else:
                since_best += 1
        record["seconds"] = time.perf_counter() - t0
        # the epoch just ended says what the next takes: the first is slower (caches, and beside a sweep
        # every process starts at once: 190 s against 40-54 s after it, the standard preset's cnn_small)
        out_of_time = deadline is not None and epoch + 1 < p.epochs and time.time() + record["seconds"] > deadline
        if out_of_time:
            record["out_of_time"] = 1.0
        history.append(record)
        if on_epoch is not None:
            on_epoch(record)
        if out_of_time or (val_arrays and since_best >= p.patience):
            break
    if best_state is not None:
        net.load_state_dict(best_state)
    return history
