"""Fit one model and score it: the step every sweep trial and every baseline shares."""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from models.base import LABELS, Diagnoser
from models.metrics import component_accuracy, exact_match
from models.registry import create_model
from pipeline.tensors import BundleTensors

Labels = dict[str, str]
EpochCallback = Callable[[Mapping[str, float]], None]


def is_faulty(labels: Mapping[str, str]) -> bool:
    return any(v != "none" for v in labels.values())


def mix_issue_rate(
    X: Sequence[BundleTensors], y: Sequence[Labels], rate: float, seed: int = 0
) -> tuple[list[BundleTensors], list[Labels]]:
    """The largest subset whose share of faulty bundles is `rate` (PerfPsychic's issue-rate study)."""
    faulty = [i for i, lab in enumerate(y) if is_faulty(lab)]
    healthy = [i for i, lab in enumerate(y) if not is_faulty(lab)]
    if not faulty or not healthy:
        return list(X), list(y)
    rate = min(max(rate, 0.01), 0.99)
    n = min(len(faulty) / rate, len(healthy) / (1 - rate))
    rng = np.random.default_rng(seed)
    pick = list(rng.choice(faulty, size=max(1, round(n * rate)), replace=False))
    pick += list(rng.choice(healthy, size=max(1, round(n * (1 - rate))), replace=False))
    pick.sort()
    return [X[i] for i in pick], [y[i] for i in pick]


def fit_and_score(
    name: str,
    params: Mapping[str, Any],
    X: Sequence[BundleTensors],
    y: Sequence[Labels],
    Xv: Sequence[BundleTensors],
    yv: Sequence[Labels],
    folder: Path | None = None,
    on_epoch: EpochCallback | None = None,
    deadline: float | None = None,
) -> dict[str, float]:
    """Fit `name` with `params`; per-epoch figures go to `on_epoch` when the model trains in epochs, and
    a model that trains in epochs stops before one would end past `deadline` (time.time()).
    Returns (and reports last) the validation exact match and component accuracy; saves to `folder`."""
    model = create_model(name, **params)
    t0 = time.perf_counter()
    kwargs: dict[str, Any] = {}
    accepts = inspect.signature(model.fit).parameters
    if "eval_set" in accepts:
        kwargs["eval_set"] = (Xv, yv)
    if "on_epoch" in accepts and on_epoch is not None:
        kwargs["on_epoch"] = on_epoch
    if "deadline" in accepts and deadline is not None:
        kwargs["deadline"] = deadline
    model.fit(X, y, **kwargs)
    fit_s = time.perf_counter() - t0
    pred = model.predict(Xv)
    scores = {
        "final_exact_match": exact_match(yv, pred),
        "final_component_accuracy": component_accuracy(yv, pred),
        "fit_seconds": fit_s,
    }
    history = getattr(model, "history_", [])
    if history and history[-1].get("out_of_time"):
        scores["out_of_time"] = 1.0  # trained fewer epochs than asked: the deadline came first
    if folder is not None:
        model.save(folder)
    if on_epoch is not None:
        epochs = len(history) or 1
        on_epoch({"epoch": epochs + 1, "val_exact_match": scores["final_exact_match"], **scores})
    return scores


def select_members(models: Sequence[Diagnoser], Xv: Sequence[BundleTensors], yv: Sequence[Labels], k: int) -> list[int]:
    """Greedy ensemble selection on the validation set (Caruana et al. 2004, without replacement).

    `models` come best first; the first is always kept, and each next one joins only when the average
    of the probabilities with it is at least as good on validation exact match (component accuracy
    breaking ties) as without it, up to k members. A weak trial never dilutes the winners: averaging in
    a member that never calls some fault lowers that fault's recall for the whole ensemble.
    """
    probas = [m.predict_proba(Xv) for m in models]

    def score(members: list[int]) -> tuple[float, float]:
        pred = [
            {cid: LABELS[int(np.argmax(np.mean([probas[i][b][cid] for i in members], axis=0)))] for cid in probas[0][b]}
            for b in range(len(Xv))
        ]
        return exact_match(yv, pred), component_accuracy(yv, pred)

    chosen = [0]
    best = score(chosen)
    for i in range(1, len(models)):
        if len(chosen) >= k:
            break
        trial = score([*chosen, i])
        if trial >= best:
            chosen, best = [*chosen, i], trial
    return chosen
