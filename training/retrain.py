"""Retraining with engineer feedback, and the decision whether the candidate replaces the champion.

`retrain` trains on the preset's lab and varied sets plus the feedback-labelled uploads (each in the
`retrain_feedback_weight` setting's copies: they are few, and real), with a sweep warm-started from the
champion's recorded configs (the winners.json its training run logged; else its own members'
hyperparameters), and takes the top-k
ensemble as the candidate. Candidate and champion are scored on the preset's field test set and on the
feedback set: the feedback bundles held out of training by sha256 (while that share is still empty,
every feedback bundle, and the run says it was judged on bundles it trained on). `decide` applies the
rule: at least as good on the field test set and better on the feedback set, or the champion stays.
The candidate is registered either way; the retrain is one MLflow run (tag vsandx.kind=retrain) with
both models' metrics, the decision and its reason.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from models.base import Diagnoser, SchemaMismatch, load_model
from models.features import hold_features
from models.metrics import component_accuracy, exact_match
from pipeline.config import PipelineConfig
from pipeline.tensors import BundleTensors
from training.config import TrainConfig
from training.datasets import DatasetSpec, LabelledBundle, build, build_labelled, load_dataset
from training.model_card import model_card
from training.model_fetch import fetch_model
from training.model_files import NoModel
from training.report import score_model
from training.run import (
    TRAINING_SETS,
    build_sets,
    dataset_specs,
    served_ensemble,
    sweep_and_rank,
    training_folder,
    training_sources,
)
from training.selection import choose_ensemble, winner_configs
from training.tracking import ModelRef, Run, Tracker
from vsandx.settings import Settings

KIND_TAG = "vsandx.kind"


ALPHA = 0.01  # the simulated field test set vetoes an engineer-backed candidate only on a loss this significant


@dataclass(frozen=True)
class Scores:
    exact_match: float
    component_accuracy: float
    bundles: int
    hits: tuple[bool, ...] = ()  # per bundle, every component right: what a paired test compares


def score(model: Diagnoser, X: Sequence[BundleTensors], y: Sequence[Mapping[str, str]]) -> Scores:
    if not X:
        return Scores(0.0, 0.0, 0)
    pred = model.predict(X)
    hits = tuple(all(p.get(c) == lab for c, lab in t.items()) for t, p in zip(y, pred, strict=True))
    return Scores(exact_match(y, pred), component_accuracy(y, pred), len(X), hits)


def mcnemar_worse(candidate: Scores, champion: Scores) -> float:
    """One-sided exact McNemar p-value that the candidate gets fewer bundles right than the champion on
    the same bundles (1.0 without per-bundle results): of the bundles exactly one of them gets right,
    how unlikely is the champion's share if both were equally good."""
    if not candidate.hits or len(candidate.hits) != len(champion.hits):
        return 1.0
    lost = sum(h and not c for c, h in zip(candidate.hits, champion.hits, strict=True))
    won = sum(c and not h for c, h in zip(candidate.hits, champion.hits, strict=True))
    n = lost + won
    return sum(math.comb(n, k) for k in range(lost, n + 1)) / 2**n if n else 1.0


@dataclass(frozen=True)
class Decision:
    promote: bool
    reason: str


def decide(
    candidate_field: Scores,
    champion_field: Scores | None,
    candidate_feedback: Scores,
    champion_feedback: Scores | None,
) -> Decision:
    """The promotion rule: engineer-confirmed bundles first. A champion score of None: no champion this
    pipeline can read. With held-back feedback bundles, the candidate must be better on them (a higher
    exact match, or the same and a higher component accuracy); the simulated field test set can then
    keep the champion only if the candidate is significantly worse there (one-sided exact McNemar test
    on the same bundles, p < ALPHA), not because it moved by a few bundles, as it does from run to run.
    Without a feedback set the field test set alone decides (the rule of `vsandx train`)."""
    if champion_field is None or champion_feedback is None:
        return Decision(True, "no champion this pipeline can read: the candidate becomes champion")
    c_f, h_f = candidate_field.exact_match, champion_field.exact_match
    on_field = f"field test set exact match {c_f:.3f} vs {h_f:.3f}"
    if candidate_feedback.bundles == 0:
        if c_f < h_f:
            return Decision(False, f"worse on the field test set ({on_field}); no feedback set yet to outweigh it")
        return Decision(True, f"at least as good on the field test set ({on_field}); no feedback set yet")
    c = (candidate_feedback.exact_match, candidate_feedback.component_accuracy)
    h = (champion_feedback.exact_match, champion_feedback.component_accuracy)
    on_fb = (f"{candidate_feedback.bundles} engineer-confirmed bundles: exact match {c[0]:.3f} vs {h[0]:.3f}, "
             f"component accuracy {c[1]:.4f} vs {h[1]:.4f}")  # fmt: skip
    if c <= h:
        return Decision(False, f"not better on the feedback set ({on_fb})")
    p = mcnemar_worse(candidate_field, champion_field)
    if c_f < h_f and p < ALPHA:
        return Decision(False, f"better on the feedback set ({on_fb}) but significantly worse on the simulated "
                               f"field test set ({on_field}, McNemar p = {p:.3f} < {ALPHA})")  # fmt: skip
    field = "not a significant loss" if c_f < h_f else "no loss"
    return Decision(True, f"better on the feedback set ({on_fb}); {on_field}: {field} (McNemar p = {p:.3f})")


def split_feedback(
    items: Sequence[LabelledBundle], holdout: float
) -> tuple[list[LabelledBundle], list[LabelledBundle], bool]:
    """(to train on, to judge on, judged on training bundles). A bundle is held out when its sha256 falls
    in the first `holdout` share of the hash space, so it stays held out as feedback grows; while none
    is, every feedback bundle is used for both."""
    held = [it for it in items if int(it.sha256[:8], 16) < holdout * 16**8]
    if not held:
        return list(items), list(items), bool(items)
    out = {it.sha256 for it in held}
    return [it for it in items if it.sha256 not in out], held, False


def champion_configs(
    tracker: Tracker, champ: ModelRef | None, model: Diagnoser | None, cfg: TrainConfig
) -> list[dict[str, Any]]:
    """The configs the champion was trained with, for the families `cfg` sweeps: its run's winners.json,
    else its (ensemble members') hyperparameters. What the preset fixes (its overrides) stays fixed."""
    found = tracker.run_json(champ.run_id, "winners.json") if champ and champ.run_id else None
    if not isinstance(found, list):
        base = getattr(model, "base_", model)  # a calibrated ensemble: its members lie one level down
        members = getattr(base, "models_", None) or ([base] if base is not None else [])
        found = [{"model": m.name, **m.get_params(deep=False)} for m in members]
    return [
        {k: v for k, v in c.items() if k not in cfg.overrides and k != "seed"}
        for c in found
        if isinstance(c, dict) and c.get("model") in cfg.families
    ]


@dataclass
class RetrainResult:
    promoted: bool
    reason: str
    candidate_version: str
    champion_version: str | None
    run_id: str
    metrics: dict[str, float]
    warm_start: list[dict[str, Any]] = field(default_factory=list)


def retrain(
    settings: Settings,
    cfg: TrainConfig,
    feedback: Sequence[LabelledBundle],
    *,
    holdout: float = 0.25,
    trigger: str = "demand",
    tags: Mapping[str, str] | None = None,
    candidate: Diagnoser | None = None,
    progress: bool = False,
) -> RetrainResult:
    """Train a candidate (or judge the one given, trained elsewhere), decide, register, maybe promote."""
    root = settings.data_dir.resolve()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = root / "runs" / f"retrain-{stamp}-{time.time_ns() % 10**6:06d}"
    specs = dataset_specs(cfg)
    fb_train, fb_judge, seen = split_feedback(feedback, holdout)
    pipe = PipelineConfig.from_settings()  # resolved once, as the service reads bundles
    Xt, yt = load_dataset(build(specs["test"], root, pipe, workers=settings.sim_workers, progress=progress))
    Xf, yf = load_dataset(build_labelled(fb_judge, root, pipe)) if fb_judge else ([], [])
    tracker = Tracker(root, settings.mlflow_tracking_uri, settings.mlflow_experiment)
    champ, champ_model = _load_champion(settings)
    warm = champion_configs(tracker, champ, champ_model, cfg)
    params = {
        "trigger": trigger,
        "feedback_bundles": len(feedback),
        "feedback_train": len(fb_train),
        "feedback_judge": len(fb_judge),
        "judged_on_training_bundles": seen,
        "champion_version": champ.version if champ else None,
        "warm_start": len(warm),
    }
    config = {"preset": asdict(cfg), "test": asdict(specs["test"]), "warm_start": warm, "holdout": holdout,
              "pipeline_config": asdict(pipe)}  # fmt: skip
    with tracker.run(f"retrain-{stamp}", params, config=config, tags={KIND_TAG: "retrain", **(tags or {})}) as run:
        if candidate is None:
            candidate = _sweep_candidate(run, cfg, specs, fb_train, warm, tracker, out, settings, pipe, progress)
        with hold_features(len(Xt) + len(Xf)):  # each bundle read by three scorings
            cand_field, cand_fb = score(candidate, Xt, yt), score(candidate, Xf, yf)
            champ_field = score(champ_model, Xt, yt) if champ_model else None
            champ_fb = score(champ_model, Xf, yf) if champ_model else None
            served = score_model(f"retrain candidate ({trigger})", "retrain", candidate, Xt, yt, 0.0)
        decision = decide(cand_field, champ_field, cand_fb, champ_fb)
        s = {"candidate_field": cand_field, "candidate_feedback": cand_fb, "champion_field": champ_field,
             "champion_feedback": champ_fb}  # fmt: skip
        metrics = {"field_bundles": float(len(Xt)), "feedback_bundles": float(len(Xf))}
        for name, sc in s.items():
            if sc is not None:
                metrics |= {f"{name}_exact_match": sc.exact_match, f"{name}_component_accuracy": sc.component_accuracy}
        run.log_metrics(metrics)
        data = {
            "train": f"the champion's recipe on simulated bundles plus {len(fb_train)} engineer-labelled "
            f"bundles ({settings.retrain_feedback_weight} copies each)",
            "judged on": f"{len(Xt)} simulated field bundles and {len(Xf)} engineer-labelled ones held back",
        }
        card = model_card(settings.registered_model, served, [], data, asdict(cfg))
        run.log_model_folder(candidate.save(out / "candidate"), card)
        ref = tracker.register(
            run.id, settings.registered_model, tags=_version_tags(run.id, cand_field, cand_fb, specs["test"]),
            description=f"retrain candidate ({trigger}, {len(feedback)} feedback bundles): {decision.reason}",
        )  # fmt: skip
        verdict = "promoted" if decision.promote else "kept"
        run.set_tags({"decision": verdict, "reason": decision.reason, "candidate_version": ref.version})
        run.log_dict(
            {"decision": verdict, "reason": decision.reason, "candidate_version": ref.version,
             "champion_version": champ.version if champ else None, "metrics": metrics, **params},
            "decision.json",
        )  # fmt: skip
        if decision.promote:
            tracker.promote(ref)
    return RetrainResult(
        decision.promote, decision.reason, ref.version, champ.version if champ else None, run.id, metrics, warm
    )


def _load_champion(settings: Settings) -> tuple[ModelRef | None, Diagnoser | None]:
    """The champion's registry entry and model; no model when this pipeline cannot read it."""
    try:
        got = fetch_model(None, settings.data_dir, settings.mlflow_tracking_uri, settings.registered_model)
    except NoModel:
        return None, None
    try:
        return got.ref, load_model(got.folder)
    except SchemaMismatch:
        return got.ref, None  # it cannot read this pipeline's tensors: it serves nothing any more


def _sweep_candidate(
    run: Run,
    cfg: TrainConfig,
    specs: dict[str, DatasetSpec],
    fb_train: Sequence[LabelledBundle],
    warm: Sequence[dict[str, Any]],
    tracker: Tracker,
    out: Path,
    settings: Settings,
    pipe: PipelineConfig,
    progress: bool,
) -> Diagnoser:
    """The served ensemble (top-k CNNs and the priors) of a sweep over the training sets plus the feedback
    bundles (weighted)."""
    root = settings.data_dir.resolve()
    folders = build_sets({k: specs[k] for k in ("val", *TRAINING_SETS) if k in specs}, settings, pipe, progress)
    feedback = [(build_labelled(fb_train, root, pipe), settings.retrain_feedback_weight)] if fb_train else []
    parts = training_sources(folders) + feedback
    val = folders["val"]
    _, ranked = sweep_and_rank(cfg, training_folder(parts, root), val, warm, tracker, out, settings, progress)
    train = training_folder(parts, root)
    top, members = choose_ensemble(ranked, *load_dataset(val), cfg.top_k)
    run.log_dict(winner_configs(top), "winners.json")  # the next retrain starts here if this one wins
    return served_ensemble(members, cfg, *load_dataset(train), load_dataset(val))


def _version_tags(run_id: str, field: Scores, feedback: Scores, test: DatasetSpec) -> dict[str, str]:
    tags = {"retrain_run": run_id, "test_set": json.dumps(asdict(test)), "test_exact_match": f"{field.exact_match:.6f}"}
    if feedback.bundles:
        tags["feedback_exact_match"] = f"{feedback.exact_match:.6f}"
    return tags
