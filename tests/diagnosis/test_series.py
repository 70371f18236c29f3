"""The peers a component is held against, in its evidence and its chart alike: the other hosts' vSAN
uplinks for a NIC (never an idle vmnic, nor the NIC's own host), disks and disk groups of the same tier."""

from __future__ import annotations

from data.simulate.archive import tar_bytes
from data.simulate.generate import simulate_bundle
from diagnosis.series import peers_of, vsan_uplinks
from pipeline.api import load_bundle
from pipeline.tensors import BundleTensors


def _bt() -> BundleTensors:
    return load_bundle(tar_bytes(simulate_bundle("lab", 11, 0, faults=("net.link_degraded",)).files))


def test_nic_peers_are_the_other_hosts_uplinks() -> None:
    bt = _bt()
    nic = bt.kinds["nic"]
    share = nic.static[:, nic.static_names.index("traffic_share")]
    up = vsan_uplinks(nic)
    assert len(up) >= len(bt.hosts) and all(share[j] > 0 for j in up)
    idle = [j for j in range(len(nic.ids)) if share[j] == 0]
    assert idle and not set(idle) & up  # the lab hosts' idle vmnics are nobody's peers
    for i in range(len(nic.ids)):
        peers = peers_of(bt, "nic", i)
        assert peers and set(peers) <= up
        assert int(nic.host_index[i]) not in {int(nic.host_index[j]) for j in peers}
    # two active uplinks on a host (each about half its vSAN traffic): both are uplinks
    h = int(nic.host_index[idle[0]])
    nic.static[idle[0], nic.static_names.index("traffic_share")] = 0.6 * max(
        share[j] for j in up if nic.host_index[j] == h
    )
    assert idle[0] in vsan_uplinks(nic)


def test_disk_groups_and_disks_of_the_same_tier() -> None:
    bt = _bt()
    dg = bt.kinds["diskgroup"]
    flash = dg.static_names.index("all_flash")
    dg.static[0, flash], dg.static_mask[0, flash] = 1.0, True
    dg.static[1:, flash], dg.static_mask[1:, flash] = 0.0, True
    dg.static[2, flash] = 1.0
    assert peers_of(bt, "diskgroup", 0) == [2]
    dg.static_mask[:, flash] = False  # the tier unknown: every other group
    assert peers_of(bt, "diskgroup", 0) == list(range(1, len(dg.ids)))
    disk = bt.kinds["disk"]
    cache = disk.static[:, disk.static_names.index("is_cache")]
    for j in peers_of(bt, "disk", 0):
        assert cache[j] == cache[0] and j != 0
    assert peers_of(bt, "cluster", 0) == []
