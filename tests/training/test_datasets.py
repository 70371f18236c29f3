"""Dataset cache: simulate -> pipeline -> .npz, keyed by the resolved config, reused, never stale."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from data.simulate.archive import tar_bytes
from data.simulate.generate import simulate_bundle
from pipeline.api import load_bundle
from pipeline.config import PipelineConfig
from training import tensorstore
from training.datasets import DatasetSpec, build, describe, load_dataset, partial_upload


def test_tensorstore_round_trip() -> None:
    b = simulate_bundle("field", 3, 1)
    bt = load_bundle(tar_bytes(b.files))
    labels = b.labels["components"]
    assert isinstance(labels, dict)
    back, lab = tensorstore.loads(tensorstore.dumps(bt, labels))
    assert lab == labels and back.hosts == bt.hosts and back.T == bt.T
    for k, kt in bt.kinds.items():
        other = back.kinds[k]
        assert other.ids == kt.ids
        for a in ("values", "mask", "static", "static_mask", "host_index", "group_index"):
            np.testing.assert_array_equal(getattr(other, a), getattr(kt, a))


def test_two_writers_of_one_cached_bundle_do_not_rename_each_others_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A benchmark and a script building the same cached dataset write the same bundle file: the
    second writer's whole save lands between the first's write and its rename. With one shared
    temporary name the second renamed the first's temporary away (FileNotFoundError)."""
    from training import model_files

    b = simulate_bundle("lab", 3, 0)
    bt, labels = load_bundle(tar_bytes(b.files)), {"cluster:x": "none"}
    path = tmp_path / "000000.npz"
    real = model_files.os.replace
    interleaved: list[str] = []

    def replace(src: str | Path, dst: str | Path) -> None:
        if not interleaved:
            interleaved.append(str(src))
            tensorstore.save(path, bt, labels)  # the other writer, start to end
        real(src, dst)

    monkeypatch.setattr(model_files.os, "replace", replace)
    tensorstore.save(path, bt, labels)
    assert interleaved, "the second writer never ran inside the first's save"
    assert [p.name for p in tmp_path.iterdir()] == ["000000.npz"]  # no temporary left behind
    assert tensorstore.load(path)[1] == labels


def test_stale_schema_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    b = simulate_bundle("lab", 3, 0)
    data = tensorstore.dumps(load_bundle(tar_bytes(b.files)), {})
    monkeypatch.setattr(tensorstore, "SCHEMA_VERSION", "vsandx.tensors/0")
    with pytest.raises(tensorstore.StaleTensors):
        tensorstore.loads(data)


def test_build_caches_by_config(tmp_path: Path) -> None:
    spec = DatasetSpec("lab", 4, seed=9, issue_rate=1.0)
    folder = build(spec, tmp_path, workers=2, progress=False)
    doc = describe(folder)
    assert doc["n"] == 4 and doc["pipeline_schema"].startswith("vsandx.tensors/") and doc["simulator_version"]
    X, y = load_dataset(folder)
    assert len(X) == len(y) == 4
    assert all(any(v != "none" for v in lab.values()) for lab in y)  # issue rate 1.0
    for bt, lab in zip(X, y, strict=True):
        assert set(bt.component_ids) == set(lab)  # the pipeline finds every labelled component
    before = {p.name: p.stat().st_mtime_ns for p in folder.glob("*.npz")}
    assert build(spec, tmp_path, progress=False) == folder  # reused, nothing recomputed
    assert {p.name: p.stat().st_mtime_ns for p in folder.glob("*.npz")} == before
    other = build(spec, tmp_path, cfg=PipelineConfig(grid_steps=90), workers=1, progress=False)
    assert other != folder and json.loads((other / "dataset.json").read_text())["pipeline_config"]["grid_steps"] == 90
    assert load_dataset(other)[0][0].T == 90


def test_partial_upload_leaves_out_some_hosts_but_no_component(tmp_path: Path) -> None:
    b = simulate_bundle("lab", 5, 2)
    tops = {p.split("/", 1)[0] for p in b.files if p.startswith("esx-") and "/" in p}
    part = partial_upload(b.files, np.random.default_rng(0))
    kept = {p.split("/", 1)[0] for p in part if p.startswith("esx-") and "/" in p}
    assert kept and kept < tops  # a non-empty proper subset of the host folders
    assert "labels.json" in part and all(part[p] == b.files[p] for p in part)
    bt = load_bundle(tar_bytes(part))
    assert len(bt.host_bundles) == len(kept)
    labels = b.labels["components"]
    assert isinstance(labels, dict) and set(bt.component_ids) == set(labels)  # CMMDS still names every one


def test_partial_share_is_part_of_the_key(tmp_path: Path) -> None:
    whole = build(DatasetSpec("lab", 4, seed=9), tmp_path, workers=1, progress=False)
    part = build(DatasetSpec("lab", 4, seed=9, partial=1.0), tmp_path, workers=1, progress=False)
    assert whole != part and describe(part)["partial"] == 1.0
    (Xw, yw), (Xp, yp) = load_dataset(whole), load_dataset(part)
    assert yw == yp  # same bundles, same labels
    assert all(len(p.host_bundles) < len(w.host_bundles) for w, p in zip(Xw, Xp, strict=True))


@pytest.mark.parametrize("source", ["cleanroom", "outsider"])
def test_another_authors_bundles_build_a_dataset_like_the_simulators(source: str, tmp_path: Path) -> None:
    """data.sources: the generator's bundles through the one pipeline path with their labels, and as
    partial uploads (some host folders left out: a NIC only its host's files name may go unread, its
    label kept); the dataset records which source it is."""
    from data.sources import BUNDLES

    for partial in (0.0, 1.0):
        folder = build(DatasetSpec(source, 3, seed=1000, partial=partial), tmp_path, workers=1, progress=False)
        assert folder.name.startswith(f"{source}-")
        doc = json.loads((folder / "dataset.json").read_text())
        assert doc["profile"] == source and doc["source_version"] == "1"
        X, y = load_dataset(folder)
        for i, (bt, labels) in enumerate(zip(X, y, strict=True)):
            truth = BUNDLES[source](1000, i)[2]["components"]
            assert labels == truth
            assert set(bt.component_ids) == set(truth) if not partial else set(bt.component_ids) <= set(truth)
