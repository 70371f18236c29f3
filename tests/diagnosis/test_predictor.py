"""The served model end to end: diagnosis document (interface.md), CLI exit codes, evaluation."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest

from cli.main import main
from data.simulate.runner import simulate_many
from diagnosis.evaluate import evaluate_folder, read_labels
from diagnosis.predictor import MAX_DRIVEN, NoModel, Predictor
from models.calibration import CalibratedDiagnoser
from models.registry import create_model
from pipeline.api import load_bundle
from pipeline.channels import KIND_STATIC
from pipeline.config import PipelineConfig
from training.datasets import DatasetSpec, build, load_dataset
from vsandx.faults import FAULT_IDS, LABELS


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("var")
    X, y = load_dataset(build(DatasetSpec("lab", 12, seed=41, issue_rate=0.7), root, workers=2, progress=False))
    model = create_model("logreg").fit(X, y)
    # beside it, the same model calibrated (on its own bundles: enough to carry conformal data), with
    # the out-of-distribution check (ranges and threshold from the same bundles: the floor)
    CalibratedDiagnoser.of(model, "temperature").calibrate(X, y).fit_outliers(X, X).save(root / "calibrated")
    return model.save(root / "model")


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bundles")
    simulate_many("lab", 3, out, seed=42, issue_rate=1.0, workers=1, progress=False)
    simulate_many("field", 1, out, seed=42, fmt="dir", workers=1, progress=False)
    return out


def test_document_follows_the_interface(model_dir: Path, bundles: Path) -> None:
    bundle = sorted(bundles.glob("lab-*.tgz"))[0]
    doc = Predictor.load(str(model_dir)).diagnose(bundle)
    assert doc["schema"] == "vsandx.diagnosis/1"
    assert set(doc) == {"schema", "bundle", "coverage", "components", "findings", "review", "unusual", "model",
                        "timing_ms"}  # fmt: skip
    assert doc["unusual"] is None  # a model without the out-of-distribution check
    hosts = doc["bundle"]["hosts"]
    assert doc["coverage"]["hosts"] == len(hosts) and doc["coverage"]["with_bundle"] == len(hosts)
    assert doc["coverage"]["without_bundle"] == []
    assert doc["review"] == [] and not any("review" in c or "candidates" in c for c in doc["components"])
    assert len(doc["bundle"]["sha256"]) == 64 and len(doc["bundle"]["hosts"]) == 4
    labels = read_labels(bundle)
    assert labels is not None
    assert {c["id"] for c in doc["components"]} == set(labels)  # one entry per component
    for c in doc["components"]:
        assert c["kind"] == c["id"].split(":")[0] and c["verdict"] in LABELS
        assert abs(sum(c["scores"].values()) - 1) < 1e-3 and c["confidence"] == max(c["scores"].values())
    faulty = [c for c in doc["components"] if c["verdict"] != "none"]
    assert [f["component"] for f in doc["findings"]] == [
        c["id"] for c in sorted(faulty, key=lambda c: -c["confidence"])
    ]
    assert set(doc["timing_ms"]) == {"read", "parse", "predict", "total"}
    assert doc["model"] == {"name": "logreg", "version": f"file:{model_dir.resolve()}"}
    assert doc["findings"] and all(f["drivers"] is None for f in doc["findings"])  # no CNN: nothing attributed


def test_findings_of_a_cnn_say_what_drove_them(bundles: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A model with CNN members attributes its most confident findings (diagnosis.drivers), the rest get
    null, and VSANDX_ATTRIBUTION_STEPS=0 turns it off."""
    import diagnosis.drivers

    X, y = load_dataset(build(DatasetSpec("lab", 6, seed=41, issue_rate=1.0), tmp_path, workers=1, progress=False))
    cnn = create_model("cnn_small", epochs=1, width=16).fit(X, y)
    asked: list[tuple[str, str, int]] = []

    def fake(model: object, bt: object, component: str, fault: str, steps: int) -> dict[str, object]:
        assert model is cnn
        asked.append((component, fault, steps))
        return {"sources": [{"source": "x", "share": 1.0}], "span": None}

    monkeypatch.setattr(diagnosis.drivers, "drivers", fake)
    p = Predictor(cnn, "cnn_small", "1", PipelineConfig(), attribution_steps=16)
    bt = load_bundle(sorted(bundles.glob("lab-*.tgz"))[0])
    verdicts = {cid: ("disk.latency", 0.9 - 0.1 * k) for k, cid in enumerate(bt.kinds["disk"].ids[:5])}
    monkeypatch.setattr(p.model, "predict_proba", lambda X: [{cid: _onehot(*verdicts.get(cid, ("none", 1.0)))
                                                              for cid in bt.component_ids}])  # fmt: skip
    doc = p.document(bt, "0" * 64)
    assert [f["component"] for f in doc["findings"]] == list(verdicts)
    assert [f["drivers"] is not None for f in doc["findings"]] == [True] * MAX_DRIVEN + [False] * (5 - MAX_DRIVEN)
    assert asked == [(cid, "disk.latency", 16) for cid in list(verdicts)[:MAX_DRIVEN]]
    p.attribution_steps = 0
    assert all(f["drivers"] is None for f in p.document(bt, "0" * 64)["findings"])


def _onehot(label: str, p: float) -> np.ndarray:
    v = np.full(len(LABELS), (1 - p) / (len(LABELS) - 1))
    v[LABELS.index(label)] = p
    return v


def test_components_the_model_cannot_settle_are_sent_to_review(model_dir: Path, bundles: Path) -> None:
    """With conformal data each component says whether it needs review and names its candidates; at a
    coverage no calibration set of this size can reach, every label stays a candidate."""
    bundle = sorted(bundles.glob("lab-*.tgz"))[0]
    p = Predictor.load(str(model_dir.parent / "calibrated"))
    doc = p.diagnose(bundle)
    for c in doc["components"]:
        assert c["review"] == (len(c["candidates"]) != 1)
        assert c["review"] or c["candidates"] == [c["verdict"]]  # a set of one is the verdict
    assert [r["component"] for r in doc["review"]] == [
        c["id"] for c in sorted((c for c in doc["components"] if c["review"]), key=lambda c: c["confidence"])
    ]
    p.coverage = 0.9999
    doc = p.document(load_bundle(bundle, p.config), "0" * 64)
    assert doc["review"] and all(c["review"] for c in doc["components"])
    for r, c in zip(doc["review"], sorted(doc["components"], key=lambda c: c["confidence"]), strict=True):
        assert r["component"] == c["id"] and r["reason"] == "several labels fit"
        assert [x["label"] for x in r["candidates"]] == c["candidates"]
        # most probable first: ranked on the unrounded probabilities, so two labels whose shown
        # (4-decimal) scores tie may come in either order
        shown = [c["scores"][k] for k in c["candidates"]]
        assert sorted(c["candidates"]) == sorted(c["scores"]) and shown == sorted(shown, reverse=True)
        assert [x["score"] for x in r["candidates"]] == [c["scores"][k] for k in c["candidates"]]


def test_the_document_says_when_a_bundle_was_never_seen(model_dir: Path) -> None:
    """With the check, `unusual` holds its verdict: a training bundle lies inside every range, the
    same bundle with 100 GbE links does not, and the document says which kind and channel."""
    X, _ = load_dataset(build(DatasetSpec("lab", 12, seed=41, issue_rate=0.7), model_dir.parent, progress=False))
    p = Predictor.load(str(model_dir.parent / "calibrated"))
    doc = p.document(X[0], "0" * 64)
    assert doc["unusual"] == {"flag": False, "score": 0.0, "threshold": 2.0, "reasons": []}
    moved = copy.deepcopy(X[0])
    kt, j = moved.kinds["nic"], KIND_STATIC["nic"].index("speed_gbps")
    kt.static[kt.static_mask[:, j], j] = 100.0
    doc = json.loads(json.dumps(p.document(moved, "0" * 64)))  # plain JSON, as the CLI and the API write it
    u = doc["unusual"]
    assert u["flag"] is True and u["score"] > u["threshold"] == 2.0
    assert [(r["kind"], r["channels"]) for r in u["reasons"]] == [("nic", ["speed_gbps"])]
    assert u["reasons"][0]["component"] in {c["id"] for c in doc["components"]}
    assert u["reasons"][0]["why"] == "speed_gbps 100 above the training range 1-10"  # lab: 1 GbE management, 10 GbE


def test_directory_upload_and_same_sha(model_dir: Path, bundles: Path) -> None:
    (folder,) = [p for p in bundles.iterdir() if p.is_dir()]
    p = Predictor.load(str(model_dir))
    assert p.diagnose(folder)["bundle"]["sha256"] == p.diagnose(folder)["bundle"]["sha256"]


def test_cli_diagnose_json_and_errors(model_dir: Path, bundles: Path, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    bundle = sorted(bundles.glob("lab-*.tgz"))[0]
    assert main(["diagnose", str(bundle), "--json", "--model", str(model_dir)]) == 0
    out = capsys.readouterr().out
    assert json.loads(out)["schema"] == "vsandx.diagnosis/1" and out.count("\n") == 1
    bad = tmp_path / "broken.tgz"
    bad.write_bytes(b"\x1f\x8b" + b"not really gzip" * 10)
    assert main(["diagnose", str(bad), "--json", "--model", str(model_dir)]) == 1
    cap = capsys.readouterr()
    assert cap.out == "" and "broken.tgz" in cap.err
    assert main(["diagnose", str(bundle), "--model", str(tmp_path)]) == 1
    assert "not a saved vsandx model" in capsys.readouterr().err


def test_no_champion_is_a_clear_error(tmp_path: Path) -> None:
    from vsandx.settings import Settings

    with pytest.raises(NoModel, match="vsandx train"):
        Predictor.load(None, Settings(data_dir=tmp_path))


def test_evaluate_reports_the_interface_fields(model_dir: Path, bundles: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    doc = evaluate_folder(Predictor.load(str(model_dir)), bundles)
    assert doc["bundles"] == 4
    assert set(doc) == {"bundles", "exact_match", "component_accuracy", "per_fault", "latency_ms"}
    assert set(doc["per_fault"]) == set(FAULT_IDS)
    assert 0 <= doc["exact_match"] <= doc["component_accuracy"] <= 1
    assert main(["evaluate", str(bundles), "--json", "--model", str(model_dir)]) == 0
    assert json.loads(capsys.readouterr().out)["bundles"] == 4


def test_a_stored_bundle_is_streamed_not_read_whole_nor_hashed_again(
    model_dir: Path, bundles: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The service's bundle travels as (path, sha256): the predictor streams the file through the
    pipeline's reader (no Path.read_bytes, no second sha256), and errors name the upload, not the path."""
    import hashlib

    from pipeline.errors import BundleError

    bundle = sorted(bundles.glob("lab-*.tgz"))[0]
    sha = hashlib.sha256(bundle.read_bytes()).hexdigest()
    p = Predictor.load(str(model_dir))
    whole = p.diagnose(bundle)  # a path from the command line is hashed in chunks, then streamed

    def refuse(*a: object, **k: object) -> None:
        raise AssertionError("a stored bundle was read whole or hashed again")

    bad = tmp_path / "stored"
    bad.write_bytes(b"\x1f\x8b" + b"not really gzip" * 10)
    monkeypatch.setattr(Path, "read_bytes", refuse)
    monkeypatch.setattr(hashlib, "sha256", refuse)
    doc, bt = p.diagnose_stored(bundle, sha, name="a.tgz")
    assert doc["bundle"]["sha256"] == sha == whole["bundle"]["sha256"] and doc["components"] == whole["components"]
    assert len(bt.hosts) == 4
    with pytest.raises(BundleError) as e:
        p.diagnose_stored(bad, "0" * 64, name="upload.tgz")
    assert e.value.for_upload("upload.tgz", bad).startswith("upload.tgz: ") and str(bad) not in str(e.value)
