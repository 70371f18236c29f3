"""Field topology: clusters of 25 GbE hosts that keep some 10 GbE ones (an older generation of hardware)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from data.simulate.archive import tar_bytes
from data.simulate.causes import CauseFilter
from data.simulate.generate import simulate_bundle
from data.simulate.plan import choose, mtu_ceiling
from data.simulate.topology import build_cluster
from models.rules_margins import named_margins
from pipeline.api import load_bundle
from tests.conftest import load_checker

# field seed 5: bundle 61 is a healthy 25 GbE cluster whose first host runs 10 GbE (found by drawing)
SEED, INDEX = 5, 61


def test_a_25_gbe_cluster_may_keep_10_gbe_hosts_which_are_healthy(tmp_path: Path) -> None:
    b = simulate_bundle("field", SEED, INDEX)
    speeds = [h.nics[h.vsan_nic].speed_mbps for h in b.cluster.hosts]
    assert b.cluster.link_mbps == 25000 and 10000 in speeds and 25000 in speeds
    assert b.labels["faults"] == []
    old = next(h for h in b.cluster.hosts if h.nics[h.vsan_nic].speed_mbps == 10000)
    nicinfo = next(v for k, v in b.files.items() if k.startswith(f"esx-{old.name}-") and k.endswith("nicinfo.sh.txt"))
    row = next(line for line in nicinfo.decode().splitlines() if line.startswith(old.nics[old.vsan_nic].name + " "))
    assert " 10000 " in row and "10GbE" in row  # at its own rated speed: the port's card is a 10 GbE one
    path = tmp_path / "mixed.tgz"
    path.write_bytes(tar_bytes(b.files))
    assert load_checker().check_bundle(str(path)).problems == []
    # no slow link for the rules: the port runs at its own rating, above faults.md's 1 Gb/s
    bt = load_bundle(path)
    margins = named_margins(bt)["net.link_degraded"]
    assert len(margins) and np.all(margins < 0)


def test_older_generation_hosts_are_a_minority_of_25_gbe_field_clusters() -> None:
    """About a quarter of 25 GbE field clusters (OLDER_GENERATION_P), with at most half their hosts older."""
    mixed = total = 0
    for i in range(60):
        c = simulate_bundle("field", 9, i).cluster
        if c.link_mbps != 25000:
            continue
        total += 1
        speeds = [h.nics[h.vsan_nic].speed_mbps for h in c.hosts if h.nics[h.vsan_nic].speed_mbps > 0]
        older = sum(s == 10000 for s in speeds)
        mixed += older > 0
        assert older <= max(1, len(c.hosts) // 2)
    assert total >= 10 and 0 < mixed < total


def test_an_mtu_mismatch_drawn_on_a_1500_cluster_moves_it_to_jumbo_frames_first() -> None:
    """A mismatch needs jumbo frames elsewhere: a cluster drawn at 1500 becomes a 9000 one (every host's
    vSAN uplink and standby) before one host is left at 1500; its management and VM ports stay 1500."""
    i = 0
    while (cl := build_cluster("field", np.random.default_rng(i))).mtu != 1500:
        i += 1
    inj = choose(cl, "net.link_degraded", 0, np.random.default_rng(0), set(), CauseFilter.of(["mtu_mismatch"]))
    assert inj is not None and inj.cause == "mtu_mismatch" and cl.mtu == 9000
    assert 60 <= inj.param <= 400 and inj.param == mtu_ceiling(inj.severity)
    for h in cl.hosts:
        vsan = {h.vsan_nic, h.standby_nic} - {None}
        assert all((n.mtu == 9000) == (k in vsan) for k, n in enumerate(h.nics) if n.link_up)
