"""What a sweep is asked for and what it gives back, without Ray: the spec, the trials' outcomes and the
sweep's record file. training/tune.py runs the sweep; selection, the learning curve and the baselines'
worker read its outcomes without importing Ray.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from models.registry import create_model, search_space

METRIC = "val_exact_match"  # what every epoch reports and ASHA stops on
# A trial that starts with under this share of its sweep's budget left trains nothing where another trial
# of the sweep saved a model already (`started_late`).
LATE_SHARE = 0.25

Row = tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]  # (config, last result, every result)


@dataclass(frozen=True)
class SweepSpec:
    model: str  # a registered CNN family, e.g. "cnn_base"
    num_samples: int = 8
    max_epochs: int = 150
    grace_epochs: int = 10
    issue_rate: tuple[float, float] = (0.2, 0.8)
    overrides: Mapping[str, Any] = field(default_factory=dict)  # fixed hyperparameters (e.g. epochs in CI)
    warm_start: Sequence[Mapping[str, Any]] = ()  # configs to evaluate first
    seed: int = 0
    max_concurrent: int = 0  # 0: as many as the CPUs (or GPUs) and the memory allow
    reserve_bytes: int = 0  # memory the caller's other processes will still take while the sweep runs
    budget_s: float = 0.0  # wall-clock seconds from the sweep's start to its trials' deadline; 0: none


@dataclass
class TrialOutcome:
    model: str
    config: dict[str, Any]
    metrics: dict[str, float]
    history: list[dict[str, float]]
    folder: Path | None  # saved model (None for trials ASHA stopped)


def registry_point(model: str, issue_rate: float = 0.5) -> dict[str, Any]:
    """The family's registered recipe (its defaults) as a point of its search space, at `issue_rate`
    (the sweep's own seed applies)."""
    params = create_model(model).get_params()
    return {k: params[k] for k in search_space(model) if k in params and k != "seed"} | {"issue_rate": issue_rate}


def first_line(error: object) -> str:
    """The line of a trial's error that says what happened (Tune's own "Failure # 1 (occurred at …)"
    header left out)."""
    lines = [ln.strip() for ln in str(error).splitlines() if ln.strip() and not ln.startswith("Failure #")]
    return lines[0] if lines else type(error).__name__


def outcomes(model: str, rows: Sequence[Row], out_dir: Path) -> list[TrialOutcome]:
    """The finished trials' outcomes, best first (final exact match, else the last validation score),
    each with its saved model's folder where the trial saved one; written to out_dir/sweep-MODEL.json."""
    found = []
    for config, metrics, history in rows:
        folder = out_dir / str(metrics.get("trial_id", ""))
        saved = folder if (folder / "config.json").exists() else None
        final = {
            k: float(v)
            for k, v in metrics.items()
            if (k.startswith(("val_", "final_")) or k in ("fit_seconds", "out_of_time", "late_start"))
            and isinstance(v, int | float)
            and not np.isnan(v)
        }
        if "final_exact_match" not in final:  # ASHA stopped it on the epoch that ran out of time: unscored
            final.pop("out_of_time", None)
        found.append(TrialOutcome(model, config, final, history, saved))
    found.sort(key=lambda o: o.metrics.get("final_exact_match", o.metrics.get(METRIC, 0.0)), reverse=True)
    (out_dir / f"sweep-{model}.json").write_text(
        json.dumps(
            [{"config": o.config, "metrics": o.metrics, "folder": str(o.folder)} for o in found],
            indent=1,
            default=str,
        )
    )
    return found


def started_late(trial_id: str, out_dir: Path, start_by: float | None, now: float) -> bool:
    """Whether trial `trial_id` (Tune's `<experiment>_<n>`) should not train: it starts past `start_by`
    (under LATE_SHARE of its sweep's budget left) and another trial of its sweep has saved a model in
    `out_dir` already, so the sweep still keeps one. Trained, it would run an epoch or two past the
    deadline at a validation score no ensemble keeps: the standard preset's second `cnn_base` trial, held
    to one at a time for memory, started about a minute before its deadline and ran 315 s for 0.715 (its
    first 0.925): the sweep 19 min 25 s against a 15.1-minute share, the run 1 h 06 min (2026-12-06)."""
    if start_by is None or now <= start_by:
        return False
    sweep = trial_id.rpartition("_")[0]
    return bool(sweep) and any(out_dir.glob(f"{sweep}_*/config.json"))
