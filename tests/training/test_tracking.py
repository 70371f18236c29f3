"""MLflow tracking and registry on the embedded SQLite store: runs, versions, the champion alias."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.training.registry_kit import saved_model
from training.model_files import model_folder
from training.provenance import flat_params, git_tags
from training.tracking import CHAMPION, Tracker, download_once


def test_runs_register_and_champion_moves(tmp_path: Path) -> None:
    tr = Tracker(tmp_path / "var")
    assert tr.uri.startswith("sqlite:///") and (tmp_path / "var" / "mlflow.db").exists()
    assert tr.champion("vsandx-test") is None
    refs = []
    for marker in ("a", "b"):
        with tr.run(f"trial-{marker}", {"lr": 0.005, "depth": 3}, config={"epochs": 2}) as run:
            run.log_metrics({"val_exact_match": 0.5}, step=1)
            run.log_model_folder(saved_model(tmp_path, marker))
        refs.append(tr.register(run.id, "vsandx-test", tags={"marker": marker}))
    assert [r.version for r in refs] == ["1", "2"]
    tr.promote(refs[0])
    assert tr.champion("vsandx-test").version == "1"  # type: ignore[union-attr]
    tr.promote(refs[1], CHAMPION)
    champ = tr.champion("vsandx-test")
    assert champ is not None and champ.version == "2" and champ.tags["marker"] == "b"
    assert champ.tags["pipeline_schema"].startswith("vsandx.tensors/")
    got = download_once(champ.source, tmp_path / "dl", tmp_path / "var")
    assert (got / "MLmodel").is_file()  # an MLflow Model around the vsandx folder
    assert json.loads((model_folder(got) / "config.json").read_text()) == {"marker": "b"}
    run = tr.client.get_run(champ.run_id)
    assert run.data.params["lr"] == "0.005" and run.data.tags["pipeline_schema"].startswith("vsandx.tensors/")
    assert run.data.tags["mlflow.source.git.commit"] == git_tags()["mlflow.source.git.commit"]
    # a second Tracker on the same folder sees the same registry
    assert Tracker(tmp_path / "var").champion("vsandx-test").version == "2"  # type: ignore[union-attr]


def test_params_are_flat_and_searchable(tmp_path: Path) -> None:
    nested = {"preset": {"lab": 200, "families": ["cnn_small"], "overrides": {"epochs": 12}, "none": {}}}
    assert flat_params(nested) == {"preset.lab": "200", "preset.families": '["cnn_small"]',
                                   "preset.overrides.epochs": "12", "preset.none": "{}"}  # fmt: skip
    tr = Tracker(tmp_path / "var")
    many = {"p": {f"k{i:03d}": i for i in range(250)}}  # more than one MLflow batch
    with tr.run("flat", {**nested, **many}) as run:
        pass
    params = tr.client.get_run(run.id).data.params
    assert params["preset.overrides.epochs"] == "12" and len(params) == 4 + 250
    found = tr.client.search_runs([tr.experiment_id], "params.`preset.lab` = '200'")
    assert [r.info.run_id for r in found] == [run.id]


def test_git_tags_outside_a_checkout_are_empty(monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess as sp

    assert len(git_tags()["mlflow.source.git.commit"]) == 40  # this checkout
    monkeypatch.setattr(sp, "run", lambda *a, **k: sp.CompletedProcess(a, 128, "", "fatal: not a git repository"))
    git_tags.cache_clear()  # asked once per process: ask again under the patch
    try:
        assert git_tags() == {}
    finally:
        git_tags.cache_clear()
