"""An under-driven cluster stands only where the rest of the bundle reads healthy (faults.md: "no
congestion, no errors anywhere"): models.alone weighs its score by the least healthy other component."""

from __future__ import annotations

import numpy as np

from models.alone import alone
from vsandx.faults import LABELS

OIO, HOT, RESYNC = LABELS.index("cluster.low_oio"), LABELS.index("disk.hotspot"), LABELS.index("cluster.resync")


def _bundle(disk_none: float) -> dict[str, np.ndarray]:
    disk = np.zeros(len(LABELS))
    disk[0], disk[HOT] = disk_none, 1 - disk_none
    cluster = np.zeros(len(LABELS))
    cluster[0], cluster[OIO], cluster[RESYNC] = 0.2, 0.7, 0.1
    host = np.zeros(len(LABELS))
    host[0] = 1.0
    return {"cluster": cluster, "host:esx-01": host, "disk:esx-01/naa.1": disk}


def test_with_the_rest_healthy_the_scores_stand() -> None:
    probs = _bundle(disk_none=1.0)
    out = alone(probs)
    for cid in probs:
        assert np.allclose(out[cid], probs[cid]), cid


def test_a_fault_found_elsewhere_takes_the_under_driven_call_away() -> None:
    probs = _bundle(disk_none=0.1)  # a hot spot called at 0.9
    out = alone(probs)
    c = out["cluster"]
    assert np.isclose(c.sum(), 1.0)
    assert LABELS[int(np.argmax(c))] == "none"  # 0.7 * 0.1 = 0.07 against healthy's 0.2
    assert np.isclose(c[OIO] / c[0], 0.07 / 0.2) and np.isclose(
        c[RESYNC] / c[0], 0.1 / 0.2
    )  # the rest keep their ratio
    assert np.allclose(out["disk:esx-01/naa.1"], probs["disk:esx-01/naa.1"])  # other components untouched


def test_a_doubtful_component_only_weakens_the_call() -> None:
    out = alone(_bundle(disk_none=0.6))
    assert LABELS[int(np.argmax(out["cluster"]))] == "cluster.low_oio"  # 0.42 against 0.2


def test_nothing_to_weigh_is_left_alone() -> None:
    probs = {"cluster": _bundle(1.0)["cluster"]}
    assert alone(probs) is probs
    assert np.allclose(alone(_bundle(0.1), faults=())["cluster"], _bundle(0.1)["cluster"])
