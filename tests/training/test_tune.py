"""A real (tiny) Ray Tune sweep: trials train on the cached lab set, report field validation scores,
save their models; warm-start configs run first; the issue rate mixes the training set."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from ray.exceptions import OutOfMemoryError

import training.tune
from models.registry import search_space
from training.datasets import DatasetSpec, build, load_dataset
from training.fitting import is_faulty, mix_issue_rate
from training.tune import SweepSpec, ray_space, registry_point, run_sweep


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    root = tmp_path_factory.mktemp("var")
    train = build(DatasetSpec("lab", 16, seed=31, issue_rate=0.5), root, workers=2, progress=False)
    val = build(DatasetSpec("field", 4, seed=32), root, workers=2, progress=False)
    return root, train, val


def test_ray_space_covers_the_registry_space() -> None:
    space = search_space("cnn_small")
    assert set(ray_space(space)) == set(space)
    with pytest.raises(KeyError):
        search_space("no_such_model")


def test_mix_issue_rate(data: tuple[Path, Path, Path]) -> None:
    X, y = load_dataset(data[1])
    for rate in (0.25, 0.75):
        Xm, ym = mix_issue_rate(X, y, rate, seed=1)
        share = sum(map(is_faulty, ym)) / len(ym)
        assert abs(share - rate) < 0.15 and len(Xm) == len(ym) >= 4


def test_sweep_runs_trials_and_saves_models(data: tuple[Path, Path, Path]) -> None:
    root, train, val = data
    # epochs is fixed for the sweep: the warm point's 50 must not replace it
    warm = {"lr": 0.004, "width": 16, "depth": 2, "dropout": 0.1, "issue_rate": 0.5, "epochs": 50}
    spec = SweepSpec("cnn_small", num_samples=2, overrides={"epochs": 2, "batch_size": 8, "width": 16},
                     warm_start=[warm], seed=3)  # fmt: skip
    out = run_sweep(spec, train, val, root / "sweeps", progress=False)
    assert len(out) == 2
    assert any(abs(o.config["lr"] - 0.004) < 1e-12 and o.config["issue_rate"] == 0.5 for o in out)
    assert all(o.config["epochs"] == 2 for o in out)
    for o in out:
        assert 0.0 <= o.metrics["final_exact_match"] <= 1.0
        assert o.folder is not None and (o.folder / "config.json").exists()
    assert (root / "sweeps" / "sweep-cnn_small.json").exists()


def test_sweep_with_relative_paths(data: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """VSANDX_DATA_DIR defaults to ./var: trials (other working directory) must still find the data."""
    root, train, val = data
    monkeypatch.chdir(root.parent)
    rel = Path(root.name)
    spec = SweepSpec("cnn_small", num_samples=1, overrides={"epochs": 1, "width": 16}, seed=4)
    out = run_sweep(spec, rel / train.relative_to(root), rel / val.relative_to(root), rel / "rel", progress=False)
    assert len(out) == 1 and out[0].folder is not None
    # no warm start: the one trial is the family's registered recipe, with the sweep's overrides and seed
    expected = registry_point("cnn_small") | {"epochs": 1, "width": 16, "seed": 4}
    assert {k: out[0].config[k] for k in expected} == expected


def test_a_sweep_budget_ends_its_trials_with_a_saved_model(data: tuple[Path, Path, Path]) -> None:
    """Past the sweep's budget a trial trains no further epoch: one epoch of three, scored and saved, and
    its metrics say the deadline ended it."""
    root, train, val = data
    spec = SweepSpec("cnn_small", num_samples=1, overrides={"epochs": 3, "width": 16}, seed=5, budget_s=0.001)
    (out,) = run_sweep(spec, train, val, root / "budget", progress=False)
    assert out.metrics["out_of_time"] == 1.0
    assert [h["epoch"] for h in out.history] == [1, 2]  # one epoch, then the final scores' report
    assert out.folder is not None and (out.folder / "config.json").exists()


def test_registry_point_is_the_family_recipe() -> None:
    point = registry_point("cnn_deep", issue_rate=0.4)
    assert set(point) == set(search_space("cnn_deep")) - {"seed"} | {"issue_rate"}
    assert point["width"] == 64 and point["depth"] == 5 and point["event_dropout"] == 0.2
    assert point["issue_rate"] == 0.4


class _TunerKilledForMemory:
    """Stands in for ray.tune.Tuner: one trial finishes (its model saved), the next is running when
    Ray's out-of-memory killer ends it, which Tune 2.60 raises from fit() as a RuntimeError from the
    OutOfMemoryError (actor_manager's "Caught unexpected exception")."""

    def __init__(self, trainable: object, param_space: dict, tune_config: object, run_config: object) -> None:
        self.callbacks = run_config.callbacks  # type: ignore[attr-defined]
        self.out = Path(trainable.keywords["out_dir"])  # type: ignore[attr-defined]

    def fit(self) -> None:
        done = SimpleNamespace(trial_id="t1", config={"lr": 0.01, "issue_rate": 0.5})
        running = SimpleNamespace(trial_id="t2", config={"lr": 0.1, "issue_rate": 0.3})
        (self.out / "t1").mkdir(parents=True)
        (self.out / "t1" / "config.json").write_text("{}")
        for cb in self.callbacks:
            for epoch, score in ((1, 0.5), (2, 0.75)):
                cb.on_trial_result(epoch, [], done, {"trial_id": "t1", "epoch": epoch, "val_exact_match": score})
            cb.on_trial_result(3, [], done, {"trial_id": "t1", "epoch": 3, "val_exact_match": 0.75,
                                             "final_exact_match": 0.75, "fit_seconds": 2.0})  # fmt: skip
            cb.on_trial_complete(3, [], done)
            cb.on_trial_result(1, [], running, {"trial_id": "t2", "epoch": 1, "val_exact_match": 0.25})
        raise RuntimeError("Caught unexpected exception") from OutOfMemoryError("1 worker(s) were killed")


def _without_ray(monkeypatch: pytest.MonkeyPatch, tuner: type) -> None:
    monkeypatch.setattr(training.tune.tune, "Tuner", tuner)
    monkeypatch.setattr(training.tune.tune, "with_parameters", functools.partial)
    monkeypatch.setattr(training.tune.tune, "with_resources", lambda trainable, resources: trainable)
    monkeypatch.setattr(training.tune.ray, "is_initialized", lambda: True)


def test_a_trial_killed_for_memory_keeps_the_finished_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A standard-preset trial reached 7.2 GB; with two at once and the driver's datasets, Ray killed
    one and the whole `vsandx train` died with the finished trials. The sweep keeps those instead."""
    _without_ray(monkeypatch, _TunerKilledForMemory)
    spec = SweepSpec("cnn_small", num_samples=4, overrides={"epochs": 2})
    out = run_sweep(spec, tmp_path / "train", tmp_path / "val", tmp_path / "sweeps", progress=False)
    assert len(out) == 1
    assert out[0].config == {"lr": 0.01, "issue_rate": 0.5}
    assert out[0].metrics == {"val_exact_match": 0.75, "final_exact_match": 0.75, "fit_seconds": 2.0}
    assert [h["epoch"] for h in out[0].history] == [1, 2, 3]
    assert out[0].folder == tmp_path / "sweeps" / "t1"
    assert "out-of-memory killer" in capsys.readouterr().err
    assert json.loads((tmp_path / "sweeps" / "sweep-cnn_small.json").read_text())[0]["config"]["lr"] == 0.01


def test_other_sweep_failures_still_raise(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class Broken(_TunerKilledForMemory):
        def fit(self) -> None:
            raise RuntimeError("Caught unexpected exception") from ValueError("a bug")

    _without_ray(monkeypatch, Broken)
    with pytest.raises(RuntimeError, match="unexpected"):
        run_sweep(SweepSpec("cnn_small", num_samples=1), tmp_path, tmp_path, tmp_path / "sweeps", progress=False)
