"""The crafted uploads that once broke the parser (issue 18's "Broke" table): each generator writes one
file into a folder and returns its `Case`."""

from __future__ import annotations

import ast
import struct
import tarfile
import zlib
from pathlib import Path

from tests.attacks.build import NO_RATIO, Big, Case, MiB, _base, _fill, _header, write_tgz


def cmmds_disks(d: Path) -> Case:
    files, top = _base()
    key = f"{top}/commands/cmmds-tool_find--f-python.txt"
    host = next(e["uuid"] for e in ast.literal_eval(files[key].decode()) if e["type"] == "HOSTNAME")
    entry = "{'uuid': 'd%d', 'owner': '" + host + "', 'type': 'DISK', 'content': '{\"devName\": \"naa.%d\"}'}"
    text = "[" + ", ".join(entry % (i, i) for i in range(200_000)) + "]\n"
    files[key] = files[key].rstrip()[:-1] + b", " + text[1:].encode()  # the real entries, then 200,000 disks
    return Case(
        "cmmds_200k_disks", write_tgz(d / "cmmds-disks.tgz", files), "reject", "max_components", where="cmmds-tool_find"
    )


def perf_json_flood(d: Path) -> Case:
    files, _top = _base()
    big = Big(b'[{"entityRefId": "host-cpu:x", "sampleInfo": "", "value": []}, ', _fill(b"{}, "), 240, b"{}]")
    return Case(
        "perf_json_240mb",
        write_tgz(d / "perf-json.tgz", files, {"perf.json": big}),
        "reject",
        "max_perf_entities",
        NO_RATIO,
        where="perf.json",
    )


_ENTITY = (
    b"<VsanPerfEntityMetricCSV><entityRefId>virtual-machine:x</entityRefId><sampleInfo>2026-03-02 10:00:00"
    b"</sampleInfo><value><metricId><label>iopsRead</label></metricId><values>1</values></value>"
    b"</VsanPerfEntityMetricCSV>"
)
_DUMP = "commands/python_usrlibvmwarevsanperfsvcvsan-perfsvc-statuspyc-perf_stats_with_dump.txt"


def perf_xml_line(d: Path) -> Case:
    files, top = _base()
    big = Big(b"--------------SOAP stats dump--------------\n<obj>", _fill(_ENTITY), 250, b"</obj>\n")
    path = write_tgz(d / "perf-line.tgz", files, {f"{top}/{_DUMP}": big})
    return Case("perf_xml_250mb_line", path, "reject", "max_perf_entities", NO_RATIO, where="perf_stats_with_dump")


def perf_xml_giant_entity(d: Path) -> Case:
    files, top = _base()
    head = b"--------------SOAP stats dump--------------\n<obj><VsanPerfEntityMetricCSV><sampleInfo>"
    big = Big(head, _fill(b"2026-03-02 10:00:00,"), 250, b"</sampleInfo></VsanPerfEntityMetricCSV></obj>\n")
    path = write_tgz(d / "perf-entity.tgz", files, {f"{top}/{_DUMP}": big})
    return Case("perf_xml_250mb_entity", path, "reject", "max_entity_bytes", NO_RATIO, where="perf_stats_with_dump")


def link_log(d: Path) -> Case:
    files, top = _base()
    lines = b"".join(
        b"2026-03-02T10:05:%02d.000Z cpu1:1)vmnic1 : 0000:04:00.1 Link %s\n" % (i % 60, b"Down" if i % 2 else b"Up")
        for i in range(120)
    )
    path = write_tgz(d / "link-log.tgz", files, {f"{top}/var/run/log/vmkernel.log": Big(b"", _fill(lines), 1000)})
    return Case("vmnic_log_1gib", path, "warn", "max_log_bytes", NO_RATIO)


def _zip_shared_entry(path: Path, records: int, size_mib: int) -> Path:
    """One deflated entry of `size_mib` MiB of zeros, named by `records` central records."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = c.compress(b"\0" * MiB) + c.flush(zlib.Z_FULL_FLUSH)  # independent: repeatable
    last = c.flush()
    crc = 0
    for _ in range(size_mib):
        crc = zlib.crc32(b"\0" * MiB, crc)
    size, csize = size_mib * MiB, len(block) * size_mib + len(last)
    name = b"esx-a-2026-03-02--10.00-1/var/run/log/vmkernel.log"  # a member the parser reads
    local = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0, crc, csize, size, len(name), 0) + name
    central = struct.pack(
        "<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 8, 0, 0, crc, csize, size, len(name), 0, 0, 0, 0, 0, 0
    )
    with open(path, "wb") as out:
        out.write(local)
        for _ in range(size_mib):
            out.write(block)
        out.write(last)
        start = out.tell()
        out.write((central + name) * records)
        cd = out.tell() - start
        out.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, records, records, cd, start, 0))
    return path


def zip_shared_entry(d: Path) -> Case:
    path = _zip_shared_entry(d / "shared-entry.zip", 40_000, 1024)
    return Case(
        "zip_40k_records_one_entry", path, "reject", "several central records point at the same data", where=path.name
    )


def esxtop_columns(d: Path) -> Case:
    files, top = _base()
    cols = ",".join(f'"\\\\h\\Physical Disk SCSI Device(naa.{i})\\Commands/sec"' for i in range(1_000_000))
    row = '"03/02/2026 10:00:00",' + "1," * 1_000_000
    files[f"{top}/esxtop-wide.csv"] = f'"(PDH-CSV 4.0) (UTC)(0)",{cols}\n{row}\n'.encode()
    return Case("esxtop_1m_columns", write_tgz(d / "esxtop-wide.tgz", files), "warn", "max_esxtop_columns")


def cmmds_250mb(d: Path) -> Case:
    files, top = _base()
    key = f"{top}/commands/cmmds-tool_find--f-python.txt"
    orig = files.pop(key).rstrip()[:-1]  # "[{…}, {…}" without its closing bracket
    node = (
        b"{'uuid': '5e1a6c2f-0b7e-4f3a-9d52-2c1e8b7a6f00', 'owner': '5e1a6c2f-0b7e-4f3a-9d52-2c1e8b7a6f01', "
        b"'type': 'DOM_OBJECT', 'health': 'Healthy', 'revision': 12, 'minHostVersion': 3, "
        b'\'content\': \'{"type": "Configuration", "attributes": {"CSN": 7, "addressSpace": 273804165120}}\'}, '
    )
    big = Big(orig + b", ", _fill(node), 245, b"{'uuid': 'z', 'type': 'NODE', 'content': '{}'}]\n")
    return Case("cmmds_250mb", write_tgz(d / "cmmds-big.tgz", files, {key: big}), "ok", "", NO_RATIO)


def tar_nested_zip(d: Path) -> Case:
    files, _top = _base()
    n, name = 450, b"esx-b/big.log"
    crc = 0
    for _ in range(n):
        crc = zlib.crc32(b"\0" * MiB, crc)
    size = n * MiB
    local = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 0, 0, 0, crc, size, size, len(name), 0) + name
    central = struct.pack(
        "<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 0, 0, 0, crc, size, size, len(name), 0, 0, 0, 0, 0, 0
    )
    eocd = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 1, 1, len(central + name), len(local) + size, 0)
    big = Big(local, b"\0" * MiB, n, central + name + eocd)
    path = write_tgz(d / "nested-zip.tgz", files, {"vcenter-export.zip": big})
    return Case("tar_with_450mb_zip", path, "reject", "max_nested_zip_bytes", NO_RATIO, where="vcenter-export.zip")


def link_regex_line(d: Path) -> Case:
    files, top = _base()
    line = b"2026-03-02T10:05:00.000Z cpu1:1)Link " + b"vmnic1 " * 150_000 + b"\n"
    files[f"{top}/var/run/log/vmkernel.log"] = files[f"{top}/var/run/log/vmkernel.log"] + line
    return Case("link_regex_1mb_line", write_tgz(d / "link-line.tgz", files), "warn", "max_line_bytes")


def links_and_devices(d: Path) -> Case:
    files, top = _base()
    extra = _header(f"{top}/var/run/log/evil.log", 0, tarfile.SYMTYPE, "/etc/shadow")
    extra += _header(f"{top}/dev-null", 0, tarfile.CHRTYPE)
    path = write_tgz(d / "links.tgz", files, extra=extra)
    return Case("symlink_and_device", path, "warn", f"skipped {top}/var/run/log/evil.log (symlink)")
