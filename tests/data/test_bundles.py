"""Bundles on disk: the spec's layout (checked by shared/tools/check_bundle.py), every archive format,
byte-identical output per seed whatever the worker count, and labels that name every component."""

from __future__ import annotations

import hashlib
import json
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pytest

from data.simulate.generate import simulate_bundle
from data.simulate.runner import simulate_many
from tests.conftest import load_checker
from vsandx.components import kind_of
from vsandx.faults import FAULTS


def _digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.glob("*.tgz"))}


@pytest.mark.parametrize("profile", ["lab", "field"])
def test_bundles_pass_the_spec_checker(profile: str, tmp_path: Path) -> None:
    checker = load_checker()
    n = 12 if profile == "lab" else 8
    simulate_many(profile, n, tmp_path, seed=7, workers=2, progress=False)
    bundles = sorted(tmp_path.glob("*.tgz"))
    assert len(bundles) == n
    for b in bundles:
        ck = checker.check_bundle(str(b))
        assert ck.problems == [], (b.name, ck.problems[:5])


@pytest.mark.parametrize("fmt", ["dir", "zip"])
def test_other_formats_pass_the_checker(fmt: str, tmp_path: Path) -> None:
    checker = load_checker()
    simulate_many("field", 3, tmp_path, seed=3, fmt=fmt, workers=1, progress=False)
    made = [p for p in tmp_path.iterdir() if not p.name.endswith(".json")]
    assert len(made) == 3
    for b in made:
        assert checker.check_bundle(str(b)).problems == []
        if fmt == "zip":  # vCenter export: one .tgz per host inside the zip
            with zipfile.ZipFile(b) as zf:
                assert any(n.startswith("esx-") and n.endswith(".tgz") for n in zf.namelist())


def test_same_seed_same_bytes_whatever_the_workers(tmp_path: Path) -> None:
    simulate_many("lab", 6, tmp_path / "a", seed=11, workers=1, progress=False)
    simulate_many("lab", 6, tmp_path / "b", seed=11, workers=2, progress=False)
    simulate_many("lab", 6, tmp_path / "c", seed=12, workers=2, progress=False)
    a, b, c = _digest(tmp_path / "a"), _digest(tmp_path / "b"), _digest(tmp_path / "c")
    assert a == b and len(a) == 6
    assert set(a.values()).isdisjoint(c.values())


def test_field_bundles_are_reproducible_in_memory() -> None:
    one, two = simulate_bundle("field", 5, 3), simulate_bundle("field", 5, 3)
    assert one.files == two.files


def test_archive_layout(tmp_path: Path) -> None:
    (path,) = [tmp_path / r["path"] for r in simulate_many("lab", 1, tmp_path, seed=2, progress=False)]
    with tarfile.open(path) as tar:
        names = tar.getnames()
        members = tar.getmembers()
    assert "labels.json" in names
    tops = {n.split("/")[0] for n in names if n.startswith("esx-")}
    assert len(tops) == 4  # the lab cluster has four hosts, all uploaded
    assert all(m.isfile() or m.isdir() for m in members)
    assert not any(n.startswith("/") or ".." in n.split("/") for n in names)


def test_labels_cover_every_component_with_valid_faults() -> None:
    for i in range(6):
        b = simulate_bundle("field", 9, i)
        comps = b.labels["components"]
        assert isinstance(comps, dict)
        kinds = {kind_of(c) for c in comps}
        assert kinds == {"cluster", "host", "nic", "diskgroup", "disk"}
        for c, label in comps.items():
            assert label == "none" or FAULTS[label].kind == kind_of(c)
        stored = json.loads(b.files["labels.json"])
        assert stored == json.loads(json.dumps(b.labels))


def test_issue_rate_is_honoured() -> None:
    healthy = sum(not simulate_bundle("lab", 4, i, issue_rate=0.5).plan.faults for i in range(60))
    assert 18 <= healthy <= 42
    assert all(not simulate_bundle("lab", 4, i, issue_rate=0.0).plan.faults for i in range(5))
    assert all(simulate_bundle("lab", 4, i, issue_rate=1.0).plan.faults for i in range(5))


def test_field_profile_varies_like_escalations() -> None:
    bs = [simulate_bundle("field", 21, i) for i in range(30)]
    hosts = {b.hosts for b in bs}
    assert min(hosts) >= 3 and max(hosts) <= 16 and len(hosts) >= 5
    assert {b.storage for b in bs} == {"hybrid", "allflash", "nvme"}
    assert len({b.interval for b in bs}) >= 3
    assert any(b.hosts_present < b.hosts for b in bs)  # incomplete uploads
    assert any(b.cluster.dedup for b in bs) and any(not b.cluster.dedup for b in bs)
    assert {h.esxi_major for b in bs for h in b.cluster.hosts} == {7, 8}
    assert {b.cluster.link_mbps for b in bs} == {10000, 25000}
    n_faults = [len(b.plan.faults) for b in bs]
    assert 0 in n_faults and 2 in n_faults
    assert any(any(p.endswith(".csv") for p in b.files) for b in bs)
    assert any(not any(p.endswith(".csv") for p in b.files) for b in bs)


def test_an_under_driven_cluster_is_the_only_fault_drawn() -> None:
    """faults.md: "no congestion, no errors anywhere: the system is healthy but under-driven". Two-fault
    field bundles still come, never with an under-driven cluster (forcing both stays possible)."""
    from data.simulate.generate import _grid
    from data.simulate.plan import make_plan
    from data.simulate.topology import build_cluster

    rng = np.random.default_rng(7)
    drawn = []
    for _ in range(400):
        cluster = build_cluster("field", rng)
        drawn.append([f.fault for f in make_plan(cluster, _grid("field", rng), 1.0, rng).faults])
    assert sum(f == ["cluster.low_oio"] for f in drawn) >= 10
    assert sum(len(f) == 2 for f in drawn) >= 60
    assert not [f for f in drawn if "cluster.low_oio" in f and len(f) > 1]
    forced = make_plan(
        build_cluster("field", rng), _grid("field", rng), 1.0, rng, force=["cluster.low_oio", "disk.latency"]
    )
    assert [f.fault for f in forced.faults] == ["cluster.low_oio", "disk.latency"]
