"""Which trials the served model is made of: greedy ensemble selection on the validation set
(Caruana's), the winners' configs a later sweep starts from, and the names trials carry in MLflow."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from models.base import Diagnoser, load_model
from pipeline.tensors import BundleTensors
from training.fitting import select_members
from training.sweep_results import TrialOutcome

Labels = dict[str, str]


def trial_name(family: str, n: int, t: TrialOutcome) -> str:
    """A run name that tells trials apart in MLflow's list: family, number, the shape, the result."""
    c, shape = t.config, "/".join(f"{k[0]}{t.config[k]}" for k in ("width", "depth") if k in t.config)
    lr = f" lr {c['lr']:.1e}" if isinstance(c.get("lr"), float) else ""
    done = f" val {t.metrics['final_exact_match']:.3f}" if "final_exact_match" in t.metrics else " stopped"
    return f"{family}-trial-{n + 1} {shape}{lr}{done}"


def winner_configs(top: Sequence[TrialOutcome]) -> list[dict[str, Any]]:
    """What a later sweep starts from: each winner's family and config (its seed left to that sweep)."""
    return [{"model": t.model, **{k: v for k, v in t.config.items() if k != "seed"}} for t in top]


def choose_ensemble(
    ranked: Sequence[TrialOutcome], Xv: Sequence[BundleTensors], yv: Sequence[Labels], k: int
) -> tuple[list[TrialOutcome], list[Diagnoser]]:
    """The trials greedy selection keeps on the validation set (best first) and their loaded models."""
    fitted = [load_model(t.folder) for t in ranked if t.folder]  # ranked trials all have a folder
    chosen = select_members(fitted, Xv, yv, k)
    return [ranked[i] for i in chosen], [fitted[i] for i in chosen]
