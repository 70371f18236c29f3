# ruff: noqa: E501 - log lines and tables are quoted verbatim
"""Every parser against simulator content (spec formats) and against the real public samples."""

from __future__ import annotations

import gzip
import io
import re
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from data.simulate.archive import tar_bytes
from data.simulate.generate import Bundle
from pipeline.parse import cmmds, esxcli, esxtop, logs, perfdump, vscsistats
from pipeline.parse.bundle import ParsedBundle, classify, parse_members
from pipeline.read import ReadReport, iter_members
from tests.pipeline.simbundles import host_top


def parse(files: dict[str, bytes]) -> ParsedBundle:
    rep = ReadReport()
    return parse_members(iter_members(tar_bytes(files)), "<t>", rep)


def stream(data: bytes) -> io.BufferedReader:
    return io.BufferedReader(io.BytesIO(data))


# ------------------------------------------------------------------ sniffing, never by name
def test_every_bundle_file_classified_by_content(bundle: Bundle) -> None:
    want = {
        "perf_stats_with_dump": "perfdump",
        "cmmds-tool": "cmmds",
        "storage-list": "storage",
        "network-list": "network",
        "nicinfo": "nicinfo",
        ".csv": "esxtop",
        "vmkernel.log": "log",
        "vobd.log": "log",
        "vmkwarning.log": "log",
    }
    seen = set()
    for path, data in bundle.files.items():
        for frag, kind in want.items():
            if frag in path and data.strip():
                assert classify("x/renamed.bin", data[:65536]) == kind, path
                seen.add(frag)
    assert seen == set(want)


def test_renamed_files_still_parse(bundle: Bundle) -> None:
    files = bundle.files
    renamed = {}
    for i, (p, d) in enumerate(files.items()):
        if "/" not in p:  # labels.json, at the root
            renamed[p] = d
            continue
        top, rest = p.split("/", 1)
        keep = rest.startswith("var/run/log/")  # log *source* (vmkernel/vobd) is taken from the name
        renamed[f"{top}/{rest if keep else f'file{i}.dat'}"] = d
    pb, orig = parse(renamed), parse(files)
    assert len(pb.perf) == len(orig.perf) > 0
    assert len(pb.cmmds.hosts) == bundle.hosts
    assert len(pb.folders) == bundle.hosts_present == bundle.hosts
    assert all(f.storage and f.nics and f.vmknics and f.logs for f in pb.folders.values())
    # every esxtop capture is found again, in its host folder or loose beside them
    captures = sum(p.endswith(".csv") for p in files)
    found = sum(len(f.esxtop) for f in pb.folders.values()) + len(pb.loose_esxtop)
    assert captures > 0 and found == captures
    assert {k: len(f.esxtop) for k, f in pb.folders.items()} == {k: len(f.esxtop) for k, f in orig.folders.items()}


# ------------------------------------------------------------------ perf dump
def _doc(body: str, ns: str = 'xmlns="urn:vim25"') -> str:
    return f"<obj {ns}>{body}</obj>"


def _ent(ref: str, si: str, vals: dict[str, str], threshold: bool = False) -> str:
    th = "<threshold><yellow>10</yellow></threshold>" if threshold else ""
    v = "".join(
        f"<value><metricId><label>{k}</label></metricId>{th}<values>{x}</values></value>" for k, x in vals.items()
    )
    return (
        f"<VsanPerfEntityMetricCSV><entityRefId>{ref}</entityRefId><sampleInfo>{si}</sampleInfo>{v}"
        "</VsanPerfEntityMetricCSV>"
    )


SI = "2026-03-02 10:00:00,2026-03-02 10:00:20,2026-03-02 10:00:40"


def test_perfdump_variants_and_missing_values() -> None:
    text = (
        "\n".join(
            [
                perfdump.HEAD,
                _doc(_ent("host-cpu:u1", SI, {"pcpuUtilPct": "1,None,3", "coreUtilPct": "1,,3"}, threshold=True)),
                "--------------Stats Segment Separator--------------",
                _doc(
                    _ent("vsan-cpu:u1", SI, {"usedPct": "4,5,6"}),
                    ns='xmlns:v="urn:vsan" xsi:type="X" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"',
                ),
                "--------------Stats Segment Separator--------------",
                "<obj><VsanPerfEntityMetricCSV><entityRefId>broken",  # malformed line: a warning, rest counts
                _doc(_ent("disk-group:d1", "", {})),  # no data yet
                _doc(_ent("weird-type:z", SI, {"foo": "1,2,3", "bad": "1,2"})),
            ]
        )
        + "\n"
    )
    p = perfdump.PerfParser()
    p.feed_dump(iter(stream(text.encode())), "dump")
    e = p.entities["host-cpu:u1"]
    assert e.times.tolist() == [1772445600, 1772445620, 1772445640]
    assert np.isnan(e.metrics["pcpuUtilPct"][1]) and np.isnan(e.metrics["coreUtilPct"][1])
    assert p.entities["vsan-cpu:u1"].metrics["usedPct"].tolist() == [4, 5, 6]
    assert len(p.entities["disk-group:d1"].times) == 0
    assert "bad" not in p.entities["weird-type:z"].metrics
    assert any("does not parse" in w for w in p.warnings)


def test_perfdump_merge_by_entity_ref() -> None:
    p = perfdump.PerfParser()
    p.add("host-cpu:u", SI, [("a", "1,2,3", None)], "h1")
    p.add("host-cpu:u", SI, [("a", "9,9,9", None), ("b", "4,5,6", 20)], "h2")
    e = p.entities["host-cpu:u"]
    assert e.metrics["a"].tolist() == [1, 2, 3] and e.metrics["b"].tolist() == [4, 5, 6] and e.interval == 20


def test_perfdump_rejects_dtd() -> None:
    bomb = '<!DOCTYPE x [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;">]><obj>&b;</obj>'
    p = perfdump.PerfParser()
    p.feed_dump(iter([perfdump.HEAD.encode(), bomb.encode()]), "d")
    assert not p.entities and "DTD" in p.warnings[0]


def test_perf_json_form() -> None:
    import json

    data = json.dumps(
        [
            {
                "entityRefId": "host-cpu:u",
                "sampleInfo": SI,
                "value": [{"metricId": {"label": "pcpuUtilPct"}, "values": "1,2,None"}],
            },
            {"nothing": 1},
            "junk",
        ]
    ).encode()
    assert perfdump.sniff_json(data)
    p = perfdump.PerfParser()
    p.feed_json(perfdump.load_json(data), "j")
    assert p.entities["host-cpu:u"].metrics["pcpuUtilPct"][:2].tolist() == [1, 2]


def test_simulated_dump_has_every_spec_metric(checker: ModuleType, bundle: Bundle) -> None:
    """Every metric the spec requires (the reference validator's list) and every one the simulator wrote."""
    pb = parse(bundle.files)
    assert set(checker.REQUIRED) <= {e.etype for e in pb.perf.values()}
    for e in pb.perf.values():
        assert set(checker.REQUIRED.get(e.etype, ())) <= set(e.metrics)
        assert set(bundle.metrics[e.etype][e.eid]) == set(e.metrics)
        assert len(e.times) == bundle.samples


# ------------------------------------------------------------------ CMMDS
def test_cmmds_literal_with_braces_in_strings() -> None:
    text = repr(
        [
            {
                "uuid": "h1",
                "owner": "h1",
                "type": "HOSTNAME",
                "content": '{"hostname": "esx-a.lab"}',
                "x": {"n": 1},
            },
            {
                "uuid": "d1",
                "owner": "h1",
                "type": "DISK",
                "content": '{"devName": "naa.1:2", "isSsd": 1, "ssdUuid": "d1"}',
            },
            {
                "uuid": "d2",
                "owner": "h1",
                "type": "DISK",
                "content": '{"devName": "naa.2:2", "isSsd": 0, "ssdUuid": "d1"}',
            },
            {"uuid": "n", "owner": "h1", "type": "NET_INTERFACE", "content": "{}"},
            {"uuid": "bad", "owner": "h1", "type": "DISK", "content": "not json {"},
        ]
    )
    assert cmmds.sniff(text.encode())
    cm = cmmds.parse_cmmds(text, "c")
    assert cm.hosts == {"h1": "esx-a.lab"}
    assert cm.disks["d1"].device == "naa.1" and cm.disks["d1"].is_cache and not cm.disks["d2"].is_cache
    assert cm.warnings  # the bad entry


def test_cmmds_garbage_is_empty_not_an_error() -> None:
    for text in ["[{", "[{'uuid': __import__('os')}]", "[" * 10000, "[{'a': 1}]"]:
        cm = cmmds.parse_cmmds(text, "c")
        assert not cm.hosts and not cm.disks


# ------------------------------------------------------------------ esxcli tables
def test_storage_and_network_lists(bundle: Bundle) -> None:
    files = bundle.files
    h = bundle.cluster.hosts[0]
    top = host_top(files, h.name)
    assert bundle.cluster.dedup  # the shared bundle is all-flash with deduplication: the flags are set
    rows = esxcli.parse_storage_list(files[f"{top}/commands/localcli_vsan-storage-list.txt"].decode())
    assert {r.device for r in rows} == {d.dev for d in h.disks}
    group = h.disk_groups[0]
    cache = next(r for r in rows if r.uuid == group.cache.uuid)
    assert cache.is_capacity is False and cache.dedup is True and cache.is_ssd
    cap = next(r for r in rows if r.uuid == group.capacity[0].uuid)
    assert cap.is_capacity is True and cap.dedup is True
    net = files[f"{top}/commands/localcli_vsan-network-list.txt"].decode()
    vmk = re.search(r"VmkNic Name: (\S+)", net)
    assert vmk is not None and esxcli.parse_network_list(net)[0].name == vmk.group(1)


def test_nicinfo_columns() -> None:
    text = """Name    PCI Device    Driver  Admin Status  Link Status  Speed  Duplex  MAC Address         MTU  Description
------  ------------  ------  ------------  -----------  -----  ------  -----------------  ----  ---------------
vmnic0  0000:04:00.0  ixgben  Up            Up           10000  Full    00:50:56:01:02:03  9000  Intel X550
vmnic1  0000:04:00.1  ixgben  Up            Down         0      Half    00:50:56:01:02:04  1500  Intel X550 (2)
"""
    rows = esxcli.parse_nicinfo(text)
    assert [(r.name, r.speed_mbps, r.duplex_full, r.mtu, r.link_up) for r in rows] == [
        ("vmnic0", 10000, True, 9000, True),
        ("vmnic1", None, None, 1500, False),  # a down port's "0 Half" is no negotiation (issue 17)
    ]


# ------------------------------------------------------------------ logs
LOG7 = (
    "2026-03-02T10:04:11.512Z cpu12:2098330)ScsiDeviceIO: 4325: Cmd(0x45be74dae040) 0x28, CmdSN 0xd65263a8 "
    'from world 0 to dev "naa.5000c500a1b2c3d4" failed H:0x0 D:0x2 P:0x0 Valid sense data: 0x3 0x11 0x0'
)
LOG8 = (
    "2026-03-02T10:04:12.000Z In(182) vmkernel: cpu12:2098330)ScsiDeviceIO: 4325: Cmd(0x45) 0x1a, CmdSN 0x1 "
    'from world 0 to dev "naa.5000c500a1b2c3d4" failed H:0x0 D:0x2 P:0x0 Valid sense data: 0x5 0x24 0x0'
)


@pytest.mark.parametrize(
    ("line", "kind", "attr"),
    [
        (LOG7, "scsi_fail_medium", "naa.5000c500a1b2c3d4"),
        (LOG8, "scsi_fail_benign", "naa.5000c500a1b2c3d4"),
        (
            '2026-03-02T10:00:00Z cpu1:1)ScsiDeviceIO: 1: Cmd 0x2a to dev "naa.1:2" failed H:0x5 D:0x0 P:0x0 ',
            "scsi_fail_host",
            "naa.1",
        ),
        (
            "2026-03-02T10:00:00.1Z Wa(180) vmkwarning: cpu1:1)WARNING: ScsiDeviceIO: 1513: Device naa.9 performance has "
            "deteriorated. I/O latency increased from average value of 1343 microseconds to 28022 microseconds.",
            "deteriorated",
            "naa.9",
        ),
        (
            "2026-03-02T10:00:00Z cpu1:1)LSOM: LSOM_ThrowAsyncCongestionVOB:3012: LSOM SSD Congestion State: Exceeded. "
            "Congestion Threshold: 200 Current Congestion: 255.",
            "lsom_congestion",
            None,
        ),
        ("2026-03-02T10:00:00Z cpu1:1)vmnic3 : 0000:04:00.1 Link Down", "link_down", "vmnic3"),
        ("2026-03-02T10:00:00Z In(182) vmkernel: cpu1:1)vmnic3 : 0000:04:00.1 Link Up", "link_up", "vmnic3"),
        (
            "2026-03-02T10:00:00Z cpu1:1)WARNING: LSOM: LSOMEventNotify:1: Virtual SAN device "
            "52a1b2c3-0000-1111-2222-333344445555 is under permanent error.",
            "perm_error",
            "52a1b2c3-0000-1111-2222-333344445555",
        ),
    ],
)
def test_log_events(line: str, kind: str, attr: str | None) -> None:
    lf = logs.parse_log(iter([line.encode(), b"2026-03-02T10:00:01Z cpu1:1)nothing to see", b"untimed"]), "vmkernel")
    assert lf.lines == 3 and lf.untimed == 1
    (ev,) = lf.events
    assert ev.kind == kind
    assert attr in (None, ev.device, ev.vmnic, ev.uuid)


def test_vobd_lines() -> None:
    lines = [
        b"2026-03-02T10:00:00.123Z: [netCorrelator] 6046829437us: [vob.net.vmnic.linkstate.down] "
        b"vmnic vmnic1 linkstate down",
        b"2026-03-02T10:01:00.123Z: [scsiCorrelator] 1us: [esx.problem.scsi.device.io.latency.high] "
        b"Device naa.600508b1001c performance has deteriorated.",
    ]
    lf = logs.parse_log(iter(lines), "vobd")
    assert [(e.kind, e.detail, e.vmnic, e.device) for e in lf.events] == [
        ("vob", "vob.net.vmnic.linkstate.down", "vmnic1", None),
        ("link_down", None, "vmnic1", None),  # the VOB is also a link event of vmnic1 (issue 17)
        ("vob", "esx.problem.scsi.device.io.latency.high", None, "naa.600508b1001c"),
    ]


def test_rotated_gz_logs_through_reader() -> None:
    files = {
        "esx-h-2026-03-02--10.00-1/var/run/log/vmkernel.1.gz": gzip.compress(LOG7.encode() + b"\n"),
        "esx-h-2026-03-02--10.00-1/var/run/log/vmkernel.log.2": LOG8.encode() + b"\n",
    }
    pb = parse(files)
    evs = sorted(e.kind for lf in pb.folders["esx-h-2026-03-02--10.00-1"].logs for e in lf.events)
    assert evs == ["scsi_fail_benign", "scsi_fail_medium"]


# ------------------------------------------------------------------ esxtop
def test_esxtop_quirks() -> None:
    hdr = (
        '"(PDH-CSV 4.0) (UTC)(0)","\\\\h\\Physical Disk SCSI Device(naa.1)\\Average Driver MilliSec/Command",'
        '"\\\\h\\Network Port(DvsPortset-0:1:vmnic2)\\% Received Packets Dropped",'
        '"\\\\h\\Network Port(DvsPortset-0:2:vmk1)\\% Received Packets Dropped","\\\\h\\Memory\\Free MBytes",'
    )
    rows = [
        '"03/02/2026 10:00:00","0","0","0","5",',
        '"03/02/2026 10:00:05","2.5","1.0","7","5",',
        '"03/02/2026 10:00:10","bad","","7","5",',
        '"garbage row"',
        '"13/45/2026 10:00:15","1","1","1","1",',
    ]
    text = "top - 10:00:00 up 1 day\n" + "\r\n".join([hdr, *rows]) + "\r\n"
    cap = esxtop.parse_esxtop(stream(text.encode()), "e")
    assert cap is not None and cap.host_label == "h"
    assert cap.times.tolist() == [1772445600, 1772445605, 1772445610]
    d = cap.disk["naa.1"]["davg"]
    assert np.isnan(d[0]) and d[1] == 2.5 and np.isnan(d[2])  # first-row zero and bad value are missing
    assert list(cap.nic) == ["vmnic2"]  # vmk ports are not uplinks
    assert cap.rows_skipped == 2


def test_esxtop_spreadsheet_resave() -> None:
    text = "(PDH-CSV 4.0) (UTC)(0),\\\\h\\Physical Cpu(_Total)\\% Util Time\r\n3/2/2026 10:00,5\r\n3/2/2026 10:01,7\r\n"
    cap = esxtop.parse_esxtop(stream(text.encode()), "e")
    assert cap is not None and cap.times.tolist() == [1772445600, 1772445660]
    assert cap.host["cpu_util"].tolist() == [5, 7]


def test_real_esxtop_full_capture(real: Path) -> None:
    p = real / "esxtop" / "rach-sharp_esxtopd__small-esxtop-data.csv"
    data = p.read_bytes()
    assert esxtop.sniff(data[:65536])
    cap = esxtop.parse_esxtop(stream(data), str(p))
    assert cap is not None
    assert cap.host_label == "localhost.home" and cap.columns == 7631 and len(cap.times) == 3
    assert cap.rows_skipped == 0
    assert any(d.startswith("t10.ATA") for d in cap.disk)
    assert set(cap.disk[next(iter(cap.disk))]) == {"davg", "kavg", "gavg", "cmds"}
    assert "vmnic0" in cap.nic and set(cap.nic["vmnic0"]) == {"rx_drop_pct", "tx_drop_pct", "rx_mbits"}
    assert cap.host["cpu_util"].tolist() == [10.48, 7.71, 8.35]
    assert np.nanmax(cap.host["ready_max"]) > 0


def test_real_esxtop_spreadsheet_export(real: Path) -> None:
    p = real / "esxtop" / "gsliu_VisualEsxtopOnline__origincsvfile.csv"
    cap = esxtop.parse_esxtop(stream(p.read_bytes()), str(p))
    assert cap is not None and len(cap.times) == 514 and cap.rows_skipped == 0
    assert cap.host_label == "proma-2n-dhcp60.eng.vmware.com"
    assert cap.times[0] == 1427409720  # 3/26/2015 22:42 UTC, minute resolution
    assert np.all(np.diff(cap.times) >= 0)
    # no _Total column in this export: the per-CPU % Util Time columns are averaged
    assert cap.host["cpu_util"][0] == pytest.approx((24.42 + 40.86) / 2)


def test_real_esxtop_inside_bundle_is_attached_by_folder(real: Path, bundle: Bundle) -> None:
    from pipeline.topology import build_topology

    files = dict(bundle.files)
    top = str(host_top(files, bundle.cluster.hosts[0].name))
    files[f"{top}/real.csv"] = (real / "esxtop" / "rach-sharp_esxtopd__small-esxtop-data.csv").read_bytes()
    files["loose/real2.csv"] = (real / "esxtop" / "gsliu_VisualEsxtopOnline__origincsvfile.csv").read_bytes()
    pb = parse(files)
    topo = build_topology(pb)
    host = topo.folder_host[top]
    assert any(c.host_label == "localhost.home" for c in topo.esxtop[host])
    assert any("proma-2n" in u for u in topo.unattached)  # a loose capture sharing nothing with the cluster


def test_real_vscsistats(real: Path) -> None:
    p = real / "vscsistats" / "er0080_vscsiStats-helper__algonquin.csv"
    data = p.read_bytes()
    assert vscsistats.sniff(data) and classify("any.txt", data[:65536]) == "vscsistats"
    hs = vscsistats.parse_vscsistats(data.decode())
    assert len(hs) == 16  # ioLength/seekDistance/latency/outstandingIOs/interarrival x3, plus last-16 once
    first = hs[0]
    assert first.title == "IO lengths of commands" and "2099979" in first.target
    assert first.stats["count"] == sum(f for _, f in first.buckets) == 793
    assert any(h.title.startswith("latency of Read IOs") for h in hs)


def test_nicinfo_row_wider_than_its_columns() -> None:
    text = (
        "Name    PCI Device    Driver  Admin Status  Link Status  Speed  Duplex  MAC Address         MTU  Description\n"
        "------  ------------  ------  ------------  -----------  -----  ------  -----------------  ----  -----------\n"
        "vmnic0  0000:04:00.0  nmlx5_core  Up            Up           25000  Full    00:50:56:01:02:03  9000  Mellanox\n"
    )
    (r,) = esxcli.parse_nicinfo(text)
    assert (r.name, r.speed_mbps, r.duplex_full, r.link_up) == ("vmnic0", 25000, True, True)
