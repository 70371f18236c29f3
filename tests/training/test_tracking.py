"""MLflow tracking and registry on the embedded SQLite store: runs, versions, the champion alias."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from training.model_files import model_folder
from training.provenance import flat_params, git_tags
from training.tracking import CHAMPION, NoModel, Tracker, download_once, fetch_model


def _model_folder(tmp: Path, marker: str) -> Path:
    folder = tmp / f"model-{marker}"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"marker": marker}))
    (folder / "state.safetensors").write_bytes(marker.encode() * 10)
    return folder


def test_runs_register_and_champion_moves(tmp_path: Path) -> None:
    tr = Tracker(tmp_path / "var")
    assert tr.uri.startswith("sqlite:///") and (tmp_path / "var" / "mlflow.db").exists()
    assert tr.champion("vsandx-test") is None
    refs = []
    for marker in ("a", "b"):
        with tr.run(f"trial-{marker}", {"lr": 0.005, "depth": 3}, config={"epochs": 2}) as run:
            run.log_metrics({"val_exact_match": 0.5}, step=1)
            run.log_model_folder(_model_folder(tmp_path, marker))
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


def _registered(tmp_path: Path, data: Path, markers: tuple[str, ...] = ("a", "b")) -> Tracker:
    tr = Tracker(data)
    for marker in markers:
        with tr.run(f"trial-{marker}", {"marker": marker}) as run:
            run.log_model_folder(_model_folder(tmp_path, marker))
        tr.register(run.id, "vsandx-test")
    return tr


def test_fetch_model_resolves_every_uri_form_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    data = Path("var")  # relative, as the default ./var: the download is absolute inside, never mixed
    tr = _registered(tmp_path, data)
    tr.client.set_registered_model_alias("vsandx-test", CHAMPION, "1")
    champ = fetch_model(None, data, default_name="vsandx-test")
    assert (champ.name, champ.version) == ("vsandx-test", "1") and champ.folder.is_absolute()
    assert json.loads((champ.folder / "config.json").read_text()) == {"marker": "a"}
    assert (tmp_path / "var" / "models" / "vsandx-test" / "1" / ".complete").is_file()
    pinned = fetch_model("models:/vsandx-test/2", data)
    assert pinned.version == "2" and json.loads((pinned.folder / "config.json").read_text()) == {"marker": "b"}
    assert fetch_model("models:/vsandx-test@champion", data).folder == champ.folder  # downloaded once
    tr.client.set_registered_model_alias("vsandx-test", CHAMPION, "2")  # the alias moves: seen at once
    assert fetch_model(None, data, default_name="vsandx-test").version == "2"
    plain = fetch_model(str(_model_folder(tmp_path, "c")), data)
    assert plain.ref is None and plain.version.startswith("file:")
    for bad, why in (("models:/vsandx-test/9", "version 9"), ("models:/vsandx-test@nope", "@nope"),
                     ("models:/vsandx-test", "expected models:/"), (str(tmp_path), "no config.json")):  # fmt: skip
        with pytest.raises(NoModel, match=why):
            fetch_model(bad, data)


def test_a_cached_champion_loads_without_mlflow(tmp_path: Path) -> None:
    data = tmp_path / "var"
    _registered(tmp_path, data, ("a",)).client.set_registered_model_alias("vsandx-test", CHAMPION, "1")
    probe = (
        "import sys; from pathlib import Path; from training.tracking import fetch_model;"
        f"got = fetch_model(None, Path({str(data)!r}), default_name='vsandx-test');"
        "print(got.version, 'mlflow' in sys.modules)"
    )
    run = lambda: subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)  # noqa: E731
    first = run()
    assert first.stdout.split() == ["1", "True"] and "%|" not in first.stderr  # asked the registry, no progress bar
    assert run().stdout.split() == ["1", "False"]  # the store has not changed since: no MLflow at all


def test_no_registry_is_a_clear_error_that_creates_nothing(tmp_path: Path) -> None:
    with pytest.raises(NoModel, match="vsandx train --quick"):
        fetch_model(None, tmp_path / "var")
    assert not (tmp_path / "var").exists()


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
