"""`vsandx train --smoke`: every step of the training path end to end on tiny data, then a diagnosis
with the registered champion."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from data.simulate.runner import simulate_many
from diagnosis.predictor import Predictor
from models.calibration import CalibratedDiagnoser
from models.ensemble import EnsembleDiagnoser
from tests.conftest import pipeline_env
from training.config import TrainConfig
from training.run import Trained, run_training
from training.tracking import Tracker
from vsandx.settings import Settings

ESXTOP_COLUMNS = 150_000  # a pipeline setting the smoke run trains under (the default is 200,000)


@pytest.fixture(scope="module", autouse=True)
def pipeline_settings() -> Iterator[None]:
    """Every run in this module reads bundles under a non-default VSANDX_PIPELINE_* setting."""
    with pytest.MonkeyPatch.context() as mp, pipeline_env(mp, max_esxtop_columns=ESXTOP_COLUMNS):
        yield


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Settings, Trained]:
    settings = Settings(data_dir=tmp_path_factory.mktemp("var"), sim_workers=2)
    return settings, run_training(TrainConfig.preset("smoke"), settings, progress=False)


def test_the_memo_trims_back_after_a_run(trained: tuple[Settings, Trained]) -> None:
    """The run held its datasets' features for its length (the baselines are fitted in a worker that
    holds its own: tests/training/test_background.py), then let them go."""
    from models.features import bundle_features
    from models.rules_margins import named_margins

    assert bundle_features._limit() == bundle_features.size and named_margins._limit() == named_margins.size


def test_baselines_fitted_beside_the_sweep_score_as_fitted_here(trained: tuple[Settings, Trained]) -> None:
    """A baseline the worker fitted and saved predicts as the same baseline fitted in this process on
    one BLAS thread, as the worker runs (two threads move logreg's probabilities by up to 0.08)."""
    from threadpoolctl import threadpool_limits

    from models.base import load_model
    from training.datasets import load_dataset
    from training.fitting import fit_and_score

    settings, run = trained
    out = run.report.parent.parent
    sets = settings.data_dir / "datasets"
    X, y = load_dataset(next(sets.glob("mix-*")))  # the training folder over lab and varied bundles
    Xv, yv = load_dataset(next(d for d in sets.glob("field-*") if _seed(d) == 2))  # validation
    with threadpool_limits(1):
        fit_and_score("logreg", {}, X, y, Xv, yv, here := out.parent / "logreg-here")
    theirs, ours = load_model(out / "baselines" / "logreg"), load_model(here)
    for a, b in zip(theirs.predict_proba(Xv), ours.predict_proba(Xv), strict=True):
        assert a.keys() == b.keys() and all(np.allclose(a[c], b[c], atol=1e-9) for c in a)


def _seed(folder: Path) -> int:
    import json

    return int(json.loads((folder / "dataset.json").read_text())["seed"])


def test_training_reads_bundles_with_the_pipeline_settings(trained: tuple[Settings, Trained]) -> None:
    """run_training resolves the VSANDX_PIPELINE_* settings itself: every dataset it built records them."""
    import json

    settings, _ = trained
    docs = [json.loads(p.read_text()) for p in (settings.data_dir / "datasets").glob("*/dataset.json")]
    simulated = [d for d in docs if "pipeline_config" in d]
    assert len(simulated) >= 3  # train (lab), varied, val, test
    assert {d["pipeline_config"]["max_esxtop_columns"] for d in simulated} == {ESXTOP_COLUMNS}


def test_smoke_training_registers_a_champion(trained: tuple[Settings, Trained]) -> None:
    settings, done = trained
    assert done.champion and done.version == "1"
    champ = Tracker(settings.data_dir).champion(settings.registered_model)
    assert champ is not None and champ.version == "1"
    names = [s.name for s in done.scores]
    assert names[0] == "cnn-ensemble + rules + mlp (disk)" and {"svm", "logreg", "mlp", "mnb", "minirocket"} <= set(
        names
    )
    assert "cnn-ensemble alone" in names  # the CNNs without the rules beside them, for comparison
    served = Predictor.load(None, settings).model
    assert isinstance(served, CalibratedDiagnoser) and served.summary()  # scores calibrated on the val set
    ens = served.base_
    assert isinstance(ens, EnsembleDiagnoser) and [m.name for m in ens.models_[-2:]] == ["rules", "mlp"]
    k = len(ens.models_) - 2
    assert list(ens.weights) == [1.0 / k] * k + [1.0, 0.0]  # the CNNs weigh 1 in all, the rules prior_weight
    assert ens.kind_weights["disk"] == [1.0 / k] * k + [1.0, 1.0]  # the rules 1 on disks, the mlp there only
    text = done.report.read_text()
    assert served.conformal_  # and the calibration scores behind its review sets travelled with it
    sections = ("## Field test set", "## Per-fault recall", "## Calibration", "## Needs review", "## Never seen this",
                "## Learning curve")  # fmt: skip
    for section in (*sections, "## Sweep"):
        assert section in text
    for png in ("comparison.png", "reliability.png"):
        assert (done.report.parent / png).stat().st_size > 1000
    # the out-of-distribution check's false flags on the (in-distribution) test set
    assert re.search(r"false flag: \d+\.\d% of \d+ bundles, \d+\.\d% of the \d+ healthy ones", text)
    # each kind's ECE beside what a calibrated model would show on as many components
    cal = text.split("## Calibration")[1].split("\n## ")[0]
    assert "| if calibrated |" in cal and re.search(r"\| cluster \| temperature \|.*\(95 %: 0\.\d{3}\) \|", cal)
    # The learning curve's whole-set point is the best trial itself, scored rather than trained again.
    best = next(s for s in done.scores if s.name.endswith("(best trial)"))
    rows = text.split("## Learning curve")[1].split("## Sweep")[0].strip().splitlines()
    assert rows[-1].split("|")[2].strip() == f"{100 * best.exact_match:.1f} %"
    assert (settings.data_dir / "sweeps" / "winners.json").exists()


def test_mlflow_shows_a_described_model_with_its_card_and_named_trials(trained: tuple[Settings, Trained]) -> None:
    """What an ML engineer sees in MLflow's own client: a described model whose version carries a model
    card, flat parameters on the parent run, trials told apart by name, the git commit."""
    from training.model_files import model_folder
    from training.tracking import MODEL_CARD, download_once

    settings, done = trained
    tr = Tracker(settings.data_dir)
    model = tr.client.get_registered_model(settings.registered_model)
    mv = tr.client.get_model_version(settings.registered_model, done.version)
    assert "mlflow.pyfunc.load_model" in (model.description or "")
    assert "field test set exact match" in (mv.description or "") and "model_card.md" in (mv.description or "")
    got = download_once(mv.source, settings.data_dir / "card-check", settings.data_dir)
    card = (got / MODEL_CARD).read_text()
    for part in ("## Intended use", "## Training data", "## Test results", "## Known limits", "cnn-ensemble + rules"):
        assert part in card
    assert (model_folder(got) / "config.json").is_file()
    parent = tr.client.get_run(mv.run_id or "")
    assert parent.data.params["preset.lab"] == "24" and parent.data.params["preset.families"] == '["cnn_small"]'
    assert len(parent.data.tags["mlflow.source.git.commit"]) == 40
    trials = tr.client.search_runs([tr.experiment_id], f"tags.mlflow.parentRunId = '{mv.run_id}'")
    names = [r.info.run_name for r in trials if "trial" in (r.info.run_name or "")]
    assert len(names) == 2 and len(set(names)) == 2 and all(n.startswith("cnn_small-trial-") for n in names)


def test_champion_diagnoses_a_bundle(trained: tuple[Settings, Trained], tmp_path: Path) -> None:
    settings, _ = trained
    simulate_many("lab", 1, tmp_path, seed=5, progress=False)
    doc = Predictor.load(None, settings).diagnose(next(tmp_path.glob("*.tgz")))
    assert doc["model"] == {"name": settings.registered_model, "version": "1"}
    assert len(doc["components"]) == 61
    # the served model carries the out-of-distribution check (ranges from training, threshold from val)
    assert set(doc["unusual"]) == {"flag", "score", "threshold", "reasons"} and doc["unusual"]["threshold"] >= 2.0


def test_second_run_reuses_data_and_guards_promotion(
    trained: tuple[Settings, Trained], capfd: pytest.CaptureFixture[str]
) -> None:
    settings, _ = trained
    cached = sorted(p.name for p in (settings.data_dir / "datasets").iterdir())
    again = run_training(TrainConfig.preset("smoke"), settings, progress=True)
    err = capfd.readouterr().err  # every long step shows its progress
    for step in ("sweep cnn_small", "baselines", "baseline minirocket: test exact match", "learning curve"):
        assert step in err
    assert sorted(p.name for p in (settings.data_dir / "datasets").iterdir()) == cached  # datasets reused
    champ = Tracker(settings.data_dir).champion(settings.registered_model)
    assert champ is not None and again.version == "2"
    assert champ.version == ("2" if again.champion else "1")


def test_training_set_is_lab_plus_varied_never_the_field_sets(trained: tuple[Settings, Trained]) -> None:
    """Varied (field-profile) bundles train beside the lab's, from seeds of their own: the validation
    and test sets stay bundles no training step saw."""
    import json

    from training.run import dataset_specs

    specs = dataset_specs(TrainConfig.preset("quick"))
    assert specs["train"].profile == "lab" and specs["varied"].profile == "field"
    assert len({specs[k].seed for k in ("varied", "val", "test")}) == 3
    assert "varied" not in dataset_specs(TrainConfig(varied=0))
    assert "train" not in dataset_specs(TrainConfig(lab=0))  # varied (field-profile) bundles alone
    with pytest.raises(ValueError, match="no training bundles"):
        dataset_specs(TrainConfig(lab=0, varied=0))
    settings, done = trained
    cfg = TrainConfig.preset("smoke")
    (mix,) = (settings.data_dir / "datasets").glob("mix-*")
    parts = json.loads((mix / "dataset.json").read_text())["parts"]
    assert [(p["profile"], p["n"]) for p in parts] == [("lab", cfg.lab), ("field", cfg.varied), ("field", cfg.focus_n)]
    assert len(list(mix.glob("*.npz"))) == cfg.lab + cfg.varied + cfg.focus_n
    assert f"({cfg.lab} lab + {cfg.varied} varied field-profile" in done.report.read_text()


def test_datasets_are_built_with_the_services_pipeline_configuration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A VSANDX_PIPELINE_* setting reaches the training datasets as it reaches the served verdict: a model
    is trained on tensors read the way the service will read the bundles it diagnoses."""
    from dataclasses import asdict

    from pipeline.config import PipelineConfig
    from training.datasets import DatasetSpec, describe, load_dataset
    from training.run import build_sets

    with pipeline_env(monkeypatch, grid_steps=64):
        pipe = PipelineConfig.from_settings()
    settings = Settings(data_dir=tmp_path, sim_workers=1)
    folders = build_sets({"train": DatasetSpec("lab", 2, seed=5)}, settings, pipe, progress=False)
    assert describe(folders["train"])["pipeline_config"] == asdict(pipe)
    X, _ = load_dataset(folders["train"])
    assert {bt.kinds["host"].values.shape[-1] for bt in X} == {64}  # the default grid is 180 steps


def test_served_ensemble_weighs_the_priors_per_kind() -> None:
    """prior_kind_weight sets the priors' weight on that kind's components; elsewhere prior_weight."""
    import io

    from data.simulate.archive import tar_bytes
    from data.simulate.generate import simulate_bundle
    from models.registry import create_model
    from pipeline.api import load_bundle
    from training.run import served_ensemble

    X, y = [], []
    for i, fault in enumerate(["cluster.low_oio", "disk.latency"]):
        b = simulate_bundle("lab", 8, i, faults=[fault])
        X.append(load_bundle(io.BytesIO(tar_bytes({k: v for k, v in b.files.items() if k != "labels.json"}))))
        comps = b.labels["components"]
        assert isinstance(comps, dict)
        y.append(dict(comps))
    members = [create_model("rules", slope=1.0, calibrate=False).fit(X, y)] * 2
    cfg = TrainConfig(
        lab=2, varied=0, calibration="none", prior_weight=0.5, prior_kind_weight={"cluster": 2.0}, kind_members={}
    )
    ens = served_ensemble(members, cfg, X, y, (X, y))
    assert isinstance(ens, EnsembleDiagnoser)
    assert list(ens.weights) == [0.5, 0.5, 0.5] and ens.kind_weights == {"cluster": [0.5, 0.5, 2.0]}
    # the default make run trains with: the rules weigh 1.5 times the CNNs on clusters, as the CNNs on
    # hosts and NICs and on disks, twice on disk groups, and the mlp votes on disks only, as the CNNs
    default = served_ensemble(members, TrainConfig(lab=2, varied=0, calibration="none"), X, y, (X, y))
    assert isinstance(default, EnsembleDiagnoser) and [m.name for m in default.models_] == [
        "rules", "rules", "rules", "mlp"
    ]  # fmt: skip
    assert list(default.weights) == [0.5, 0.5, 1.0, 0.0]
    assert default.kind_weights == {
        "cluster": [0.5, 0.5, 1.5, 0.0], "disk": [0.5, 0.5, 1.0, 1.0], "diskgroup": [0.5, 0.5, 2.0, 0.0],
        "host": [0.5, 0.5, 1.0, 0.0], "nic": [0.5, 0.5, 1.0, 0.0],
    }  # fmt: skip
    # the two CNN stand-ins are one model: their 0.5 + 0.5 is one whole vote of it
    cnn, rules, mlp = (m.predict_proba(X) for m in default.models_[1:])
    served = default.predict_proba(X)
    for b, bt in enumerate(X):  # a disk's scores: the weighted average; a NIC's leave the mlp out
        d, n = bt.kinds["disk"].ids[0], bt.kinds["nic"].ids[0]
        assert np.allclose(served[b][d], (cnn[b][d] + rules[b][d] + mlp[b][d]) / 3.0)
        assert np.allclose(served[b][n], (cnn[b][n] + rules[b][n]) / 2.0)
        g = bt.kinds["diskgroup"].ids[0]  # a disk group's: the rules twice the CNNs
        assert np.allclose(served[b][g], (cnn[b][g] + 2.0 * rules[b][g]) / 3.0)


def test_served_ensemble_fits_its_priors_on_one_blas_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """As the baselines' worker: two threads' summation order moved the mlp's fit to another minimum
    (models.seedbag), and the served model must not depend on the machine's core count."""
    from threadpoolctl import threadpool_info, threadpool_limits

    import training.run as run

    def blas_threads() -> set[int]:
        return {int(p["num_threads"]) for p in threadpool_info() if p["user_api"] == "blas"}

    with threadpool_limits(2, user_api="blas"):
        if blas_threads() != {2}:
            pytest.skip(f"no BLAS library here takes two threads ({threadpool_info()})")
        seen: list[set[int]] = []

        class Probe:
            def __init__(self, name: str) -> None:
                self.name = name

            def fit(self, X: object, y: object) -> Probe:
                seen.append(blas_threads())
                return self

        monkeypatch.setattr(run, "create_model", Probe)
        monkeypatch.setattr(run.EnsembleDiagnoser, "of", staticmethod(lambda fitted, *a: fitted))
        cfg = TrainConfig(lab=2, varied=0, calibration="none")
        fitted = run.served_ensemble([Probe("cnn")], cfg, [], [], ([], []))
        assert [m.name for m in fitted] == ["cnn", "rules", "mlp"] and seen == [{1}, {1}]
        assert blas_threads() == {2}  # given back after the fits


def test_other_authors_bundles_train_from_seeds_no_benchmark_reads() -> None:
    from training.run import TRAINING_SETS, dataset_specs

    specs = dataset_specs(TrainConfig(sources={"cleanroom": 100, "outsider": 0}))
    src = specs["src-cleanroom"]
    assert (src.profile, src.n, src.seed) == ("cleanroom", 100, 1000)  # bench_cleanroom reads seeds 1 and 2
    assert "src-cleanroom" in TRAINING_SETS and "src-outsider" not in specs
    assert not any(k.startswith("src-") for k in dataset_specs(TrainConfig.preset("quick")))


def test_a_focus_set_trains_on_field_bundles_of_its_causes_only() -> None:
    from data.simulate.generate import simulate_bundle
    from training.run import TRAINING_SETS, dataset_specs, training_sources

    specs = dataset_specs(TrainConfig(focus=("disk.hotspot",), focus_n=40))
    built = {k: Path(f"/sets/{k}") for k in specs}
    assert (Path("/sets/focus"), 1) in training_sources(built)  # it trains, beside lab and varied
    assert (Path("/sets/val"), 1) not in training_sources(built)
    focus = specs["focus"]
    assert (focus.profile, focus.n, focus.causes) == ("field", 40, ("disk.hotspot",)) and "focus" in TRAINING_SETS
    assert len({s.seed for s in specs.values()}) == len(specs)  # no bundle of val or test among them
    assert "focus" not in dataset_specs(TrainConfig())  # focus_n 0: none
    assert dataset_specs(TrainConfig.preset("quick"))["focus"].n == 40
    with pytest.raises(ValueError, match=r"unknown cause 'disk\.hotsopt'"):
        TrainConfig(focus=("disk.hotsopt",), focus_n=40)
    with pytest.raises(ValueError, match="needs at least one"):
        TrainConfig(focus=(), focus_n=40)
    # what the set holds: hot spots on the all-flash deduplicated clusters they need, or nothing
    drawn = [simulate_bundle("field", focus.seed, i, causes=focus.causes) for i in range(3)]
    assert all(b.cluster.dedup for b in drawn)
    assert {f.fault for b in drawn for f in b.plan.faults} == {"disk.hotspot"}


def test_a_family_whose_sweep_failed_leaves_the_others_and_none_left_says_why(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """One family's trials all killed for memory: the others' trials are still ranked. Every family
    failed: the run ends with each family's reason, not a bare "nothing to select"."""
    from contextlib import contextmanager
    from types import SimpleNamespace

    import training.run
    from training.sweep_errors import SweepFailed
    from training.sweep_results import TrialOutcome

    def sweep(spec: object, *args: object, **kw: object) -> list[TrialOutcome]:
        if spec.model == "cnn_base":  # type: ignore[attr-defined]
            raise SweepFailed("Ray's out-of-memory killer ended every trial of the cnn_base sweep")
        return [TrialOutcome("cnn_small", {"lr": 0.01}, {"final_exact_match": 0.9}, [], tmp_path)]

    @contextmanager
    def run(*args: object, **kw: object) -> Iterator[SimpleNamespace]:
        yield SimpleNamespace(log_metrics=lambda *a, **k: None)

    tracker = SimpleNamespace(run=run)
    monkeypatch.setattr(training.run, "run_sweep", sweep)
    settings = Settings(data_dir=tmp_path)
    cfg = TrainConfig(lab=2, varied=0, families=("cnn_small", "cnn_base"))
    _, ranked = training.run.sweep_and_rank(cfg, tmp_path, tmp_path, [], tracker, tmp_path, settings, False)  # type: ignore[arg-type]
    assert [t.model for t in ranked] == ["cnn_small"]
    with pytest.raises(SweepFailed, match=r"^No sweep trial finished: nothing to select\. Ray's out-of-memory"):
        cfg = TrainConfig(lab=2, varied=0, families=("cnn_base",))
        training.run.sweep_and_rank(cfg, tmp_path, tmp_path, [], tracker, tmp_path, settings, False)  # type: ignore[arg-type]


def test_the_sweep_runs_with_no_dataset_held_here_and_room_kept_for_the_side_worker(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """This process read every dataset before the sweep and held them through it (4.1 GB of arrays on
    the standard preset, beside the trials' and the side worker's); it now reads them after, and the
    sweep keeps room for the side worker, which reads the training and validation sets beside it."""
    import training.run
    from training.sweep_memory import loaded_bytes

    events: list[tuple[str, object]] = []
    read = training.run.load_dataset
    monkeypatch.setattr(
        training.run, "load_dataset", lambda folder, *a: events.append(("read", folder)) or read(folder, *a)
    )

    class Stop(Exception):
        pass

    def sweep(spec: object, train_dir: Path, val_dir: Path, *args: object, **kw: object) -> None:
        events.append(("sweep", (spec.reserve_bytes, loaded_bytes(train_dir) + loaded_bytes(val_dir))))  # type: ignore[attr-defined]
        raise Stop

    monkeypatch.setattr(training.run, "run_sweep", sweep)
    cfg = TrainConfig(lab=4, varied=2, focus_n=0, val=2, test=2, families=("cnn_small",), samples=1, baselines=())
    with pytest.raises(Stop):
        run_training(cfg, Settings(data_dir=tmp_path, sim_workers=1), progress=False)
    assert [e[0] for e in events] == ["sweep"]
    reserve, datasets = events[0][1]  # type: ignore[misc]
    assert reserve == datasets > 0


def test_the_runs_budget_shrinks_the_sweeps_deadlines_to_what_the_datasets_left(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The standard preset took 66-72 min where its datasets took 12-18 of them: with run_minutes the
    sweeps share what is left of the hour after the datasets and the tail kept for the ensemble."""
    import training.run
    from training.run import sweep_budget

    now = 10_000.0
    monkeypatch.setattr(training.run.time, "time", lambda: now)
    cfg = TrainConfig(lab=2, varied=0, sweep_minutes=18, run_minutes=60, tail_minutes=16)
    assert sweep_budget(cfg, "cnn_small", 2, now - 12 * 60) == 16 * 60  # (60 - 12 - 16) / 2 < 18
    assert "sweep cnn_small: 16.0 min, its share of the run's 60 minutes after 12.0 spent and 16 kept" in (
        capsys.readouterr().err
    )
    assert sweep_budget(cfg, "cnn_small", 2, now - 2 * 60) == 18 * 60  # the family's own limit first
    assert sweep_budget(cfg, "cnn_base", 1, now - 50 * 60) == 1.0  # none left: one epoch each
    assert sweep_budget(cfg, "cnn_base", 1, None) == 18 * 60  # a retrain's, or a run without a start
    free = TrainConfig(lab=2, varied=0, sweep_minutes=0, run_minutes=60, tail_minutes=16)
    assert sweep_budget(free, "cnn_small", 2, now) == 22 * 60
    assert sweep_budget(TrainConfig(lab=2, varied=0, sweep_minutes=5), "cnn_small", 2, now) == 300
    with pytest.raises(ValueError, match="run_minutes and tail_minutes must be at least 0"):
        TrainConfig(lab=2, varied=0, tail_minutes=-1)
