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
from training.config import TrainConfig
from training.fitting import fit_and_score, mix_issue_rate
from training.report import CurvePoint
from training.sweep_results import TrialOutcome

Labels = dict[str, str]

# What follows the learning curve in a run (the report's calibration, review and unusual sections, the
# report, the ensemble's save and registration, the champion's comparison): 15 s on the quick preset
# (README); the curve's refits end this long before the run's budget does.
AFTER_CURVE_S = 120.0


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
    deadline: float | None = None,
) -> list[CurvePoint]:
    """The best trial's recipe (its config and issue-rate mix) refitted on growing shares of the
    training set. The whole set is the best trial itself: its model is scored, not trained again.
    With a `deadline` (time.time(), the run's end less what follows the curve) a refit stops before an
    epoch would end past it and is scored on its best epoch so far (`out_of_time`); a share whose
    refit would start past it is left out (the report says which)."""
    params = {k: v for k, v in best.config.items() if k != "issue_rate"}
    rate = best.config.get("issue_rate")
    order = np.random.default_rng(seed).permutation(len(X))
    points = []
    for frac in tqdm(fractions, desc="learning curve", unit="share", disable=not progress):
        idx = order[: max(2, round(frac * len(X)))]
        if len(idx) >= len(X):
            points.append(CurvePoint(frac, len(idx), best_exact, best.metrics.get("fit_seconds", 0.0)))
            continue
        if deadline is not None and time.time() >= deadline:
            continue
        Xs, ys = [X[i] for i in idx], [y[i] for i in idx]
        if rate is not None:  # as the trial did: the share's faulty/healthy mix at its issue rate
            Xs, ys = mix_issue_rate(Xs, ys, float(rate), seed=int(params.get("seed", 0)))
        t0 = time.perf_counter()
        got = fit_and_score(best.model, params, Xs, ys, Xv, yv, folder := out / f"{frac:.2f}", deadline=deadline)
        fit_s = time.perf_counter() - t0
        scored = exact_match(yt, load_model(folder).predict(Xt))
        points.append(CurvePoint(frac, len(idx), scored, fit_s, out_of_time=bool(got.get("out_of_time"))))
    return points


def curve_deadline(cfg: TrainConfig, started: float) -> float | None:
    """When the learning curve's refits must end (time.time()), None without a run budget: the run's
    end less AFTER_CURVE_S. The refit of half the standard preset's training set, unbounded, took 13.7
    of its 16-minute tail (2026-12-06, a 2-core Intel Xeon): a slower machine would pass the hour there."""
    return started + cfg.run_minutes * 60 - AFTER_CURVE_S if cfg.run_minutes > 0 else None
