"""Bundles outside the training ranges (data.simulate.ood): each variant passes the spec's checker,
parses, and moves what it names (100 GbE links, 64 hosts, a dense shelf of an unseen device, latencies
1000x) while the bundle it starts from stays as simulated."""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pytest

from data.simulate.archive import tar_bytes
from data.simulate.generate import Bundle, simulate_bundle
from data.simulate.ood import HOSTS, SHELF, SHELF_CAPACITY, UPLOADED, VARIANTS, names_variant, simulate_ood
from data.simulate.perturb import MAX_LATENCY_US, rescale_latency
from pipeline.api import load_bundle
from pipeline.channels import KIND_STATIC
from pipeline.tensors import BundleTensors
from tests.conftest import load_checker

SEED, INDEX = 5, 9  # a 6-host NVMe cluster, 105 samples of 300 s: small enough at 64 hosts


@pytest.fixture(scope="module")
def made() -> dict[str, Bundle]:
    return {v: simulate_ood(v, SEED, INDEX) for v in VARIANTS}


def _load(b: Bundle) -> BundleTensors:
    return load_bundle(io.BytesIO(tar_bytes({k: v for k, v in b.files.items() if k != "labels.json"})))


def _static(bt: BundleTensors, kind: str, name: str) -> np.ndarray:
    kt = bt.kinds[kind]
    j = KIND_STATIC[kind].index(name)
    return kt.static[kt.static_mask[:, j], j]


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_variant_passes_the_checker(made: dict[str, Bundle], variant: str, tmp_path: Path) -> None:
    path = tmp_path / f"{variant}.tgz"
    path.write_bytes(tar_bytes(made[variant].files))
    assert load_checker().check_bundle(str(path)).problems == []


def test_link100_moves_the_design_uplinks_to_100_gbe(made: dict[str, Bundle]) -> None:
    speeds = _static(_load(made["link100"]), "nic", "speed_gbps")
    assert 100.0 in speeds and set(speeds.tolist()) <= {1.0, 100.0}  # a 1 GbE management port stays
    rated = _static(_load(made["link100"]), "nic", "rated_gbps")
    assert 100.0 in rated and set(rated.tolist()) <= {1.0, 10.0, 25.0, 100.0}  # unused ports keep their cards
    nicinfo = b"".join(v for k, v in made["link100"].files.items() if k.endswith("nicinfo.sh.txt"))
    assert b" 100000 " in nicinfo and b"100GbE" in nicinfo


def test_hosts64_has_64_hosts_of_which_a_few_uploaded(made: dict[str, Bundle]) -> None:
    b = made["hosts64"]
    assert b.hosts == HOSTS and b.hosts_present == UPLOADED
    names = [h.name for h in b.cluster.hosts]
    assert len(set(names)) == HOSTS and len({h.vmk_ip for h in b.cluster.hosts}) == HOSTS
    assert all(len(h.disk_groups) <= 2 and all(len(g.capacity) <= 3 for g in h.disk_groups) for h in b.cluster.hosts)
    bt = _load(b)
    assert len(bt.hosts) == HOSTS and len(bt.host_bundles) == UPLOADED
    assert _static(bt, "cluster", "n_hosts").tolist() == [float(HOSTS)]


def test_device_fills_every_group_with_the_unseen_shelf(made: dict[str, Bundle]) -> None:
    b = made["device"]
    for h in b.cluster.hosts:
        for g in h.disk_groups:
            assert len(g.capacity) == SHELF_CAPACITY and {d.hw for d in (g.cache, *g.capacity)} == {SHELF}
            assert len({d.dev for d in g.capacity}) == SHELF_CAPACITY
    assert set(_static(_load(b), "diskgroup", "n_capacity").tolist()) == {float(SHELF_CAPACITY)}
    labels = b.labels["components"]
    groups = sum(len(h.disk_groups) for h in b.cluster.hosts)
    assert isinstance(labels, dict) and sum(k.startswith("disk:") for k in labels) == groups * (1 + SHELF_CAPACITY)


def test_units_writes_latencies_1000x_and_nothing_else() -> None:
    base = simulate_bundle("field", SEED, INDEX)
    moved = simulate_ood("units", SEED, INDEX)
    dumps = [k for k in base.files if "perf_stats_with_dump" in k]  # one per host folder, the same
    dump = dumps[0]
    pat = re.compile(rb"<label>([^<]+)</label>(?:<metricsCollectInterval>\d+</metricsCollectInterval>)?"
                     rb"</metricId><values>([^<]*)</values>")  # fmt: skip
    seen = 0
    for (label, a), (label2, b) in zip(pat.findall(base.files[dump]), pat.findall(moved.files[dump]), strict=True):
        assert label == label2
        x = np.array([float(v) for v in a.split(b",") if v != b"None"])
        z = np.array([float(v) for v in b.split(b",") if v != b"None"])
        if label.lower().startswith(b"lat"):
            seen += 1
            np.testing.assert_allclose(z, np.minimum(x * 1000, MAX_LATENCY_US), rtol=1e-3, atol=1.0)
        else:
            assert a == b
    assert seen > 0
    assert {k for k in base.files if base.files[k] != moved.files[k]} == set(dumps)
    assert rescale_latency(base.files, 1.0) == base.files


def test_names_variant_reads_kind_and_channels() -> None:
    assert names_variant("link100", [{"kind": "nic", "channels": ["speed_gbps"]}])
    assert not names_variant("link100", [{"kind": "host", "channels": ["speed_gbps"]}])
    assert names_variant("units", [{"kind": "disk", "channels": ["disk.latencyDevDAvg"]}])
    assert not names_variant("units", [{"kind": "disk", "channels": ["disk.iopsRead"]}])
    with pytest.raises(ValueError, match="unknown variant"):
        simulate_ood("tape", SEED, INDEX)
