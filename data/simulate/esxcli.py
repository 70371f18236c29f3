"""Command outputs of a host bundle: CMMDS directory, vSAN storage and network lists, nicinfo."""

from __future__ import annotations

import json

from data.simulate.events import NicInfo
from data.simulate.topology import Cluster, Disk, DiskGroup, Host, Rng


def render_cmmds(cluster: Cluster, rng: Rng) -> str:
    """`cmmds-tool find -f python`: a Python literal list of dicts whose `content` is a JSON string."""
    entries: list[dict[str, object]] = []

    def add(uuid: str, owner: str, typ: str, content: dict[str, object]) -> None:
        entries.append(
            {
                "uuid": uuid,
                "owner": owner,
                "health": "Healthy",
                "revision": int(rng.integers(1, 90)),
                "type": typ,
                "flag": 2,
                "minHostVersion": 0,
                "md5sum": rng.bytes(16).hex(),
                "valueLen": 0,
                "content": json.dumps(content),
                "errorStr": "(null)",
            }
        )

    for host in cluster.hosts:
        add(host.uuid, host.uuid, "HOSTNAME", {"hostname": host.name})
        add(
            host.uuid,
            host.uuid,
            "NODE",
            {"nodeFlags": 0, "faultDomainId": host.uuid, "faultDomainName": "", "maintenanceState": 0},
        )
        add(host.uuid, host.uuid, "NET_INTERFACE", {"ipAddress": host.vmk_ip, "vmknic": "vmk1", "ipv6": 0})
        for g in host.disk_groups:
            for d in (g.cache, *g.capacity):
                add(d.uuid, host.uuid, "DISK", _disk_content(cluster, g, d))
    entries.sort(key=lambda e: (str(e["type"]), str(e["uuid"])))
    return repr(entries) + "\n"


def _disk_content(cluster: Cluster, g: DiskGroup, d: Disk) -> dict[str, object]:
    return {
        "capacity": d.size_gb * 10**9,
        "iops": 100 if d.hw.media == "hdd" else 20000,
        "ssdUuid": g.cache.uuid,
        "isSsd": int(d.hw.media != "hdd"),
        "volumeName": "NA",
        "formatVersion": 15,
        "devName": f"{d.dev}:2",
        "ssdCapacity": g.cache.size_gb * 10**9,
        "isAllFlash": int(cluster.storage != "hybrid"),
        "dedupScope": 2 if cluster.dedup else 0,
        "diskType": 1 if d.tier == "cache" else 2,
    }


def render_storage_list(cluster: Cluster, host: Host) -> str:
    """`esxcli vsan storage list`: one block per device."""
    blocks = []
    for g in host.disk_groups:
        for d in (g.cache, *g.capacity):
            cap = d.tier == "capacity"
            dedup = "true" if cluster.dedup else "false"
            blocks.append(
                "\n".join(
                    [
                        d.dev,
                        f"   Device: {d.dev}",
                        f"   Display Name: {d.dev}",
                        f"   Is SSD: {'true' if d.hw.media != 'hdd' else 'false'}",
                        f"   VSAN UUID: {d.uuid}",
                        f"   VSAN Disk Group UUID: {g.cache.uuid}",
                        f"   VSAN Disk Group Name: {g.cache.dev}",
                        "   Used by this host: true",
                        "   In CMMDS: true",
                        "   On-disk Format Version: 15",
                        f"   Deduplication: {dedup}",
                        f"   Compression: {dedup}",
                        "   Checksum: 0",
                        "   Checksum OK: true",
                        f"   Is Capacity Tier: {'true' if cap else 'false'}",
                        "   Encryption Metadata Checksum OK: true",
                        "   Encryption: false",
                        "   DiskKeyLoaded: false",
                        "   Is Mounted: true",
                        "   Creation Time: Mon Jan 13 09:21:44 2025",
                    ]
                )
            )
    return "\n\n".join(blocks) + "\n"


def render_network_list(host: Host, rng: Rng) -> str:
    return (
        "\n".join(
            [
                "Interface",
                "   VmkNic Name: vmk1",
                "   IP Protocol: IP",
                f"   Interface UUID: {rng.bytes(16).hex()[:8]}-{rng.bytes(8).hex()[:4]}-{rng.bytes(8).hex()[:4]}"
                f"-{rng.bytes(8).hex()[:4]}-{rng.bytes(8).hex()[:12]}",
                "   Agent Group Multicast Address: 224.2.3.4",
                "   Agent Group IPv6 Multicast Address: ff19::2:3:4",
                "   Agent Group Multicast Port: 23451",
                "   Master Group Multicast Address: 224.1.2.3",
                "   Master Group IPv6 Multicast Address: ff19::1:2:3",
                "   Master Group Multicast Port: 12345",
                "   Host Unicast Channel Bound Port: 12321",
                "   Data-in-Transit Encryption Key Exchange Port: 0",
                "   Multicast TTL: 5",
                "   Traffic Type: vsan",
            ]
        )
        + "\n"
    )


def render_nicinfo(nics: list[NicInfo]) -> str:
    """`nicinfo.sh`: the `esxcli network nic list` table, then per-NIC details as the script prints."""
    head = [
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
        [
            n.name,
            n.pci,
            n.driver,
            "Up",
            "Up" if n.link_up else "Down",
            str(n.speed_mbps if n.link_up else 0),
            n.duplex,
            n.mac,
            str(n.mtu),
            n.description,
        ]
        for n in nics
    ]
    widths = [max(len(head[i]), *(len(r[i]) for r in rows)) for i in range(len(head) - 1)]

    def line(cells: list[str]) -> str:
        out = []
        for i, c in enumerate(cells[:-1]):
            out.append(c.rjust(widths[i]) if i in (5, 8) else c.ljust(widths[i]))
        return "  ".join(out) + "  " + cells[-1]

    rule = "  ".join("-" * w for w in widths) + "  " + "-" * max(len(r[-1]) for r in rows)
    text = ["Network Interface Cards Information.", "", line(head), rule, *(line(r) for r in rows), ""]
    for n in nics:
        text += [
            f"NIC:  {n.name}",
            "",
            "NICInfo:",
            "   Advertised Auto Negotiation: true",
            "   Advertised Link Modes: Auto",
            "   Auto Negotiation: true",
            f"   Driver: {n.driver}",
            f"   Link Detected: {'true' if n.link_up else 'false'}",
            f"   Name: {n.name}",
            "   PHYAddress: 0",
            "   Pause Autonegotiate: false",
            f"   Virtual Address: {n.mac}",
            "",
        ]
    return "\n".join(text) + "\n"
