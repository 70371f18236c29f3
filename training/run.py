"""`vsandx train`: datasets, CNN sweeps, baselines, the top-k ensemble, the report, the registry.

Lab bundles and "varied" bundles (the field profile's generator: other cluster sizes, hardware,
intervals and workloads, with seeds of their own) train; field bundles of another seed select
(validation); a third field set is the test set that no decision ever sees. The varied share is
domain randomisation: measured on 200 field test bundles, cnn_small went from 0.815 exact match with
600 lab bundles alone to 0.945 with 600 lab + 600 varied (logreg 0.81 -> 0.955). The winning
ensemble becomes `champion` only when it is at least as good on that test set as the champion already
registered (or when there is none).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from data.sources import BUNDLES
from models.base import Diagnoser, SchemaMismatch, load_model
from models.calibration import CalibratedDiagnoser
from models.ensemble import EnsembleDiagnoser
from models.features import hold_features
from models.metrics import exact_match
from models.registry import create_model
from pipeline.config import PipelineConfig
from pipeline.tensors import BundleTensors
from training.background import background, fit_baselines, one_thread, refit_curve
from training.config import TrainConfig
from training.curve import curve_deadline
from training.datasets import DatasetSpec, build, bundle_count, combine, load_dataset
from training.fitting import Labels
from training.model_card import model_card
from training.model_fetch import fetch_model
from training.model_files import NoModel
from training.report import ModelScore, Results, score_model, write_report
from training.report_trust import calibration_results, review_results, unusual_results
from training.selection import choose_ensemble, trial_name, winner_configs
from training.sweep_errors import SweepFailed
from training.sweep_memory import loaded_bytes
from training.sweep_results import SweepSpec, TrialOutcome
from training.tracking import Tracker
from training.tune import run_sweep
from vsandx.settings import Settings


@dataclass
class Trained:
    champion: bool
    version: str
    report: Path
    scores: list[ModelScore]


def _warm_start(data_dir: Path) -> list[dict[str, Any]]:
    path = data_dir / "sweeps" / "winners.json"
    return json.loads(path.read_text()) if path.exists() else []


def dataset_specs(cfg: TrainConfig) -> dict[str, DatasetSpec]:
    """Lab and varied bundles train (either may be 0, not both), one field set selects (validation),
    another is the test set."""
    specs = {
        "val": DatasetSpec("field", cfg.val, seed=cfg.seed * 10 + 2),
        "test": DatasetSpec("field", cfg.test, seed=cfg.seed * 10 + 3),
    }
    if cfg.lab > 0:
        specs["train"] = DatasetSpec("lab", cfg.lab, seed=cfg.seed * 10 + 1, partial=cfg.partial)
    if cfg.varied > 0:
        specs["varied"] = DatasetSpec("field", cfg.varied, seed=cfg.seed * 10 + 4, partial=cfg.partial)
    if cfg.focus_n > 0:  # TrainConfig refuses focus_n without a cause to draw through
        specs["focus"] = DatasetSpec(
            "field", cfg.focus_n, seed=cfg.seed * 10 + 5, partial=cfg.partial, causes=cfg.focus
        )
    for name, n in cfg.sources.items():
        if n > 0:  # seeds from 1000: the benchmarks read each source's seeds 1 and 2
            specs[f"src-{name}"] = DatasetSpec(name, n, seed=1000 + cfg.seed, partial=cfg.partial)
    return specs


# the dataset_specs keys that train: lab, varied, the focus set, then the other authors' generators
TRAINING_SETS = ("train", "varied", "focus", *(f"src-{name}" for name in BUNDLES))


def training_folder(parts: Sequence[tuple[Path, int]], root: Path) -> Path:
    """One folder over every training source (what each sweep trial reads)."""
    return parts[0][0] if len(parts) == 1 and parts[0][1] == 1 else combine(parts, root)


def sweep_budget(cfg: TrainConfig, fam: str, left: int, started: float | None) -> float:
    """Seconds for `fam`'s sweep (0: none), the first of `left` families still to sweep: sweep_minutes,
    or less when the run's budget (run_minutes from `started`, less tail_minutes) leaves less for each
    (said on stderr). At least a second: every trial still trains one epoch."""
    fixed = cfg.sweep_minutes * 60
    if cfg.run_minutes <= 0 or started is None:
        return fixed
    share = max((started + (cfg.run_minutes - cfg.tail_minutes) * 60 - time.time()) / left, 1.0)
    if fixed and share >= fixed:
        return fixed
    print(
        f"sweep {fam}: {share / 60:.1f} min, its share of the run's {cfg.run_minutes:g} minutes after "
        f"{(time.time() - started) / 60:.1f} spent and {cfg.tail_minutes:g} kept for the ensemble and scoring",
        file=sys.stderr,
    )
    return share


def sweep_and_rank(
    cfg: TrainConfig,
    train_dir: Path,
    val_dir: Path,
    warm: Sequence[dict[str, Any]],
    tracker: Tracker,
    out: Path,
    settings: Settings,
    progress: bool = True,
    reserve_bytes: int = 0,
    started: float | None = None,
) -> tuple[list[TrialOutcome], list[TrialOutcome]]:
    """Sweep every family of `cfg` (each trial a nested run of the active one), warm-started from the
    configs in `warm` of that family; `reserve_bytes`: memory the caller's other processes will still
    take while the sweeps run; `started`: when the run began (time.time()), for cfg.run_minutes.
    Returns (every trial, the finished ones best first)."""
    trials: list[TrialOutcome] = []
    failed: list[str] = []  # why each family that finished no trial failed
    for n_fam, fam in enumerate(cfg.families):
        fam_warm = [w for w in warm if w.get("model") == fam]
        spec = SweepSpec(
            fam,
            max(cfg.samples, len(fam_warm)),
            cfg.max_epochs,
            cfg.grace_epochs,
            overrides=cfg.overrides,
            warm_start=fam_warm,
            seed=cfg.seed,
            budget_s=sweep_budget(cfg, fam, len(cfg.families) - n_fam, started),
            reserve_bytes=reserve_bytes,
        )
        try:
            outcomes = run_sweep(spec, train_dir, val_dir, out / "trials", settings.ray_address, progress)
        except SweepFailed as e:  # another family may still finish
            print(f"sweep {fam} failed: {e}", file=sys.stderr)
            failed.append(str(e))
            continue
        for n, t in enumerate(outcomes):
            trials.append(t)
            with tracker.run(trial_name(fam, n, t), t.config, config={"model": fam}, nested=True) as r:
                for i, rec in enumerate(t.history):
                    curves = {k: v for k, v in rec.items() if k.startswith(("val_", "train_"))}
                    r.log_metrics({k: v for k, v in curves.items() if isinstance(v, int | float)}, step=i + 1)
                r.log_metrics(t.metrics)
    ranked = sorted((t for t in trials if t.folder is not None), key=lambda t: -t.metrics.get("final_exact_match", 0.0))
    if not ranked:
        raise SweepFailed(" ".join(["No sweep trial finished: nothing to select.", *failed]))
    return trials, ranked


def served_ensemble(
    members: Sequence[Diagnoser],
    cfg: TrainConfig,
    X: Sequence[BundleTensors],
    y: Sequence[Labels],
    val: tuple[Sequence[BundleTensors], Sequence[Labels]],
) -> Diagnoser:
    """What is served: the top-k CNNs' average, beside each model of `cfg.priors` fitted on the same
    training bundles (the CNN group weighs 1 in all, each prior `cfg.prior_weight`, or
    `cfg.prior_kind_weight[kind]` on that kind's components) and each model of `cfg.kind_members`,
    fitted alike, voting on its kinds only; its scores
    calibrated on the validation bundles `val` unless `cfg.calibration` is "none", with the
    out-of-distribution check (models.ood: ranges from X, threshold from `val`) beside the maps."""
    extra = cfg.kind_member_names()
    # on one thread, as the baselines' worker fits (training.background): the summation order of two
    # BLAS threads moved the mlp's fit to another minimum, and the served model must be the same on any
    # machine's core count
    with one_thread():
        fitted = [create_model(name).fit(X, y) for name in (*cfg.priors, *extra)]
    ens = EnsembleDiagnoser.of([*members, *fitted], *cfg.served_weights(len(members)))
    if cfg.calibration == "none":
        return ens
    return CalibratedDiagnoser.of(ens, cfg.calibration).calibrate(*val).fit_outliers(X, val[0])


def build_sets(
    specs: dict[str, DatasetSpec], settings: Settings, pipe: PipelineConfig, progress: bool = True
) -> dict[str, Path]:
    """Every dataset of `specs` built with the pipeline configuration the service reads with, or found in
    the cache (its key covers that configuration)."""
    root = settings.data_dir.resolve()
    return {k: build(s, root, pipe, workers=settings.sim_workers, progress=progress) for k, s in specs.items()}


def training_sources(folders: dict[str, Path]) -> list[tuple[Path, int]]:
    """The training sources among built sets (lab, varied, focus, ...), each once: training_folder's parts."""
    return [(folders[k], 1) for k in TRAINING_SETS if k in folders]


def run_training(cfg: TrainConfig, settings: Settings, progress: bool = True) -> Trained:
    started = time.time()
    root = settings.data_dir.resolve()
    sets = dataset_specs(cfg)
    pipe = PipelineConfig.from_settings()  # resolved once: the datasets are read as the service will read
    folders = build_sets(sets, settings, pipe, progress)
    folders["train"] = training_folder(training_sources(folders), root)
    train, val, test = folders["train"], folders["val"], folders["test"]
    tracker = Tracker(root, settings.mlflow_tracking_uri, settings.mlflow_experiment)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = root / "runs" / stamp
    resolved = {**asdict(cfg), **{k: asdict(s) for k, s in sets.items()}, "pipeline_config": asdict(pipe)}
    warm = _warm_start(root)
    # every baseline, the learning curve's refit and each scoring pass read the same bundles' features
    # and rule margins: computed once for the run, not once per model (the quick preset: 913 s of CPU,
    # of which these passes took minutes)
    held = sum(bundle_count(f) for f in (train, val, test))
    # the baselines and the learning curve's refits need no sweep result: a worker process fits them
    # while the sweep (then the ensemble) runs, so the sweep's last trial does not run alone on one core
    with (
        hold_features(held),
        background() as side,
        tracker.run(f"train-{stamp}", {"preset": resolved}, config=resolved) as parent,
    ):
        fits = side.submit(fit_baselines, cfg.baselines, train, val, out / "baselines")
        # the side worker reads the training and validation sets beside the sweep's trials
        reserve = loaded_bytes(train) + loaded_bytes(val) if isinstance(side, ProcessPoolExecutor) else 0
        trials, ranked = sweep_and_rank(cfg, train, val, warm, tracker, out, settings, progress, reserve, started)
        # read only now: held through the sweep, this process's copy sat beside the trials' (4.1 GB of
        # arrays on the standard preset)
        (X, y), (Xv, yv), (Xt, yt) = load_dataset(train), load_dataset(val), load_dataset(test)
        top, members = choose_ensemble(ranked, Xv, yv, cfg.top_k)
        winners = winner_configs(top)
        parent.log_dict(winners, "winners.json")  # what a retrain warm-starts from when this is champion
        best = score_model(
            f"{top[0].model} (best trial)", "cnn", members[0], Xt, yt, top[0].metrics.get("fit_seconds", 0)
        )
        until = curve_deadline(cfg, started)
        curve_job = side.submit(
            refit_curve, top[0], best.exact_match, train, val, test, cfg.curve, cfg.seed, out / "curve", progress, until
        )
        t0 = time.perf_counter()
        ensemble = served_ensemble(members, cfg, X, y, (Xv, yv))
        members_fit_s = sum(t.metrics.get("fit_seconds", 0.0) for t in top)  # the ensemble's training time
        served = "cnn-ensemble" + "".join(f" + {p}" for p in cfg.priors)
        served += "".join(f" + {m} ({kind})" for kind, by_name in sorted(cfg.kind_members.items()) for m in by_name)
        scores = [score_model(served, "cnn-ensemble", ensemble, Xt, yt, members_fit_s + time.perf_counter() - t0)]
        if cfg.priors:  # the CNNs alone, for comparison
            scores.append(
                score_model("cnn-ensemble alone", "cnn", EnsembleDiagnoser.of(members), Xt, yt, members_fit_s)
            )
        scores.append(best)
        fit_s = fits.result()  # {name: seconds}, each fitted beside the sweep (its wall time there)
        for name in tqdm(cfg.baselines, desc="baselines", unit="model", disable=not progress):
            model = load_model(out / "baselines" / name)
            s = score_model(name, "baseline", model, Xt, yt, fit_s[name])
            scores.append(s)
            if progress:
                tqdm.write(
                    f"baseline {name}: test exact match {s.exact_match:.3f} ({s.fit_seconds:.0f} s to fit)", sys.stderr
                )
            with tracker.run(f"baseline-{name}", model.get_params(), nested=True) as r:
                r.log_metrics({"test_exact_match": s.exact_match, "test_component_accuracy": s.component_accuracy})
        curve = curve_job.result()
        data = {
            "train": f"{len(X)} bundles ({cfg.lab} lab + {cfg.varied} varied field-profile"
            + "".join(f" + {n} {name}" for name, n in cfg.sources.items() if n > 0)
            + ", "
            f"{cfg.partial:.0%} of them partial uploads)",
            "val": f"{len(Xv)} field bundles (selection, early stopping)",
            "test": f"{len(Xt)} field bundles of another seed, seen by no decision but promotion",
        }
        res = Results(
            resolved | data,
            scores,
            [t.config | t.metrics for t in trials],
            curve,
            calibration_results(ensemble, Xt, yt),
            review_results(ensemble, Xt, yt, settings.review_coverage),
            unusual_results(ensemble, Xt, yt),
        )
        report = write_report(res, out / "report")
        parent.log_artifact(report.parent, "report")
        ens = scores[0]
        parent.log_metrics(
            {
                "test_exact_match": ens.exact_match,
                "test_component_accuracy": ens.component_accuracy,
                "test_healthy_all_none": ens.healthy_all_none,
            }
        )
        card = model_card(settings.registered_model, ens, scores[1:], data, asdict(cfg))
        parent.log_model_folder(ensemble.save(out / "ensemble"), card)
    ref = tracker.register(
        parent.id,
        settings.registered_model,
        tags={"test_exact_match": f"{ens.exact_match:.6f}", "test_set": json.dumps(asdict(sets["test"]))},
        description=f"{ens.name} trained by `vsandx train` ({len(X)} training bundles); field test set exact "
        f"match {ens.exact_match:.3f}, healthy called healthy {ens.healthy_all_none:.3f}. See model_card.md.",
    )
    promote = _beats_champion(settings, ens.exact_match, Xt, yt)
    if promote:
        tracker.promote(ref)
    (root / "sweeps").mkdir(parents=True, exist_ok=True)
    (root / "sweeps" / "winners.json").write_text(json.dumps(winners, indent=1, default=str))
    return Trained(promote, ref.version, report, scores)


def _beats_champion(settings: Settings, candidate: float, Xt: Sequence[BundleTensors], yt: Sequence[Labels]) -> bool:
    """A candidate replaces the champion only if at least as good on this run's test set."""
    try:
        got = fetch_model(None, settings.data_dir, settings.mlflow_tracking_uri, settings.registered_model)
        model = load_model(got.folder)
    except (NoModel, SchemaMismatch):
        return True  # none, or one that cannot read this pipeline's tensors any more
    return candidate >= exact_match(yt, model.predict(Xt))
