# ruff: noqa: E501 - nicinfo rows are quoted verbatim
"""Link events and nicinfo reach the NIC tensors as an engineer reads them (issue 17 item 5): a vobd flap
is one link down and one link up of that vmnic, whichever logs report it; a down port is not slow."""

from __future__ import annotations

import datetime as dt
import gzip
from pathlib import Path

import numpy as np
import pytest

from data.simulate.archive import tar_bytes
from data.simulate.generate import simulate_bundle
from models.features import UPLINK_CHECKS, _uplink_checks
from pipeline.api import load_bundle
from pipeline.channels import KIND_STATIC
from pipeline.tensors import BundleTensors
from tests.pipeline.pipeline_fixtures import build_bundle, tgz_bytes

REAL_LOGS = Path(__file__).resolve().parents[2] / ".." / "shared" / "samples" / "real" / "logs"
START = dt.datetime(2026, 3, 2, 10, 0, 0)


@pytest.fixture(scope="module")
def small() -> tuple[dict[str, bytes], dict]:
    return build_bundle(n_hosts=2, hours=0.5, interval=60, n_vms=2, esxtop_rows=5)


def _top(files: dict[str, bytes], host: str) -> str:
    return next(p.split("/")[0] for p in files if p.startswith(f"esx-{host}-"))


def _real_flap(vmnic: str, at: dt.datetime) -> bytes:
    """The real vobd flap, verbatim but for its timestamps (moved into the bundle's window) and its vmnic."""
    path = REAL_LOGS / "vobd_uplink_down_up.log"
    if not path.exists():
        pytest.skip(f"real sample {path} absent (../shared/samples/real/logs is not checked out here)")
    out = []
    lines = path.read_text().splitlines()
    first = dt.datetime.fromisoformat(lines[0][:23])
    for ln in lines:
        t = at + (dt.datetime.fromisoformat(ln[:23]) - first)
        out.append(t.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + ln[23:].replace("vmnic6", vmnic))
    return ("\n".join(out) + "\n").encode()


def _without_links(data: bytes, gz: bool) -> bytes:
    text = gzip.decompress(data) if gz else data
    kept = b"\n".join(ln for ln in text.split(b"\n") if b"Link " not in ln)
    return gzip.compress(kept) if gz else kept


def _load(files: dict[str, bytes]) -> BundleTensors:
    return load_bundle(tgz_bytes(files))


def _links(bt: BundleTensors, host: str, vmnic: str) -> tuple[float, float, bool]:
    """(link downs, link ups, the link channels covered at every step) of one NIC."""
    kt = bt.kinds["nic"]
    r = kt.ids.index(f"nic:{host}/{vmnic}")
    out = []
    for ch in ("ev.link_down", "ev.link_up"):
        j = kt.channels.index(ch)
        out.append(float(np.expm1(kt.values[r, j][kt.mask[r, j]]).sum()))
    cov = all(kt.mask[r, kt.channels.index(c)].any() for c in ("ev.link_down", "ev.link_up"))
    return out[0], out[1], cov


def test_fixture_flap_from_vmkernel_and_vobd_is_one_down(small: tuple[dict[str, bytes], dict]) -> None:
    files, truth = small
    h = truth["hosts"][0]
    down, up, cov = _links(_load(files), h.name, h.nics[-1])
    assert (down, up, cov) == (pytest.approx(1.0), pytest.approx(1.0), True)


@pytest.mark.parametrize("vmkernel", ["none", "without link lines", "with its own link lines"])
def test_real_vobd_flap_is_one_link_down_and_up_of_its_nic(small: tuple[dict[str, bytes], dict], vmkernel: str) -> None:
    files, truth = dict(small[0]), small[1]
    h = truth["hosts"][0]
    nic, top = h.nics[0], _top(files, h.name)
    at = START + dt.timedelta(minutes=10)
    files[f"{top}/var/run/log/vobd.log"] = _real_flap(nic, at)
    for p in [p for p in files if p.startswith(f"{top}/var/run/log/vm")]:
        if vmkernel == "none":
            del files[p]
        else:
            files[p] = _without_links(files[p], p.endswith(".gz"))
    if vmkernel == "with its own link lines":  # ESXi logs both: milliseconds apart, one transition
        ts = [(at + dt.timedelta(seconds=s)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z" for s in (0.004, 7.001)]
        lines = [
            f"{ts[0]} cpu3:2098330){nic} : 0000:04:00.0 Link Down",
            f"{ts[1]} cpu3:2098330){nic} : 0000:04:00.0 Link Up",
        ]
        files[f"{top}/var/run/log/vmkernel.log"] += ("\n".join(lines) + "\n").encode()
    bt = _load(files)
    assert _links(bt, h.name, nic) == (pytest.approx(1.0), pytest.approx(1.0), True)
    # The fixture's own flap of the other vmnic was in the logs replaced or filtered here.
    assert _links(bt, h.name, h.nics[-1])[:2] == (0.0, 0.0)
    # Every VOB still counts as one VOB of that NIC.
    kt = bt.kinds["nic"]
    r, j = kt.ids.index(f"nic:{h.name}/{nic}"), kt.channels.index("ev.vob")
    assert float(np.expm1(kt.values[r, j][kt.mask[r, j]]).sum()) == pytest.approx(6.0)


def test_down_port_is_not_a_slow_or_half_duplex_uplink(small: tuple[dict[str, bytes], dict]) -> None:
    files, truth = dict(small[0]), small[1]
    h = truth["hosts"][0]
    top = _top(files, h.name)
    head = files[f"{top}/commands/nicinfo.sh.txt"].decode().splitlines()[:2]
    rows = [
        f"{h.nics[0]:<6}  0000:04:00.0  ixgben  Up            Up            1000  Half    00:50:56:01:02:00  9000  Intel X550",
        f"{h.nics[1]:<6}  0000:04:00.1  ixgben  Up            Down             0  Half    00:50:56:01:02:01  9000  Intel X550",
    ]
    files[f"{top}/commands/nicinfo.sh.txt"] = ("\n".join(head + rows) + "\n").encode()
    kt = _load(files).kinds["nic"]
    names = KIND_STATIC["nic"]
    deg, down = (kt.ids.index(f"nic:{h.name}/{n}") for n in h.nics)
    st = {n: (kt.static[:, j], kt.static_mask[:, j]) for j, n in enumerate(names)}
    assert st["speed_gbps"][0][deg] == 1.0 and st["duplex_full"][0][deg] == 0.0
    assert not st["speed_gbps"][1][down] and not st["duplex_full"][1][down]  # unknown, not 0 and half
    assert st["link_up"][1][down] and st["link_up"][0][down] == 0.0
    checks = _uplink_checks(kt)
    assert UPLINK_CHECKS == ("uplink:slow_for_design", "uplink:half_duplex")
    assert (checks[down] == 0).all()
    share = st["traffic_share"][0][deg]
    assert share > 0 and checks[deg, 0] > 0 and checks[deg, 1] == pytest.approx(share)


def test_nfs_deterioration_attaches_to_no_vsan_disk(small: tuple[dict[str, bytes], dict]) -> None:
    """Even where the NFS volume's name carries a vSAN disk's UUID, or names its device."""
    path = REAL_LOGS / "esxi8_vmkernel_vmkwarning_nfs.log"
    if not path.exists():
        pytest.skip(f"real sample {path} absent (../shared/samples/real/logs is not checked out here)")
    files, truth = dict(small[0]), small[1]
    h = truth["hosts"][0]
    top, disk = _top(files, h.name), h.disks[-1]
    real = path.read_text().replace("0753971d-bf82-42f2-a175-d2ac9f412633", disk.uuid)
    at = (START + dt.timedelta(minutes=12)).strftime("%Y-%m-%dT%H:%M:%S")
    nfs = "".join(at + ln[19:] + "\n" for ln in real.splitlines())
    nfs += f"{at}.500Z Wa(180) vmkwarning: cpu2:2097803)WARNING: NFS: 5544: NFS volume {disk.dev} performance has deteriorated.\n"
    vob = f"{at}.600Z: [vmfsCorrelator] 1us: [esx.problem.vmfs.nfs.server.disconnect] 192.168.33.2 {disk.dev} {disk.uuid}\n"
    base = _load(files)
    files[f"{top}/var/run/log/vmkwarning.log"] += nfs.encode()
    files[f"{top}/var/run/log/vobd.log"] += vob.encode()
    bt = _load(files)
    for kind in ("disk", "diskgroup"):
        a, b = base.kinds[kind], bt.kinds[kind]
        ev = [j for j, c in enumerate(b.channels) if c.startswith("ev.")]
        assert np.array_equal(a.values[:, ev], b.values[:, ev]), kind
    hk = bt.kinds["host"]
    r, j = hk.ids.index(f"host:{h.name}"), hk.channels.index("ev.vob")
    before = base.kinds["host"].values[r, j]
    assert float(np.expm1(hk.values[r, j]).sum() - np.expm1(before).sum()) == pytest.approx(1.0)  # the host's VOB


def test_the_vsan_uplink_is_the_vmnic_that_follows_the_vmknic() -> None:
    """A vSAN uplink renegotiated to 100 Mb/s moves ~12 MB/s beside a VM-network port moving tens:
    by volume alone it looked like a minor port (share 0.11 in this bundle, so the link rule skipped
    it). Its traffic matches the vSAN vmknic's sample by sample, which no other port's does."""
    b = simulate_bundle("field", 41, 2, faults=["net.link_degraded"], causes=["net.link_degraded:speed_100m"])
    kt = load_bundle(tar_bytes(b.files)).kinds["nic"]
    comps = b.labels["components"]
    assert isinstance(comps, dict)
    bad = [i for i, cid in enumerate(kt.ids) if comps.get(cid) == "net.link_degraded"]
    j = KIND_STATIC["nic"].index("traffic_share")
    share = kt.static[:, j]
    assert len(bad) == 1 and share[bad[0]] > 0.9
    hosts = {cid.split("/")[0] for cid in kt.ids}
    assert (share >= 0.5).sum() <= len(hosts)  # one vSAN uplink per host in this design, standbys idle
