"""The champion from the MLflow registry: loaded once, hot-reloaded when the alias moves, its version
recorded in every diagnosis; a model built for another pipeline schema is refused and the last good
model keeps serving."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from fastapi.testclient import TestClient

from service.app import create_app
from service.serving import ModelHolder
from tests.service.kit import bundles, model_dir, service_settings
from training.tracking import ModelRef, Tracker

__all__ = ["bundles", "model_dir"]  # fixtures
NAME = "vsandx-diagnoser"


def _register(tracker: Tracker, folder: Path, marker: str, report: Path | None = None) -> ModelRef:
    with tracker.run(f"train-{marker}", {"marker": marker}) as run:
        run.log_model_folder(folder)
        if report is not None:  # as training.run logs it
            run.log_artifact(report, "report")
    return tracker.register(run.id, NAME)


def test_champion_hot_reload_and_schema_refusal(tmp_path: Path, model_dir: Path, bundles: list[Path]) -> None:
    data = tmp_path / "var"
    tracker = Tracker(data)
    report = tmp_path / "runs" / "report"
    report.mkdir(parents=True)
    (report / "report.md").write_text("# vsandx training report\n")
    (report / "curve.png").write_bytes(b"\x89PNG")
    v1, v2 = _register(tracker, model_dir, "a", report), _register(tracker, model_dir, "b")
    tracker.promote(v1)
    settings = service_settings(data, None, model_poll_s=0.0)  # look at the alias before every job
    with TestClient(create_app(settings)) as c:
        info = c.get("/api/v1/model").json()
        assert info["version"] == "1" and info["name"] == NAME and info["run_id"] == v1.run_id
        assert info["registered_at"] and info["trained_at"] and Path(info["folder"]).is_dir()
        assert {p.name for p in Path(info["report"]).iterdir()} == {"report.md", "curve.png"}
        up = lambda: c.post("/api/v1/diagnoses?wait=true", files={"bundle": ("b.tgz", bundles[0].read_bytes())})  # noqa: E731
        first = up().json()
        assert first["model"] == {"name": NAME, "version": "1"} == first["diagnosis"]["model"]
        tracker.promote(v2)
        second = up().json()  # same bytes, new champion: diagnosed again by version 2
        assert second["model"] == {"name": NAME, "version": "2"} == second["diagnosis"]["model"]
        info = c.get("/api/v1/model").json()
        assert info["version"] == "2" and info["report"] is None  # this run logged no report
        # a model trained on another tensor schema takes the alias: refused, version 2 keeps serving
        old = tmp_path / "old-schema"
        shutil.copytree(model_dir, old)
        cfg = json.loads((old / "config.json").read_text())
        (old / "config.json").write_text(json.dumps(cfg | {"schema_version": "vsandx.tensors/0"}))
        tracker.promote(_register(tracker, old, "old"))
        third = up().json()
        assert third["model"]["version"] == "2"
        info = c.get("/api/v1/model").json()
        assert info["version"] == "2" and "another pipeline schema" in info["error"] and "retrain" in info["error"]


def test_refused_champion_with_nothing_to_fall_back_on(tmp_path: Path, model_dir: Path) -> None:
    data = tmp_path / "var"
    tracker = Tracker(data)
    holder = ModelHolder(service_settings(data, None))
    assert not holder.refresh() and "vsandx train" in (holder.current_model_info()["error"] or "")
    old = tmp_path / "old-schema"
    shutil.copytree(model_dir, old)
    cfg = json.loads((old / "config.json").read_text())
    (old / "config.json").write_text(json.dumps(cfg | {"schema_version": "vsandx.tensors/0"}))
    tracker.promote(_register(tracker, old, "old"))
    assert not holder.refresh()
    info = holder.current_model_info()
    assert not info["ready"] and "another pipeline schema" in info["error"]
