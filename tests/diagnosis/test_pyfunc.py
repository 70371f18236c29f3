"""The registered champion as MLflow's own client loads it: `mlflow.pyfunc.load_model` on
`models:/<name>@champion` diagnoses a bundle, given its path or its bytes, as `vsandx diagnose` does."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from data.simulate.runner import simulate_many
from diagnosis.predictor import Predictor
from diagnosis.pyfunc import BadInput, PyfuncDiagnoser, _load_pyfunc
from models.registry import create_model
from pipeline.config import PipelineConfig
from training.datasets import DatasetSpec, build, load_dataset
from training.model_fetch import fetch_model
from training.tracking import CHAMPION, MODEL_CARD, Tracker

NAME = "vsandx-pyfunc-test"


@pytest.fixture(scope="module")
def registered(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """(data dir with the registry, the saved model folder, a faulty lab bundle)."""
    root = tmp_path_factory.mktemp("pyfunc")
    X, y = load_dataset(build(DatasetSpec("lab", 6, seed=43, issue_rate=1.0), root, workers=1, progress=False))
    folder = create_model("logreg").fit(X, y).save(root / "logreg")
    simulate_many("lab", 1, root / "uploads", seed=91, issue_rate=1.0, workers=1, progress=False)
    (bundle,) = sorted((root / "uploads").glob("*.tgz"))
    tracker = Tracker(root / "var")
    with tracker.run("pyfunc-test", {"model": "logreg"}) as run:
        run.log_model_folder(folder, card="# vsandx logreg\n")
    tracker.promote(tracker.register(run.id, NAME, description="a logreg for the test"))
    return root / "var", folder, bundle


def test_mlflow_alone_loads_the_champion_and_diagnoses_a_bundle(registered: tuple[Path, Path, Path]) -> None:
    data, folder, bundle = registered
    probe = f"""
import json, sys, mlflow, pandas as pd
mlflow.set_tracking_uri("sqlite:///var/mlflow.db")  # the README's line, run where ./var is the data dir
model = mlflow.pyfunc.load_model("models:/{NAME}@{CHAMPION}")
meta = model.metadata
print(json.dumps({{
    "by_path": model.predict(pd.DataFrame({{"path": [{str(bundle)!r}]}})),
    "by_bytes": model.predict(pd.DataFrame({{"content": [open({str(bundle)!r}, "rb").read()]}})),
    "inputs": meta.get_input_schema().input_names(),
    "flavors": sorted(meta.flavors),
}}))
"""
    assert data.name == "var"
    got = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, cwd=data.parent)
    assert got.returncode == 0, got.stderr[-3000:]
    doc = json.loads(got.stdout.strip().splitlines()[-1])
    assert doc["inputs"] == ["path", "content"] and "python_function" in doc["flavors"]
    expected = Predictor.load(str(folder), config=PipelineConfig()).diagnose(bundle)
    for key in ("by_path", "by_bytes"):
        (d,) = doc[key]
        assert d["schema"] == "vsandx.diagnosis/1" and d["bundle"]["sha256"] == expected["bundle"]["sha256"]
        assert [(c["id"], c["verdict"]) for c in d["components"]] == [
            (c["id"], c["verdict"]) for c in expected["components"]
        ]
        assert d["model"] == {"name": "logreg", "version": "mlflow-pyfunc"}
    assert any(c["verdict"] != "none" for c in expected["components"])  # a faulty bundle, found faulty


def test_the_registered_version_is_an_mlflow_model_with_its_card(registered: tuple[Path, Path, Path]) -> None:
    data, folder, _ = registered
    tracker = Tracker(data)
    mv = tracker.client.get_model_version_by_alias(NAME, CHAMPION)
    assert mv.description == "a logreg for the test"
    assert "mlflow.pyfunc.load_model" in tracker.client.get_registered_model(NAME).description
    got = fetch_model(None, data, default_name=NAME)  # our own path finds the vsandx folder inside
    assert (got.folder / "config.json").read_text() == (folder / "config.json").read_text()
    root = got.folder.parents[1]
    assert (root / "MLmodel").is_file() and (root / MODEL_CARD).read_text() == "# vsandx logreg\n"
    assert "loader_module: diagnosis.pyfunc" in (root / "MLmodel").read_text()
    assert not list(root.rglob("*.pkl"))  # nothing pickled


def test_rows_that_name_no_bundle_are_refused(registered: tuple[Path, Path, Path]) -> None:
    _, folder, bundle = registered
    model = _load_pyfunc(str(folder))
    assert isinstance(model, PyfuncDiagnoser)
    assert len(model.predict([str(bundle), bundle.read_bytes()])) == 2
    assert len(model.predict({"path": [str(bundle)]})) == 1
    for bad, why in (([{"path": None, "content": None}], "exactly one"),
                     ([{"path": str(bundle), "content": b"x"}], "exactly one"), ([3], "not int")):  # fmt: skip
        with pytest.raises(BadInput, match=why):
            model.predict(bad)
