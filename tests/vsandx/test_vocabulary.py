"""Fault ids, component kinds and canonical ids agree with shared/spec."""

from __future__ import annotations

import pytest

from tests.conftest import SHARED
from vsandx import components as cid
from vsandx.faults import COMPONENT_KINDS, FAULT_IDS, FAULTS, LABELS, faults_for_kind


def test_fault_ids_match_the_spec_table() -> None:
    spec = SHARED / "spec" / "faults.md"
    if not spec.exists():
        pytest.skip(f"{spec} not found")
    rows = [line for line in spec.read_text().splitlines() if line.startswith("| `")]
    in_spec = {line.split("`")[1]: line.split("|")[2].split()[0] for line in rows}  # "disk (capacity)"
    assert in_spec == {f: FAULTS[f].kind for f in FAULT_IDS}
    assert LABELS[0] == "none" and set(LABELS[1:]) == set(in_spec)


def test_every_fault_has_words_for_the_engineer() -> None:
    for f in FAULTS.values():
        assert f.kind in COMPONENT_KINDS and len(f.recommendation) > 20 and f.title


def test_component_ids_round_trip() -> None:
    assert cid.kind_of(cid.CLUSTER_ID) == "cluster"
    assert cid.host_id("esx-01.lab.local") == "host:esx-01.lab.local"
    assert cid.nic_id("esx-01.lab.local", "vmnic1") == "nic:esx-01.lab.local/vmnic1"
    d = cid.disk_id("esx-01.lab.local", "naa.5000c500a1b2c3d4:2")
    assert d == "disk:esx-01.lab.local/naa.5000c500a1b2c3d4"
    assert cid.kind_of(d) == "disk" and cid.host_of(d) == "esx-01.lab.local"
    assert cid.host_of(cid.diskgroup_id("h", "naa.1")) == "h"
    assert faults_for_kind("nic") == ("net.packet_loss", "net.link_degraded")
    for bad in ("", "disk", "vm:x", "cluster:x", "host:"):
        with pytest.raises(ValueError):
            cid.kind_of(bad)
