"""An under-driven cluster stands only where the rest of the bundle reads healthy (faults.md: "no
congestion, no errors anywhere"): models.alone weighs its score by the least healthy other component.
Nor where vscsiStats counted three or more I/Os outstanding a virtual disk, or a count between one
thread's and two's (`counted`)."""

from __future__ import annotations

import copy
import io

import numpy as np

from data.simulate.archive import tar_bytes
from data.simulate.generate import simulate_bundle
from models.alone import alone, counted, threads_counted
from models.ensemble import EnsembleDiagnoser
from models.registry import create_model
from pipeline.api import load_bundle
from pipeline.channels import KIND_STATIC
from pipeline.tensors import BundleTensors
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


def test_three_threads_counted_a_disk_take_the_under_driven_call_away() -> None:
    probs = _bundle(disk_none=1.0)
    out = counted(probs, 3.5)  # vscsiStats' bucket of three and four outstanding I/Os
    c = out["cluster"]
    assert c[OIO] == 0.0 and np.isclose(c.sum(), 1.0)
    assert np.isclose(c[RESYNC] / c[0], 0.1 / 0.2)  # the rest keep their ratio
    assert np.allclose(out["disk:esx-01/naa.1"], probs["disk:esx-01/naa.1"])
    for threads in (1.0, 1.04, 1.5, 1.96, 2.5, 3.0, float("nan")):  # faults.md's one or two threads, no capture
        assert counted(probs, threads) is probs, threads


def test_a_count_between_one_thread_and_two_is_an_open_stream() -> None:
    """One thread's I/O never finds another out (1.000 a disk), two threads' nearly always (1.95): a median
    between, most I/Os alone but some beside others, is a stream paced at its rate (a Poisson count of
    others out: 1.11 where it holds 0.2 in flight), no thread count, so no under-driven call stands."""
    probs = _bundle(disk_none=1.0)
    for threads in (1.06, 1.113, 1.3, 1.49):
        c = counted(probs, threads)["cluster"]
        assert c[OIO] == 0.0 and np.isclose(c.sum(), 1.0), threads


def _with_count(bt: BundleTensors, threads: float | None) -> BundleTensors:
    out = copy.deepcopy(bt)
    kt, j = out.kinds["cluster"], KIND_STATIC["cluster"].index("vm_disk_oio")
    kt.static[0, j], kt.static_mask[0, j] = (threads or 0.0), threads is not None
    return out


def test_the_served_ensemble_heeds_the_count() -> None:
    """Through EnsembleDiagnoser: an under-driven cluster's bundle scores as its members say with no
    capture, and not under-driven where vscsiStats counted 3.5 a disk (the members, as fitted, unchanged)."""
    b = simulate_bundle("field", 41, 0, faults=["cluster.low_oio"], causes=["cluster.low_oio:one_thread"])
    comps = b.labels["components"]
    assert isinstance(comps, dict)
    bt = load_bundle(io.BytesIO(tar_bytes({k: v for k, v in b.files.items() if k != "labels.json"})))
    rules = create_model("rules").fit([bt], [dict(comps)])
    ens = EnsembleDiagnoser.of([rules], alone=())
    bare, three = _with_count(bt, None), _with_count(bt, 3.5)
    assert np.isnan(threads_counted(bare)) and threads_counted(three) == 3.5
    cid = bt.kinds["cluster"].ids[0]
    plain = ens.predict_proba([bare])[0][cid]
    assert np.allclose(plain, rules.predict_proba([bare])[0][cid]) and plain[OIO] > 0
    assert ens.predict_proba([three])[0][cid][OIO] == 0.0
    assert ens.predict_proba([_with_count(bt, 1.113)])[0][cid][OIO] == 0.0  # a paced stream's count
    assert ens.predict_proba([_with_count(bt, 1.0)])[0][cid][OIO] > 0  # one thread's
