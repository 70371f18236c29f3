"""The training report: Markdown and PNG figures (also logged to MLflow by the caller).

Side by side on the field test set: exact match (every component right, the reference system's
definition), component accuracy, healthy bundles called all-`none`, per-fault recall, training time and
prediction latency; what the served scores are worth (calibration, review, the out-of-distribution
check: training/report_trust.py); then the learning curve, accuracy against epochs, learning rate and
issue rate, and training time against data size.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt

from models.base import Diagnoser
from models.metrics import component_accuracy, exact_match, per_fault
from pipeline.tensors import BundleTensors
from training.fitting import is_faulty
from training.report_trust import KindCalibration, Review, Unusual, calibration_lines, review_lines, unusual_lines
from vsandx.faults import FAULT_IDS

Labels = dict[str, str]


@dataclass
class ModelScore:
    name: str
    family: str  # cnn-ensemble | cnn | baseline
    exact_match: float
    component_accuracy: float
    healthy_all_none: float
    per_fault: dict[str, dict[str, float]]
    fit_seconds: float
    predict_ms_p50: float


@dataclass
class CurvePoint:
    fraction: float
    bundles: int
    exact_match: float
    fit_seconds: float
    out_of_time: bool = False  # the refit reached the run's deadline: scored on its best epoch so far


@dataclass
class Results:
    config: dict[str, Any]
    scores: list[ModelScore]
    trials: list[dict[str, Any]] = field(default_factory=list)  # config + val metrics of each sweep trial
    curve: list[CurvePoint] = field(default_factory=list)
    calibration: list[KindCalibration] = field(default_factory=list)
    review: Review | None = None
    unusual: Unusual | None = None


LATENCY_BUNDLES = 25


def score_model(
    name: str, family: str, model: Diagnoser, X: Sequence[BundleTensors], y: Sequence[Labels], fit_s: float
) -> ModelScore:
    """`model` on the test set (X, y) as the report shows it, predicting one bundle at a time; the
    serving path's latency on LATENCY_BUNDLES of them spread over the set, each a fresh object, so that
    nothing a training run memoised for it (models.memo) is read: the service meets every upload new."""
    pred: list[Labels] = []
    lat = []
    stride = max(1, len(X) // LATENCY_BUNDLES)
    for i, bt in enumerate(X):
        if i % stride:
            pred += model.predict([bt])
            continue
        fresh = copy.copy(bt)
        t = time.perf_counter()
        pred += model.predict([fresh])
        lat.append(1e3 * (time.perf_counter() - t))
    healthy = [p for p, t in zip(pred, y, strict=True) if not is_faulty(t)]
    return ModelScore(
        name,
        family,
        exact_match(y, pred),
        component_accuracy(y, pred),
        sum(not is_faulty(p) for p in healthy) / max(1, len(healthy)),
        {k: dict(v) for k, v in per_fault(y, pred).items()},
        fit_s,
        float(np.median(lat)) if lat else 0.0,
    )


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def _bar(scores: Sequence[ModelScore], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(7, 3.2))
    names = [s.name for s in scores]
    ax.bar(
        names,
        [100 * s.exact_match for s in scores],
        color=["#1f77b4" if s.family != "baseline" else "#999999" for s in scores],
    )
    ax.set_ylabel("exact match on field test (%)")
    ax.set_ylim(0, 100)
    ax.tick_params(axis="x", rotation=30)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _scatter(trials: Sequence[dict[str, Any]], key: str, path: Path, log: bool = False) -> bool:
    pts = [(t[key], t["val_exact_match"]) for t in trials if key in t and "val_exact_match" in t]
    if not pts:
        return False
    fig, ax = plt.subplots(figsize=(4.2, 3))
    ax.scatter([p[0] for p in pts], [100 * p[1] for p in pts], s=14)
    if log:
        ax.set_xscale("log")
    ax.set_xlabel(key)
    ax.set_ylabel("val exact match (%)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def _curve(curve: Sequence[CurvePoint], path: Path) -> None:
    fig, (a, b) = plt.subplots(1, 2, figsize=(8, 3))
    n = [c.bundles for c in curve]
    a.plot(n, [100 * c.exact_match for c in curve], marker="o")
    a.set_xlabel("training bundles")
    a.set_ylabel("exact match on field test (%)")
    b.plot(n, [c.fit_seconds for c in curve], marker="o", color="#d62728")
    b.set_xlabel("training bundles")
    b.set_ylabel("training time (s)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_report(res: Results, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    scores = sorted(res.scores, key=lambda s: -s.exact_match)
    lines = ["# vsandx training report", ""]
    cfg = res.config
    lines += [
        f"Training: {cfg.get('train')}; selection: {cfg.get('val')}; test (never used for a decision): "
        f"{cfg.get('test')}.",
        "",
    ]
    lines += [
        "## Field test set",
        "",
        "| model | exact match | component accuracy | healthy all-none | "
        "min per-fault recall | training time | predict p50 |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in scores:
        recalls = [m["recall"] for f, m in s.per_fault.items() if m.get("support", 0)]
        lines.append(
            f"| {s.name} | {_pct(s.exact_match)} | {_pct(s.component_accuracy)} | "
            f"{_pct(s.healthy_all_none)} | {_pct(min(recalls)) if recalls else 'n/a'} | "
            f"{s.fit_seconds:.0f} s | {s.predict_ms_p50:.1f} ms |"
        )
    _bar(scores, folder / "comparison.png")
    lines += ["", "![comparison](comparison.png)", "", "## Per-fault recall / precision on the field test set", ""]
    lines += ["| model | " + " | ".join(FAULT_IDS) + " |", "|---" * (len(FAULT_IDS) + 1) + "|"]
    for s in scores:
        cells = []
        for f in FAULT_IDS:
            m = s.per_fault.get(f, {})
            cells.append(f"{m.get('recall', 0):.2f} / {m.get('precision', 0):.2f} (n={int(m.get('support', 0))})")
        lines.append(f"| {s.name} | " + " | ".join(cells) + " |")
    if res.calibration:
        lines += calibration_lines(res.calibration, folder)
    if res.review:
        lines += review_lines(res.review)
    if res.unusual:
        lines += unusual_lines(res.unusual)
    if res.curve:
        _curve(res.curve, folder / "learning_curve.png")
        lines += ["", "## Learning curve and training time", "", "![learning curve](learning_curve.png)", ""]
        lines += ["| training bundles | exact match | training time |", "|---|---|---|"]
        lines += [
            f"| {c.bundles} | {_pct(c.exact_match)} | {c.fit_seconds:.0f} s"
            + (" (stopped at the run's deadline: its best epoch so far)" if c.out_of_time else "")
            + " |"
            for c in res.curve
        ]
        if left := sorted(set(cfg.get("curve", ())) - {c.fraction for c in res.curve}):
            shares = ", ".join(f"{100 * f:g} %" for f in left)
            lines += ["", f"Not refitted: {shares} of the training set (the run's deadline had passed)."]
    if res.trials:
        lines += ["", f"## Sweep: {len(res.trials)} trials", ""]
        for flag, what in (
            ("out_of_time", f"of them reached the sweep's deadline ({cfg.get('sweep_minutes', '?')} minutes a "
                            "family) before their last epoch and are scored on their best epoch so far."),
            ("late_start", "started with under a quarter of the sweep's time left, after another trial had "
                           "saved a model, and trained nothing."),
        ):  # fmt: skip
            n = sum(1 for t in res.trials if t.get(flag))
            lines += [f"{n} {what}", ""] if n else []
        for key, log in (("epochs", False), ("lr", True), ("issue_rate", False)):
            if _scatter([t for t in res.trials if not t.get("late_start")], key, folder / f"sweep_{key}.png", log):
                lines.append(f"![accuracy vs {key}](sweep_{key}.png)")
    path = folder / "report.md"
    path.write_text("\n".join(lines) + "\n")
    return path
