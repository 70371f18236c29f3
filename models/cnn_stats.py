"""What a CNN fit learns from its training set before the first step: each kind's input statistics
(channels and statics: normalisation_stats; engineered features: feature_stats), which the network
normalises its inputs with, and the class weights of the loss (class_weights).

Apart from the fit loop (models/cnn_train.py): plain statistics over the training bundles, no network
and no optimiser; models/rocket.py standardises its series with the same normalisation_stats.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import Tensor

from models.base import KIND_LABELS
from models.features import learnt_static_mask
from pipeline.tensors import BundleTensors
from vsandx.faults import COMPONENT_KINDS

if TYPE_CHECKING:
    from models.cnn_train import BundleArrays

STD_FLOOR = 0.1  # a channel constant in training (an error counter that never fired) must not explode
FEATURE_STD_FLOOR = 1e-2


def normalisation_stats(bundles: Sequence[BundleTensors]) -> dict[str, tuple[np.ndarray, ...]]:
    """Per kind: masked mean and std of every channel and static feature over the training bundles."""
    stats: dict[str, tuple[np.ndarray, ...]] = {}
    for k in COMPONENT_KINDS:
        n = sum(float(bt.kinds[k].mask.sum()) for bt in bundles)
        if n == 0:
            c, s = bundles[0].kinds[k].values.shape[1], bundles[0].kinds[k].static.shape[1]
            stats[k] = (np.zeros(c), np.ones(c), np.zeros(s), np.ones(s))
            continue
        m = [bt.kinds[k].mask.sum((0, 2)) for bt in bundles]
        s1 = [bt.kinds[k].values.sum((0, 2), dtype=np.float64) for bt in bundles]
        s2 = [(bt.kinds[k].values.astype(np.float64) ** 2).sum((0, 2)) for bt in bundles]
        cnt = np.maximum(np.sum(m, 0), 1)
        mu = np.sum(s1, 0) / cnt
        sd = np.sqrt(np.maximum(np.sum(s2, 0) / cnt - mu**2, 0.0))
        st = np.concatenate([bt.kinds[k].static for bt in bundles])
        sm = np.concatenate([learnt_static_mask(k, bt.kinds[k].static_mask) for bt in bundles])
        scnt = np.maximum(sm.sum(0), 1)
        smu = (st * sm).sum(0) / scnt
        ssd = np.sqrt(np.maximum(((st - smu) ** 2 * sm).sum(0) / scnt, 0.0))
        stats[k] = tuple(a.astype(np.float32) for a in (mu, np.maximum(sd, STD_FLOOR), smu, np.maximum(ssd, STD_FLOOR)))
    return stats


def feature_stats(train: Sequence[BundleArrays]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per kind: mean and std (floored) of every engineered feature over the training components."""
    out = {}
    for k in COMPONENT_KINDS:
        f = torch.cat([b[k]["feat"] for b in train]).double()  # (N, F)
        mu = f.mean(0) if len(f) else f.new_zeros(f.shape[1])
        sd = f.std(0, correction=0) if len(f) > 1 else f.new_ones(f.shape[1])
        out[k] = (mu.float().numpy(), sd.clamp(min=FEATURE_STD_FLOOR).float().numpy())
    return out


def class_weights(train: Sequence[BundleArrays], power: float) -> dict[str, Tensor]:
    """Per kind (n_labels,) weights (n / (k * count)) ** power over the labels seen in training."""
    out = {}
    for k in COMPONENT_KINDS:
        t = torch.cat([b[k]["target"] for b in train])
        counts = torch.bincount(t[t >= 0], minlength=len(KIND_LABELS[k])).double()
        seen = counts > 0
        w = torch.zeros_like(counts)
        w[seen] = (counts[seen].sum() / (seen.sum() * counts[seen])) ** power
        w[seen] /= (w[seen] * counts[seen]).sum() / counts[seen].sum()  # mean weight per row = 1
        w[~seen] = 1.0
        out[k] = w.float()
    return out
