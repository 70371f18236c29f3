"""Clean-room generator: determinism, structural validity (shared checker), label coverage."""

from __future__ import annotations

import re
from pathlib import Path

from data.cleanroom import cleanroom_bundle, write_cleanroom
from tests.conftest import SHARED, load_checker
from vsandx.faults import FAULT_IDS  # the taxonomy, to hold the generator to it (not its own list)

FAULTS_MD = SHARED / "spec" / "faults.md"


def _fault_ids() -> set[str]:
    if FAULTS_MD.exists():
        found = set(re.findall(r"^\| `([a-z]+\.[a-z_]+)` \|", FAULTS_MD.read_text(), flags=re.M))
        if found:
            return found
    return set(FAULT_IDS)


def test_deterministic_in_seed_and_index() -> None:
    a = cleanroom_bundle(5, 3)
    b = cleanroom_bundle(5, 3)
    assert a[0] == b[0] and a[2] == b[2]
    assert a[1] == b[1]
    c = cleanroom_bundle(5, 4)
    d = cleanroom_bundle(6, 3)
    assert c[1] != a[1] and d[1] != a[1]


def test_layout_and_labels_shape() -> None:
    name, files, labels = cleanroom_bundle(1, 0)
    assert name
    tops = {p.split("/")[0] for p in files if p.startswith("esx-")}
    assert tops and all(re.match(r"^esx-.+-\d{4}-\d{2}-\d{2}--\d{2}\.\d{2}-\d+$", t) for t in tops)
    assert labels["schema"] == "vsandx.labels/1" and labels["profile"] == "field"
    comps = labels["components"]
    assert isinstance(comps, dict) and comps["cluster"] in ("none", *FAULT_IDS)
    for t in tops:
        assert any(p.startswith(t + "/commands/") and "perf_stats_with_dump" in p for p in files)


def test_written_bundles_pass_shared_checker(tmp_path: Path) -> None:
    checker = load_checker()
    paths = write_cleanroom(tmp_path, 30, seed=11)
    assert len(paths) == 30 and all(p.suffix == ".tgz" for p in paths)
    for p in paths:
        assert checker.check_bundle(str(p)).problems == [], p.name


def test_fault_coverage_components_and_healthy_share() -> None:
    seen: set[str] = set()
    healthy = 0
    n = 200
    for i in range(n):
        _, _, labels = cleanroom_bundle(3, i)
        comps = labels["components"]
        assert isinstance(comps, dict)
        faults = labels["faults"]
        assert isinstance(faults, list)
        hosts = {c for c in comps if c.startswith("host:")}
        assert hosts and "cluster" in comps
        assert any(c.startswith("disk:") for c in comps) and any(c.startswith("diskgroup:") for c in comps)
        assert any(c.startswith("nic:") for c in comps)
        bad = {c: v for c, v in comps.items() if v != "none"}
        assert len(bad) == len(faults)
        assert sum(1 for f in faults if f["component"] == "cluster") <= 1
        for f in faults:
            assert comps[f["component"]] == f["fault"]
            assert 0.0 <= f["severity"] <= 1.0
            seen.add(f["fault"])
        healthy += not faults
    assert _fault_ids() <= seen
    assert 0.15 <= healthy / n <= 0.35
