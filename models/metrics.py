"""Accuracy as the evaluation document of interface.md reports it.

    {"bundles": n, "exact_match": ..., "component_accuracy": ...,
     "per_fault": {fault id: {"precision", "recall", "f1", "support"}}, "latency_ms": {"p50", "p95"}}

exact_match is PerfPsychic's accuracy: the share of bundles whose every component got its true label.
Scores are over the components of the truth; a component the prediction omits counts as wrong. A
fault's precision is over the components predicted as that fault, its recall over those truly
carrying it (support); 0 where the denominator is 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from vsandx.faults import FAULT_IDS

Labels = Mapping[str, str]


def _check(y_true: Sequence[Labels], y_pred: Sequence[Labels]) -> None:
    if len(y_true) != len(y_pred):
        raise ValueError(f"{len(y_true)} true label sets but {len(y_pred)} predictions")


def exact_match(y_true: Sequence[Labels], y_pred: Sequence[Labels]) -> float:
    _check(y_true, y_pred)
    if not y_true:
        return 0.0
    hits = sum(all(p.get(cid) == label for cid, label in t.items()) for t, p in zip(y_true, y_pred, strict=True))
    return hits / len(y_true)


def component_accuracy(y_true: Sequence[Labels], y_pred: Sequence[Labels]) -> float:
    _check(y_true, y_pred)
    n = sum(len(t) for t in y_true)
    hits = sum(p.get(cid) == label for t, p in zip(y_true, y_pred, strict=True) for cid, label in t.items())
    return hits / n if n else 0.0


def per_fault(y_true: Sequence[Labels], y_pred: Sequence[Labels]) -> dict[str, dict[str, float | int]]:
    """Precision, recall, F1 and support of every fault id of the taxonomy (none excluded)."""
    _check(y_true, y_pred)
    tp = dict.fromkeys(FAULT_IDS, 0)
    n_pred = dict.fromkeys(FAULT_IDS, 0)
    support = dict.fromkeys(FAULT_IDS, 0)
    for t, p in zip(y_true, y_pred, strict=True):
        for cid, label in t.items():
            guess = p.get(cid)
            if label in support:
                support[label] += 1
                tp[label] += guess == label
            if guess in n_pred:
                n_pred[guess] += 1
    out: dict[str, dict[str, float | int]] = {}
    for f in FAULT_IDS:
        precision = tp[f] / n_pred[f] if n_pred[f] else 0.0
        recall = tp[f] / support[f] if support[f] else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        out[f] = {"precision": precision, "recall": recall, "f1": f1, "support": support[f]}
    return out


def latency_summary(latencies_ms: Sequence[float]) -> dict[str, float]:
    if not latencies_ms:
        return {"p50": 0.0, "p95": 0.0}
    a = np.asarray(latencies_ms, dtype=np.float64)
    return {"p50": float(np.percentile(a, 50)), "p95": float(np.percentile(a, 95))}


def evaluation_report(
    y_true: Sequence[Labels], y_pred: Sequence[Labels], latencies_ms: Sequence[float] | None = None
) -> dict[str, Any]:
    """The whole evaluation document (latency_ms from per-bundle latencies; zeros when not given)."""
    return {
        "bundles": len(y_true),
        "exact_match": exact_match(y_true, y_pred),
        "component_accuracy": component_accuracy(y_true, y_pred),
        "per_fault": per_fault(y_true, y_pred),
        "latency_ms": latency_summary(latencies_ms or []),
    }
