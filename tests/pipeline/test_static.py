"""NIC statics an engineer reads (pipeline/static.py): the rated speed off nicinfo's Description, and the
speed the driver logged at link up where nicinfo gives none; a port down since is unknown, not slow.
The link rule then catches a renegotiated uplink in a cluster whose every known uplink runs at 1 Gb/s."""

from __future__ import annotations

import gzip
from types import SimpleNamespace
from typing import cast

import numpy as np
import pytest

from data.simulate.archive import tar_bytes
from data.simulate.generate import Bundle
from models.rules_evidence import bundle_evidence
from models.rules_margins import THRESHOLDS, rule_margins
from pipeline.api import load_bundle
from pipeline.channels import KIND_STATIC
from pipeline.parse.bundle import ParsedBundle
from pipeline.parse.perfdump import PerfEntity
from pipeline.static import _traffic_share
from pipeline.tensors import BundleTensors
from pipeline.topology import Topology
from tests.pipeline.simbundles import fault, host_top, upload


def _load(files: dict[str, bytes]) -> BundleTensors:
    return load_bundle(tar_bytes(upload(files)))


def _static(bt: BundleTensors, cid: str, name: str) -> float | None:
    kt = bt.kinds["nic"]
    r, j = kt.ids.index(cid), KIND_STATIC["nic"].index(name)
    return float(kt.static[r, j]) if kt.static_mask[r, j] else None


def _degraded(b: Bundle) -> tuple[str, str, str]:
    """(host folder, vmnic, component id) of the uplink the simulator renegotiated to 1 Gb/s."""
    link = fault(b, "net.link_degraded")
    host = b.cluster.hosts[link.host]
    nic = host.nics[link.nic].name
    return str(host_top(b.files, host.name)), nic, f"nic:{host.name}/{nic}"


def _vmkernel(files: dict[str, bytes], top: str) -> list[str]:
    return [p for p in files if p.startswith(f"{top}/var/run/log/vmkernel.")]


def _text(files: dict[str, bytes], p: str) -> bytes:
    return gzip.decompress(files[p]) if p.endswith(".gz") else files[p]


def test_rated_speed_is_read_off_the_description(bundle: Bundle) -> None:
    bt = _load(bundle.files)
    for h in bundle.cluster.hosts:
        for n in h.nics:
            want = {"Gigabit": 1.0, "10GbE": 10.0, "25GbE": 25.0}
            rated = next((v for k, v in want.items() if k in n.description), None)
            cid = f"nic:{h.name}/{n.name}"
            if cid in bt.kinds["nic"].ids:
                assert _static(bt, cid, "rated_gbps") == rated, (cid, n.description)


def test_speed_from_the_logged_link_up_where_the_host_has_no_nicinfo(bundle: Bundle) -> None:
    top, _nic, cid = _degraded(bundle)
    files = dict(bundle.files)
    assert any(b"NIC Link is Up 1000 Mbps" in _text(files, p) for p in _vmkernel(files, top))
    del files[f"{top}/commands/nicinfo.sh.txt"]
    bt = _load(files)
    assert _static(bt, cid, "speed_gbps") == 1.0 and _static(bt, cid, "duplex_full") == 1.0
    assert _static(bt, cid, "rated_gbps") is None  # the description was in nicinfo
    r = bt.kinds["nic"].ids.index(cid)
    assert rule_margins(bt, THRESHOLDS)["net.link_degraded"][r] > 0
    # the host's other ports logged no link up: unknown, not slow
    others = [i for i, c in enumerate(bt.kinds["nic"].ids) if c.startswith(cid.rsplit("/", 1)[0] + "/") and c != cid]
    j = KIND_STATIC["nic"].index("speed_gbps")
    assert others and not bt.kinds["nic"].static_mask[others, j].any()


@pytest.mark.parametrize("how", ["vmkernel Link Down after it", "nicinfo says Link Down"])
def test_a_port_down_now_is_unknown_not_slow(bundle: Bundle, how: str) -> None:
    top, nic, cid = _degraded(bundle)
    files = dict(bundle.files)
    if how == "nicinfo says Link Down":
        text = files[f"{top}/commands/nicinfo.sh.txt"].decode().split("\n")
        i = next(i for i, ln in enumerate(text) if ln.startswith(nic + " "))
        text[i] = text[i].replace(" Up ", " Down ").replace(" 1000 ", "    0 ")
        files[f"{top}/commands/nicinfo.sh.txt"] = "\n".join(text).encode()
    else:
        del files[f"{top}/commands/nicinfo.sh.txt"]
        last = max(_vmkernel(files, top), key=lambda p: p.endswith(".log"))  # the live log: newest lines
        lines = _text(files, last).rstrip(b"\n").split(b"\n")
        ts = lines[-1][:24]
        files[last] = b"\n".join([*lines, ts + b" cpu2:2097)" + nic.encode() + b" : 0000:04:00.1 Link Down", b""])
    bt = _load(files)
    assert _static(bt, cid, "speed_gbps") is None and _static(bt, cid, "duplex_full") is None
    r = bt.kinds["nic"].ids.index(cid)
    assert np.isnan(bundle_evidence(bt)["nic"]["speed_gbps"][r])


def test_rated_speed_catches_a_cluster_whose_known_uplinks_all_run_at_1g(bundle: Bundle) -> None:
    """Issue 17's miss: the only vSAN uplink whose speed is known is the slow one, so the design speed
    reads 1 Gb/s; its own rating (10GbE) says it is degraded."""
    top, _nic, cid = _degraded(bundle)
    files = dict(bundle.files)
    for h in bundle.cluster.hosts:
        other = host_top(files, h.name)
        if other is None or other == top:
            continue
        files.pop(f"{other}/commands/nicinfo.sh.txt", None)
        for p in _vmkernel(files, other):  # no logged link up either
            kept = b"\n".join(ln for ln in _text(files, p).split(b"\n") if b"Link is Up" not in ln)
            files[p] = gzip.compress(kept) if p.endswith(".gz") else kept
    bt = _load(files)
    ev = bundle_evidence(bt)["nic"]
    r = bt.kinds["nic"].ids.index(cid)
    assert ev["design_gbps"][r] == 1.0 and ev["rated_gbps"][r] == 10.0
    m = rule_margins(bt, THRESHOLDS)["net.link_degraded"]
    assert m[r] > 0
    assert (m[np.arange(len(m)) != r] <= 0).all()  # a 1 GbE management port rated 1 GbE is not slow


def _entity(etype: str, eid: str, mbps: np.ndarray) -> PerfEntity:
    t = np.arange(len(mbps), dtype=np.int64) * 300
    bps = mbps * 1e6  # the perf service reports bytes/s
    return PerfEntity(f"{etype}:{eid}", etype, eid, t, {"rxThroughput": bps / 2, "txThroughput": bps / 2})


def _shares(vmknic: np.ndarray, nics: dict[str, np.ndarray]) -> dict[str, float]:
    ents = [_entity("vsan-host-net", "h1", vmknic)] + [_entity("vsan-pnic-net", f"h1|{n}", v) for n, v in nics.items()]
    pb = cast(ParsedBundle, SimpleNamespace(perf={e.ref: e for e in ents}))
    topo = cast(Topology, SimpleNamespace(host_of_uuid={"h1": "esx-01"}))
    return _traffic_share(pb, topo)


def test_a_lightly_loaded_vsan_uplink_is_read_by_its_volume_where_noise_hides_its_shape() -> None:
    """Field seed 3's healthy bundle 28 (simulator v8): the vSAN uplink moved the vmknic's 1.4 MB/s, but
    each sample's noise left it following the vmknic at 0.34, so the shares fell back to byte shares and
    the busy 1500-MTU VM-network port read 0.94 (an MTU mismatch called on it). Over the window the
    uplink moves the vmknic's bytes and the VM port 35 times them: those are the shares now."""
    rng = np.random.default_rng(28)
    vmk = 1.4 + rng.normal(0, 0.3, 288)
    uplink = 1.4 + rng.normal(0, 0.3, 288)  # the same mean, independent noise: no shape to follow
    vm_port = 49 + rng.normal(0, 5, 288)
    got = _shares(vmk, {"vmnic3": uplink, "vmnic2": vm_port, "vmnic0": np.full(288, 0.05)})
    assert got["nic:esx-01/vmnic3"] > 0.9 and got["nic:esx-01/vmnic2"] < 0.1 and got["nic:esx-01/vmnic0"] < 0.1
    # a VM-network port of about the vmknic's volume on its own schedule is not read as a second uplink
    got = _shares(vmk, {"vmnic3": uplink, "vmnic2": 1.2 + rng.normal(0, 0.3, 288)})
    assert got["nic:esx-01/vmnic3"] > 0.9 and got["nic:esx-01/vmnic2"] < 0.5
    # two ports that each move the vmknic's bytes: the volume cannot tell which, byte shares as before
    got = _shares(vmk, {"vmnic3": uplink, "vmnic2": 1.4 + rng.normal(0, 0.3, 288)})
    assert got["nic:esx-01/vmnic3"] == pytest.approx(0.5, abs=0.05) == got["nic:esx-01/vmnic2"]
    # The same ports where the uplink's bytes match nothing (counters that disagree): byte shares as before
    got = _shares(vmk, {"vmnic3": uplink * 3, "vmnic2": vm_port, "vmnic0": np.full(288, 0.05)})
    assert got["nic:esx-01/vmnic2"] == pytest.approx(49 / (49 + 4.2 + 0.05), abs=0.02)


def test_a_near_idle_vmknic_names_no_uplink_by_its_volume() -> None:
    """A vmknic moving 2 KB/s and an idle port moving as much: the volume tells nothing there (an idle
    port moves up to 2.3 KB/s), so byte shares stand in and the busy port beside them is not cleared.
    From 64 KB/s up the same shapes read by volume."""
    rng = np.random.default_rng(5)
    vmk = 0.002 + rng.normal(0, 0.0004, 288)
    idle = 0.002 + rng.normal(0, 0.0004, 288)
    busy = 0.02 + rng.normal(0, 0.002, 288)
    got = _shares(vmk, {"vmnic0": idle, "vmnic2": busy})
    assert got["nic:esx-01/vmnic0"] == pytest.approx(0.002 / 0.022, abs=0.02)
    assert got["nic:esx-01/vmnic2"] == pytest.approx(0.02 / 0.022, abs=0.02)
    got = _shares(vmk * 40, {"vmnic0": idle * 40, "vmnic2": busy * 40})  # 80 KB/s
    assert got["nic:esx-01/vmnic0"] > 0.9 and got["nic:esx-01/vmnic2"] < 0.1


def test_an_uplink_that_follows_the_vmknic_is_read_by_shape_first() -> None:
    """Two active uplinks that follow the vmknic split it ~0.5 each (sample by sample, as before the
    volume fallback), and a VM-network port of the vmknic's volume on its own schedule stays below."""
    wave = 20 + 15 * np.sin(np.arange(288) / 10)
    flat = 20 + np.random.default_rng(1).normal(0, 1, 288)
    got = _shares(wave, {"vmnic1": wave / 2, "vmnic2": wave / 2, "vmnic3": flat})
    assert got["nic:esx-01/vmnic1"] == pytest.approx(0.5, abs=0.01) == got["nic:esx-01/vmnic2"]
    assert got["nic:esx-01/vmnic3"] < 0.5
    # each uplink alone reads either side of 0.5 with its counters' noise; together they follow the
    # vmknic, so the flat port of its volume is never read as the uplink (the best alone: 0.95, by volume)
    for seed in range(10):
        r = np.random.default_rng(seed)
        got = _shares(wave, {"vmnic1": wave / 2 + r.normal(0, 0.5, 288), "vmnic2": wave / 2, "vmnic3": flat})
        assert got["nic:esx-01/vmnic1"] > 0.4 and got["nic:esx-01/vmnic2"] > 0.4 and got["nic:esx-01/vmnic3"] < 0.5
