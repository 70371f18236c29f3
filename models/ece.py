"""Calibration error, as the training report, the model page and the benchmarks measure it: the
expected calibration error (ECE) of each component kind's top score, and what a perfectly calibrated
model would show on as many components (the figure an ECE target is read against). Kept apart from the
maps that lower it (models.calibration), which fit on what these measure.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from models.base import KIND_LABEL_INDEX, Labels, Proba, kind_targets
from pipeline.tensors import BundleTensors


def ece(conf: np.ndarray, correct: np.ndarray, bins: int = 15) -> float:
    """Expected calibration error of top-label confidences: the bin-size-weighted mean gap between
    confidence and accuracy over `bins` equal-width bins of confidence."""
    if len(conf) == 0:
        return 0.0
    idx = np.minimum((conf * bins).astype(int), bins - 1)
    total = 0.0
    for b in range(bins):
        m = idx == b
        if m.any():
            total += m.sum() * abs(float(correct[m].mean()) - float(conf[m].mean()))
    return total / len(conf)


def ece_if_calibrated(conf: np.ndarray, bins: int = 15, draws: int = 400, seed: int = 0) -> tuple[float, float]:
    """(mean, 95th percentile) of the ECE that a perfectly calibrated model would show with these
    confidences: each component right with probability exactly its confidence, `draws` times. On a
    hundred components the estimate itself is biased upward by a few points (bins with few members are
    never exactly right), so a measured ECE under this 95th percentile cannot be told from calibrated."""
    if len(conf) == 0:
        return 0.0, 0.0
    rng = np.random.default_rng(seed)
    got = [ece(conf, (rng.random(len(conf)) < conf).astype(float), bins) for _ in range(draws)]
    return float(np.mean(got)), float(np.quantile(got, 0.95))


def kind_scores(
    probs: Sequence[Proba], X: Sequence[BundleTensors], y: Sequence[Labels] | None, kind: str
) -> tuple[np.ndarray, np.ndarray]:
    """(n, k) the kind's labels' scores of every component of `kind`, and (n,) their targets (-1: none given)."""
    rows, targets = [], []
    cols = KIND_LABEL_INDEX[kind]
    for b, bt in enumerate(X):
        if kind not in bt.kinds:
            continue
        for cid in bt.kinds[kind].ids:
            rows.append(probs[b][cid][cols])
        if y is not None:
            targets.append(kind_targets(bt, y[b], kind))
    p = np.array(rows, dtype=np.float64).reshape(-1, len(cols))
    t = np.concatenate(targets) if targets else np.full(len(p), -1, dtype=np.int64)
    return p, t


def kind_top(
    probs: Sequence[Proba], X: Sequence[BundleTensors], y: Sequence[Labels]
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per kind: (top-label confidence, 1.0 where that label is right) of every labelled component."""
    out = {}
    for kind in KIND_LABEL_INDEX:
        p, t = kind_scores(probs, X, y, kind)
        p, t = p[t >= 0], t[t >= 0]
        if len(t):
            out[kind] = (p.max(axis=1) / p.sum(axis=1), (p.argmax(axis=1) == t).astype(float))
    return out


def kind_ece(probs: Sequence[Proba], X: Sequence[BundleTensors], y: Sequence[Labels]) -> dict[str, float]:
    """Expected calibration error of every kind's components on (X, y) from their scores `probs`, and
    over all components ("all"): what the training report and the benchmarks give."""
    top = kind_top(probs, X, y)
    out = {kind: ece(conf, hit) for kind, (conf, hit) in top.items()}
    confs, hits = [c for c, _ in top.values()], [h for _, h in top.values()]
    out["all"] = ece(np.concatenate(confs), np.concatenate(hits)) if confs else 0.0
    return out


def top_ece(q: np.ndarray, t: np.ndarray) -> float:
    return ece(q.max(axis=1), (q.argmax(axis=1) == t).astype(float))
