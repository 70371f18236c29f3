"""Findings: every fault's verdict comes with evidence read from the bundle and the recommendation."""

from __future__ import annotations

import pytest

from data.simulate.archive import tar_bytes
from data.simulate.generate import simulate_bundle
from diagnosis.findings import CLUES, evidence, findings
from pipeline.api import load_bundle
from vsandx.faults import FAULT_IDS, FAULTS

EXPECT = {  # a phrase the first evidence line must carry, from faults.md's signature column
    "net.packet_loss": "packet loss",
    "net.link_degraded": "throughput",
    "disk.latency": "DAVG",
    "disk.hotspot": "read latency",
    "dg.write_buffer": "write buffer free",
    "host.cpu_contention": "CPU utilisation",
    "cluster.low_oio": "outstanding I/O",
    "cluster.resync": "latency",
}


def test_every_fault_has_clues() -> None:
    assert set(CLUES) == set(FAULT_IDS) == set(EXPECT)


@pytest.mark.parametrize("fault", FAULT_IDS)
def test_findings_carry_evidence_and_recommendation(fault: str) -> None:
    b = simulate_bundle("lab", 8, 2, faults=(fault,))
    bt = load_bundle(tar_bytes(b.files))
    comp = b.plan.faults[0].component
    out = findings(bt, {comp: (fault, 0.9), "cluster" if comp != "cluster" else "host:x": ("none", 0.99)})
    assert len(out) == 1
    f = out[0]
    assert f.component == comp and f.fault == fault and f.recommendation == FAULTS[fault].recommendation
    assert f.evidence and EXPECT[fault] in f.evidence[0]
    doc = f.to_dict()
    assert set(doc) == {"component", "fault", "confidence", "summary", "recommendation", "evidence"}


def test_findings_sorted_by_confidence() -> None:
    b = simulate_bundle("field", 8, 3, faults=("net.packet_loss", "host.cpu_contention"))
    bt = load_bundle(tar_bytes(b.files))
    (a, c) = (f.component for f in b.plan.faults)
    out = findings(bt, {a: ("net.packet_loss", 0.6), c: ("host.cpu_contention", 0.95)})
    assert [f.fault for f in out] == ["host.cpu_contention", "net.packet_loss"]
    assert evidence(bt, a, "net.packet_loss")
