"""The learning curve of the training report: the best trial's recipe refitted on growing shares of
the training set, each scored on the test set."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from tqdm import tqdm

from models.base import load_model
from models.metrics import exact_match
from pipeline.tensors import BundleTensors
from training.fitting import fit_and_score, mix_issue_rate
from training.report import CurvePoint
from training.sweep_results import TrialOutcome

Labels = dict[str, str]


def learning_curve(
    best: TrialOutcome,
    best_exact: float,  # the best trial's test exact match (already measured)
    X: Sequence[BundleTensors],
    y: Sequence[Labels],
    Xv: Sequence[BundleTensors],
    yv: Sequence[Labels],
    Xt: Sequence[BundleTensors],
    yt: Sequence[Labels],
    fractions: Sequence[float],
    seed: int,
    out: Path,
    progress: bool = True,
) -> list[CurvePoint]:
    """The best trial's recipe (its config and issue-rate mix) refitted on growing shares of the
    training set. The whole set is the best trial itself: its model is scored, not trained again."""
    params = {k: v for k, v in best.config.items() if k != "issue_rate"}
    rate = best.config.get("issue_rate")
    order = np.random.default_rng(seed).permutation(len(X))
    points = []
    for frac in tqdm(fractions, desc="learning curve", unit="share", disable=not progress):
        idx = order[: max(2, round(frac * len(X)))]
        if len(idx) >= len(X):
            points.append(CurvePoint(frac, len(idx), best_exact, best.metrics.get("fit_seconds", 0.0)))
            continue
        Xs, ys = [X[i] for i in idx], [y[i] for i in idx]
        if rate is not None:  # as the trial did: the share's faulty/healthy mix at its issue rate
            Xs, ys = mix_issue_rate(Xs, ys, float(rate), seed=int(params.get("seed", 0)))
        t0 = time.perf_counter()
        fit_and_score(best.model, params, Xs, ys, Xv, yv, folder := out / f"{frac:.2f}")
        fit_s = time.perf_counter() - t0
        points.append(CurvePoint(frac, len(idx), exact_match(yt, load_model(folder).predict(Xt)), fit_s))
    return points
