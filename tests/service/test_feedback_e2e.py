"""End to end: engineers correct the diagnoses of a few simulated bundles through the API; the feedback
that reaches VSANDX_RETRAIN_MIN_FEEDBACK queues a retrain on the training queue (embedded: a thread of
the service), which runs a real smoke-sized sweep warm-started from the champion's recorded configs,
judges the candidate against the champion and records the decision in MLflow, the database and the
model page; the served model follows the `champion` alias when the candidate wins."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from service.app import create_app
from service.queue import retraining
from tests.service.kit import service_settings, until
from training.tracking import Tracker

WARM = {"model": "cnn_small", "lr": 0.004, "depth": 2, "dropout": 0.1, "kernel_size": 5, "issue_rate": 0.5}


def true_labels(path: Path) -> dict[str, str]:
    with tarfile.open(path) as tf:
        fh = tf.extractfile(next(m for m in tf.getmembers() if m.name.endswith("labels.json")))
        assert fh is not None
        return dict(json.load(fh)["components"])


def test_feedback_triggers_a_retrain_and_a_decision(tmp_path: Path, model_dir: Path, bundles: list[Path]) -> None:
    settings = service_settings(tmp_path / "var", None, sim_workers=2, model_poll_s=0.5, retrain_min_feedback=2,
                                retrain_preset="smoke", retrain_feedback_holdout=0.0)  # fmt: skip
    tracker = Tracker(settings.data_dir)
    with tracker.run("champion", {"source": "tests"}) as run:  # the champion, with the configs it was trained with
        run.log_model_folder(model_dir)
        run.log_dict([WARM], "winners.json")
    tracker.promote(tracker.register(run.id, settings.registered_model))

    with TestClient(create_app(settings)) as c:
        assert c.get("/api/v1/model").json()["version"] == "1"
        answers: list[dict[str, Any]] = []
        for path in bundles[:2]:
            res = c.post("/api/v1/diagnoses?wait=true", files={"bundle": (path.name, path.read_bytes())}).json()
            verdicts = {comp["id"]: comp["verdict"] for comp in res["diagnosis"]["components"]}
            fixes = {cid: lab for cid, lab in true_labels(path).items() if verdicts.get(cid, lab) != lab}
            r = c.post(f"{res['status_url']}/feedback", json={"author": "eng", "labels": fixes})
            assert r.status_code == 201, r.text
            answers.append(r.json())
        assert answers[0]["retrain_id"] is None and answers[1]["retrain_id"] == 1  # the second reached 2
        url = answers[1]["retrain_url"]
        done = until(lambda: (x := c.get(url).json())["status"] in ("done", "failed") and x, timeout=400, every=1)
        assert done["status"] == "done", done["error"]
        assert done["trigger"] == "feedback" and done["feedback_count"] == 2
        assert done["champion_version"] == "1" and done["candidate_version"] == "2"
        m = done["metrics"]
        assert m["feedback_bundles"] == 2 and m["field_bundles"] == 8
        rule = m["candidate_field_exact_match"] >= m["champion_field_exact_match"] and (
            m["candidate_feedback_exact_match"],
            m["candidate_feedback_component_accuracy"],
        ) > (m["champion_feedback_exact_match"], m["champion_feedback_component_accuracy"])
        assert done["promoted"] is rule, done

        # MLflow: the retrain run, its decision, its sweep warm-started from the champion's configs
        mlrun = tracker.client.get_run(done["mlflow_run_id"])
        assert (
            mlrun.data.tags["decision"] == ("promoted" if rule else "kept") and mlrun.data.params["warm_start"] == "1"
        )
        trials = tracker.client.search_runs(
            [mlrun.info.experiment_id], f"tags.mlflow.parentRunId = '{mlrun.info.run_id}'"
        )
        assert len(trials) == 2 and any(abs(float(t.data.params["lr"]) - WARM["lr"]) < 1e-12 for t in trials)
        champ = tracker.champion(settings.registered_model)
        assert champ is not None and champ.version == ("2" if rule else "1")
        if rule:  # the service follows the alias
            until(lambda: c.get("/api/v1/model").json()["version"] == "2", timeout=30)

        # the database and the pages
        assert [f["retrain_id"] for f in answers] == [None, 1]
        stored = c.get(f"{res['status_url']}/feedback").json()["items"][0]
        assert stored["retrain_id"] == 1
        page = c.get("/model").text
        assert 'id="retrain-1"' in page and ("promoted to champion" if rule else "champion kept") in page
    assert not retraining.running_threads()
