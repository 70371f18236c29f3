"""Spec-conformant diagnosis bundles built in test code (shared/spec/bundle-format.md).

`build_bundle(...)` returns {path: bytes}; `write_tgz`/`write_dir`/`write_zip` lay it out. Used by the
tests and by benchmarks/bench_pipeline.py until the simulator in data/ is the source of bundles.
"""

from __future__ import annotations

import datetime as dt
import gzip
import io
import json
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HEAD = "--------------SOAP stats dump--------------"
SEP = "--------------Stats Segment Separator--------------"
METRICS = {
    "cluster-domclient": [
        "iopsRead",
        "iopsWrite",
        "throughputRead",
        "throughputWrite",
        "latencyAvgRead",
        "latencyAvgWrite",
        "congestion",
        "oio",
    ],
    "host-domclient": [
        "iopsRead",
        "iopsWrite",
        "throughputRead",
        "throughputWrite",
        "latencyAvgRead",
        "latencyAvgWrite",
        "congestion",
        "oio",
        "clientCacheHitRate",
    ],
    "host-domcompmgr": [
        "iopsRead",
        "iopsWrite",
        "latencyAvgRead",
        "latencyAvgWrite",
        "iopsRecWrite",
        "latencyAvgRecWrite",
        "iopsResyncRead",
        "tputResyncRead",
        "latAvgResyncRead",
        "congestion",
        "oio",
    ],
    "disk-group": [
        "iopsSched",
        "latencySched",
        "wbFreePct",
        "rcHitRate",
        "ssdCongestion",
        "logCongestion",
        "memCongestion",
        "slabCongestion",
        "iopsCongestion",
        "compCongestion",
        "oioWrite",
        "ssdBytesDrained",
    ],
    "cache-disk": [
        "iopsDevRead",
        "iopsDevWrite",
        "throughputDevRead",
        "throughputDevWrite",
        "latencyDevRead",
        "latencyDevWrite",
        "latencyDevDAvg",
        "latencyDevGAvg",
    ],
    "capacity-disk": [
        "iopsDevRead",
        "iopsDevWrite",
        "throughputDevRead",
        "throughputDevWrite",
        "latencyDevRead",
        "latencyDevWrite",
        "latencyDevDAvg",
        "latencyDevGAvg",
        "iopsRead",
        "iopsWrite",
        "latencyRead",
        "latencyWrite",
    ],
    "vsan-host-net": [
        "rxThroughput",
        "txThroughput",
        "rxPackets",
        "txPackets",
        "rxPacketsLossRate",
        "txPacketsLossRate",
        "portRxDrops",
        "portTxDrops",
        "tcpTxRexmitRate",
        "tcpRxErrRate",
    ],
    "vsan-pnic-net": [
        "rxThroughput",
        "txThroughput",
        "rxPackets",
        "txPackets",
        "rxPacketsLossRate",
        "txPacketsLossRate",
        "portRxDrops",
        "portTxDrops",
        "pauseCount",
        "rxErr",
        "txErr",
        "rxCrcErr",
    ],
    "host-cpu": ["pcpuUtilPct", "coreUtilPct", "pcpuUsedPct"],
    "vsan-cpu": ["usedPct", "readyPct"],
    "virtual-machine": [
        "iopsRead",
        "iopsWrite",
        "throughputRead",
        "throughputWrite",
        "latencyRead",
        "latencyWrite",
    ],
}


def _uuid(rng: np.random.Generator) -> str:
    h = "".join(f"{x:02x}" for x in rng.integers(0, 256, 16))
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _naa(rng: np.random.Generator) -> str:
    return "naa." + "".join(f"{x:02x}" for x in rng.integers(0, 256, 8))


def _value(label: str, rng: np.random.Generator, n: int) -> np.ndarray:
    low = label.lower()
    if "lossrate" in low or label in ("portRxDrops", "portTxDrops", "tcpTxRexmitRate", "tcpRxErrRate"):
        return rng.uniform(0, 2, n)
    if low.endswith("congestion"):
        return rng.integers(0, 5, n).astype(float)
    if label.endswith("Pct") or label.endswith("HitRate"):
        return rng.uniform(5, 60, n)
    if low.startswith(("latency", "lat")):
        return rng.uniform(300, 2000, n)
    if (
        low.startswith("throughput")
        or low.startswith("tput")
        or low.endswith("throughput")
        or label == "ssdBytesDrained"
    ):
        return rng.uniform(200, 400, n) * 32768
    if low.startswith("iops"):
        return rng.uniform(200, 400, n)
    return rng.uniform(0, 20, n)


@dataclass
class Disk:
    uuid: str
    dev: str
    cache: bool
    dg: str  # cache disk uuid


@dataclass
class Host:
    name: str
    uuid: str
    disks: list[Disk]
    nics: list[str]


def _topology(rng: np.random.Generator, n_hosts: int, n_dg: int, n_cap: int, n_nics: int) -> list[Host]:
    hosts = []
    for i in range(n_hosts):
        disks: list[Disk] = []
        for _ in range(n_dg):
            cu = _uuid(rng)
            disks.append(Disk(cu, _naa(rng), True, cu))
            disks += [Disk(_uuid(rng), _naa(rng), False, cu) for _ in range(n_cap)]
        hosts.append(Host(f"esx-{i + 1:02d}.lab.local", _uuid(rng), disks, [f"vmnic{j}" for j in range(n_nics)]))
    return hosts


def build_bundle(
    n_hosts: int = 3,
    hours: float = 1.0,
    interval: int = 20,
    seed: int = 0,
    *,
    n_dg: int = 1,
    n_cap: int = 2,
    n_nics: int = 2,
    n_vms: int = 4,
    start: str = "2026-03-02 10:00:00",
    bad_disk: bool = True,
    esxtop_rows: int = 30,
    host_bundles: int | None = None,
    json_perf: bool = False,
) -> tuple[dict[str, bytes], dict]:
    """({path: bytes}, truth) for one bundle; truth has hosts/uuids/devices for assertions."""
    rng = np.random.default_rng(seed)
    hosts = _topology(rng, n_hosts, n_dg, n_cap, n_nics)
    cluster = _uuid(rng)
    t0 = dt.datetime.fromisoformat(start)
    n = int(hours * 3600 // interval)
    times = ",".join((t0 + dt.timedelta(seconds=interval * k)).strftime("%Y-%m-%d %H:%M:%S") for k in range(n))
    docs: dict[str, list[tuple[str, dict[str, np.ndarray]]]] = {}

    def ent(et: str, eid: str) -> None:
        vals = {lb: _value(lb, rng, n) for lb in METRICS[et]}
        docs.setdefault(et, []).append((f"{et}:{eid}", vals))

    ent("cluster-domclient", cluster)
    for h in hosts:
        for et in ("host-domclient", "host-domcompmgr", "vsan-host-net", "host-cpu", "vsan-cpu"):
            ent(et, h.uuid)
        for nic in h.nics:
            ent("vsan-pnic-net", f"{h.uuid}|{nic}")
        for d in h.disks:
            if d.cache:
                ent("disk-group", d.uuid)
            ent("cache-disk" if d.cache else "capacity-disk", d.uuid)
    for _ in range(n_vms):
        ent("virtual-machine", _uuid(rng))
    bad = hosts[0].disks[1] if bad_disk else None
    if bad is not None:
        for _eid, vals in docs["capacity-disk"]:
            if _eid.endswith(bad.uuid):
                vals["latencyDevDAvg"][n // 2 :] *= 40
                vals["latencyDevRead"][n // 2 :] *= 40
    # a few missing samples the way the service writes them
    vals0 = docs["host-domclient"][0][1]["iopsRead"]
    vals0[3] = np.nan

    def fmt(a: np.ndarray) -> str:
        return ",".join("None" if np.isnan(x) else f"{x:.2f}" for x in a)

    if json_perf:
        perf_name = "perf.json"
        lst = [
            {
                "entityRefId": eid,
                "sampleInfo": times,
                "value": [{"metricId": {"label": lb}, "values": fmt(v)} for lb, v in vals.items()],
            }
            for ents in docs.values()
            for eid, vals in ents
        ]
        dump = json.dumps(lst).encode()
    else:
        perf_name = "commands/python_usrlibvmwarevsanperfsvcvsan-perfsvc-statuspyc-perf_stats_with_dump.txt"
        lines = [HEAD]
        for i, (_et, ents) in enumerate(docs.items()):
            if i:
                lines.append(SEP)
            parts = [
                '<obj xmlns="urn:vim25" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
                'xsi:type="ArrayOfVsanPerfEntityMetricCSV">'
            ]
            for eid, vals in ents:
                parts.append(
                    f"<VsanPerfEntityMetricCSV><entityRefId>{eid}</entityRefId><sampleInfo>{times}</sampleInfo>"
                )
                for lb, v in vals.items():
                    parts.append(
                        f"<value><metricId><label>{lb}</label><metricsCollectInterval>{interval}"
                        f"</metricsCollectInterval></metricId><values>{fmt(v)}</values></value>"
                    )
                parts.append("</VsanPerfEntityMetricCSV>")
            parts.append("</obj>")
            lines.append("".join(parts))
        dump = ("\n".join(lines) + "\n").encode()

    cm = []
    for h in hosts:
        cm.append(
            {
                "uuid": h.uuid,
                "owner": h.uuid,
                "type": "HOSTNAME",
                "health": "Healthy",
                "content": json.dumps({"hostname": h.name}),
            }
        )
        cm.append({"uuid": h.uuid, "owner": h.uuid, "type": "NODE", "content": json.dumps({"maxDisks": 7})})
        for d in h.disks:
            cm.append(
                {
                    "uuid": d.uuid,
                    "owner": h.uuid,
                    "type": "DISK",
                    "content": json.dumps(
                        {"devName": f"{d.dev}:2", "isSsd": 1, "ssdUuid": d.dg, "capacity": 800000000000}
                    ),
                }
            )
    cmmds = repr(cm).encode()

    files: dict[str, bytes] = {}
    stamp = t0 + dt.timedelta(hours=hours)
    for hi, h in enumerate(hosts[: host_bundles or n_hosts]):
        top = f"esx-{h.name}-{stamp:%Y-%m-%d--%H.%M}-{1000 + hi}"
        files[f"{top}/{perf_name}"] = dump
        files[f"{top}/commands/cmmds-tool_find--f-python.txt"] = cmmds
        blocks = []
        for d in h.disks:
            cache_dev = next(x.dev for x in h.disks if x.uuid == d.dg)
            blocks.append(
                f"{d.dev}\n   Device: {d.dev}\n   Display Name: {d.dev}\n   Is SSD: true\n"
                f"   VSAN UUID: {d.uuid}\n   VSAN Disk Group UUID: {d.dg}\n"
                f"   VSAN Disk Group Name: {cache_dev}\n"
                f"   Used by this host: true\n   In CMMDS: true\n   On-disk format version: 15\n"
                f"   Is Capacity Tier: {'false' if d.cache else 'true'}\n   Deduplication: true\n"
                f"   Compression: true\n   Is Encrypted: false\n"
            )
        files[f"{top}/commands/localcli_vsan-storage-list.txt"] = "\n".join(blocks).encode()
        files[f"{top}/commands/localcli_vsan-network-list.txt"] = (
            "Interface\n   VmkNic Name: vmk1\n   IP Protocol: IP\n   Interface UUID: "
            f"{_uuid(rng)}\n   Agent Group Multicast Address: 224.2.3.4\n   Traffic Type: vsan\n"
        ).encode()
        rows = [
            "Name    PCI Device    Driver  Admin Status  Link Status  Speed  Duplex  MAC Address         "
            "MTU  Description",
            "------  ------------  ------  ------------  -----------  -----  ------  -----------------  "
            "----  -----------",
        ]
        for j, nic in enumerate(h.nics):
            speed = "1000" if (hi == 1 and j == 1) else "10000"
            rows.append(
                f"{nic:<6}  0000:04:00.{j}  ixgben  Up            Up           {speed:<5}  Full    "
                f"00:50:56:01:02:0{j}  9000  Intel(R) Ethernet Controller X550"
            )
        files[f"{top}/commands/nicinfo.sh.txt"] = ("\n".join(rows) + "\n").encode()
        files.update(_logs(top, h, t0, hours, esxi8=hi % 2 == 1, bad=bad if hi == 0 else None))
        if esxtop_rows:
            files[f"{top}/esxtop-{h.name}.csv"] = _esxtop(
                h, t0, esxtop_rows, crlf=hi % 2 == 1, bad=bad if hi == 0 else None
            )
    truth = {"hosts": hosts, "cluster": cluster, "bad": bad, "n": n}
    return files, truth


def _logs(top: str, h: Host, t0: dt.datetime, hours: float, esxi8: bool, bad: Disk | None) -> dict[str, bytes]:
    kern: list[str] = []
    warn: list[str] = []
    vob: list[str] = []

    def ts(sec: float) -> str:
        return (t0 + dt.timedelta(seconds=sec)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"

    def k(sec: float, msg: str, sev: str = "In(182)") -> str:
        return f"{ts(sec)} {sev} vmkernel: cpu3:2098330){msg}" if esxi8 else f"{ts(sec)} cpu3:2098330){msg}"

    span = hours * 3600
    kern.append(k(5, "Loading module vmkapi_v2_3_0_0_mgmt_shim ..."))
    kern.append(k(60, f"{h.nics[-1]} : 0000:04:00.1 Link Down"))
    kern.append(k(65, f"{h.nics[-1]} : 0000:04:00.1 Link Up"))
    vob.append(
        f"{ts(60)}: [netCorrelator] 6046829437us: [vob.net.vmnic.linkstate.down] vmnic {h.nics[-1]} linkstate down"
    )
    other = h.disks[-1].dev
    kern.append(
        k(
            100,
            f'ScsiDeviceIO: 4325: Cmd(0x45be74dae040) 0x1a, CmdSN 0x1 from world 0 to dev "{other}" '
            "failed H:0x0 D:0x2 P:0x0 Valid sense data: 0x5 0x24 0x0",
        )
    )
    if bad is not None:
        for i in range(20):
            sec = span / 2 + i * 30
            line = k(
                sec,
                f"ScsiDeviceIO: 4325: Cmd(0x45be74dae040) 0x28, CmdSN 0xd65263a8 from world 0 to dev "
                f'"{bad.dev}" failed H:0x0 D:0x2 P:0x0 Valid sense data: 0x3 0x11 0x0',
            )
            kern.append(line)
            warn.append(line.replace("cpu3:", "cpu3:") if esxi8 else line)
        msg = (
            f"WARNING: ScsiDeviceIO: 1513: Device {bad.dev} performance has deteriorated. I/O latency "
            "increased from average value of 1343 microseconds to 28022 microseconds."
        )
        kern.append(k(span / 2 + 10, msg, "Wa(180)"))
        warn.append(k(span / 2 + 10, msg, "Wa(180)"))
        vob.append(
            f"{ts(span / 2 + 10)}: [scsiCorrelator] 6046829437us: [esx.problem.scsi.device.io.latency.high]"
            f" Device {bad.dev} performance has deteriorated."
        )
        kern.append(
            k(
                span / 2 + 40,
                "LSOM: LSOM_ThrowAsyncCongestionVOB:3012: LSOM SSD Congestion State: "
                "Exceeded. Congestion Threshold: 200 Current Congestion: 255.",
            )
        )
    kern.sort()
    out = {
        f"{top}/var/run/log/vmkernel.log": ("\n".join(kern[len(kern) // 2 :]) + "\n").encode(),
        f"{top}/var/run/log/vmkernel.0.gz": gzip.compress(("\n".join(kern[: len(kern) // 2]) + "\n").encode()),
        f"{top}/var/run/log/vmkwarning.log": ("\n".join(warn) + "\n").encode(),
        f"{top}/var/run/log/vobd.log": ("\n".join(vob) + "\n").encode(),
    }
    return out


def _esxtop(h: Host, t0: dt.datetime, rows: int, crlf: bool, bad: Disk | None) -> bytes:
    hn = "localhost.home"
    cols = [
        '"(PDH-CSV 4.0) (UTC)(0)"',
        f'"\\\\{hn}\\Physical Cpu(_Total)\\% Util Time"',
        f'"\\\\{hn}\\Group Cpu(1:system)\\% Ready"',
        f'"\\\\{hn}\\Group Cpu(2099:vsanperfsvc)\\% Ready"',
    ]
    for d in h.disks:
        for c in (
            "Average Driver MilliSec/Command",
            "Average Kernel MilliSec/Command",
            "Average Guest MilliSec/Command",
            "Commands/sec",
            "Reads/sec",
        ):
            cols.append(f'"\\\\{hn}\\Physical Disk SCSI Device({d.dev})\\{c}"')
    for j, nic in enumerate(h.nics):
        for c in ("% Received Packets Dropped", "% Outbound Packets Dropped", "MBits Received/sec"):
            cols.append(f'"\\\\{hn}\\Network Port(DvsPortset-0:{33554432 + j}:{nic})\\{c}"')
    cols.append(f'"\\\\{hn}\\Network Port(DvsPortset-0:50331650:vmk1)\\MBits Received/sec"')
    cols.append(f'"\\\\{hn}\\Memory\\Free MBytes"')
    lines = [",".join(cols) + ","]
    rng = np.random.default_rng(len(h.name))
    for r in range(rows):
        t = t0 + dt.timedelta(seconds=5 * r)
        vals = ['"' + t.strftime("%m/%d/%Y %H:%M:%S") + '"']
        for c in cols[1:]:
            v = 0.0 if r == 0 else float(rng.uniform(0.1, 2))
            if bad is not None and bad.dev in c and "Driver" in c and r:
                v *= 30
            vals.append(f'"{v:.2f}"')
        lines.append(",".join(vals) + ",")
    sep = "\r\n" if crlf else "\n"
    return ("stray terminal text\n" if crlf else "").encode() + (sep.join(lines) + sep).encode()


def write_tgz(files: dict[str, bytes], path: Path, labels: dict | None = None) -> Path:
    with tarfile.open(path, "w:gz", compresslevel=1) as tf:
        for name, data in sorted(files.items()):
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            ti.mtime = 1772445600
            tf.addfile(ti, io.BytesIO(data))
        if labels is not None:
            d = json.dumps(labels).encode()
            ti = tarfile.TarInfo("labels.json")
            ti.size = len(d)
            tf.addfile(ti, io.BytesIO(d))
    return path


def tgz_bytes(files: dict[str, bytes]) -> bytes:
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode="w:gz", compresslevel=1) as tf:
        for name, data in sorted(files.items()):
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
    return b.getvalue()


def write_dir(files: dict[str, bytes], path: Path) -> Path:
    for name, data in files.items():
        p = path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return path


def write_vcenter_zip(files: dict[str, bytes], path: Path) -> Path:
    """vCenter export: one nested .tgz per host folder inside a .zip."""
    tops: dict[str, dict[str, bytes]] = {}
    for name, data in files.items():
        top = name.split("/", 1)[0]
        tops.setdefault(top, {})[name] = data
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        for top, fs in sorted(tops.items()):
            zf.writestr(f"{top}.tgz", tgz_bytes(fs))
    return path
