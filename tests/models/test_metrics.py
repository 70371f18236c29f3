from __future__ import annotations

import pytest

from models.metrics import component_accuracy, evaluation_report, exact_match, per_fault
from vsandx.faults import FAULT_IDS

TRUE = [
    {"cluster": "none", "host:a": "host.cpu_contention", "nic:a/vmnic0": "none"},
    {"cluster": "cluster.low_oio", "host:a": "none", "nic:a/vmnic0": "net.packet_loss"},
]
PRED = [
    {"cluster": "none", "host:a": "host.cpu_contention", "nic:a/vmnic0": "none"},  # all right
    {"cluster": "cluster.low_oio", "host:a": "host.cpu_contention", "nic:a/vmnic0": "none"},  # 2 wrong
]


def test_exact_match_counts_bundles_with_every_component_right() -> None:
    assert exact_match(TRUE, PRED) == 0.5
    assert exact_match(TRUE, TRUE) == 1.0


def test_component_accuracy() -> None:
    assert component_accuracy(TRUE, PRED) == pytest.approx(4 / 6)


def test_missing_prediction_is_wrong() -> None:
    pred = [dict(PRED[0]), dict(PRED[1])]
    del pred[0]["host:a"]
    assert component_accuracy(TRUE, pred) == pytest.approx(3 / 6)
    assert exact_match(TRUE, pred) == 0.0


def test_per_fault_hand_computed() -> None:
    pf = per_fault(TRUE, PRED)
    assert set(pf) == set(FAULT_IDS)
    # host.cpu_contention: 1 true (found), predicted twice -> P 1/2, R 1, F1 2/3
    cpu = pf["host.cpu_contention"]
    assert (cpu["precision"], cpu["recall"], cpu["support"]) == (0.5, 1.0, 1)
    assert cpu["f1"] == pytest.approx(2 / 3)
    # net.packet_loss: 1 true, never predicted -> all 0
    assert pf["net.packet_loss"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 1}
    assert pf["cluster.low_oio"] == {"precision": 1.0, "recall": 1.0, "f1": 1.0, "support": 1}
    assert pf["disk.latency"]["support"] == 0


def test_evaluation_report_has_exactly_the_interface_fields() -> None:
    r = evaluation_report(TRUE, PRED, [1.0, 3.0])
    assert set(r) == {"bundles", "exact_match", "component_accuracy", "per_fault", "latency_ms"}
    assert r["bundles"] == 2
    assert set(r["latency_ms"]) == {"p50", "p95"}
    assert r["latency_ms"]["p50"] == 2.0
    assert all(set(v) == {"precision", "recall", "f1", "support"} for v in r["per_fault"].values())
    assert evaluation_report(TRUE, PRED)["latency_ms"] == {"p50": 0.0, "p95": 0.0}


def test_length_mismatch_is_an_error() -> None:
    with pytest.raises(ValueError):
        exact_match(TRUE, PRED[:1])
