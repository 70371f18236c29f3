"""The outsider bundle generator: deterministic, valid for the shared checker, covering every fault."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from data.outsider import outsider_bundle, write_outsider
from tests.conftest import SHARED, load_checker
from vsandx.faults import FAULT_IDS


def test_deterministic() -> None:
    a = outsider_bundle(7, 3)
    b = outsider_bundle(7, 3)
    assert a[0] == b[0]
    assert a[1] == b[1]
    assert a[2] == b[2]
    assert outsider_bundle(7, 4)[1] != a[1]


def test_write_is_deterministic(tmp_path: Path) -> None:
    p1 = write_outsider(tmp_path / "a", 2, 5)
    p2 = write_outsider(tmp_path / "b", 2, 5)
    assert [p.name for p in p1] == [p.name for p in p2]
    assert all(x.read_bytes() == y.read_bytes() for x, y in zip(p1, p2, strict=True))


def test_thirty_bundles_pass_the_checker(tmp_path: Path) -> None:
    checker = load_checker()
    paths = write_outsider(tmp_path, 30, 11)
    assert len(paths) == 30
    for p in paths:
        ck = checker.check_bundle(str(p), None, True)
        assert ck.problems == [], (p.name, ck.problems[:5])
        assert ck.warnings == [], (p.name, ck.warnings[:5])


def test_labels_use_known_ids_and_schema() -> None:
    allowed = set(FAULT_IDS) | {"none"}
    for i in range(20):
        _, _, lab = outsider_bundle(2, i)
        assert lab["schema"] == "vsandx.labels/1"
        assert lab["profile"] == "field"
        comps = lab["components"]
        assert isinstance(comps, dict)
        assert set(comps.values()) <= allowed
        faults = lab["faults"]
        assert isinstance(faults, list)
        for f in faults:
            assert f["fault"] in FAULT_IDS
            assert comps[f["component"]] == f["fault"]


def test_every_fault_and_healthy_appear() -> None:
    spec = (SHARED / "spec" / "faults.md").read_text() if (SHARED / "spec" / "faults.md").exists() else ""
    ids = set(re.findall(r"^\| `([a-z]+\.[a-z_]+)`", spec, flags=re.M)) or set(FAULT_IDS)
    seen: Counter[str] = Counter()
    healthy = 0
    for i in range(60):
        _, _, lab = outsider_bundle(1, i)
        faults = lab["faults"]
        assert isinstance(faults, list)
        if not faults:
            healthy += 1
        seen.update(f["fault"] for f in faults)
    missing = ids - set(seen)
    assert not missing, missing
    assert healthy >= 3


@pytest.mark.parametrize("index", [0, 1])
def test_host_folders_and_loose_files(index: int) -> None:
    _, files, _ = outsider_bundle(3, index)
    tops = {p.split("/", 1)[0] for p in files if "/" in p}
    assert tops and all(re.match(r"^esx-.+-\d{4}-\d{2}-\d{2}--\d{2}\.\d{2}-\d+$", t) for t in tops)
    assert all(any(p.startswith(t + "/commands/") and "perf_stats_with_dump" in p for p in files) for t in tops)
