"""Every cause of every fault renders its documented signature (measured on simulated bundles), the
cause filter holds causes in or out, labels carry the cause, and bundles still pass the spec's checker.

Signatures common to all causes of a fault are in test_signatures.py; here each cause's own shape.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import numpy as np
import pytest

from data.simulate import causes as reg
from data.simulate.archive import write_bundle
from data.simulate.causes import CAUSES, Cause, CauseFilter
from data.simulate.generate import Bundle, simulate_bundle
from data.simulate.plan import Injected
from tests.conftest import load_checker
from tests.data.sigutil import device, disk_entity, host_logs, scsi_failures, series, split

ROOT = Path(__file__).resolve().parents[2]
RUNS = (("lab", 0), ("field", 0), ("field", 1))


@functools.lru_cache(maxsize=128)
def _bundle(key: str, profile: str, index: int) -> Bundle:
    return simulate_bundle(profile, 404, index, faults=(key.split(":")[0],), causes=(key,))


def _runs(c: Cause) -> list[tuple[Bundle, Injected]]:
    out = []
    for profile, i in RUNS:
        b = _bundle(c.key, profile, i)
        (f,) = b.plan.faults
        out.append((b, f))
    return out


def _after(b: Bundle, et: str, eid: str, label: str, f: Injected) -> np.ndarray:
    return split(b, series(b, et, eid, label), f.onset)[1]


def _collected(x: np.ndarray) -> bool:
    return not np.isnan(x).all()  # a site may not collect an optional counter at all


def _net(c: Cause) -> None:
    for b, f in _runs(c):
        host = b.cluster.hosts[f.host]
        pn = f"{host.uuid}|{host.nics[f.nic].name}"
        crc, rxerr = (_after(b, "vsan-pnic-net", pn, k, f) for k in ("rxCrcErr", "rxErr"))
        drops = _after(b, "vsan-pnic-net", pn, "portRxDrops", f)
        tcp = _after(b, "vsan-host-net", host.uuid, "rxPacketsLossRate", f)
        rexmit = _after(b, "vsan-host-net", host.uuid, "tcpTxRexmitRate", f)
        if c.fault == "net.link_degraded":
            assert not _collected(crc) or np.nansum(crc) == 0
            assert np.nanmedian(tcp) < 0.1  # little or no packet error
            continue
        assert np.nanmean(tcp) > 0.25 and np.nanmean(rexmit) > 0.25  # from about 0.5 per-mille
        if c.name in ("cable_crc", "intermittent_optic"):
            assert not _collected(crc) or np.nansum(crc) > 0
            assert np.nansum(rxerr) >= np.nansum(crc)  # a CRC error is a receive error
        else:  # frames dropped whole: never corrupted
            assert not _collected(crc) or np.nansum(crc) == 0
        if c.name == "cable_crc":
            assert np.mean(tcp > 0.1) > 0.8  # persistent
        elif c.name == "intermittent_optic":
            assert np.mean(tcp < 0.1) > 0.25  # quiet between bursts
        elif c.name == "switch_overrun":
            assert np.nansum(rxerr) == 0 and np.nanmean(drops) > 0.2
            assert np.nanstd(tcp) / np.nanmean(tcp) > 0.5  # bursty
        elif c.name == "firmware_drop":
            assert np.nansum(rxerr) > 0 and np.nanmean(drops) > 0.2
        elif c.name == "stack_drop":  # the NIC delivered every frame: nothing on the pnic
            assert np.nansum(rxerr) == 0 and np.nanmedian(drops) < 0.5
            assert np.nanmedian(_after(b, "vsan-pnic-net", pn, "rxPacketsLossRate", f)) < 0.3
            assert np.nanstd(tcp) / np.nanmean(tcp) < 0.3  # every N-th packet: steady
            assert f.param >= 40 and abs(np.nanmedian(tcp) - 1000 / f.param) < 0.3 * 1000 / f.param


def _nicinfo_row(b: Bundle, host_name: str, nic: str) -> str | None:
    info = next((v for p, v in b.files.items() if p.startswith(f"esx-{host_name}-") and "nicinfo" in p), None)
    return None if info is None else next(ln for ln in info.decode().splitlines() if ln.startswith(nic + " "))


def _mtu(c: Cause) -> None:
    """At full speed and duplex, MTU 1500 on that host's vSAN uplink and standby while every other host's
    run 9000; a ceiling far below the line rate; 1500-byte frames (more packets per byte than the other
    hosts'); a little tx loss, resent."""
    _net(c)
    for b, f in _runs(c):
        assert b.cluster.mtu == 9000 and 60 <= f.param <= 400
        for h, host in enumerate(b.cluster.hosts):
            for k in (host.vsan_nic, host.standby_nic):
                row = None if k is None else _nicinfo_row(b, host.name, host.nics[k].name)
                if row is not None:
                    cols = row.split()
                    assert cols[8] == ("1500" if h == f.host else "9000"), row
                    assert h != f.host or (int(cols[5]) == host.nics[k].speed_mbps and cols[6] == "Full")
        host = b.cluster.hosts[f.host]
        pn = f"{host.uuid}|{host.nics[f.nic].name}"
        rx, tx = (_after(b, "vsan-pnic-net", pn, k, f) for k in ("rxThroughput", "txThroughput"))
        assert np.nanmax(np.maximum(rx, tx)) <= f.param * 1e6 * 1.01
        vmk = {k: _after(b, "vsan-host-net", host.uuid, k, f) for k in ("txThroughput", "txPackets")}
        assert np.nanmedian(vmk["txThroughput"] / vmk["txPackets"]) < 1500
        txl = _after(b, "vsan-host-net", host.uuid, "txPacketsLossRate", f)
        assert not _collected(txl) or 0.01 < np.nanmedian(txl) < 0.5


def _link(c: Cause) -> None:
    if c.name == "mtu_mismatch":
        return _mtu(c)
    _net(c)
    for b, f in _runs(c):
        host = b.cluster.hosts[f.host]
        nic = host.nics[f.nic]
        speed = 100 if c.name == "speed_100m" else 1000 if c.name == "speed_1g" else int(f.param)
        assert int(f.param) == speed and speed in (100, 1000)
        row = _nicinfo_row(b, host.name, nic.name)
        if row is not None:
            assert f" {speed} " in row and ("Half" in row) == (c.name == "half_duplex")
        pn = f"{host.uuid}|{nic.name}"
        rx, tx = (_after(b, "vsan-pnic-net", pn, k, f) for k in ("rxThroughput", "txThroughput"))
        assert np.nanmax(np.maximum(rx, tx)) < speed / 8 * 1e6 * 0.96
        if c.name == "half_duplex":
            tx_err = _after(b, "vsan-pnic-net", pn, "txErr", f)
            assert not _collected(tx_err) or np.nansum(tx_err) > 0  # late collisions


def _disk(c: Cause) -> None:
    for b, f in _runs(c):
        h, _, d = device(b, f.component)
        et, u = disk_entity(d)
        peers = [
            np.nanmedian(_after(b, *disk_entity(o), "latencyDevDAvg", f))
            for _, grp in b.cluster.disk_groups
            for o in (grp.cache, *grp.capacity)
            if o.tier == d.tier and o is not d
        ]
        assert np.nanmedian(_after(b, et, u, "latencyDevDAvg", f)) > 3 * np.nanmedian(peers)
        text = host_logs(b, b.cluster.hosts[h].name)
        if not text:
            continue  # that host's folder was not uploaded
        bad = scsi_failures(text, d.dev)
        mine = [ln for ln in bad if f'to dev "{d.dev}"' in ln]
        queue = re.findall(rf'to dev "{re.escape(d.dev)}" failed H:0x0 D:0x(?:28|8) ', text)
        n_after = b.plan.grid.n - f.onset
        if c.name == "medium_error":
            assert any("sense data: 0x3 " in ln for ln in mine)
        elif c.name == "hardware_error":
            assert any("sense data: 0x4 " in ln for ln in mine)
        elif c.name == "timeout":
            assert any(re.search(r"failed H:0x[58] ", ln) for ln in mine)
        elif c.name == "firmware_degraded":
            hours = n_after * b.plan.grid.dt / 3600
            assert len(mine) <= 20 * hours + 3  # few or none: a failing medium logs 30x more
        elif c.name == "controller_queue":
            assert queue and not mine
            gavg = _after(b, et, u, "latencyDevGAvg", f) - _after(b, et, u, "latencyDevDAvg", f)
            assert np.nanmedian(gavg) > 500  # commands wait in the kernel queue (KAVG/QAVG)


def _hotspot(c: Cause) -> None:
    for b, f in _runs(c):
        h, g, d = device(b, f.component)
        grp = b.cluster.disk_groups[g][1]
        hot = np.nanmedian(_after(b, "capacity-disk", d.uuid, "latencyDevRead", f))
        for o in grp.capacity:
            if o is not d:
                other = np.nanmedian(_after(b, "capacity-disk", o.uuid, "latencyDevRead", f))
                assert other < 500 and hot > 1.8 * other
        reads = _after(b, "capacity-disk", d.uuid, "iopsDevRead", f)
        oio = np.nanmedian(reads * _after(b, "capacity-disk", d.uuid, "latencyDevRead", f) / 1e6)
        assert 1.5 < oio < 100  # a few to 64 outstanding reads
        text = host_logs(b, b.cluster.hosts[h].name)
        assert not scsi_failures(text, d.dev) and f"Device {d.dev} performance has deteriorated" not in text


def _write_buffer(c: Cause) -> None:
    for b, f in _runs(c):
        h, grp = b.cluster.disk_groups[f.dg]
        wb = _after(b, "disk-group", grp.uuid, "wbFreePct", f)
        cong = series(b, "disk-group", grp.uuid, "logCongestion")
        assert np.nanmin(wb) < 25 and np.nanmax(cong) >= 30
        tail = cong[-max(3, (len(cong) - f.onset) // 4) :]
        assert np.nanmedian(tail) >= 15  # sustained, unlike a benign burst
        text = host_logs(b, b.cluster.hosts[h].name)
        if text:
            assert ("Congestion State: Exceeded" in text) == (np.nanmax(cong) >= 200)
        if f.severity < 0.15:
            assert np.nanmax(cong) < 200  # the mild edge never logs
        if c.name == "large_io":
            size = b.workload.size_w[b.workload.wb_group == f.dg]
            assert size.min() >= 512 * 1024


def _cpu(c: Cause) -> None:
    for b, f in _runs(c):
        host = b.cluster.hosts[f.host]
        util = _after(b, "host-cpu", host.uuid, "pcpuUtilPct", f)
        assert np.nanmedian(util) > 88 and np.nanmedian(_after(b, "vsan-cpu", host.uuid, "readyPct", f)) > 4
        if c.name == "runaway_world":
            assert np.nanstd(util) < 3  # a flat plateau


def _low_oio(c: Cause) -> None:
    for b, f in _runs(c):
        threads = 1 if c.name == "one_thread" else 2
        assert f.param == threads
        bench = sum(int(n) for n, name in zip(b.workload.n_vmdk, b.workload.names, strict=True) if "hci" in name)
        oio = np.nanmedian(_after(b, "cluster-domclient", b.cluster.uuid, "oio", f))
        assert 0.6 * threads * bench <= oio <= 1.05 * threads * int(b.workload.n_vmdk.sum())
        for grp in b.metrics["disk-group"].values():
            assert np.nanmax(grp["logCongestion"]) < 30


def _resync(c: Cause) -> None:
    events = 0
    for b, f in _runs(c):
        busy = [
            h
            for h in b.cluster.hosts
            if np.nanmedian(_after(b, "host-domcompmgr", h.uuid, "tputResyncRead", f)[:10]) > 5e6
        ]
        assert len(busy) >= 2
        text = "".join(host_logs(b, h.name) for h in b.cluster.hosts)
        host_ev, disk_ev = "Heartbeat timeout" in text, "permanently inaccessible" in text
        if c.name in ("policy_change", "rebalance"):
            assert not host_ev and not disk_ev
        else:
            events += host_ev if c.name == "host_failure" else disk_ev
            assert not (disk_ev if c.name == "host_failure" else host_ev)
    if c.name in ("host_failure", "disk_failure"):
        assert events >= 2  # usually preceded by its event (when the window and the upload hold it)


CHECKS = {
    "net.packet_loss": _net,
    "net.link_degraded": _link,
    "disk.latency": _disk,
    "disk.hotspot": _hotspot,
    "dg.write_buffer": _write_buffer,
    "host.cpu_contention": _cpu,
    "cluster.low_oio": _low_oio,
    "cluster.resync": _resync,
}


@pytest.mark.parametrize("key", [c.key for c in CAUSES])
def test_cause_renders_its_signature_and_label(key: str) -> None:
    c = reg._BY_KEY[key]
    for b, f in _runs(c):
        assert f.cause == c.name and c.sev_range[0] <= f.severity <= c.sev_range[1] + 1e-9
        (entry,) = b.labels["faults"]  # type: ignore[misc]
        assert entry["cause"] == c.name and entry["fault"] == c.fault
    CHECKS[c.fault](c)


def test_registry_is_consistent() -> None:
    from vsandx.faults import FAULT_IDS

    assert {c.fault for c in CAUSES} == set(FAULT_IDS)
    assert len({c.key for c in CAUSES}) == len(CAUSES)
    assert all(0 <= c.sev_range[0] <= c.sev_range[1] <= 1 for c in CAUSES)
    assert {b.looks_like for b in reg.BENIGN} <= set(FAULT_IDS)


def test_filter_resolves_names() -> None:
    assert reg.resolve(["net.packet_loss:stack_drop"]) == {"net.packet_loss:stack_drop"}
    assert reg.resolve(["timeout"]) == {"disk.latency:timeout"}
    assert reg.resolve(["cluster.low_oio"]) == {"cluster.low_oio:one_thread", "cluster.low_oio:two_threads"}
    with pytest.raises(ValueError):
        reg.resolve(["no_such_cause"])


def test_excluded_cause_is_never_drawn_and_another_is() -> None:
    held = "net.packet_loss:cable_crc"
    seen = set()
    for i in range(12):
        b = simulate_bundle("lab", 5, i, faults=("net.packet_loss",), exclude_causes=[held])
        seen.add(b.plan.faults[0].cause)
    assert "cable_crc" not in seen and len(seen) >= 2
    # every cause of a fault excluded: that fault is no longer drawn, others are
    out = [simulate_bundle("field", 5, i, issue_rate=1.0, exclude_causes=["net.packet_loss"]) for i in range(15)]
    faults = [f.fault for b in out for f in b.plan.faults]
    assert faults and "net.packet_loss" not in faults
    with pytest.raises(ValueError):
        simulate_bundle("lab", 5, 0, faults=("net.packet_loss",), exclude_causes=["net.packet_loss"])


def test_only_causes_draws_only_those() -> None:
    for i in range(10):
        b = simulate_bundle("field", 6, i, issue_rate=1.0, causes=["switch_overrun", "dedup_zero"])
        assert b.plan.faults
        assert {f"{f.fault}:{f.cause}" for f in b.plan.faults} <= {
            "net.packet_loss:switch_overrun",
            "disk.hotspot:dedup_zero",
        }
    # a test set of one hot-spot cause: the cluster is built to be able to show it
    b = simulate_bundle("field", 6, 3, issue_rate=1.0, causes=["disk.hotspot:narrow_lba"])
    assert [f.cause for f in b.plan.faults] == ["narrow_lba"] and b.cluster.dedup


def test_dataset_spec_key_and_runner_carry_the_filter(tmp_path: Path) -> None:
    from pipeline.config import PipelineConfig
    from training.datasets import DatasetSpec

    cfg = PipelineConfig()
    plain = DatasetSpec("lab", 4, seed=1)
    held = DatasetSpec("lab", 4, seed=1, exclude_causes=("net.packet_loss:stack_drop",))
    only = DatasetSpec("lab", 4, seed=1, causes=("net.packet_loss:stack_drop",))
    assert len({plain.key(cfg), held.key(cfg), only.key(cfg)}) == 3
    assert only.resolved(cfg)["causes"] == ("net.packet_loss:stack_drop",)

    from data.simulate.runner import simulate_many

    res = simulate_many("lab", 3, tmp_path, seed=2, workers=1, issue_rate=1.0, progress=False, causes=["speed_100m"])
    assert [r["causes"] for r in res] == [["net.link_degraded:speed_100m"]] * 3


def test_cli_accepts_cause_filters(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from cli.main import main

    args = ["simulate", "--profile", "lab", "-n", "2", "--out", str(tmp_path), "--workers", "1", "-q"]
    assert main([*args, "--issue-rate", "1", "--only-causes", "firmware_degraded,runaway_world"]) == 0
    assert "causes:" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main([*args, "--exclude-causes", "bogus"])


def test_cause_bundles_pass_the_checker(tmp_path: Path) -> None:
    checker = load_checker()
    for c in CAUSES:
        b = _bundle(c.key, "field", 1)
        path = write_bundle(b.name + "-" + c.name, b.files, tmp_path, "tgz")
        assert checker.check_bundle(str(path)).problems == [], c.key


def test_benign_look_alikes_stay_benign() -> None:
    """A CRC blip counts a few errors and no loss; a write burst dips the buffer briefly and mildly."""
    blips = bursts = 0
    for i in range(40):
        b = simulate_bundle("field", 17, i, issue_rate=0.0)
        assert not b.plan.faults and all(v == "none" for v in b.labels["components"].values())  # type: ignore[union-attr]
        for e in b.plan.benign:
            if e.kind == "crc_blip":
                host = b.cluster.hosts[e.host]
                pn = f"{host.uuid}|{host.nics[e.nic].name}"
                crc = series(b, "vsan-pnic-net", pn, "rxCrcErr")
                if _collected(crc):
                    blips += 1
                    assert 0 < np.nansum(crc) <= 30
                assert np.nanmax(series(b, "vsan-host-net", host.uuid, "tcpTxRexmitRate")) < 1.0
            elif e.kind == "wb_burst":
                bursts += 1
                grp = b.cluster.disk_groups[e.dg][1]
                assert np.nanmin(series(b, "disk-group", grp.uuid, "wbFreePct")) > 20
                assert np.nanmax(series(b, "disk-group", grp.uuid, "logCongestion")) < 60
    assert blips and bursts


def test_real_log_and_nicinfo_shapes() -> None:
    """The shapes of shared/samples/real/logs: ESXi 8 lines with opID tokens, NFS deterioration of a
    volume, vobd uplink-flap VOBs, and nicinfo rows of unused ports (Link Down, Speed 0, Half)."""
    found: set[str] = set()
    for i in range(30):
        b = simulate_bundle("field", 23, i, issue_rate=1.0, causes=["intermittent_optic", "speed_1g", "half_duplex"])
        for path, data in b.files.items():
            if path.endswith((".log", ".txt")):
                text = data.decode()
                if re.search(r"Z In\(182\) vmkernel: cpu\d+:\d+ opID=[0-9a-f]{8}\)", text):
                    found.add("opid")
                if re.search(
                    r"Wa\(180\) vmkwarning: cpu\d+:\d+\)WARNING: NFS: \d+: NFS volume \S+ performance has", text
                ):
                    found.add("nfs")
                if "[vob.net.pg.uplink.transition.down] Uplink: vmnic" in text:
                    assert "[vob.net.vmnic.linkstate.down]" in text and "[vob.net.pg.uplink.transition.up]" in text
                    assert re.search(r"\[esx\.problem\.net\.(redundancy|connectivity)\.lost\] Lost ", text)
                    found.add("flap")
                if re.search(r"^vmnic\d+\s+\S+\s+\S+\s+Up\s+Down\s+0\s+Half ", text, re.M):
                    assert "Link Detected: false" in text
                    found.add("down")
    assert found == {"opid", "nfs", "flap", "down"}


def test_readme_table_is_generated_from_the_registry() -> None:
    readme = (ROOT / "README.md").read_text()
    assert reg.markdown_table() in readme, "README's Fault causes table is stale: paste markdown_table()"


def test_filter_object_round_trip() -> None:
    flt = CauseFilter.of(["one_thread"], ["cluster.resync:rebalance"])
    assert flt.active and [c.name for c in flt.causes("cluster.low_oio")] == ["one_thread"]
    assert flt.causes("cluster.resync") == ()
