"""The champion from the MLflow registry: loaded once, hot-reloaded when the alias moves, its version
recorded in every diagnosis; a model built for another pipeline schema is refused and the last good
model keeps serving."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from fastapi.testclient import TestClient

from diagnosis.serving import ModelHolder, ModelUnavailable
from service.app import create_app
from tests.service.kit import service_settings
from training.tracking import ModelRef, Tracker

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


def test_waiting_without_a_model_is_quiet_and_backs_off(
    tmp_path: Path, model_dir: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    import diagnosis.serving as serving

    clock = [1000.0]
    monkeypatch.setattr(serving, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    asked: list[int] = []
    real_fetch = serving.fetch_model
    monkeypatch.setattr(serving, "fetch_model", lambda *a, **k: (asked.append(1), real_fetch(*a, **k))[1])
    data = tmp_path / "var"
    holder = ModelHolder(service_settings(data, None))
    caplog.set_level(logging.INFO, logger="diagnosis.serving")
    delays = []
    for _ in range(8):  # a worker polling through eight back-offs
        for _ in range(50):  # polls within one back-off: only the first asks the registry
            with pytest.raises(ModelUnavailable, match="vsandx train"):
                holder.get()
        delays.append(holder.retry_in())
        clock[0] += holder.retry_in()  # the worker waits it out (stop.wait(holder.retry_in()))
    assert len(asked) == 8  # the registry is asked once per back-off, not once per poll
    assert delays == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0]  # exponential, capped at 30 s
    errors = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(errors) == 1 and "model not served" in errors[0].getMessage()  # once per change of state
    with pytest.raises(ModelUnavailable):
        holder.get()  # the ninth attempt, after the last back-off
    info = holder.current_model_info()
    assert not info["ready"] and "vsandx train" in info["error"] and info["retry_in_s"] == 30.0
    # a model appears: picked up at the next attempt, the back-off resets, one line says so
    Tracker(data).promote(_register(Tracker(data), model_dir, "a"))
    clock[0] += holder.retry_in()
    assert holder.get().version == "1" and holder.retry_in() == 0
    assert sum("serving model" in r.getMessage() for r in caplog.records) == 1


def test_ready_says_why(tmp_path: Path) -> None:
    with TestClient(create_app(service_settings(tmp_path / "var", None))) as c:
        r = c.get("/ready")
    assert r.status_code == 503 and r.json()["reason"].startswith("no model to serve: no model registered")


def test_ready_counts_live_workers(tmp_path: Path, model_dir: Path) -> None:
    settings = service_settings(tmp_path / "var", model_dir, embedded_workers=0, worker_processes=0)
    with TestClient(create_app(settings)) as c:
        r = c.get("/ready")
    assert r.status_code == 503 and r.json()["model"]["ready"] and "no live worker" in r.json()["reason"]
