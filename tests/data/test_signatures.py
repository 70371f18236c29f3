"""Every fault shows its faults.md signature on the faulty component, and not on healthy ones.

Checked on the simulator's own solved metrics and the log files it wrote, across many seeds and
both profiles. Hard signatures are asserted per bundle; softer consequences for components that
are not at fault (a NIC's loss slowing every host's I/O) are asserted across the population.
"""

from __future__ import annotations

import numpy as np
import pytest

from data.simulate.generate import Bundle, simulate_bundle
from data.simulate.plan import Injected
from data.simulate.topology import Cluster, Host
from tests.data.sigutil import (
    bundle,
    device,
    disk_entity,
    esxtop_columns,
    host_index,
    host_logs,
    scsi_failures,
    series,
    split,
    vsan_nics,
)
from vsandx import components as cid

LAB_SEEDS = range(8)
FIELD_SEEDS = range(4)
CASES = [("lab", s) for s in LAB_SEEDS] + [("field", s) for s in FIELD_SEEDS]


def _one(profile: str, seed: int, fault: str) -> tuple[Bundle, Injected]:
    b = bundle(profile, 101, seed, (fault,))
    (f,) = b.plan.faults
    return b, f


def _guest_latency(b: Bundle) -> np.ndarray:
    """Cluster DOM client latency over reads and writes, weighted by their iops (us)."""
    cl = b.cluster.uuid
    r, w = (series(b, "cluster-domclient", cl, k) for k in ("iopsRead", "iopsWrite"))
    lr, lw = (np.nan_to_num(series(b, "cluster-domclient", cl, k)) for k in ("latencyAvgRead", "latencyAvgWrite"))
    return (r * lr + w * lw) / np.maximum(r + w, 1e-9)


def _busy_before(b: Bundle, f: Injected) -> bool:
    """The guests were already doing I/O for a while before the onset (a before/after comparison)."""
    iops = series(b, "cluster-domclient", b.cluster.uuid, "iopsRead")[: f.onset]
    return f.onset >= 10 and np.count_nonzero(iops > 0) >= 10


@pytest.mark.parametrize(("profile", "seed"), CASES)
def test_packet_loss(profile: str, seed: int) -> None:
    """What every cause shares: the host's TCP view loses and retransmits (from 0.5 per-mille). Which
    NIC counters move depends on the cause (tests/data/test_causes.py): v1 always wrote CRC errors."""
    b, f = _one(profile, seed, "net.packet_loss")
    host = b.cluster.hosts[f.host]
    nic = host.nics[f.nic].name
    pn = f"{host.uuid}|{nic}"
    crc = np.nansum(split(b, series(b, "vsan-pnic-net", pn, "rxCrcErr"), f.onset)[1])
    assert (crc > 0) == (f.cause in ("cable_crc", "intermittent_optic")) or np.isnan(
        series(b, "vsan-pnic-net", pn, "rxCrcErr")
    ).all()
    assert np.nanmean(split(b, series(b, "vsan-host-net", host.uuid, "rxPacketsLossRate"), f.onset)[1]) > 0.25
    assert np.nanmean(split(b, series(b, "vsan-host-net", host.uuid, "tcpTxRexmitRate"), f.onset)[1]) > 0.25
    # not on healthy uplinks: no loss beyond benign blips (a benign blip may count a few CRC errors)
    blips = {e.host for e in b.plan.benign if e.kind == "crc_blip"}
    for hi, h in enumerate(b.cluster.hosts):
        for n in h.nics:
            if (h.uuid, n.name) != (host.uuid, nic):
                other = f"{h.uuid}|{n.name}"
                assert np.nansum(series(b, "vsan-pnic-net", other, "rxCrcErr")) <= (30 if hi in blips else 0)
                assert np.nanmax(series(b, "vsan-pnic-net", other, "rxPacketsLossRate")) < 0.5
    # devices stay normal: no device of the cluster is slowed by a network fault
    for d in b.cluster.hosts[f.host].disks:
        et, u = disk_entity(d)
        lat = series(b, et, u, "latencyDevDAvg")
        before, after = split(b, lat, f.onset)
        if len(before) > 5 and np.nanmedian(before) > 0:
            assert np.nanmedian(after) < 2.5 * np.nanmedian(before) + 500


def test_packet_loss_shows_in_esxtop() -> None:
    """Where an engineer captured esxtop on the host after the onset, the vmnic's port drops packets."""
    seen = 0
    for profile, seed in [("lab", s) for s in range(24)]:
        b, f = _one(profile, seed, "net.packet_loss")
        if f.cause in ("stack_drop", "intermittent_optic"):  # the NIC drops nothing / only in bursts
            continue
        host = b.cluster.hosts[f.host]
        onset_t = float(b.plan.grid.times[f.onset])
        for col, t, v in esxtop_columns(b, host.name, "Network Port", "% Received Packets Dropped"):
            late = t > onset_t + 2 * b.plan.grid.dt
            if col.endswith(f":{host.nics[f.nic].name})\\% Received Packets Dropped"):
                if late.any():
                    seen += 1
                    assert np.nanmedian(v[late]) > 0
            else:
                assert np.nanmax(v) == 0  # other ports drop nothing
    assert seen >= 3


def test_disk_latency_shows_in_esxtop_davg() -> None:
    seen = 0
    for profile, seed in [("lab", s) for s in range(16)]:
        b, f = _one(profile, seed, "disk.latency")
        h, _, d = device(b, f.component)
        onset_t = float(b.plan.grid.times[f.onset])
        cols = esxtop_columns(
            b, b.cluster.hosts[h].name, "Physical Disk SCSI Device", "Average Driver MilliSec/Command"
        )
        if np.nanmedian(split(b, series(b, *disk_entity(d), "iopsDevRead"), f.onset)[1]) < 1:
            continue  # an idle device's commands are too few to average
        mine = [(t, v) for c, t, v in cols if f"({d.dev})" in c]
        others = [np.nanmedian(v[1:]) for c, t, v in cols if f"({d.dev})" not in c]
        for t, v in mine:
            late = t > onset_t + 2 * b.plan.grid.dt
            if late.sum() > 3:
                seen += 1
                assert np.nanmedian(v[late]) > 3 * np.median(others)
    assert seen >= 3


def test_packet_loss_slows_other_hosts() -> None:
    """DOM client latency rises cluster-wide for I/O that touches the lossy host."""
    rises = 0
    # from ~2.5 per-mille: at the mild edge (0.5) retransmits barely move the guests' latency
    cases = [
        c
        for c in CASES
        if _busy_before(*_one(c[0], c[1], "net.packet_loss")) and _one(c[0], c[1], "net.packet_loss")[1].severity > 0.4
    ]
    for profile, seed in cases:
        b, f = _one(profile, seed, "net.packet_loss")
        before, after = split(b, _guest_latency(b), f.onset)
        q = 90 if f.cause == "intermittent_optic" else 50  # bursts: the spikes rise, not the median
        rises += np.nanpercentile(after, q) > 1.05 * np.nanpercentile(before[before > 0], q)
    assert rises >= 0.8 * len(cases)


@pytest.mark.parametrize(("profile", "seed"), CASES)
def test_link_degraded(profile: str, seed: int) -> None:
    b, f = _one(profile, seed, "net.link_degraded")
    host = b.cluster.hosts[f.host]
    nic = host.nics[f.nic]
    folder = next((p for p in b.files if p.startswith(f"esx-{host.name}-") and p.endswith("nicinfo.sh.txt")), None)
    if folder is not None:
        row = next(line for line in b.files[folder].decode().splitlines() if line.startswith(nic.name + " "))
        if f.cause == "mtu_mismatch":  # at full speed and duplex, MTU 1500 among 9000 ports
            assert row.split()[8] == "1500" and f" {nic.speed_mbps} " in row and "Half" not in row
        else:
            assert f" {int(f.param)} " in row and int(f.param) in (100, 1000)
            assert ("Half" in row) == (f.cause == "half_duplex")
    pn = f"{host.uuid}|{nic.name}"
    rx, tx = series(b, "vsan-pnic-net", pn, "rxThroughput"), series(b, "vsan-pnic-net", pn, "txThroughput")
    _, after = split(b, np.maximum(rx, tx), f.onset)
    # a 1 Gb/s link carries ~117 MB/s at most; an MTU mismatch its ceiling (param, MB/s)
    assert np.nanmax(after) < (f.param * 1e6 * 1.01 if f.cause == "mtu_mismatch" else 1.2e8 * f.param / 1000)
    assert np.nansum(series(b, "vsan-pnic-net", pn, "rxCrcErr")) == 0  # little or no packet error
    for h in b.cluster.hosts:  # every other vSAN uplink runs at the designed speed (or its own rating)
        if h is not host:
            assert _healthy_speed(b.cluster, h)


def _healthy_speed(cluster: Cluster, h: Host) -> bool:
    """A healthy vSAN uplink runs at the cluster's design speed, or (a 25 GbE cluster's older host) at its
    own rated 10 GbE: a port of another generation, not one that negotiated down."""
    nic = h.nics[h.vsan_nic]
    older = cluster.link_mbps == 25000 and nic.speed_mbps == 10000 and "10GbE" in nic.description
    return nic.speed_mbps == cluster.link_mbps or older


@pytest.mark.parametrize(("profile", "seed"), CASES)
def test_disk_latency(profile: str, seed: int) -> None:
    b, f = _one(profile, seed, "disk.latency")
    h, g, d = device(b, f.component)
    et, u = disk_entity(d)
    lat = series(b, et, u, "latencyDevDAvg")
    _, after = split(b, lat, f.onset)
    peers = [
        series(b, *disk_entity(o), "latencyDevDAvg")
        for _, grp in b.cluster.disk_groups
        for o in (grp.cache, *grp.capacity)
        if o.tier == d.tier and o is not d
    ]
    peer_med = np.nanmedian([np.nanmedian(split(b, p, f.onset)[1]) for p in peers])
    assert np.nanmedian(after) > 3 * peer_med
    iops = series(b, et, u, "iopsDevRead") + series(b, et, u, "iopsDevWrite")
    peer_iops = max(
        np.nanmedian(split(b, series(b, *disk_entity(o), "iopsDevRead"), f.onset)[1])
        + np.nanmedian(split(b, series(b, *disk_entity(o), "iopsDevWrite"), f.onset)[1])
        for _, grp in b.cluster.disk_groups
        for o in (grp.cache, *grp.capacity)
        if o.tier == d.tier
    )
    assert np.nanmedian(split(b, iops, f.onset)[1]) <= 1.01 * peer_iops  # its iops are ordinary
    text = host_logs(b, b.cluster.hosts[h].name)
    if text and f.cause in ("medium_error", "hardware_error", "timeout"):  # v1: every cause logged errors
        assert scsi_failures(text, d.dev)
        for o in b.cluster.hosts[h].disks:  # no other device of the host logs real trouble
            if o is not d:
                assert not scsi_failures(text, o.dev)
    dg = b.cluster.disk_groups[g][1]
    sched = series(b, "disk-group", dg.uuid, "latencySched")
    before, after = split(b, sched, f.onset)
    if len(before) > 5:
        assert np.nanmedian(after) > np.nanmedian(before)


@pytest.mark.parametrize(("profile", "seed"), CASES)
def test_disk_hotspot(profile: str, seed: int) -> None:
    b, f = _one(profile, seed, "disk.hotspot")
    h, g, d = device(b, f.component)
    assert d.tier == "capacity" and b.cluster.dedup and b.cluster.storage != "hybrid"
    grp = b.cluster.disk_groups[g][1]
    hot = np.nanmedian(split(b, series(b, "capacity-disk", d.uuid, "latencyDevRead"), f.onset)[1])
    others = [
        np.nanmedian(split(b, series(b, "capacity-disk", o.uuid, "latencyDevRead"), f.onset)[1])
        for o in grp.capacity
        if o is not d
    ]
    for o in others:
        assert o < 500  # the group's other capacity SSDs stay near 0.1-0.2 ms
        assert hot > (5 if f.severity > 0.4 else 1.8) * o  # v1 had no hot spot milder than 32 reads
    text = host_logs(b, b.cluster.hosts[h].name)
    assert not scsi_failures(text, d.dev)
    assert f"Device {d.dev} performance has deteriorated" not in text  # an NFS volume's may be
    cl = b.cluster.uuid
    r = split(b, series(b, "cluster-domclient", cl, "iopsRead"), f.onset)[1]
    w = split(b, series(b, "cluster-domclient", cl, "iopsWrite"), f.onset)[1]
    assert np.nanmedian(r) > np.nanmedian(w)  # read-heavy
    lists = [v.decode() for p, v in b.files.items() if p.endswith("localcli_vsan-storage-list.txt")]
    assert all("Deduplication: true" in t for t in lists)


def test_a_hot_spot_serves_a_drawn_multiple_of_its_siblings_reads() -> None:
    """faults.md gives a hot spot no I/O rate: over a dozen draws the hot device serves from under twice
    its siblings' reads to several times them. Simulator v7's served at least 2x, over 4x in 46 of the
    quick preset's 49 hot spots (every hot read took the device's own service time; its least here 5.9x);
    the other authors' serve under 4x in 29 of their 38 (README)."""
    ratios = []
    for i in range(12):
        b = simulate_bundle("field", 11, i, issue_rate=1.0, causes=["disk.hotspot"])
        (f,) = [x for x in b.plan.faults if x.fault == "disk.hotspot"]
        _, g, d = device(b, f.component)

        def reads(uuid: str, b: Bundle = b, f: Injected = f) -> float:
            x = split(b, series(b, "capacity-disk", uuid, "iopsDevRead"), f.onset)[1]
            return float(np.median(x[np.isfinite(x)])) if np.isfinite(x).any() else float("nan")

        siblings = [reads(o.uuid) for o in b.cluster.disk_groups[g][1].capacity if o is not d]
        if siblings:  # (a group of one capacity disk has none)
            ratios.append(reads(d.uuid) / float(np.median(siblings)))  # type: ignore[attr-defined]
    seen = [r for r in ratios if np.isfinite(r)]
    assert len(seen) >= 8
    assert min(seen) < 2.0 and max(seen) > 4.0, sorted(seen)


@pytest.mark.parametrize(("profile", "seed"), CASES)
def test_write_buffer(profile: str, seed: int) -> None:
    b, f = _one(profile, seed, "dg.write_buffer")
    h, grp = b.cluster.disk_groups[f.dg]
    wb = series(b, "disk-group", grp.uuid, "wbFreePct")
    cong = series(b, "disk-group", grp.uuid, "logCongestion")
    _, after = split(b, wb, f.onset)
    assert np.nanmin(after) < 25  # v1's mildest case fell below 20 % and 60 congestion
    assert np.nanmax(cong) >= 30
    before, after = split(b, series(b, "disk-group", grp.uuid, "latencySched"), f.onset)
    if len(before) > 5:
        assert np.nanmax(after) > 1.5 * np.nanmedian(before)
    text = host_logs(b, b.cluster.hosts[h].name)
    if text:
        logged = "Congestion State: Exceeded" in text
        assert logged == (np.nanmax(cong) >= 200)
    for g, (_, other) in enumerate(b.cluster.disk_groups):
        if g != f.dg:  # other groups keep their buffer
            assert np.nanmin(series(b, "disk-group", other.uuid, "wbFreePct")) > 15


@pytest.mark.parametrize(("profile", "seed"), CASES)
def test_cpu_contention(profile: str, seed: int) -> None:
    b, f = _one(profile, seed, "host.cpu_contention")
    host = b.cluster.hosts[f.host]
    _, util = split(b, series(b, "host-cpu", host.uuid, "pcpuUtilPct"), f.onset)
    _, ready = split(b, series(b, "vsan-cpu", host.uuid, "readyPct"), f.onset)
    assert np.nanmedian(util) > 88  # v1's mildest case: 90 % and 5 % ready
    assert np.nanmedian(ready) > 4
    for o in b.cluster.hosts:
        if o is not host:
            assert np.nanmax(series(b, "vsan-cpu", o.uuid, "readyPct")) < 5
    for d in host.disks:  # no device anomaly on that host
        assert np.nanmedian(series(b, *disk_entity(d), "latencyDevDAvg")) < 40000


@pytest.mark.parametrize(("profile", "seed"), CASES)
def test_low_oio(profile: str, seed: int) -> None:
    b, f = _one(profile, seed, "cluster.low_oio")
    cl = b.cluster.uuid
    vmdks = int(b.workload.n_vmdk.sum())
    _, oio = split(b, series(b, "cluster-domclient", cl, "oio"), f.onset)
    assert np.nanmedian(oio) <= 1.05 * f.param * vmdks  # about one (or two) outstanding I/O per VM disk
    lat = split(b, series(b, "cluster-domclient", cl, "latencyAvgRead"), f.onset)[1]
    assert np.nanmedian(lat) < 4000 * f.param  # low; a hybrid tier's misses still take a spindle's time
    for grp in b.metrics["disk-group"].values():
        assert np.nanmax(grp["logCongestion"]) < 30
    for h in b.cluster.hosts:
        text = host_logs(b, h.name)
        assert all(not scsi_failures(text, d.dev) for d in h.disks)


@pytest.mark.parametrize(("profile", "seed"), CASES)
def test_resync(profile: str, seed: int) -> None:
    b, f = _one(profile, seed, "cluster.resync")
    busy = [
        h
        for h in b.cluster.hosts
        if np.nanmedian(split(b, series(b, "host-domcompmgr", h.uuid, "tputResyncRead"), f.onset)[1][:10]) > 5e6
    ]
    assert len(busy) >= 2
    rec = sum(series(b, "host-domcompmgr", h.uuid, "iopsRecWrite") for h in b.cluster.hosts)
    assert np.nanmedian(split(b, rec, f.onset)[1][:10]) > 10


def test_resync_raises_guest_latency() -> None:
    rises, n = 0, 0
    for profile, seed in CASES:
        b, f = _one(profile, seed, "cluster.resync")
        if not _busy_before(b, f):
            continue
        before, after = split(b, _guest_latency(b), f.onset)
        n += 1
        rises += np.nanmedian(after[:10]) > 1.05 * np.nanmedian(before[before > 0])
    assert n and rises >= 0.8 * n


@pytest.mark.parametrize(("profile", "seed"), [("lab", s) for s in range(12)] + [("field", s) for s in range(6)])
def test_healthy_bundles_show_no_signature(profile: str, seed: int) -> None:
    b = bundle(profile, 202, seed, None)
    faulty = {x.component for x in b.plan.faults}
    resync = any(x.fault == "cluster.resync" for x in b.plan.faults)
    for h in b.cluster.hosts:
        if cid.host_id(h.name) not in faulty:
            assert np.nanmax(series(b, "vsan-cpu", h.uuid, "readyPct")) < 5
        text = host_logs(b, h.name)
        blip = any(e.kind == "crc_blip" and b.cluster.hosts[e.host] is h for e in b.plan.benign)
        for nic in h.nics:
            comp = cid.nic_id(h.name, nic.name)
            if comp not in faulty:  # a benign blip counts a few CRC errors, never a loss rate
                pn = f"{h.uuid}|{nic.name}"
                assert np.nansum(series(b, "vsan-pnic-net", pn, "rxCrcErr")) <= (30 if blip else 0)
                assert np.nanmax(series(b, "vsan-pnic-net", pn, "rxPacketsLossRate")) < 0.5
        for d in h.disks:
            if cid.disk_id(h.name, d.dev) not in faulty:
                assert not scsi_failures(text, d.dev)
    for h, grp in b.cluster.disk_groups:
        comp = cid.diskgroup_id(b.cluster.hosts[h].name, grp.cache.dev)
        if comp not in faulty and not resync and not any(x.fault == "dg.write_buffer" for x in b.plan.faults):
            assert np.nanmin(series(b, "disk-group", grp.uuid, "wbFreePct")) > 20
    for comp in vsan_nics(b):
        if comp not in faulty:
            h = b.cluster.hosts[host_index(b, comp.split(":", 1)[1].split("/")[0])]
            assert _healthy_speed(b.cluster, h)


def test_labels_follow_the_plan() -> None:
    for seed in range(10):
        b = bundle("field", 303, seed, None)
        faults = b.labels["faults"]
        assert isinstance(faults, list)
        comps = b.labels["components"]
        assert isinstance(comps, dict)
        assert sum(v != "none" for v in comps.values()) == len(faults) == len(b.plan.faults)
