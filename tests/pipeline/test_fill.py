# ruff: noqa: E501 - nicinfo rows are quoted verbatim
"""Link events and nicinfo reach the NIC tensors as an engineer reads them (issue 17 item 5): a vobd flap
is one link down and one link up of that vmnic, whichever logs report it; a down port is not slow."""

from __future__ import annotations

import datetime as dt
import gzip
import re
from pathlib import Path

import numpy as np
import pytest

from data.simulate.archive import tar_bytes
from data.simulate.generate import Bundle, simulate_bundle
from data.simulate.topology import Host
from models.features import UPLINK_CHECKS, _uplink_checks
from pipeline.api import load_bundle
from pipeline.channels import KIND_STATIC
from pipeline.fill import KindFill, vm_aggregates
from pipeline.grid import Grid
from pipeline.parse.perfdump import PerfEntity
from pipeline.tensors import BundleTensors, KindTensors
from tests.pipeline.simbundles import fault, first_log_time, host_top, iso, upload
from vsandx.components import CLUSTER_ID

REAL_LOGS = Path(__file__).resolve().parents[2] / ".." / "shared" / "samples" / "real" / "logs"


def _flapped(b: Bundle) -> tuple[Host, str, int]:
    """(host, vmnic, flaps) of the renegotiated uplink: the simulator logged each flap as a link down and up."""
    link = fault(b, "net.link_degraded")
    host = b.cluster.hosts[link.host]
    nic = host.nics[link.nic].name
    downs = sum(e.kind == "link_down" and e.attrs["vmnic"] == nic for e in b.events[link.host])
    return host, nic, downs


def _quiet_nic(b: Bundle, host: Host) -> str:
    """A port of the host that is up and flapped nowhere in the simulated logs."""
    h = b.cluster.hosts.index(host)
    flapped = {e.attrs["vmnic"] for e in b.events[h] if e.kind in ("link_down", "link_up")}
    return next(n.name for n in host.nics if n.link_up and n.name not in flapped)


def _start(b: Bundle) -> dt.datetime:
    return dt.datetime.fromtimestamp(int(b.plan.grid.times[0]), dt.UTC).replace(tzinfo=None)


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
    return load_bundle(tar_bytes(upload(files)))


def _links(bt: BundleTensors, host: str, vmnic: str) -> tuple[float, float, bool]:
    """(link downs, link ups, the link channels covered at every step) of one NIC."""
    kt, cid = bt.kinds["nic"], f"nic:{host}/{vmnic}"
    r = kt.ids.index(cid)
    cov = all(kt.mask[r, kt.channels.index(c)].any() for c in ("ev.link_down", "ev.link_up"))
    return _count(bt, "nic", cid, "ev.link_down"), _count(bt, "nic", cid, "ev.link_up"), cov


def test_simulated_flap_from_vmkernel_and_vobd_is_one_down(bundle: Bundle) -> None:
    """The renegotiating uplink's flap, logged by vmkernel (Link Down/Up, NIC Link is Up) and vobd
    (linkstate VOBs) alike, is one link down and one link up per flap."""
    h, nic, flaps = _flapped(bundle)
    assert flaps == 1
    down, up, cov = _links(_load(bundle.files), h.name, nic)
    assert (down, up, cov) == (pytest.approx(1.0), pytest.approx(1.0), True)


@pytest.mark.parametrize("vmkernel", ["none", "without link lines", "with its own link lines"])
def test_real_vobd_flap_is_one_link_down_and_up_of_its_nic(bundle: Bundle, vmkernel: str) -> None:
    files = dict(bundle.files)
    h, flapped, _ = _flapped(bundle)
    nic, top = _quiet_nic(bundle, h), str(host_top(files, h.name))
    at = _start(bundle) + dt.timedelta(minutes=10)
    for p in [p for p in files if p.startswith(f"{top}/var/run/log/vobd.")]:
        del files[p]  # every rotation of the simulated vobd: the real flap is this host's vobd
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
    # The simulated flap of the renegotiating uplink was in the logs replaced or filtered here.
    assert _links(bt, h.name, flapped)[:2] == (0.0, 0.0)
    # Every VOB still counts as one VOB of that NIC.
    kt = bt.kinds["nic"]
    r, j = kt.ids.index(f"nic:{h.name}/{nic}"), kt.channels.index("ev.vob")
    assert float(np.expm1(kt.values[r, j][kt.mask[r, j]]).sum()) == pytest.approx(6.0)


def _nic_row(text: str, nic: str, link: str, speed: str, duplex: str) -> str:
    """nicinfo with `nic`'s Link Status, Speed and Duplex cells rewritten (its other cells kept)."""
    lines = text.split("\n")
    i = next(i for i, ln in enumerate(lines) if ln.startswith(nic + " "))
    cells = re.split(r"  +", lines[i].strip())
    cells[4:7] = [link, speed, duplex]
    lines[i] = "  ".join(cells)
    return "\n".join(lines)


def test_down_port_is_not_a_slow_or_half_duplex_uplink(bundle: Bundle) -> None:
    """nicinfo rewritten as a site shows it: the vSAN uplink at 1000 Half, another port without a cable
    (the simulator writes a renegotiated uplink at 1000 Full, and a down port only where it is unused)."""
    files = dict(bundle.files)
    link = fault(bundle, "net.link_degraded")
    h = next(x for i, x in enumerate(bundle.cluster.hosts) if i != link.host)
    top = str(host_top(files, h.name))
    deg_nic = h.nics[h.vsan_nic].name
    down_nic = next(n.name for k, n in enumerate(h.nics) if k != h.vsan_nic)
    text = files[f"{top}/commands/nicinfo.sh.txt"].decode()
    text = _nic_row(_nic_row(text, deg_nic, "Up", "1000", "Half"), down_nic, "Down", "0", "Half")
    files[f"{top}/commands/nicinfo.sh.txt"] = text.encode()
    kt = _load(files).kinds["nic"]
    names = KIND_STATIC["nic"]
    deg, down = (kt.ids.index(f"nic:{h.name}/{n}") for n in (deg_nic, down_nic))
    st = {n: (kt.static[:, j], kt.static_mask[:, j]) for j, n in enumerate(names)}
    assert st["speed_gbps"][0][deg] == 1.0 and st["duplex_full"][0][deg] == 0.0
    assert not st["speed_gbps"][1][down] and not st["duplex_full"][1][down]  # unknown, not 0 and half
    assert st["link_up"][1][down] and st["link_up"][0][down] == 0.0
    checks = _uplink_checks(kt)
    assert UPLINK_CHECKS == ("uplink:slow_for_design", "uplink:half_duplex", "uplink:mtu_below_peers")
    assert (checks[down] == 0).all()
    share = st["traffic_share"][0][deg]
    assert share > 0 and checks[deg, 0] > 0 and checks[deg, 1] == pytest.approx(share) and checks[deg, 2] == 0


def test_nfs_deterioration_attaches_to_no_vsan_disk(bundle: Bundle) -> None:
    """Even where the NFS volume's name carries a vSAN disk's UUID, or names its device."""
    path = REAL_LOGS / "esxi8_vmkernel_vmkwarning_nfs.log"
    if not path.exists():
        pytest.skip(f"real sample {path} absent (../shared/samples/real/logs is not checked out here)")
    files = dict(bundle.files)
    h = bundle.cluster.hosts[0]
    top, disk = str(host_top(files, h.name)), h.disks[-1]
    real = path.read_text().replace("0753971d-bf82-42f2-a175-d2ac9f412633", disk.uuid)
    # a moment where this host's vmkernel/vmkwarning and vobd logs already cover the grid
    t = max(first_log_time(files, top, ["vmkernel", "vmkwarning"]), first_log_time(files, top, ["vobd"])) + 60
    g = bundle.plan.grid
    assert t < g.times[-1] - 600
    at = iso(t)[:19]
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
        step = int((t - bt.start) // bt.step_s)
        assert b.mask[:, ev, step].any(), kind  # the logs cover that step: a disk event there would count
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


def test_a_vm_that_reads_and_writes_is_one_active_vm() -> None:
    """vm.active counts VMs doing I/O, as the rules' I/Os in flight a VM reads it: one that reads and
    writes at a step is one VM (it counted twice), one that only reads is one, an idle one none."""
    t = np.arange(6, dtype=np.int64) * 300 + 1_700_000_000
    grid = Grid(start=int(t[0]), step=300, T=6, native=300)
    on, off = np.full(6, 50.0), np.zeros(6)
    late = np.where(np.arange(6) >= 3, 50.0, 0.0)  # starts writing at step 3
    vms = [
        PerfEntity("virtual-machine:a", "virtual-machine", "a", t, {"iopsRead": on, "iopsWrite": on}),
        PerfEntity("virtual-machine:b", "virtual-machine", "b", t, {"iopsRead": off, "iopsWrite": late}),
        PerfEntity("virtual-machine:c", "virtual-machine", "c", t, {"iopsRead": off, "iopsWrite": off}),
        PerfEntity("virtual-machine:d", "virtual-machine", "d", t, {"latencyRead": on}),  # no iops: unknown
    ]
    kt = KindTensors.empty("cluster", (CLUSTER_ID,), 6)
    fill = KindFill(kt)
    vm_aggregates(vms, grid, fill)
    ch = fill.by_key[("vm", "active")]
    assert kt.mask[0, ch].all()
    assert np.expm1(kt.values[0, ch]).round(6).tolist() == [1, 1, 1, 2, 2, 2]  # channels are log1p-scaled


def test_a_device_vob_and_a_vmnic_vob_in_one_second_are_both_kept() -> None:
    """Two vobd lines stamped the same second, one naming a device and one a vmnic, are events that differ
    first where one field is None and the other a string: sorting them raised TypeError (not a
    BundleError), so one such upload failed the whole diagnosis. Both now count for their components."""
    b = simulate_bundle("field", 41, 0, issue_rate=0.0)
    files = upload(b.files)
    host = b.cluster.hosts[0]
    top = host_top(files, host.name)
    assert top is not None
    stamp = iso(first_log_time(files, top, ["vmkernel"]) + 600)
    dev = host.disk_groups[0].capacity[0].dev
    lines = (
        f"{stamp}: [scsiCorrelator] 1000us: [esx.problem.scsi.device.io.latency.high] Device {dev} performance "
        "has deteriorated. I/O latency increased from average value of 1343 microseconds to 28022 microseconds.\n"
        f"{stamp}: [netCorrelator] 1001us: [vob.net.vmnic.linkstate.down] vmnic vmnic0 linkstate down\n"
    ).encode()
    path = f"{top}/var/run/log/vobd.log"
    files[path] = files.get(path, b"") + lines
    bt = load_bundle(tar_bytes(files))
    disk = next(cid for cid in bt.kinds["disk"].ids if cid.endswith(f"/{dev}"))
    assert _count(bt, "disk", disk, "ev.vob") == pytest.approx(1.0)
    assert _links(bt, host.name, "vmnic0")[0] == pytest.approx(1.0)


def _count(bt: BundleTensors, kind: str, cid: str, channel: str) -> float:
    """Events of `channel` on one component over the capture (the channel holds log1p of a step's count)."""
    kt = bt.kinds[kind]
    r, j = kt.ids.index(cid), kt.channels.index(channel)
    return float(np.expm1(kt.values[r, j][kt.mask[r, j]]).sum())
