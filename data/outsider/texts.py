"""Command outputs of a host bundle: CMMDS directory, vSAN storage and network lists, NIC list."""

from __future__ import annotations

import json

import numpy as np

from data.outsider.layout import Cluster, Host, Nic, Rng, hexs, uuid


def cmmds(rng: Rng, cl: Cluster) -> str:
    rows: list[dict[str, object]] = []

    def entry(u: str, owner: str, typ: str, content: dict[str, object]) -> None:
        body = json.dumps(content, separators=(", ", ": "))
        rows.append(
            {
                "uuid": u,
                "owner": owner,
                "health": "Healthy",
                "revision": int(rng.integers(0, 40)),
                "type": typ,
                "flag": 2,
                "minHostVersion": int(rng.choice([3, 15, 17])),
                "md5sum": hexs(rng, 32),
                "valueLen": len(body),
                "content": body,
                "errorStr": "(null)",
            }
        )

    for h in cl.hosts:
        entry(h.uuid, h.uuid, "NODE", {"nodeState": {"state": "Healthy"}, "maintenanceState": 0, "faultDomainName": ""})
        entry(h.uuid, h.uuid, "HOSTNAME", {"hostname": h.name})
        entry(
            uuid(rng),
            h.uuid,
            "NET_INTERFACE",
            {"ipAddress": f"172.16.{int(rng.integers(1, 250))}.{int(rng.integers(2, 250))}", "interface": h.vmk},
        )
    for h in cl.hosts:
        for g in h.dgs:
            for d in (g.cache, *g.caps):
                entry(
                    d.uuid,
                    h.uuid,
                    "DISK",
                    {
                        "capacity": d.size_gb * 1000**3,
                        "iops": 20000,
                        "ssdUuid": g.cache.uuid,
                        "devName": d.dev + d.suffix,
                        "isSsd": 1 if d.ssd else 0,
                        "isAllFlash": 1 if g.all_flash else 0,
                        "isDedup": int(g.dedup),
                        "isCompress": int(g.compression),
                        "formatVersion": int(rng.choice([15, 17, 19])),
                        "diskState": 0,
                    },
                )
    if rng.random() < 0.5:
        rng.shuffle(rows)
    return "[\n" + ",\n".join(repr(r) for r in rows) + "\n]\n"


def storage_list(rng: Rng, h: Host) -> str:
    blocks = []
    for g in h.dgs:
        for d in (g.cache, *g.caps):
            kv = [
                ("Device", d.dev),
                ("Display Name", d.dev),
                ("Is SSD", str(d.ssd).lower()),
                ("VSAN UUID", d.uuid),
                ("VSAN Disk Group UUID", g.cache.uuid),
                ("VSAN Disk Group Name", g.cache.dev),
                ("Used by this host", "true"),
                ("In CMMDS", "true"),
                ("On-disk format version", "15"),
                ("Deduplication", str(g.dedup).lower()),
                ("Compression", str(g.compression).lower()),
                ("Checksum", "0"),
                ("Checksum OK", "true"),
                ("Is Capacity Tier", str(not d.cache).lower()),
                ("Encryption Metadata Checksum OK", "true"),
                ("Encryption", "false"),
                ("Creation Time", "Tue Mar  3 09:12:44 2025"),
                ("Is vSAN ESA", "false"),
            ]
            if rng.random() < 0.3:
                kv = [x for x in kv if x[0] not in ("Encryption Metadata Checksum OK", "Creation Time", "Is vSAN ESA")]
            blocks.append(d.dev + "\n" + "\n".join(f"   {k}: {v}" for k, v in kv))
    return "\n\n".join(blocks) + "\n"


def network_list(rng: Rng, h: Host) -> str:
    parts = [
        ("VmkNic Name", h.vmk),
        ("IP Protocol", "IP"),
        ("Interface UUID", uuid(rng)),
        ("Agent Group Multicast Address", "224.2.3.4"),
        ("Agent Group IPv6 Multicast Address", "ff19::2:3:4"),
        ("Agent Group Multicast Port", "23451"),
        ("Master Group Multicast Address", "224.1.2.3"),
        ("Master Group IPv6 Multicast Address", "ff19::1:2:3"),
        ("Master Group Multicast Port", "12345"),
        ("Host Unicast Channel Bound Port", "12321"),
        ("Data-in-Transit Encryption Key Exchange Port", "0"),
        ("Multicast TTL", "5"),
        ("Traffic Type", "vsan"),
    ]
    return "Interface\n" + "\n".join(f"   {k}: {v}" for k, v in parts) + "\n"


def nicinfo(rng: Rng, h: Host, stats: dict[str, tuple[float, float, float]]) -> str:
    cols = [
        "Name",
        "PCI Device",
        "Driver",
        "Admin Status",
        "Link Status",
        "Speed",
        "Duplex",
        "MAC Address",
        "MTU",
        "Description",
    ]
    rows = [
        [n.name, n.pci, n.driver, "Up", "Up" if n.up else "Down", str(n.speed), n.duplex, n.mac, str(n.mtu), n.desc]
        for n in h.nics
    ]
    w = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(cols)]
    right = {5, 8}

    def line(vals: list[str]) -> str:
        return "  ".join(v.rjust(w[i]) if i in right else v.ljust(w[i]) for i, v in enumerate(vals)).rstrip()

    out = ["Network Interface Cards Information.", "", line(cols), "  ".join("-" * x for x in w)]
    out += [line(r) for r in rows]
    if rng.random() < 0.7:
        for n in h.nics:
            out += ["", "", f"NIC:  {n.name}", "", "NICInfo:"] + [f"   {ln}" for ln in _nic_get(n)]
            rx, crc, miss = stats.get(n.name, (0.0, 0.0, 0.0))
            out += [
                "",
                "NIC statistics for " + n.name + ":",
                f"   Packets received: {int(rx)}",
                f"   Packets sent: {int(rx * 0.9)}",
                f"   Bytes received: {int(rx * 4200)}",
                f"   Receive packets dropped: {int(miss)}",
                f"   Total receive errors: {int(crc + miss)}",
                f"   Receive CRC errors: {int(crc)}",
                f"   Receive missed errors: {int(miss)}",
                "   Total transmit errors: 0",
            ]
    return "\n".join(out) + "\n"


def _nic_get(n: Nic) -> list[str]:
    modes = ["Auto"]
    if n.base_t:
        modes += ["100BaseT/Full", "1000BaseT/Full", "10000BaseT/Full"]
    else:
        modes += [f"{n.speed or 10000}BaseSR/Full"]
    return [
        "Advertised Auto Negotiation: true",
        f"Advertised Link Modes: {', '.join(modes)}",
        "Auto Negotiation: true",
        "Cable Type: " + ("Twisted Pair" if n.base_t else "FIBRE"),
        "Current Message Level: 0",
        "Driver Info:",
        f"      Bus Info: {n.pci}",
        f"      Driver: {n.driver}",
        "      Firmware Version: " + ("1.3429.0" if n.base_t else "8.50 0x8000b6f0"),
        "      Version: 1.12.3.0",
        f"Link Detected: {str(n.up).lower()}",
        f"Link Status: {'Up' if n.up else 'Down'}",
        f"Name: {n.name}",
        "PHYAddress: 0",
        "Pause Autonegotiate: true",
        "Pause RX: true",
        "Pause TX: true",
        "Supported Ports: TP" if n.base_t else "Supported Ports: FIBRE",
        "Transceiver: ",
        "Virtual Address: 00:50:56:5" + str(int(np.int64(len(n.name)) % 10)) + ":aa:01",
        "Wakeon: None",
    ]
