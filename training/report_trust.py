"""The training report's sections on what the served model's answers are worth, on the field test set:
calibration per kind (ECE before and after, beside what a calibrated model would show, and the
reliability diagram), the conformal sets' coverage and review share, and the out-of-distribution
check's false-flag rate. training/report.py writes them into the report.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt

from models.base import Diagnoser
from pipeline.tensors import BundleTensors

Labels = dict[str, str]


@dataclass
class KindCalibration:
    """How the served model's scores of one component kind were calibrated, and what it bought on the
    test set: top-label confidences and hits before and after, for the ECE and the reliability diagram."""

    kind: str
    method: str  # temperature | isotonic
    temperature: float | None
    before: tuple[np.ndarray, np.ndarray]  # (confidence, hit) per test component, uncalibrated
    after: tuple[np.ndarray, np.ndarray]


@dataclass
class Review:
    """The served model's conformal sets on the test set (models.conformal): per kind and over all,
    the empirical coverage and the share of components sent to review; the share of bundles with any."""

    coverage: float  # the coverage asked for
    kinds: list[Any]  # models.conformal.KindReview, "all" last
    bundles: float


@dataclass
class Unusual:
    """The served model's "never seen this" check (models.ood) on the test set, which is in distribution:
    the share of bundles it flags there is its false-flag rate."""

    threshold: float
    bundles: int
    flagged: float  # share of the test bundles flagged
    healthy: int
    healthy_flagged: float  # share of the healthy test bundles flagged


def _reliability(cal: Sequence[KindCalibration], path: Path, bins: int = 10) -> None:
    """Accuracy against confidence per kind, before (dashed) and after calibration; the diagonal is perfect."""
    fig, axes = plt.subplots(1, len(cal), figsize=(2.6 * len(cal), 2.8), squeeze=False)
    for ax, c in zip(axes[0], cal, strict=True):
        for (conf, hit), style, label in ((c.before, "--", "before"), (c.after, "-", "after")):
            idx = np.minimum((conf * bins).astype(int), bins - 1)
            used = [b for b in range(bins) if (idx == b).any()]
            ax.plot([conf[idx == b].mean() for b in used], [hit[idx == b].mean() for b in used], style,
                    marker="o", ms=3, label=label)  # fmt: skip
        ax.plot([0, 1], [0, 1], color="#999999", lw=0.8)
        ax.set(title=c.kind, xlabel="confidence", xlim=(0, 1), ylim=(0, 1.02))
    axes[0][0].set_ylabel("accuracy")
    axes[0][-1].legend(loc="lower right", fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def calibration_lines(cal: Sequence[KindCalibration], folder: Path) -> list[str]:
    """The report's calibration section: ECE per kind on the test set before and after, the diagram."""
    from models.ece import ece, ece_if_calibrated

    lines = ["", "## Calibration of the served model (field test set)", "",
             "Expected calibration error of each component's top score (15 bins; 0 = a score of 90 % is "
             "right 90 % of the time). The maps were fitted on the validation bundles. The last column is "
             "what a perfectly calibrated model would show with the same confidences on as many components "
             "(mean, and 95 % of draws below): an ECE under it cannot be told from calibrated.", "",
             "| kind | method | temperature | components | ECE before | ECE after | if calibrated |",
             "|---|---|---|---|---|---|---|"]  # fmt: skip
    for c in cal:
        t = f"{c.temperature:.2f}" if c.temperature is not None else ""
        floor, high = ece_if_calibrated(c.after[0])
        lines.append(
            f"| {c.kind} | {c.method} | {t} | {len(c.after[0])} | {ece(*c.before):.3f} | {ece(*c.after):.3f} "
            f"| {floor:.3f} (95 %: {high:.3f}) |"
        )
    _reliability(cal, folder / "reliability.png")
    return [*lines, "", "![reliability per kind](reliability.png)"]


def calibration_results(model: Diagnoser, Xt: Sequence[BundleTensors], yt: Sequence[Labels]) -> list[KindCalibration]:
    """The served model's calibration per kind on the test set ([] when it is not calibrated)."""
    from models.calibration import CalibratedDiagnoser
    from models.ece import kind_top

    if not isinstance(model, CalibratedDiagnoser):
        return []
    before, after = kind_top(model.base_.predict_proba(Xt), Xt, yt), kind_top(model.predict_proba(Xt), Xt, yt)
    out = []
    for kind, m in model.summary().items():
        if kind in after:
            t = float(np.exp(m["log_t"])) if "log_t" in m else None
            out.append(KindCalibration(kind, m["method"], t, before[kind], after[kind]))
    return out


def review_results(
    model: Diagnoser, Xt: Sequence[BundleTensors], yt: Sequence[Labels], coverage: float
) -> Review | None:
    """How the served model's conformal sets did on the test set (None: a model without them)."""
    from models.calibration import CalibratedDiagnoser
    from models.conformal import review_summary

    if not isinstance(model, CalibratedDiagnoser) or not model.conformal_:
        return None
    kinds, bundles = review_summary(model.prediction_sets(Xt, coverage=coverage), Xt, yt)
    return Review(coverage, kinds, bundles)


def unusual_results(model: Diagnoser, Xt: Sequence[BundleTensors], yt: Sequence[Labels]) -> Unusual | None:
    """The out-of-distribution check on the test set (None for a model without one)."""
    from models.calibration import CalibratedDiagnoser

    ood = model.ood_ if isinstance(model, CalibratedDiagnoser) else None
    if ood is None or not Xt:
        return None
    flag = ood.score(Xt) > ood.threshold_  # as diagnosis documents flag it (models.ood.explain)
    healthy = np.array([all(v == "none" for v in y.values()) for y in yt])
    return Unusual(float(ood.threshold_), len(Xt), float(flag.mean()), int(healthy.sum()),
                   float(flag[healthy].mean()) if healthy.any() else 0.0)  # fmt: skip


def unusual_lines(u: Unusual) -> list[str]:
    """The report's "never seen this" section: the threshold and the false-flag rate on the test set."""
    return ["", "## Never seen this: the out-of-distribution check (field test set)", "",
            f"Threshold {u.threshold:.2f} (the validation bundles' 99th percentile of scores, at least 2). The test "
            "set is drawn like the training data, so every bundle flagged there is a false flag: "
            f"{u.flagged:.1%} of {u.bundles} bundles, {u.healthy_flagged:.1%} of the {u.healthy} healthy "
            "ones."]  # fmt: skip


def review_lines(r: Review) -> list[str]:
    """The report's "needs review" section: coverage and review share per kind on the test set."""
    lines = ["", f"## Needs review: conformal sets at {r.coverage:.0%} coverage (field test set)", "",
             "A component whose set holds several labels is reported as needing review (a set is never empty: "
             "where no label conforms it is the most probable one). Coverage: the share of sets holding the "
             "true label.", "",
             "| kind | components | coverage | sent to review | mean set size |", "|---|---|---|---|---|"]  # fmt: skip
    for k in r.kinds:
        lines.append(f"| {k.kind} | {k.components} | {k.coverage:.3f} | {k.review:.1%} | {k.mean_size:.2f} |")
    return [*lines, "", f"Bundles with at least one component sent to review: {r.bundles:.1%}."]
