"""Conformal prediction sets: "not sure" as an answer. Per component, the labels that cannot be ruled
out at a chosen coverage (95 % by default): a set of one label is a verdict the model can stand by; a
set of several sends the component to an engineer for review.

Split conformal classification with crepes' ConformalClassifier, one per component kind (Mondrian by
kind: each kind has its own labels and its own calibration scores). The nonconformity of a label is
1 - its calibrated probability; the calibration scores are those of the true labels of the
calibration (validation) components, fitted in CalibratedDiagnoser.calibrate. A saved model keeps the
sorted scores per kind as arrays, and the classifiers are rebuilt from them at load: nothing pickled.

    cc = conformal_classifier(alphas)                 # alphas: (n,) the true labels' 1 - probability
    sets = label_sets(cc, q, coverage=0.95)           # q: (m, k) calibrated scores -> (m, k) bool

Coverage is guaranteed (at least `coverage` of the components' sets hold the true label) when the
components to diagnose are exchangeable with the calibration ones; non-smoothed p-values make the sets
deterministic and, if anything, a little larger.

A set is never empty: where no label conforms, the set is the most probable label alone. Where the
model is right far more often than the coverage asked for (hosts, NICs, disks: 99.9 %), plain split
conformal meets the coverage by emptying the sets of the components a little less sure than the
calibration ones, whose verdicts are still right: on 1,000 held-out-cause bundles 2,835 host, NIC, disk
group and disk components got an empty set and the top label was right for 2,781 of them, which sent
74 % of the bundles to review where 26 % held a component with several labels (README "Needs review").
Adding the top label only enlarges sets, so the coverage guarantee holds; "unlike anything seen" is the
out-of-distribution check's answer (models.ood), not an empty set's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from models.base import KIND_LABEL_INDEX, Labels, Proba, kind_targets
from pipeline.tensors import BundleTensors

if TYPE_CHECKING:  # crepes imports pandas and scipy.stats (seconds): only a model with sets pays for it
    from crepes import ConformalClassifier

DEFAULT_COVERAGE = 0.95
# Scores this close count as tied. Most components are scored at the probability floor, so most
# calibration scores share one value, which a component diagnosed later reaches through other float
# rounding (1e-16 apart); compared exactly, such a component would rank above them all and lose every
# label (coverage 0.41 on the leave-one-cause-out fold). Counting near-ties as ties only enlarges sets.
TIE_TOL = 1e-9

LabelSets = dict[str, np.ndarray]  # one bundle: component id -> (len(LABELS),) bool, its conformal set


def true_alphas(q: np.ndarray, t: np.ndarray) -> np.ndarray:
    """(n,) sorted nonconformity scores of the true labels `t` under the (n, k) scores `q`."""
    return np.sort(1.0 - q[np.arange(len(t)), t])


def conformal_classifier(alphas: np.ndarray) -> ConformalClassifier:
    from crepes import ConformalClassifier

    cc: ConformalClassifier = ConformalClassifier().fit(np.asarray(alphas, dtype=np.float64))
    return cc


def label_sets(cc: ConformalClassifier, q: np.ndarray, coverage: float = DEFAULT_COVERAGE) -> np.ndarray:
    """(m, k) bool: the labels whose p-value reaches 1 - coverage, for each row of scores `q`, and the
    row's most probable label where none does (a set is never empty)."""
    if not 0.0 < coverage < 1.0:
        raise ValueError(f"coverage {coverage}: expected a share strictly between 0 and 1")
    if len(q) == 0:
        return np.zeros(q.shape, dtype=bool)
    sets = np.asarray(cc.predict_set(1.0 - q - TIE_TOL, confidence=coverage, smoothing=False), dtype=bool)
    empty = ~sets.any(axis=1)
    sets[empty, np.argmax(q[empty], axis=1)] = True
    return sets


def bundle_sets(
    classifiers: Mapping[str, ConformalClassifier],
    probs: Sequence[Proba],
    X: Sequence[BundleTensors],
    coverage: float = DEFAULT_COVERAGE,
) -> list[LabelSets]:
    """Per bundle, each component's set over LABELS from its (calibrated) scores; components of a kind
    without calibration scores have none."""
    out: list[LabelSets] = [{} for _ in X]
    for kind, cc in classifiers.items():
        cols = KIND_LABEL_INDEX[kind]
        where = [(b, cid) for b, bt in enumerate(X) if kind in bt.kinds for cid in bt.kinds[kind].ids]
        if not where:
            continue
        q = np.array([probs[b][cid][cols] for b, cid in where], dtype=np.float64)
        q /= np.clip(q.sum(axis=1, keepdims=True), 1e-12, None)
        for (b, cid), s in zip(where, label_sets(cc, q, coverage), strict=True):
            full = np.zeros(len(probs[b][cid]), dtype=bool)
            full[cols] = s
            out[b][cid] = full
    return out


@dataclass
class KindReview:
    """How one kind's sets did on labelled bundles: how often they held the true label, and how many
    components they sent to review (a set of several labels)."""

    kind: str
    components: int
    coverage: float
    review: float  # share of the components sent to review
    mean_size: float


def review_summary(
    sets: Sequence[LabelSets], X: Sequence[BundleTensors], y: Sequence[Labels]
) -> tuple[list[KindReview], float]:
    """Per kind (and "all"): empirical coverage and review share of `sets` on (X, y); and the share of
    bundles with at least one component sent to review."""
    hits: dict[str, list[bool]] = {}
    sizes: dict[str, list[int]] = {}
    flagged = 0
    for b, bt in enumerate(X):
        any_review = False
        for kind, kt in bt.kinds.items():
            t = kind_targets(bt, y[b], kind)
            cols = KIND_LABEL_INDEX[kind]
            for cid, ti in zip(kt.ids, t, strict=True):
                if cid not in sets[b]:
                    continue
                s = sets[b][cid][cols]
                any_review |= int(s.sum()) > 1
                if ti >= 0:
                    hits.setdefault(kind, []).append(bool(s[ti]))
                    sizes.setdefault(kind, []).append(int(s.sum()))
        flagged += any_review
    hits["all"] = [h for k in list(hits) for h in hits[k]]
    sizes["all"] = [n for k in list(sizes) for n in sizes[k]]
    rows = []
    for kind in hits:
        h, n = np.array(hits[kind], dtype=float), np.array(sizes[kind], dtype=float)
        if len(h):
            rows.append(KindReview(kind, len(h), float(h.mean()), float((n > 1).mean()), float(n.mean())))
    return rows, flagged / len(X) if len(X) else 0.0
