"""`vsandx diagnose` without --json prints what a tracker comment says: the verdict, each finding with
its evidence, onset and cited log lines, then the bundle and the timings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli.main import main


def test_diagnose_prints_the_report(model_dir: Path, bundles: list[Path], capsys: pytest.CaptureFixture[str]) -> None:
    bundle = bundles[0]
    assert main(["diagnose", str(bundle), "--json", "--model", str(model_dir)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert main(["diagnose", str(bundle), "--model", str(model_dir)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("vsandx diagnosis: ")
    f = doc["findings"][0]  # the fixture's bundles each hold a finding of the small model
    assert f"[{f['fault']}]" in out and f"Component: {f['component']}" in out
    for line in f["evidence"]:
        assert line in out
    # onsets and cited lines, over every finding: at least one of them must be there to be checked
    shown = [g["onset"]["words"] for g in doc["findings"] if g.get("onset")]
    shown += [f"line {c['line']}" for g in doc["findings"] for c in g.get("cited_lines", [])[:3]]
    assert shown, "the fixture's findings carry neither an onset nor a cited line: nothing checked"
    for text in shown:
        assert text in out
    assert f"sha256 {doc['bundle']['sha256'][:12]}" in out and "timing    read" in out


class _Trains(Exception):
    """Raised by the stand-in for training.run.run_training: `vsandx train` got as far as training."""


def test_train_if_missing_trains_over_a_champion_that_cannot_serve(
    tmp_path: Path,
    model_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    request: pytest.FixtureRequest,
) -> None:
    """`make run` after a pipeline schema change: the registered champion was trained on the old tensors,
    the service would refuse it and serve nothing, so `--if-missing` trains a new one."""
    import os
    import shutil

    from training.tracking import Tracker
    from vsandx.settings import get_settings

    monkeypatch.chdir(tmp_path)  # as make run meets it: no VSANDX_* set, the relative default ./var
    for name in [k for k in os.environ if k.startswith("VSANDX_")]:
        monkeypatch.delenv(name)
    data = tmp_path / "var"
    get_settings.cache_clear()  # read this test's environment, and leave none of it to the next test
    request.addfinalizer(get_settings.cache_clear)
    tracker = Tracker(data)
    name = get_settings().registered_model

    def champion(folder: Path, marker: str) -> None:
        with tracker.run(f"train-{marker}", {"marker": marker}) as run:
            run.log_model_folder(folder)
        tracker.promote(tracker.register(run.id, name))

    def fake_training(*args: object, **kwargs: object) -> None:
        raise _Trains

    monkeypatch.setattr("training.run.run_training", fake_training)
    assert get_settings().data_dir == data  # the default, resolved: what Tracker(data) registered in
    champion(model_dir, "current")
    assert main(["train", "--quick", "--if-missing", "-q"]) == 0
    assert "exists; not training" in capsys.readouterr().out
    old = tmp_path / "old-schema"
    shutil.copytree(model_dir, old)
    cfg = json.loads((old / "config.json").read_text())
    (old / "config.json").write_text(json.dumps(cfg | {"schema_version": "vsandx.tensors/0"}))
    champion(old, "old")
    with pytest.raises(_Trains):
        main(["train", "--quick", "--if-missing", "-q"])
    assert "cannot serve" in capsys.readouterr().out
    # the same tensors, but saved before the learnt models' inputs lost a static only the rules read
    before_mask = tmp_path / "before-mask"
    shutil.copytree(model_dir, before_mask)
    cfg = json.loads((before_mask / "config.json").read_text())
    del cfg["rules_only_static"]
    (before_mask / "config.json").write_text(json.dumps(cfg))
    champion(before_mask, "before-mask")
    with pytest.raises(_Trains):
        main(["train", "--quick", "--if-missing", "-q"])
    out = capsys.readouterr().out
    assert "cannot serve" in out and "RULES_ONLY_STATIC" in out


def test_train_focus_sets_the_focus_sets_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """`vsandx train --focus N` trains on N focus bundles over the preset's (the quick preset's 40); 0 none."""
    from training.config import TrainConfig
    from vsandx.settings import get_settings

    got: list[TrainConfig] = []

    def fake_training(cfg: TrainConfig, *args: object, **kwargs: object) -> None:
        got.append(cfg)
        raise _Trains

    monkeypatch.setenv("VSANDX_DATA_DIR", str(tmp_path))
    get_settings.cache_clear()  # read this test's data dir, and leave none of it to the next test
    request.addfinalizer(get_settings.cache_clear)
    monkeypatch.setattr("training.run.run_training", fake_training)
    for argv, n in ((["--focus", "7"], 7), (["--focus", "0"], 0), ([], 40)):
        with pytest.raises(_Trains):
            main(["train", "--quick", *argv, "-q"])
        assert got[-1].focus_n == n and got[-1].focus == ("disk.hotspot",)
    for argv, minutes in ((["--standard", "--run-minutes", "45"], 45), (["--standard"], 60), (["--quick"], 0)):
        with pytest.raises(_Trains):
            main(["train", *argv, "-q"])
        assert got[-1].run_minutes == minutes
