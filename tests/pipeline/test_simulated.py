"""Simulator (data/) against pipeline: every simulated bundle parses, every labelled component is found.

Only tests may read labels.json; the pipeline never does.
"""

from __future__ import annotations

import io
import json
import tarfile
import zipfile
from pathlib import Path

import pytest

from data.simulate.archive import tar_bytes
from data.simulate.generate import simulate_bundle
from data.simulate.runner import simulate_many
from pipeline import load_bundle


def _labels(path: Path) -> dict:
    if path.is_dir():
        return json.loads((path / "labels.json").read_text())
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as zf:
            return json.loads(zf.read("labels.json"))
    with tarfile.open(path) as tf:
        for ti in tf:
            if ti.name.lstrip("./") == "labels.json":
                f = tf.extractfile(ti)
                assert f is not None
                return json.loads(f.read())
    raise AssertionError(f"no labels.json in {path}")


def _simulate(profile: str, n: int, out: Path, seed: int, fmt: str) -> list[Path]:
    simulate_many(profile=profile, n=n, out=out, seed=seed, fmt=fmt, workers=1, issue_rate=None, progress=False)
    return sorted(p for p in out.iterdir() if p.name != "labels.json" and not p.name.startswith("simulation-"))


@pytest.mark.parametrize(
    ("profile", "seed", "fmt"),
    [("field", 1, "tgz"), ("field", 2, "tgz"), ("lab", 3, "tgz"), ("field", 4, "zip"), ("lab", 5, "dir")],
)
def test_every_simulated_bundle_parses_and_topology_finds_labelled_components(
    tmp_path: Path, profile: str, seed: int, fmt: str
) -> None:
    bundles = _simulate(profile, 3, tmp_path, seed, fmt)
    assert bundles
    for b in bundles:
        bt = load_bundle(b)
        labels = _labels(b)
        found = set(bt.component_ids)
        want = set(labels["components"])
        assert want <= found, f"{b.name}: not found {sorted(want - found)[:5]}"
        assert found <= want, f"{b.name}: not labelled {sorted(found - want)[:5]}"
        assert not [w for w in bt.warnings if "unreadable" in w], bt.warnings


def test_simulated_bytes_upload(tmp_path: Path) -> None:
    (b,) = _simulate("field", 1, tmp_path, 7, "tgz")
    a = load_bundle(b)
    c = load_bundle(io.BytesIO(b.read_bytes()))
    assert a.component_ids == c.component_ids


def test_every_source_of_a_simulated_bundle_is_parsed(tmp_path: Path) -> None:
    from pipeline import parse_bundle

    bundles = _simulate("lab", 2, tmp_path, 11, "dir")
    for b in bundles:
        p = parse_bundle(b)
        kinds = {k for _, k in p.records.files}
        assert {"perfdump", "cmmds", "storage", "network", "nicinfo", "log"} <= kinds, kinds
        # every host folder's command outputs and logs were recognised by content
        for path in b.rglob("*"):
            rel = path.relative_to(b).as_posix()
            wanted = "/commands/" in rel or "/var/run/log/" in rel or rel.endswith(".csv")
            if wanted and path.is_file() and path.stat().st_size:
                assert any(f == rel for f, _ in p.records.files), rel
        for f in p.records.folders.values():
            assert f.storage and f.nics and f.vmknics and f.logs
        assert not p.topology.unattached


@pytest.mark.parametrize("profile", ["field", "lab"])
def test_many_simulated_bundles_parse_cleanly(profile: str) -> None:
    """Across many seeds: no error, and the topology finds exactly the labelled components."""
    for i in range(16 if profile == "field" else 8):
        b = simulate_bundle(profile, 77, i)
        bt = load_bundle(tar_bytes(b.files))
        comps = b.labels["components"]
        assert isinstance(comps, dict)
        assert set(bt.component_ids) == set(comps), b.name
