"""MLflow tracking and registry on the embedded SQLite store: runs, versions, the champion alias."""

from __future__ import annotations

import json
from pathlib import Path

from training.tracking import CHAMPION, Tracker


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
    got = tr.download(champ, tmp_path / "dl")
    assert json.loads((got / "config.json").read_text()) == {"marker": "b"}
    run = tr.client.get_run(champ.run_id)
    assert run.data.params["lr"] == "0.005" and run.data.tags["pipeline_schema"].startswith("vsandx.tensors/")
    # a second Tracker on the same folder sees the same registry
    assert Tracker(tmp_path / "var").champion("vsandx-test").version == "2"  # type: ignore[union-attr]
