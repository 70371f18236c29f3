"""Text files of a host bundle: the perf dump, CMMDS, `esxcli vsan storage/network list`, the NIC table."""

from __future__ import annotations

import json
from xml.sax.saxutils import escape

import numpy as np

from data.cleanroom.metrics import Entities
from data.cleanroom.scenario import Timeline
from data.cleanroom.topology import Cluster, Host, Rng

HEAD = "--------------SOAP stats dump--------------"
SEP = "--------------Stats Segment Separator--------------"
TYPES = (
    "cluster-domclient",
    "host-domclient",
    "host-domcompmgr",
    "disk-group",
    "cache-disk",
    "capacity-disk",
    "vsan-host-net",
    "vsan-pnic-net",
    "host-cpu",
    "vsan-cpu",
    "virtual-machine",
)
COUNTS = {"pauseCount", "rxErr", "txErr", "rxCrcErr", "congestion"}
XSI = 'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"'


def _values(a: np.ndarray, dec: int, missing: str) -> str:
    r = np.round(a, dec)
    if dec == 0:
        out = [missing if x != x else str(int(x)) for x in r.tolist()]
    else:
        out = [missing if x != x else str(x) for x in r.tolist()]
    return ",".join(out)


def perf_dump(rng: Rng, tl: Timeline, ent: Entities, powered_off: list[str]) -> str:
    dec = int(rng.choice([0, 1, 2, 3]))
    missing = "None" if rng.random() < 0.8 else ""
    ns = str(rng.choice(["urn:vim25", "urn:vsan", "urn:vim25"]))
    typed = rng.random() < 0.7
    extra_tags = rng.random() < 0.4
    times = ",".join(tl.at(i).strftime("%Y-%m-%d %H:%M:%S") for i in range(tl.n))
    head = f'<obj xmlns="{ns}" {XSI} xsi:type="ArrayOfVsanPerfEntityMetricCSV">' if typed else f'<obj xmlns="{ns}">'
    docs = []
    for et in TYPES:
        parts = [head]
        for key, metrics in ent.items():
            if not key.startswith(et + ":"):
                continue
            item = (
                '<VsanPerfEntityMetricCSV xsi:type="VsanPerfEntityMetricCSV">' if typed else "<VsanPerfEntityMetricCSV>"
            )
            parts.append(f"{item}<entityRefId>{escape(key)}</entityRefId><sampleInfo>{times}</sampleInfo>")
            for label, arr in metrics.items():
                d = 0 if label in COUNTS or label.endswith("Congestion") else dec
                mid = f"<label>{label}</label>"
                if extra_tags:
                    mid += "<rollupType>average</rollupType><statsType>absolute</statsType>"
                mid += f"<metricsCollectInterval>{tl.interval}</metricsCollectInterval>"
                thr = ""
                if extra_tags and label == "latencyAvgWrite":
                    thr = "<threshold><direction>upper</direction><yellow>30000</yellow><red>50000</red></threshold>"
                parts.append(
                    f"<value><metricId>{mid}</metricId>{thr}<values>{_values(arr, d, missing)}</values></value>"
                )
            parts.append("</VsanPerfEntityMetricCSV>")
        if et == "virtual-machine":
            for u in powered_off:
                parts.append(f"<VsanPerfEntityMetricCSV><entityRefId>virtual-machine:{u}</entityRefId>")
                parts.append("<sampleInfo></sampleInfo></VsanPerfEntityMetricCSV>")
        parts.append("</obj>")
        docs.append("".join(parts))
    return HEAD + "\n" + ("\n" + SEP + "\n").join(docs) + "\n"


def cmmds(rng: Rng, cl: Cluster) -> str:
    entries: list[dict[str, object]] = []

    def add(uuid: str, owner: str, typ: str, content: dict[str, object]) -> None:
        body = json.dumps(content)
        entries.append(
            {
                "uuid": uuid,
                "owner": owner,
                "health": "Healthy",
                "revision": str(int(rng.integers(1, 40))),
                "type": typ,
                "flag": "2",
                "minHostVersion": "0",
                "md5sum": "".join(f"{b:02x}" for b in rng.integers(0, 256, 16)),
                "valueLen": str(len(body) + 1),
                "content": body,
                "errorStr": "(null)",
            }
        )

    for h in cl.hosts:
        add(h.uuid, h.uuid, "NODE", {"faultDomainId": h.uuid, "faultDomainName": "", "maintenanceState": 0})
        add(h.uuid, h.uuid, "HOSTNAME", {"hostname": h.name})
    for g in cl.dgs:
        owner = cl.hosts[g.host].uuid
        for d in (g.cache, *g.capacity):
            add(
                d.uuid,
                owner,
                "DISK",
                {
                    "capacity": int(rng.choice([800, 1600, 1920, 3840])) * 10**9,
                    "iops": 100,
                    "devName": d.dev + ":2",
                    "ssdUuid": g.cache.uuid,
                    "isSsd": int(d.is_ssd),
                    "isAllFlash": int(g.all_flash),
                    "isDedup": int(cl.dedup),
                    "isEncrypted": 0,
                    "formatVersion": 15,
                },
            )
    order = rng.permutation(len(entries))
    return json.dumps([entries[int(i)] for i in order], indent=3) + "\n"


def storage_list(cl: Cluster, h: Host) -> str:
    blocks = []
    for gi in h.dgs:
        g = cl.dgs[gi]
        for d in (g.cache, *g.capacity):
            blocks.append(
                f"{d.dev}\n"
                f"   Device: {d.dev}\n"
                f"   Display Name: {d.dev}\n"
                f"   Is SSD: {str(d.is_ssd).lower()}\n"
                f"   VSAN UUID: {d.uuid}\n"
                f"   VSAN Disk Group UUID: {g.cache.uuid}\n"
                f"   VSAN Disk Group Name: {g.cache.dev}\n"
                "   Used by this host: true\n"
                "   In CMMDS: true\n"
                "   On-disk format version: 15\n"
                f"   Deduplication: {str(cl.dedup).lower()}\n"
                f"   Compression: {str(cl.dedup).lower()}\n"
                "   Checksum OK: true\n"
                f"   Is Capacity Tier: {str(not d.is_cache).lower()}\n"
                "   Encryption: false\n"
                "   Is Mounted: true\n"
            )
    return "\n".join(blocks)


def network_list(rng: Rng, h: Host) -> str:
    vmk = f"vmk{int(rng.choice([1, 1, 2, 3]))}"
    return (
        "Interface\n"
        f"   VmkNic Name: {vmk}\n"
        "   IP Protocol: IP\n"
        f"   Interface UUID: {h.uuid[:8]}-{h.uuid[9:13]}-0000-0000-{h.uuid[-12:]}\n"
        "   Agent Group Multicast Address: 224.2.3.4\n"
        "   Agent Group IPv6 Multicast Address: ff19::2:3:4\n"
        "   Agent Group Multicast Port: 23451\n"
        "   Master Group Multicast Address: 224.1.2.3\n"
        "   Master Group IPv6 Multicast Address: ff19::1:2:3\n"
        "   Master Group Multicast Port: 12345\n"
        "   Host Unicast Channel Bound Port: 12321\n"
        "   Multicast TTL: 5\n"
        "   Traffic Type: vsan\n"
    )


def nicinfo(h: Host) -> str:
    cols = ["Name", "PCI Device", "Driver", "Admin Status", "Link Status", "Speed", "Duplex", "MAC Address", "MTU"]
    rows = [
        [n.name, n.pci, n.driver, "Up", "Up" if n.link_up else "Down", str(n.speed), n.duplex, n.mac, str(n.mtu)]
        for n in h.nics
    ]
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(cols)]
    right = {5, 8}

    def line(vals: list[str]) -> str:
        return "  ".join(
            v.rjust(w) if i in right else v.ljust(w) for i, (v, w) in enumerate(zip(vals, widths, strict=True))
        )

    out = [line(cols) + "  Description", "  ".join("-" * w for w in widths) + "  " + "-" * 60]
    out += [line(r) + "  " + n.desc for r, n in zip(rows, h.nics, strict=True)]
    return "\n".join(out) + "\n"
